"""rpcd-handler-check PROGRAM [--config KEY=VALUE ...]: runs a handler program as rpcd would (docs/HANDLER-
PROTOCOL.md) through the protocol's cases, and prints one line per case, `ok NAME` or `FAIL NAME: why`.
Exit status 0 when every case passed, 1 when one failed, 2 for a usage error.

rpcd-handler-check FILE.conf checks a handler file instead: rpcd itself reads it (`rpcd --check-config` with
a handlers directory holding only it: its sections, keys, [Command] templates and params, exactly as rpcd
would load it; for Exec=, rpcd starts the program for its declaration), then, for an Exec= file, the program
is checked as above with the file's [Config] and TasksMax=. Command methods' commands are not run.

The program is started as rpcd starts it (no arguments, working directory /, rpcd's environment, plus
PYTHONPATH when set, so that a Python program can be checked from a checkout) and spoken to as rpcd speaks:
ids 0, 1, 2 …, members in rpcd's order, a non-concurrent method's call only when nothing else is in flight.

Besides the cases, the check watches what a broken program does to the machine, each bounded so that the
check itself ends: lines nobody asked for (past --max-unasked, a flood: the program is killed), its processes
and threads (sampled from /proc every 50 ms; past --tasks-max, forking without end: all are killed), the
processes it leaves behind when it exits, and a standard output still open after it exited.

Threading: the main thread drives the cases; one thread reads the program's standard output into a queue,
another drains its standard error, one samples its processes, and the flood's calls are written by a thread
of their own.
"""

import argparse
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from ._declaration import RESERVED, Refused, config_problem, read_declaration, sample, schema_problem
from ._program import MAX_LINE, Ended, Program, describe
from .handler import PROTOCOL

__all__ = ["main"]

START_TIMEOUT = 10.0   # rpcd's HandlerProgram.declarationTimeout
EXIT_GRACE = 5.0       # rpcd's HandlerProgram.stopGrace
PIPE_GRACE = 1.0       # how long rpcd's module host waits for a program whose standard output is closed, and here
                       # how long the check waits for the pipe to close after the program exited
TASKS_MAX = 128        # TasksMax='s default (docs/CONFIG.md)
SAMPLE = 0.05          # how often the check counts the program's processes
MAX_UNASKED = 10000    # lines other than answers a program may write before it counts as flooding
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ALLOWED_RESERVED = (-32602, -32603, -32011)
_LEVEL = re.compile(rb"<([0-9]+)>")
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class Check:
    """The cases, run in order against one program; `report` holds (name, failure or None, detail)."""

    def __init__(self, path, config, timeout, flood, flood_seconds, out, tasks_max=TASKS_MAX, max_unasked=MAX_UNASKED):
        self.path, self.config, self.timeout = path, config, timeout
        self.flood, self.flood_seconds, self.out = flood, flood_seconds, out
        self.tasks_max, self.max_unasked = tasks_max, max_unasked
        self.unasked, self.first_unasked, self.flooded = 0, None, None
        self.peak_tasks, self.forked = 0, None
        self.exited_at, self.pipe_held = None, None
        self.left = None         # its processes when the check killed them for holding the pipe
        self.watching = threading.Event()
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
        """One item of the program's output; an answer lands in `answers`. Lines that are not answers are
        counted: past max_unasked, a flood."""
        if not self._read(kind, line) and kind == "line":
            self.unasked += 1
            self.first_unasked = self.first_unasked or line
            if self.unasked > self.max_unasked and self.flooded is None:
                seconds = time.monotonic() - self.started
                self.flooded = (f"a flood: more than {self.max_unasked} lines nobody asked for (events, garbage, "
                                f"answers to no call) within {seconds:.1f} s, the first {_head(self.first_unasked)}")
                self.program.kill()  # its output ends; the case that waited sees the end

    def _read(self, kind, line):
        """True when LINE was an answer to a call in flight."""
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
        return True

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
                kind, line = self.program.next(timeout=min(left, 0.1))
            except queue.Empty:
                self._held_pipe()
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
                if self.killed_for:
                    self.ended = f"the check killed it for {self.killed_for}"
                    raise Ended(f"not run: {self.ended}")
                if self.pipe_held:
                    self.ended += ", and a process it started held its standard output open (see pipe)"
                self.program.error_reader.join(timeout=1)
                last = f"; its last log line: {_head(self.program.errors[-1])}" if self.program.errors else ""
                raise Ended(f"{self.ended}: a crash (rpcd answers its calls in flight -32005 and starts it "
                            f"again){last}")
            self._take(kind, line)
        return True

    @property
    def killed_for(self):
        """Why the check killed the program (a flood, a fork bomb), or None."""
        return "a flood of output" if self.flooded else "forking without end" if self.forked else None

    def _held_pipe(self):
        """A program that exited while a process it started holds its standard output: rpcd's host waits for
        the program, not the pipe; the check notes the holders and kills them, so that the end is seen."""
        if self.pipe_held is not None or self.program.process.poll() is None:
            return
        self.exited_at = self.exited_at or time.monotonic()
        if time.monotonic() - self.exited_at < PIPE_GRACE:
            return
        self.left = self.program.tree()
        holders = self.program.holders(self.left)
        self.pipe_held = (f"its standard output was still open {PIPE_GRACE:g} s after it exited "
                          f"({self.program.termination()}), held by {describe(holders) or 'a process that has ended'}"
                          ", which it started and which inherited it: rpcd waits for the program, not the pipe, and "
                          "kills them with it, so what they write is lost; start them with another standard output "
                          "(>/dev/null, or >&2 for the log)")
        self.program.kill()

    def watch(self):
        """The program's processes and threads, every SAMPLE s: past tasks_max, all are killed."""
        while not self.watching.wait(SAMPLE):
            tasks = self.program.tree()
            count = sum(task.threads for task in tasks)
            self.peak_tasks = max(self.peak_tasks, count)
            if count > self.tasks_max and self.forked is None:
                seconds = time.monotonic() - self.started
                self.forked = (f"forking without end: {count} processes and threads at once within {seconds:.1f} s, "
                               f"past TasksMax= ({self.tasks_max}; the module host's own threads count too), "
                               f"{len(tasks)} processes: {describe(tasks)}")
                self.program.kill()

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
        self.started = time.monotonic()
        try:
            self.program = Program(self.path, env)
        except OSError as failure:
            self.result("declaration", f"cannot start {self.path}: {failure.strerror or failure}")
            return 1
        watcher = threading.Thread(target=self.watch, daemon=True)
        watcher.start()
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
                self.stopping = True
                self.case_left_behind()
            finally:
                self.watching.set()
                watcher.join()
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

    def case_left_behind(self):
        """What is left once it exited: the processes it started, and a standard output they hold open."""
        if self.killed_for or self.program.process.poll() is None:
            why = f"the check killed it for {self.killed_for}" if self.killed_for else "it did not exit"
            for name in ("pipe", "children"):
                self.result(name, f"not run: {why}")
            return
        if self.pipe_held is None:
            self.pump(lambda: self.eof or self.pipe_held is not None, PIPE_GRACE + 0.5)
        if self.pipe_held is not None:
            self.result("pipe", self.pipe_held)
        else:
            self.result("pipe", detail="closed when it exited")
        left = self.left if self.left is not None else self.program.tree()
        if left:
            return self.result("children", f"{len(left)} process{'es' if len(left) > 1 else ''} it started still "
                               f"running after it exited: {describe(left)}; rpcd kills them with it (its cgroup), "
                               "cutting off what they do: wait for them before exiting")
        self.result("children", detail="none left when it exited")

    def case_stdout(self):
        if self.flooded:
            self.result("output", self.flooded + "; rpcd reads and drops or forwards each one, spending its "
                        "time on them: emit events when something happens, not in a loop")
        elif self.forked:
            self.result("output", f"not run: the check killed it for {self.killed_for}")
        else:
            self.result("output", detail=f"{self.program.received} lines, {self.unasked} not answers")
        if self.forked:
            self.result("processes", self.forked + ": past it rpcd's fork fails (EAGAIN); the check killed them all")
        else:
            self.result("processes", detail=f"at most {self.peak_tasks} at once, threads included")
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
        count = self.program.error_count
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


def check_handler_file(path, rpcd, out):
    """The handler file as `rpcd --check-config` reads it: (status, its [Handler] and [Config] as rpcd printed
    them). Prints the `handler file` case."""
    def result(failure=None, detail=None):
        print(f"FAIL handler file: {failure}" if failure else f"ok handler file ({detail})", file=out, flush=True)
        return (1 if failure else 0), sections
    sections = {}
    rpcd = rpcd or shutil.which("rpcd", path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin:/sbin")
    if rpcd is None:
        return result("rpcd is not installed here: a handler file is checked by rpcd's own reading of it "
                      "(rpcd --check-config); --rpcd PATH names its executable")
    directory, name = os.path.split(path)
    with tempfile.TemporaryDirectory(prefix="rpcd-handler-check.") as scratch:
        handlers = os.path.join(scratch, "handlers.d")
        os.mkdir(handlers)
        try:
            shutil.copy(path, handlers)
            if os.path.isdir(path + ".d"):
                shutil.copytree(path + ".d", os.path.join(handlers, name + ".d"))
        except OSError as failure:
            return result(f"cannot read {path}: {failure.strerror or failure}")
        open(os.path.join(scratch, "rpcd.conf"), "w").close()
        try:
            done = subprocess.run([rpcd, "--config", os.path.join(scratch, "rpcd.conf"), "--handlers-dir", handlers,
                                   "--check-config"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as failure:
            return result(f"{rpcd} --check-config: {failure}")
        output = (done.stdout + done.stderr).replace(handlers, directory or ".")
    errors = [line.removeprefix("# error: ") for line in output.splitlines() if line.startswith("# error: ")]
    if errors or done.returncode != 0:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        first = errors[0] if errors else (output.strip().splitlines() or ["no output"])[-1]
        return result(f"{first}{more}; rpcd refuses the handler (rpcd --check-config: exit status {done.returncode})")
    section, service = None, os.path.splitext(name)[0]
    for line in output.partition(f"# handler '{service}'")[2].splitlines():
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            sections.setdefault(section, []).append({})
        elif section and "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            sections[section][-1][key] = value
    handler = sections.get("Handler", [{}])[0]
    service = handler.get("Service") or service
    commands = [command.get("Method") for command in sections.get("Command", [])]
    if commands:
        return result(detail=f"rpcd accepts it: {len(commands)} command method{'s' if len(commands) > 1 else ''}, "
                      + ", ".join(f"{service}.{method}" for method in commands) + "; their commands are not run")
    if handler.get("Exec"):
        return result(detail=f"rpcd accepts it; its program {handler['Exec']} declared itself to rpcd")
    return result(detail=f"rpcd accepts it: Module={handler.get('Module')}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="rpcd-handler-check", description="Runs a handler program through the cases of rpcd's handler "
        "protocol (docs/HANDLER-PROTOCOL.md), as rpcd would run it, and says what is wrong.")
    parser.add_argument("program", help="the program, as Exec= would name it; or a handler file, NAME.conf")
    parser.add_argument("--config", action="append", type=_assignment, default=[], metavar="KEY=VALUE",
                        help="a [Config] value handed over in rpcd.start (repeatable)")
    parser.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                        help="how long a call may take to be answered (default 5)")
    parser.add_argument("--flood", type=int, default=1000, metavar="N",
                        help="how many calls of a read-only method the flood sends (default 1000)")
    parser.add_argument("--flood-seconds", type=float, default=10.0, metavar="SECONDS",
                        help="how long the flood may take to be answered (default 10)")
    parser.add_argument("--tasks-max", type=int, default=TASKS_MAX, metavar="N",
                        help=f"how many processes and threads it may have at once (default {TASKS_MAX}, TasksMax=)")
    parser.add_argument("--max-unasked", type=int, default=MAX_UNASKED, metavar="N",
                        help=f"how many lines other than answers (events, garbage) it may write (default {MAX_UNASKED})")
    parser.add_argument("--rpcd", metavar="PATH", help="rpcd's executable, which reads a handler file "
                        "(default: rpcd on PATH, /usr/sbin, /usr/bin)")
    args = parser.parse_args(argv)
    program, config, tasks_max = os.path.abspath(args.program), dict(args.config), args.tasks_max
    if program.endswith(".conf"):
        status, sections = check_handler_file(program, args.rpcd, sys.stdout)
        handler = sections.get("Handler", [{}])[0]
        if status or not handler.get("Exec"):
            return status
        program = handler["Exec"]
        config = dict(sections.get("Config", [{}])[0], **config)
        limit = handler.get("TasksMax", str(TASKS_MAX))
        tasks_max = int(limit) if limit.isdigit() else 1 << 22
    check = Check(program, config, args.timeout, max(1, args.flood), args.flood_seconds, sys.stdout,
                  max(1, tasks_max), max(1, args.max_unasked))
    return check.run()


if __name__ == "__main__":
    sys.exit(main())
