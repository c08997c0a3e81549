"""rpcd-handler-check PROGRAM [--config KEY=VALUE ...]: runs a handler program as rpcd would (docs/HANDLER-
PROTOCOL.md) through the protocol's cases, and prints one line per case, `ok NAME` or `FAIL NAME: why`.
Exit status 0 when every case passed, 1 when one failed, 2 for a usage error.

The program is started as rpcd starts it (no arguments, working directory /, rpcd's environment, plus
PYTHONPATH when set, so that a Python program can be checked from a checkout) and spoken to as rpcd speaks:
ids 0, 1, 2 …, members in rpcd's order, a non-concurrent method's call only when nothing else is in flight.

Threading: the main thread drives the cases; one thread reads the program's standard output into a queue,
another drains its standard error, and the flood's calls are written by a thread of their own.
"""

import argparse
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

from ._declaration import RESERVED, Refused, config_problem, read_declaration, sample, schema_problem
from ._program import MAX_LINE, Ended, Program
from .handler import PROTOCOL

__all__ = ["main"]

START_TIMEOUT = 10.0   # rpcd's HandlerProgram.declarationTimeout
EXIT_GRACE = 5.0       # rpcd's HandlerProgram.stopGrace
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ALLOWED_RESERVED = (-32602, -32603, -32011)
_LEVEL = re.compile(rb"<([0-9]+)>")
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class Check:
    """The cases, run in order against one program; `report` holds (name, failure or None, detail)."""

    def __init__(self, path, config, timeout, flood, flood_seconds, out):
        self.path, self.config, self.timeout = path, config, timeout
        self.flood, self.flood_seconds, self.out = flood, flood_seconds, out
        self.handler = re.sub(r"[^a-z0-9-]", "", os.path.splitext(os.path.basename(path))[0].lower())[:15] or "check"
        self.failed = False
        self.next_id = 1
        self.in_flight = {}      # id → concurrent
        self.answers = {}        # id → response
        self.events = []
        self.problems = {"error codes": [], "stdout": [], "events": []}
        self.declared_early = None
        self.ended = None        # why the program can no longer be spoken to
        self.declaration = None
        self.eof = self.stopping = self.crashed = False

    # Output ------------------------------------------------------------------------------------------

    def result(self, name, failure=None, detail=None):
        if failure is not None:
            self.failed = True
        line = f"FAIL {name}: {failure}" if failure is not None else f"ok {name}" + (f" ({detail})" if detail else "")
        try:
            print(line, file=self.out, flush=True)
        except BrokenPipeError:  # `| head`: the rest is not read, but the check runs on to end the program
            self.out = open(os.devnull, "w")

    # What the program writes -------------------------------------------------------------------------

    def _take(self, kind, line):
        """One item of the program's output; an answer lands in `answers`."""
        if kind == "half":
            return self.problems["stdout"].append(
                f"it ended with half a line ({len(line)} bytes without a line feed: {_head(line)}); rpcd drops it, "
                "a message is a line")
        if kind == "long":
            return self.problems["stdout"].append(
                f"a line of {line} bytes or more, past maxLineSize ({MAX_LINE}): rpcd kills the program for it")
        if not line.strip():
            return None
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return self.problems["stdout"].append(
                f"a line that is not a JSON-RPC 2.0 message: {_head(line)} (rpcd drops it; a stray print?)")
        if "method" in message:
            if "id" in message or message["method"] != "rpc.event":
                return self.problems["stdout"].append(
                    f"a message rpcd does not take (only answers and rpc.event notifications): {_head(line)}")
            if self.declaration is None:
                self.declared_early = self.declared_early or f"an event before its answer to rpcd.start: {_head(line)}"
                return None
            return self._event(message.get("params"), line)
        id = message.get("id")
        if isinstance(id, bool) or not isinstance(id, int) or id < 0:
            return self.problems["stdout"].append(f"an answer without an integer id: {_head(line)}")
        if id != 0 and id not in self.in_flight:
            if self.declaration is None:
                self.declared_early = self.declared_early or f"an answer to id {id} before its answer to rpcd.start"
            return self.problems["stdout"].append(f"an answer to id {id}, which is not in flight: {_head(line)}")
        if id == 0 and self.declaration is not None:
            return self.problems["stdout"].append(f"a second answer to rpcd.start: {_head(line)}")
        self.in_flight.pop(id, None)
        self.answers[id] = message
        error = message.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        if id != 0 and isinstance(code, int) and code in RESERVED and code not in ALLOWED_RESERVED:
            self.problems["error codes"].append(
                f"call {id} was answered with {code}, a code rpcd reserves (only -32602, -32603 and -32011 may be used; "
                "the caller gets -32603)")
        return None

    def _event(self, params, line):
        self.events.append(line)
        event, prefix = _get(params, "event"), self.declaration.name + "."
        short = event[len(prefix):] if isinstance(event, str) and event.startswith(prefix) else None
        if short not in self.declaration.events:
            declared = ", ".join(prefix + e for e in self.declaration.events) or "none"
            return self.problems["events"].append(
                f"{event!r} is not a declared event (declared: {declared}); rpcd drops it")
        problem = schema_problem(_get(params, "data"), self.declaration.events[short])
        if problem:
            self.problems["events"].append(
                f"{event}: its data fails the declared schema: {problem} (such an event is dropped, "
                "HANDLER-PROTOCOL.md §6)")
        return None

    def pump(self, done, seconds):
        """Takes the program's output until DONE() or SECONDS pass (False then); Ended if it ends first."""
        deadline = time.monotonic() + seconds
        while not done():
            if self.eof:
                if self.stopping:
                    return True
                raise Ended(f"not run: {self.ended}")
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                kind, line = self.program.lines.get(timeout=min(left, 0.1))
            except queue.Empty:
                continue
            if kind == "eof":
                self.eof = True
                if self.stopping:
                    return True
                try:
                    self.program.process.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
                how = self.program.termination()
                self.ended = f"it ended ({how})" if how else "it closed its standard output"
                self.crashed = True
                self.program.error_reader.join(timeout=1)
                last = f"; its last log line: {_head(self.program.errors[-1])}" if self.program.errors else ""
                raise Ended(f"{self.ended}: a crash (rpcd answers its calls in flight -32005 and starts it "
                            f"again){last}")
            self._take(kind, line)
        return True

    # Calls -------------------------------------------------------------------------------------------

    def send_call(self, method, params):
        id = self.next_id
        self.next_id += 1
        self.in_flight[id] = method.concurrent
        self.program.send({"jsonrpc": "2.0", "id": id, "method": f"{self.declaration.name}.{method.name}",
                           "params": params})
        return id

    def may_send(self, method):
        """rpcd's rule: a non-concurrent call goes alone; nothing goes beside one in flight."""
        return not self.in_flight if not method.concurrent else all(self.in_flight.values())

    def call(self, method, params):
        """Sends one call and waits for its answer: the response, or a sentence saying what went wrong."""
        if self.ended:
            raise Ended(f"not run: {self.ended}")
        if not self.may_send(method):
            raise Ended(f"calls {sorted(self.in_flight)} are still unanswered, and rpcd would hold this one back")
        id = self.send_call(method, params)
        if not self.pump(lambda: id in self.answers, self.timeout):
            self.ended = f"call {id} was never answered"
            raise Ended(f"no answer to {_dumps(params)} within {self.timeout:g} s (a hang: the caller gets -32003 "
                        "at Timeout=, and the call keeps its slot)")
        return self.answers[id]

    def params_for(self, method, optional):
        return {p["name"]: sample(p["schema"]) for p in method.params if p["required"] or optional}

    # Cases -------------------------------------------------------------------------------------------

    def run(self):
        env = {"PATH": PATH, "LANG": "C.UTF-8", "RPCD_HANDLER": self.handler, "RPCD_HANDLER_PROTOCOL": str(PROTOCOL)}
        if "PYTHONPATH" in os.environ:
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        try:
            self.program = Program(self.path, env)
        except OSError as failure:
            self.result("declaration", f"cannot start {self.path}: {failure.strerror or failure}")
            return 1
        try:
            if self.case_declaration():
                self.case_config()
                for method in self.declaration.methods:
                    self.case_call(method)
                self.case_cancel()
                self.case_sequential()
                self.case_flood()
        finally:
            try:
                self.case_exit()
            finally:
                self.program.kill()
            self.stopping = True
            self.pump(lambda: self.eof, 1.0)  # what it wrote before it ended
            self.case_stdout()
        return 1 if self.failed else 0

    def case_declaration(self):
        params = {"protocol": PROTOCOL, "handler": self.handler, "service": self.handler, "config": self.config,
                  "maxLineSize": MAX_LINE}
        try:
            self.program.send({"jsonrpc": "2.0", "id": 0, "method": "rpcd.start", "params": params})
            answered = self.pump(lambda: 0 in self.answers or self.declared_early, START_TIMEOUT)
        except Ended as ended:
            return self.result("declaration", f"no answer to rpcd.start: {ended}")
        if self.declared_early:
            return self.result("declaration", f"{self.declared_early}: the handler is refused for it "
                               "(HANDLER-PROTOCOL.md §9)")
        if not answered:
            return self.result("declaration", f"did not declare itself within {START_TIMEOUT:g} s of rpcd.start "
                               "(rpcd refuses the handler; is standard output flushed after each line?)")
        answer = self.answers[0]
        if "error" in answer:
            message = _get(answer["error"], "message")
            hint = "" if self.config else " (give its [Config] with --config KEY=VALUE)"
            return self.result("declaration", f"refused to start: {message}{hint}")
        if "result" not in answer:
            return self.result("declaration", "answered rpcd.start with neither result nor error")
        try:
            self.declaration = read_declaration(answer["result"], PROTOCOL)
        except Refused as refused:
            return self.result("declaration", f"rpcd refuses it: declared itself wrongly: {refused}")
        names = ", ".join(f"{self.declaration.name}.{m.name}" for m in self.declaration.methods)
        self.result("declaration", detail=names)
        return True

    def case_config(self):
        problem = config_problem(self.config, self.declaration.config)
        if problem:
            return self.result("config", f"rpcd refuses this [Config]: {problem}")
        keys = self.declaration.config
        self.result("config", detail="no keys declared: rpcd hands any over unchecked" if keys is None
                    else "declares " + (", ".join(k["name"] for k in keys) or "no keys"))

    def case_call(self, method):
        name = f"call {self.declaration.name}.{method.name}"
        try:
            shapes = [self.params_for(method, False)]
            if any(not p["required"] for p in method.params):
                shapes.append(self.params_for(method, True))
        except ValueError as failure:
            return self.result(name, f"no valid params can be made from its schemas: {failure}")
        try:
            for params in shapes:
                answer = self.call(method, params)
                problem = _malformed(answer)
                if problem:
                    answered = _head(_dumps(answer).encode())
                    return self.result(name, f"answered {_dumps(params)} with {problem}: {answered}")
        except Ended as ended:
            return self.result(name, str(ended))
        outcome = "error " + str(answer["error"].get("code")) if "error" in answer else "a result"
        self.result(name, detail=f"{len(shapes)} call{'s' if len(shapes) > 1 else ''}, last answered with {outcome}")

    def _pick(self, want=lambda m: True):
        """A method to call again (read-only and concurrent first) with its params, or (None, None)."""
        ranked = sorted(self.declaration.methods, key=lambda m: (not m.read_only, not m.concurrent))
        for method in ranked:
            if want(method):
                try:
                    return method, self.params_for(method, False)
                except ValueError:
                    continue
        return None, None

    def case_cancel(self):
        method, params = self._pick()
        if method is None:
            return self.result("cancel", detail="no method to call")
        try:
            if self.ended or not self.may_send(method):
                raise Ended(f"not run: {self.ended or 'calls are still unanswered'}")
            id = self.send_call(method, params)
            self.program.send({"jsonrpc": "2.0", "method": "rpc.cancel", "params": {"id": id}})
            if not self.pump(lambda: id in self.answers, self.timeout):
                self.ended = f"call {id} was never answered"
                return self.result("cancel", f"call {id} of {method.name}, cancelled at once, got no answer within "
                                   f"{self.timeout:g} s: a cancelled call must still be answered (its result, or "
                                   "-32011)")
            problem = _malformed(self.answers[id])
            if problem:
                return self.result("cancel", f"the cancelled call was answered with {problem}")
            # A cancel crossing the answer: the program ignores it and serves on.
            self.program.send({"jsonrpc": "2.0", "method": "rpc.cancel", "params": {"id": id}})
            self.call(method, params)
        except Ended as ended:
            return self.result("cancel", str(ended))
        error = self.answers[id].get("error")
        how = f"error {error.get('code')}" if isinstance(error, dict) else "its result"
        self.result("cancel", detail=f"{self.declaration.name}.{method.name} answered with {how} after rpc.cancel")

    def case_sequential(self, count=10):
        method, params = self._pick(lambda m: not m.concurrent)
        if method is None:
            return self.result("sequential", detail="no non-concurrent method")
        try:
            for _ in range(count):
                answer = self.call(method, params)
                problem = _malformed(answer)
                if problem:
                    return self.result("sequential", f"a call of {method.name} was answered with {problem}")
        except Ended as ended:
            return self.result("sequential", f"{method.name}, one call at a time: {ended}")
        self.result("sequential", detail=f"{count} calls of {self.declaration.name}.{method.name}, one at a time")

    def case_flood(self):
        method, params = self._pick(lambda m: m.read_only)
        if method is None:
            return self.result("flood", detail="no read-only method")
        name = f"{self.declaration.name}.{method.name}"
        started = time.monotonic()
        try:
            if self.ended or not self.may_send(method):
                raise Ended(f"not run: {self.ended or 'calls are still unanswered'}")
            if method.concurrent:
                ids = list(range(self.next_id, self.next_id + self.flood))
                self.in_flight.update((id, True) for id in ids)
                self.next_id += self.flood
                lines = [{"jsonrpc": "2.0", "id": id, "method": name, "params": params} for id in ids]
                threading.Thread(target=self._write_all, args=(lines,), daemon=True).start()
                complete = self.pump(lambda: all(id in self.answers for id in ids), self.flood_seconds)
            else:
                ids = []
                for _ in range(self.flood):
                    if time.monotonic() - started > self.flood_seconds:
                        break
                    ids.append(self.send_call(method, params))
                    if not self.pump(lambda: ids[-1] in self.answers, self.timeout):
                        break
                complete = len(ids) == self.flood and ids[-1] in self.answers
        except Ended as ended:
            return self.result("flood", f"{self.flood} calls of {name}: {ended}" if not str(ended).startswith("not run")
                               else str(ended))
        seconds = time.monotonic() - started
        answered = sum(id in self.answers for id in ids)
        if not complete or seconds > self.flood_seconds:
            self.ended = self.ended or "the flood was not answered"
            return self.result("flood", f"{answered} of {self.flood} calls of {name} answered within "
                               f"{self.flood_seconds:g} s")
        bad = next((p for p in (_malformed(self.answers[id]) for id in ids) if p), None)
        if bad:
            return self.result("flood", f"a call of {name} was answered with {bad}")
        how = "pipelined" if method.concurrent else "one at a time"
        self.result("flood", detail=f"{self.flood} calls of {name} {how}, answered in {seconds:.2f} s")

    def _write_all(self, lines):
        try:
            for line in lines:
                self.program.send(line)
        except Ended:
            pass

    def case_exit(self):
        self.program.close_input()
        try:
            status = self.program.process.wait(timeout=EXIT_GRACE)
        except subprocess.TimeoutExpired:
            return self.result("exit", f"still running {EXIT_GRACE:g} s after its standard input closed (rpcd sends "
                               "SIGTERM, then SIGKILL): exit when reading standard input gives end of file")
        if self.crashed:
            return self.result("exit", f"not run: {self.ended}")
        if status != 0:
            return self.result("exit", f"{self.program.termination()} after its standard input closed; rpcd "
                               "expects status 0")
        self.result("exit", detail="status 0 after its standard input closed")

    def case_stdout(self):
        for name in ("error codes", "stdout", "events"):
            problems = self.problems[name]
            if problems:
                more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
                self.result(name, problems[0] + more)
            elif name == "events":
                self.result(name, detail=f"{len(self.events)} emitted" if self.events else "none emitted")
            else:
                self.result(name)
        self.program.error_reader.join(timeout=1)
        bad = [line for line in self.program.errors
               if (m := _LEVEL.match(line)) and (len(m.group(1)) != 1 or int(m.group(1)) > 7)]
        if bad:
            return self.result("stderr", f"{_head(bad[0])}: a level is <0> to <7> (rpcd logs the line whole, at info)")
        count = len(self.program.errors)
        self.result("stderr", detail=f"{count} log line{'' if count == 1 else 's'}")


def _get(value, key):
    return value.get(key) if isinstance(value, dict) else None


def _head(line):
    text = line.decode("utf-8", "replace")
    return repr(text if len(text) <= 80 else text[:80] + "…")


def _malformed(answer):
    """What makes ANSWER not a response rpcd takes (the words of HANDLER-PROTOCOL.md §4), or None."""
    has_result, has_error = "result" in answer, "error" in answer
    if has_result == has_error:
        return "both 'result' and 'error'" if has_result else "neither 'result' nor 'error'"
    if has_error:
        error = answer["error"]
        code = _get(error, "code")
        if isinstance(code, bool) or not isinstance(code, int) or not isinstance(_get(error, "message"), str):
            return "an 'error' without an integer 'code' and a string 'message' (the caller gets -32603)"
    return None


def _assignment(text):
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="rpcd-handler-check", description="Runs a handler program through the cases of rpcd's handler "
        "protocol (docs/HANDLER-PROTOCOL.md), as rpcd would run it, and says what is wrong.")
    parser.add_argument("program", help="the program, as Exec= would name it")
    parser.add_argument("--config", action="append", type=_assignment, default=[], metavar="KEY=VALUE",
                        help="a [Config] value handed over in rpcd.start (repeatable)")
    parser.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                        help="how long a call may take to be answered (default 5)")
    parser.add_argument("--flood", type=int, default=1000, metavar="N",
                        help="how many calls of a read-only method the flood sends (default 1000)")
    parser.add_argument("--flood-seconds", type=float, default=10.0, metavar="SECONDS",
                        help="how long the flood may take to be answered (default 10)")
    args = parser.parse_args(argv)
    check = Check(os.path.abspath(args.program), dict(args.config), args.timeout, max(1, args.flood),
                  args.flood_seconds, sys.stdout)
    return check.run()


if __name__ == "__main__":
    sys.exit(main())
