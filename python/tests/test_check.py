"""rpcd-handler-check (rpcd.check) on the examples, which pass, and on the broken programs of tests/programs/,
one of each kind issue 37's security list names (a flood of output, garbage, half a line, a hang, forking
without end, children that outlive it, a pipe held open after it exits) and a few more, which fail with the
case named and a clear reason. Each run is bounded: a hanging program is given --timeout 1; the one that does
not exit costs the 5 s rpcd gives it, the one that never declares itself the 10 s; the flood and the fork
bomb are killed by the check, and are bounded themselves in case it does not.

A handler file (the command-method example) is checked by rpcd's own reading of it: those tests need the
rpcd of RPCD_BIN_DIR (`make test-python-package` sets it) and are skipped without it."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
ROOT = os.path.dirname(PACKAGE)
PROGRAMS = os.path.join(HERE, "programs")
sys.path.insert(0, PACKAGE)

from rpcd._declaration import Refused, read_declaration, sample, schema_problem  # noqa: E402


def check(program, *options):
    """(exit status, {case: line}) of rpcd-handler-check PROGRAM OPTIONS."""
    done = subprocess.run([sys.executable, "-m", "rpcd.check", program, *options], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, PYTHONPATH=PACKAGE))
    cases = {}
    for line in done.stdout.splitlines():
        verdict, _, rest = line.partition(" ")
        name = rest.split(":")[0].split(" (")[0]
        cases[name] = line
        assert verdict in ("ok", "FAIL"), line
    return done.returncode, cases, done.stdout + done.stderr


class Examples(unittest.TestCase):
    def assertPasses(self, program, *options):
        status, cases, output = check(program, *options)
        self.assertEqual(status, 0, output)
        for case in ("declaration", "config", "cancel", "sequential", "flood", "exit", "pipe", "children", "output",
                     "processes", "error codes", "stdout", "events", "stderr"):
            self.assertTrue(cases.get(case, "").startswith("ok "), f"{case}:\n{output}")
        return cases

    def test_the_python_example_passes(self):
        cases = self.assertPasses(os.path.join(ROOT, "examples", "python-handler", "notes.py"), "--config", "MaxNotes=5")
        self.assertIn("notes.add, notes.search", cases["declaration"])
        self.assertIn("ok call notes.add", cases["call notes.add"])
        self.assertIn("1000 calls of notes.search pipelined", cases["flood"])
        self.assertIn("emitted", cases["events"])

    def test_the_shell_example_passes(self):
        cases = self.assertPasses(os.path.join(ROOT, "examples", "program-handlers", "uptime.sh"))
        self.assertIn("1000 calls of uptime.seconds one at a time", cases["flood"])
        self.assertIn("10 calls of uptime.seconds, one at a time", cases["sequential"])

    def test_the_command_handler_file_passes(self):
        status, cases, output = check(os.path.join(ROOT, "examples", "command-handlers", "units.conf"),
                                      "--rpcd", rpcd())
        self.assertEqual(status, 0, output)
        self.assertEqual(cases["handler file"], "ok handler file (rpcd accepts it: 2 command methods, units.isActive, "
                         "units.diskUsage; their commands are not run)")

    def test_a_refused_configuration_is_the_program_s_own_message(self):
        status, cases, output = check(os.path.join(ROOT, "examples", "python-handler", "notes.py"),
                                      "--config", "MaxNotes=many")
        self.assertEqual(status, 1, output)
        self.assertIn("FAIL declaration: refused to start: [Config] MaxNotes=many is not an integer",
                      cases["declaration"])


def rpcd():
    path = os.path.join(os.environ.get("RPCD_BIN_DIR", "/nonexistent"), "rpcd")
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest("no rpcd in RPCD_BIN_DIR: a handler file is checked by rpcd --check-config")
    return path


class BrokenPrograms(unittest.TestCase):
    def assertFails(self, name, case, *reasons, options=()):
        status, cases, output = check(os.path.join(PROGRAMS, name), *options)
        self.assertEqual(status, 1, output)
        self.assertIn(case, cases, output)
        self.assertTrue(cases[case].startswith(f"FAIL {case}: "), output)
        for reason in reasons:
            self.assertIn(reason, cases[case], output)
        return cases

    def test_garbage_on_standard_output(self):
        self.assertFails("garbage.py", "stdout", "a line that is not a JSON-RPC 2.0 message: 'handling 1'")

    def test_half_a_line_then_exit(self):
        cases = self.assertFails("half_line.py", "stdout", "half a line", '{"jsonrpc":"2.0","id":1,"res')
        self.assertIn("it ended (exit status 0): a crash", cases["call broken.ping"])

    def test_never_answers(self):
        cases = self.assertFails("never_answers.py", "call broken.ping", "no answer to {} within 1 s", "a hang",
                                 options=("--timeout", "1"))
        self.assertIn("FAIL flood: not run: call 1 was never answered", cases["flood"])

    def test_a_crash(self):
        self.assertFails("crash.py", "call broken.ping", "exit status 1", "a crash", "RuntimeError: a bug")

    def test_a_reserved_error_code(self):
        self.assertFails("reserved_code.py", "error codes", "-32007, a code rpcd reserves")

    def test_a_declaration_left_in_a_buffer(self):
        self.assertFails("unflushed.py", "declaration", "did not declare itself within 10 s", "flushed")

    def test_a_bad_declaration(self):
        self.assertFails("bad_declaration.py", "declaration", "method 'add': parameter 'text' is declared twice")

    def test_not_exiting_after_standard_input_closes(self):
        self.assertFails("no_exit.py", "exit", "still running 5 s after its standard input closed")

    def test_a_flood_answered_too_slowly(self):
        self.assertFails("slow.py", "flood", "of 40 calls of broken.ping answered within 0.5 s",
                         options=("--flood", "40", "--flood-seconds", "0.5"))

    def test_an_undeclared_event_and_a_level_that_does_not_exist(self):
        cases = self.assertFails("noisy.py", "events", "'broken.surprise' is not a declared event")
        self.assertIn("FAIL stderr: '<9>no such level'", cases["stderr"])

    def test_a_flood_of_output(self):
        cases = self.assertFails("flood_output.py", "output", "a flood: more than 10000 lines nobody asked for",
                                 "broken.tick", "not in a loop")
        self.assertIn("FAIL call broken.ping: not run: the check killed it for a flood of output",
                      cases["call broken.ping"])

    def test_forking_without_end(self):
        # Which processes the line names first depends on the moment: the script's copies, or their sleeps.
        cases = self.assertFails("fork_bomb.sh", "processes", "forking without end", "past TasksMax= (128",
                                 "the check killed them all")
        self.assertIn("FAIL children: not run: the check killed it for forking without end", cases["children"])

    def test_children_that_outlive_it(self):
        cases = self.assertFails("outlives.py", "children", "1 process it started still running after it exited",
                                 " sleep;", "wait for them before exiting")
        self.assertTrue(cases["exit"].startswith("ok exit"), cases["exit"])
        self.assertIn("ok pipe (closed when it exited)", cases["pipe"])

    def test_a_pipe_held_open_after_it_exits(self):
        cases = self.assertFails("holds_pipe.sh", "pipe", "still open 1 s after it exited (exit status 0), held by",
                                 " sleep, which it started and which inherited it")
        self.assertIn("FAIL children: 1 process", cases["children"])

    def test_a_program_that_cannot_be_started(self):
        self.assertFails("_program.py", "declaration", "cannot start", "Permission denied")


class HandlerFiles(unittest.TestCase):
    def test_a_command_rpcd_refuses_is_named_with_rpcd_s_reason(self):
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "broken.conf")
            with open(path, "w") as file:
                file.write("[Command]\nMethod=list\nExec=ls {dir}\n")
            status, cases, output = check(path, "--rpcd", rpcd())
        self.assertEqual(status, 1, output)
        self.assertIn(f"FAIL handler file: {path}:3: invalid value 'ls {{dir}}' for Exec=: placeholder {{dir}} names "
                      "no Param=", cases["handler file"])

    def test_without_rpcd_it_says_so(self):
        status, cases, output = check(os.path.join(ROOT, "examples", "command-handlers", "units.conf"),
                                      "--rpcd", "/nonexistent/rpcd")
        self.assertEqual(status, 1, output)
        self.assertIn("FAIL handler file: /nonexistent/rpcd --check-config:", cases["handler file"])


class DeclarationRules(unittest.TestCase):
    """rpcd's rules (HandlerProgramDeclaration.swift), with its messages."""

    def refusal(self, service, protocol=1):
        with self.assertRaises(Refused) as refused:
            read_declaration({"protocol": protocol, "services": [service]}, 1)
        return str(refused.exception)

    def test_rules(self):
        method = {"name": "m", "params": []}
        self.assertEqual(self.refusal({"name": "s", "version": "1", "methods": [method]}, protocol=2),
                         "'protocol' must be 1")
        self.assertIn("service name", self.refusal({"name": "Notes", "version": "1", "methods": [method]}))
        self.assertIn("service name", self.refusal({"name": "a--b", "version": "1", "methods": [method]}))
        self.assertEqual(self.refusal({"name": "s", "methods": [method]}), "the service needs a 'version'")
        self.assertEqual(self.refusal({"name": "s", "version": "1", "methods": []}),
                         "the service needs at least one method")
        self.assertEqual(self.refusal({"name": "s", "version": "1", "methods": [{"name": "m"}]}),
                         "method 'm' needs 'params' (an array)")
        self.assertEqual(self.refusal({"name": "s", "version": "1", "methods": [method, method]}),
                         "method 'm' is declared twice")
        self.assertIn("an error needs an integer 'code' outside", self.refusal(
            {"name": "s", "version": "1", "methods": [dict(method, errors=[{"code": -32001, "message": "x"}])]}))
        self.assertIn("an event's 'name'", self.refusal(
            {"name": "s", "version": "1", "methods": [method], "events": [{"name": "1x"}]}))
        accepted = read_declaration({"protocol": 1.0, "services": [{"name": "s", "version": "1", "methods": [
            dict(method, readOnly=True, concurrent=1)]}]}, 1)
        self.assertTrue(accepted.methods[0].read_only)
        self.assertFalse(accepted.methods[0].concurrent, "only true is true, as for rpcd")

    def test_params_are_made_from_the_enforced_part_of_schemas(self):
        for schema, value in [({"type": "integer", "minimum": 1.5}, 2), ({"type": "integer", "maximum": -3}, -3),
                              ({"type": ["null", "string"]}, "check"), ({"enum": ["a", "b"]}, "a"),
                              ({"type": "integer", "enum": ["x", 7]}, 7), ({}, "check"), ({"type": "boolean"}, False)]:
            self.assertEqual(sample(schema), value, schema)
            self.assertIsNone(schema_problem(value, schema))
        with self.assertRaises(ValueError):
            sample({"type": "integer", "minimum": 5, "maximum": 4})


if __name__ == "__main__":
    unittest.main()
