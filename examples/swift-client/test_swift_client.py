"""examples/swift-client, built as its own package the way an app developer would build it, run against a real
rpcd serving calc and kv (from the build tree) and hello (examples/modules/hello-c, written in C).

Needs the Swift toolchain, a C compiler and the built daemon and modules (RPCD_BIN_DIR, set by `make
test-python`). The package depends on rpcd's whole package, so it is built in rpcd's own build folder
(RPCD_SCRATCH, by default .build): SwiftPM compiles the rpcd targets and dependencies (swift-syntax too) with
the same commands for either root package, so it reuses what the rpcd build compiled and builds only the
example's own target.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))
sys.path.insert(0, os.path.join(ROOT, "examples/python"))
from test_rpcd_client import BIN_DIR, Daemon  # noqa: E402

SCRATCH = os.environ.get("RPCD_SCRATCH", os.path.join(ROOT, ".build"))


class SwiftClientTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        subprocess.run(
            ["swift", "build", "--package-path", HERE, "--scratch-path", SCRATCH],
            check=True, stdout=subprocess.DEVNULL)
        cls.client = os.path.join(SCRATCH, "debug", "swift-client")
        # calc and kv as `make run` serves them, and hello from its C example.
        cls.handlers = tempfile.mkdtemp(prefix="rpcd-swift-client-")
        for name in ("calc.conf", "kv.conf"):
            shutil.copy(os.path.join(ROOT, "config/handlers.d", name), cls.handlers)
        hello_build = os.path.join(cls.handlers, "hello-c")
        shutil.copytree(os.path.join(ROOT, "examples/modules/hello-c"), hello_build)
        subprocess.run(
            ["make", "-C", hello_build, "RPCD_INCLUDE=" + os.path.join(ROOT, "Sources/CRPCDModule/include")],
            check=True, stdout=subprocess.DEVNULL)
        shutil.copy(os.path.join(HERE, "../modules/hello-c/hello.conf"), cls.handlers)
        # One module directory for all three, as an installation has (/usr/lib/rpcd/modules).
        cls.modules = os.path.join(cls.handlers, "modules")
        os.mkdir(cls.modules)
        for name in ("libcalc.so", "libkv.so"):
            shutil.copy(os.path.join(BIN_DIR, name), cls.modules)
        shutil.copy(os.path.join(hello_build, "hello.so"), cls.modules)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.handlers, ignore_errors=True)

    def run_client(self, *arguments):
        daemon = Daemon(handlers_dir=self.handlers, module_dir=self.modules)
        try:
            # The Unix socket: kv.set changes state, which the default access rules allow only to root and the
            # rpcd group, known by their socket credentials (docs/SECURITY.md).
            result = subprocess.run(
                [self.client, daemon.socket_path, *arguments], capture_output=True, text=True, timeout=120)
        finally:
            daemon.stop()
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout.splitlines()

    def test_typed_calls_to_calc_kv_and_a_c_module(self):
        lines = self.run_client("--hello")
        self.assertEqual(lines[:10], [
            "calc.add(a: 1, b: 2) = 3.0",
            "calc.divide(dividend: 1, divisor: 4) = 0.25",
            "calc.sum([1, 2, 3.5]) = 6.5",
            "calc.divide(dividend: 10, divisor: 0) threw DivisionByZero(dividend: 10.0), code 1",
            'kv.set(key: "greeting", value: "hi") = true',
            'kv.get(key: "greeting") = "hi"',
            'kv.list() = ["greeting"]',
            'kv.delete(key: "greeting") = true',
            'kv.get(key: "greeting") threw NoSuchKey(key: "greeting")',
            lines[9],
        ])
        self.assertRegex(
            lines[9], r"^OldCalculator refused: service 'calc': this client was compiled against interface "
                      r"fingerprint [0-9a-f]{16}, the server's is [0-9a-f]{16}; not calling it")
        self.assertEqual(lines[10:], ['hello.greet(name: "Ann") = Hello, Ann!', "hello.greet(name: nil) = Hello, world!"])

    def test_an_error_is_reported_not_trapped(self):
        # Over TCP the shipped access rules let local peers make read-only calls only: kv.set is refused, as
        # the README says, and the program reports it and exits 1 instead of trapping.
        daemon = Daemon(handlers_dir=self.handlers, module_dir=self.modules)
        try:
            result = subprocess.run([self.client, daemon.tcp_address], capture_output=True, text=True, timeout=120)
        finally:
            daemon.stop()
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(result.stderr, 'swift-client: Access denied (-32007): {"method":"kv.set"}\n')
        self.assertIn("calc.add(a: 1, b: 2) = 3.0", result.stdout)

    def test_typed_and_untyped_calls_in_one_run(self):
        lines = [line for line in self.run_client("--bench", "20000") if line.startswith("bench")]
        self.assertEqual(len(lines), 2)
        for line in lines:
            print(line, file=sys.stderr)
            self.assertRegex(line, r"^bench round \d: untyped \d+ calls/s, typed \d+ calls/s \(20000 calls each\)$")


if __name__ == "__main__":
    unittest.main()
