"""rpcd.handler driven as rpcd will drive it: the example notes handler (examples/python-handler/notes.py)
runs as a subprocess, and the test writes protocol lines on its standard input and reads its standard output
and standard error (docs/HANDLER-PROTOCOL.md)."""

import json
import os
import re
import select
import subprocess
import sys
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
EXAMPLE = os.path.join(PACKAGE, "..", "examples", "python-handler", "notes.py")
sys.path.insert(0, PACKAGE)

from rpcd.handler import schema_of  # noqa: E402


def start_line(config=None, protocol=1):
    return {"jsonrpc": "2.0", "id": 0, "method": "rpcd.start",
            "params": {"protocol": protocol, "handler": "notes", "service": "notes", "config": config or {},
                       "maxLineSize": 4194304}}


class Program:
    """A handler program on pipes, as rpcd runs it."""

    def __init__(self, path=EXAMPLE, source=None, argv=None):
        argv = argv or ([sys.executable, "-c", source] if source else [sys.executable, path])
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=PACKAGE))
        self.pending = b""

    def send(self, message):
        line = message if isinstance(message, bytes) else json.dumps(message, separators=(",", ":")).encode()
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def read(self, timeout=10):
        """The next message the program wrote."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.process.stdout], [], [], left)[0]:
                raise AssertionError(f"no line from the program within {timeout} s; stderr: {self.stderr()}")
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"the program closed its output; stderr: {self.stderr()}")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def start(self, config=None):
        self.send(start_line(config))
        return self.read()

    def stop(self):
        """Closes standard input as rpcd does; returns (exit status, standard error)."""
        self.process.stdin.close()
        status = self.process.wait(10)
        rest = self.process.stdout.read()
        self.process.stdout.close()
        return status, self.stderr(), rest

    def stderr(self):
        if self.process.poll() is None:
            return "(running)"
        text = self.process.stderr.read().decode()
        self.process.stderr.close()
        return text


class HandlerProtocolTests(unittest.TestCase):
    def setUp(self):
        self.program = Program()
        self.addCleanup(self._cleanup)

    def _cleanup(self):
        if self.program.process.poll() is None:
            self.program.process.kill()
            self.program.process.wait()
        for stream in (self.program.process.stdin, self.program.process.stdout, self.program.process.stderr):
            if not stream.closed:
                stream.close()

    def call(self, id, method, params=None, **extra):
        message = {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {},
                   "caller": {"local": True, "uid": 0, "user": "root"}}
        message.update(extra)
        self.program.send(message)

    def test_declaration_from_type_hints(self):
        reply = self.program.start()
        self.assertEqual(reply["id"], 0)
        declaration = reply["result"]
        self.assertEqual(declaration["protocol"], 1)
        (service,) = declaration["services"]
        self.assertEqual((service["name"], service["version"]), ("notes", "1.0.0"))
        methods = {method["name"]: method for method in service["methods"]}
        self.assertEqual(methods["add"]["params"], [
            {"name": "text", "schema": {"type": "string"}, "required": True},
            {"name": "tags", "schema": {"type": "array", "items": {"type": "string"}}, "required": False}])
        self.assertEqual(methods["add"]["errors"], [{"code": 1001, "message": "Too many notes"}])
        self.assertEqual(methods["add"]["result"]["schema"], {"type": "integer"})
        self.assertFalse(methods["add"]["readOnly"])
        self.assertTrue(methods["search"]["readOnly"])
        self.assertEqual(methods["search"]["summary"].split(",")[0], "The notes containing WORD")
        self.assertEqual(service["config"], [{"name": "MaxNotes", "schema": {"type": "integer"}, "required": False}])
        self.assertEqual(service["events"], [{"name": "added", "schema": {"type": "object"}}])
        self.assertEqual(self.program.stop()[0], 0)

    def test_calls_errors_and_events(self):
        self.program.start({"MaxNotes": "1"})
        self.call(1, "notes.add", {"text": "milk"})
        event = self.program.read()
        self.assertEqual(event, {"jsonrpc": "2.0", "method": "rpc.event",
                                 "params": {"event": "notes.added", "data": {"number": 1, "text": "milk", "tags": []}}})
        self.assertEqual(self.program.read(), {"jsonrpc": "2.0", "id": 1, "result": 1})
        self.call(2, "notes.add", {"text": "eggs"})
        self.assertEqual(self.program.read()["error"], {"code": 1001, "message": "Too many notes", "data": {"limit": 1}})
        self.call(3, "notes.nothing")
        self.assertEqual(self.program.read()["error"]["code"], -32601)
        self.call(4, "notes.add", {"txt": "x"})
        self.assertEqual(self.program.read()["error"]["data"], {"detail": "unknown parameter 'txt'"})
        self.call(5, "notes.search", {"word": "mi"})
        self.assertEqual(self.program.read(), {"jsonrpc": "2.0", "id": 5, "result": ["milk"]})
        status, stderr, rest = self.program.stop()
        self.assertEqual((status, rest), (0, b""))

    def test_async_calls_overlap_and_answer_as_they_complete(self):
        self.program.start()
        self.call(1, "notes.search", {"wait_ms": 300})
        self.call(2, "notes.search", {"wait_ms": 0})
        self.assertEqual(self.program.read()["id"], 2)
        self.assertEqual(self.program.read()["id"], 1)

    def test_cancel_answers_the_call_with_32011(self):
        self.program.start()
        self.call(1, "notes.search", {"wait_ms": 60000})
        self.call(2, "notes.search")
        self.assertEqual(self.program.read()["id"], 2)  # call 1 is running
        self.program.send({"jsonrpc": "2.0", "method": "rpc.cancel", "params": {"id": 1}})
        self.assertEqual(self.program.read(), {"jsonrpc": "2.0", "id": 1,
                                               "error": {"code": -32011, "message": "Call cancelled"}})
        # Cancelled in the same read as the call (before its task ran), and cancels of unknown ids.
        self.program.send(b'{"jsonrpc":"2.0","id":3,"method":"notes.search","params":{"wait_ms":5000}}\n'
                          b'{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":3}}\n'
                          b'{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":99}}')
        self.assertEqual(self.program.read()["error"]["code"], -32011)
        self.assertEqual(self.program.stop()[0], 0)

    def test_config_is_checked_at_start(self):
        reply = self.program.start({"MaxNotes": "many"})
        self.assertEqual(reply["error"], {"code": -32602, "message": "[Config] MaxNotes=many is not an integer",
                                          "data": {"key": "MaxNotes"}})
        self.assertEqual(self.program.stop()[0], 0)

    def test_unknown_config_key_is_refused(self):
        reply = self.program.start({"MaxNote": "3"})
        self.assertEqual(reply["error"]["data"], {"key": "MaxNote"})
        self.assertIn("known: MaxNotes", reply["error"]["message"])

    def test_garbage_and_half_lines_are_logged_not_fatal(self):
        self.program.start()
        self.program.send(b"not json")
        self.program.send(b"[1,2]")
        self.program.send(b"")
        self.call(1, "notes.search")
        self.assertEqual(self.program.read()["id"], 1)
        self.program.process.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"notes.sea')  # half a line, then EOF
        status, stderr, rest = self.program.stop()
        self.assertEqual((status, rest), (0, b""))
        self.assertIn("<4>Ignoring a line that is not JSON: b'not json'", stderr)
        self.assertIn("<4>Ignoring a line that is not a message", stderr)
        self.assertIn("<4>Standard input ended inside a line; ignored", stderr)

    def test_eof_waits_for_calls_in_flight(self):
        self.program.start()
        self.call(1, "notes.search", {"wait_ms": 200})
        status, stderr, rest = self.program.stop()
        self.assertEqual(status, 0)
        self.assertEqual(json.loads(rest)["id"], 1)


class SDKBehaviourTests(unittest.TestCase):
    """Programs written for one test each: logging, stdout protection, plain and blocking methods."""

    def run_program(self, body, lines):
        source = "from rpcd.handler import *\nimport logging, sys, os, subprocess, threading\n" + textwrap.dedent(body)
        program = Program(source=source)
        try:
            program.send(start_line())
            replies = [program.read()]
            for line in lines:
                program.send(line)
            replies += [program.read() for line in lines if "id" in line]
            status, stderr, rest = program.stop()
            self.assertEqual(status, 0, stderr)
            return replies, stderr
        finally:
            if program.process.poll() is None:
                program.process.kill()
                program.process.wait()

    def test_stdout_goes_to_the_log_and_levels_are_prefixed(self):
        replies, stderr = self.run_program("""
            s = Service("t", "1")
            @s.method
            def hello() -> str:
                print("stray print")
                os.system("echo from a child")
                s.log.warning("careful\\nsecond line")
                s.log.debug("not shown at the default level")
                s.log.error("bad")
                return "hi"
            s.run()
        """, [{"jsonrpc": "2.0", "id": 1, "method": "t.hello", "params": {}}])
        self.assertEqual(replies[1]["result"], "hi")
        self.assertIn("stray print\n", stderr)
        self.assertIn("from a child\n", stderr)
        self.assertIn("<4>careful\n<4>second line\n", stderr)
        self.assertIn("<3>bad\n", stderr)
        self.assertNotIn("not shown", stderr)

    def test_exceptions_are_internal_errors_with_a_logged_traceback(self):
        replies, stderr = self.run_program("""
            s = Service("t", "1")
            @s.method
            def boom():
                raise KeyError("secret")
            s.run()
        """, [{"jsonrpc": "2.0", "id": 1, "method": "t.boom", "params": {}}])
        self.assertEqual(replies[1]["error"], {"code": -32603, "message": "Internal error"})
        self.assertIn("<3>t.boom failed", stderr)
        self.assertIn("<3>KeyError: 'secret'", stderr)

    def test_blocking_methods_run_in_threads_and_see_their_call(self):
        replies, _ = self.run_program("""
            import time
            s = Service("t", "1")
            @s.method(blocking=True, concurrent=False)
            def who(pause: float = 0) -> dict:
                time.sleep(pause)
                call = current_call()
                return {"thread": threading.current_thread() is not threading.main_thread(),
                        "caller": call.caller, "deadline": call.deadline is not None}
            s.run()
        """, [{"jsonrpc": "2.0", "id": 1, "method": "t.who", "params": {"pause": 0.1},
               "caller": {"local": False, "address": "192.0.2.1"}, "deadline": 5000}])
        self.assertEqual(replies[1]["result"], {"thread": True, "caller": {"local": False, "address": "192.0.2.1"},
                                                "deadline": True})

    def test_on_start_refusal_and_required_config(self):
        replies, _ = self.run_program("""
            s = Service("t", "1", config={"File": str})
            @s.on_start
            def open_file():
                open(s.config["File"])
            @s.method
            def x(): pass
            s.run()
        """, [])
        self.assertEqual(replies[0]["error"]["message"], "[Config] File= is required")


DOCUMENT = os.path.join(PACKAGE, "..", "docs", "HANDLER-PROTOCOL.md")


@unittest.skipUnless(os.path.exists(DOCUMENT), "docs/HANDLER-PROTOCOL.md is in a checkout only")
class DocumentTests(unittest.TestCase):
    """docs/HANDLER-PROTOCOL.md's examples are what they claim to be."""

    def setUp(self):
        with open(DOCUMENT) as file:
            self.text = file.read()

    def test_json_examples_are_json(self):
        blocks = re.findall(r"```json\n(.*?)```", self.text, re.S)
        self.assertGreater(len(blocks), 5)
        for block in blocks:
            for line in block.strip().split("\n"):
                json.loads(line)
        exchange = re.search(r"## 10\. A complete exchange.*?```\n(.*?)```", self.text, re.S).group(1)
        for line in exchange.split("\n"):
            if line.startswith(("→ ", "← ")):
                json.loads(line[2:])

    def test_the_shell_example_speaks_the_protocol(self):
        script = re.search(r"```sh\n(#!/bin/sh.*?)```", self.text, re.S).group(1)
        program = Program(argv=["/bin/sh", "-c", script])
        try:
            program.send(b'{"jsonrpc":"2.0","id":0,"method":"rpcd.start","params":{"protocol":1,"handler":"lines",'
                         b'"config":{},"maxLineSize":4194304}}')
            declaration = program.read()["result"]
            self.assertEqual(declaration["services"][0]["methods"][0]["name"], "count")
            # A client's params naming another method and id cannot fool it.
            program.send(b'{"jsonrpc":"2.0","id":12,"method":"lines.count","params":{"x":"\\"id\\":0,\\"method\\":\\"rpcd.start\\""},'
                         b'"caller":{"local":true}}')
            program.send(b'{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":12}}')
            answer = program.read()
            self.assertEqual(answer["id"], 12)
            with open("/etc/passwd") as passwd:
                self.assertEqual(answer["result"], len(passwd.readlines()))
            self.assertEqual(program.stop()[0], 0)
        finally:
            if program.process.poll() is None:
                program.process.kill()
                program.process.wait()


class SchemaTests(unittest.TestCase):
    def test_type_hints(self):
        from typing import Any, Literal, Optional
        self.assertEqual(schema_of(int), {"type": "integer"})
        self.assertEqual(schema_of(float), {"type": "number"})
        self.assertEqual(schema_of(bool), {"type": "boolean"})
        self.assertEqual(schema_of(list[int]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(schema_of(dict[str, float]), {"type": "object", "additionalProperties": {"type": "number"}})
        self.assertEqual(schema_of(Optional[str]), {"type": "string"})
        self.assertEqual(schema_of(int | None), {"type": "integer"})
        self.assertEqual(schema_of(int | str), {"type": ["integer", "string"]})
        self.assertEqual(schema_of(Literal["a", "b"]), {"type": "string", "enum": ["a", "b"]})
        self.assertEqual(schema_of(Any), {})
        self.assertEqual(schema_of({"type": "string", "maxLength": 3}), {"type": "string", "maxLength": 3})
        with self.assertRaises(TypeError):
            schema_of(complex)


if __name__ == "__main__":
    unittest.main()
