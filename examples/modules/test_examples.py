"""The module guide's out-of-tree examples, built the way docs/MODULES.md tells a module author to, then
loaded into a real rpcd and called over the wire.

Needs a C compiler, the Swift toolchain and the built daemon (RPCD_BIN_DIR, set by `make test`).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))
sys.path[:0] = [os.path.join(ROOT, "examples/python"), os.path.join(ROOT, "python")]
from rpcd import RPCError  # noqa: E402
from rpcd.client import Client  # noqa: E402
from test_rpcd_client import BIN_DIR, Daemon  # noqa: E402


class OutOfTreeModuleTests(unittest.TestCase):
    """Each example serves the same interface, `hello.greet(name?)`, so both get the same checks."""

    def check_hello(self, handlers_dir, module_dir):
        daemon = Daemon(handlers_dir=handlers_dir, module_dir=module_dir)
        try:
            with Client(daemon.tcp_address) as client:
                self.assertEqual(client.call("hello.greet", ["Ann"]), "Hello, Ann!")
                self.assertEqual(client.call("hello.greet", {"name": "Bob"}), "Hello, Bob!")
                self.assertEqual(client.call("hello.greet"), "Hello, world!")
                # Both bind params the same way (hello.c through RPCD_METHOD_BIND_PARAMS): rpcd's -32602 and detail.
                for params, detail in (([1], "parameter 'name': expected a string, got a number"),
                                       ({"nom": "Ann"}, "unknown parameter 'nom'"),
                                       (["Ann", "Bob"], "too many parameters: expected at most 1, got 2")):
                    with self.assertRaises(RPCError) as refused:
                        client.call("hello.greet", params)
                    self.assertEqual((refused.exception.code, refused.exception.data), (-32602, {"detail": detail}))
                self.assertEqual(client.call("hello.greet", [None]), "Hello, world!")
                self.assertEqual(client.call("hello.greet", ["\"A\\n\u00e9\""]), "Hello, \"A\\n\u00e9\"!")
                methods = client.call("rpc.discover")["methods"]
                greet = next(m for m in methods if m["name"] == "hello.greet")
                self.assertEqual([p["name"] for p in greet["params"]], ["name"])
                info = client.call("rpcd.info")
                return next(s for s in info["services"] if s["name"] == "hello")["fingerprint"]
        finally:
            daemon.stop()

    def test_c_module_builds_with_only_the_header_and_loads(self):
        build = tempfile.mkdtemp(prefix="rpcd-hello-c-")
        self.addCleanup(shutil.rmtree, build, ignore_errors=True)
        for name in ("hello.c", "Makefile", "hello.conf"):
            shutil.copy(os.path.join(HERE, "hello-c", name), build)
        subprocess.run(
            ["make", "-C", build, "RPCD_INCLUDE=" + os.path.join(ROOT, "Sources/CRPCDModule/include")],
            check=True, stdout=subprocess.DEVNULL)
        type(self).c_fingerprint = self.check_hello(build, build)
        # The same in rpcd's own process (the default runs it in a module host process).
        in_process = os.path.join(build, "in-process")
        os.mkdir(in_process)
        with open(os.path.join(build, "hello.conf")) as f:
            conf = f.read().replace("[Handler]\n", "[Handler]\nIsolation=none\n")
        with open(os.path.join(in_process, "hello.conf"), "w") as f:
            f.write(conf)
        self.assertEqual(self.check_hello(in_process, build), type(self).c_fingerprint)

    def test_the_guide_shows_hello_c_s_own_lines(self):
        # Each C snippet of MODULES.md section 4 (pieces between "..." lines) is in hello.c, which the test above
        # builds and loads: the guide's C is compiled and run.
        with open(os.path.join(ROOT, "docs/MODULES.md")) as f:
            guide = f.read()
        with open(os.path.join(HERE, "hello-c", "hello.c")) as f:
            source = f.read()
        section = guide[guide.index("## 4. Writing a module in C"):guide.index("## 5. Building and loading")]
        snippets = re.findall(r"```c\n(.*?)```", section, re.S)
        self.assertGreaterEqual(len(snippets), 3)
        for snippet in snippets:
            for piece in re.split(r"^\s*\.\.\.\n", snippet, flags=re.M):
                self.assertIn(piece, source)

    def test_swift_module_builds_as_its_own_package_and_loads(self):
        # In rpcd's own build folder (RPCD_SCRATCH, `make test-python` passes it), as examples/swift-client's
        # test does: the rpcd targets it depends on compile with the same commands there, so SwiftPM reuses
        # what the rpcd build compiled and builds only the module's own target.
        scratch = os.environ.get("RPCD_SCRATCH", os.path.join(ROOT, ".build"))
        subprocess.run(
            ["swift", "build", "--package-path", os.path.join(HERE, "hello-swift"), "--scratch-path", scratch],
            check=True, stdout=subprocess.DEVNULL)
        type(self).swift_fingerprint = self.check_hello(os.path.join(HERE, "hello-swift"), os.path.join(scratch, "debug"))

    def test_pkg_config_from_a_source_checkout(self):
        # docs/MODULES.md: PKG_CONFIG_PATH=<checkout>/packaging finds rpcd-module-uninstalled.pc, whose flags
        # build hello.c and whose version is rpcd's.
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(ROOT, "packaging"))

        def pkg_config(*arguments):
            return subprocess.run(["pkg-config", *arguments, "rpcd-module"], env=env, check=True,
                                  capture_output=True, text=True).stdout.strip()

        version = subprocess.run([os.path.join(BIN_DIR, "rpcd"), "--version"], check=True, capture_output=True,
                                 text=True).stdout.strip()
        self.assertEqual(pkg_config("--modversion"), version)
        for variable, inside in (("moduledir", ".build/debug"), ("handlersdir", "config/handlers.d")):
            self.assertEqual(os.path.normpath(pkg_config("--variable=" + variable)), os.path.join(ROOT, inside))
        with open(os.path.join(ROOT, "Sources/CRPCDModule/include/rpcd_module.h")) as f:
            abi = re.search(r"#define RPCD_MODULE_ABI_VERSION (\d+)", f.read()).group(1)
        self.assertEqual(pkg_config("--variable=abi"), abi)
        build = tempfile.mkdtemp(prefix="rpcd-pkg-config-")
        self.addCleanup(shutil.rmtree, build, ignore_errors=True)
        subprocess.run(
            ["cc", *pkg_config("--cflags").split(), "-std=gnu11", "-shared", "-fPIC", "-fvisibility=hidden",
             "-o", os.path.join(build, "hello.so"), os.path.join(HERE, "hello-c", "hello.c")], check=True)

    def test_the_guide_shows_the_package_this_test_builds(self):
        # MODULES.md's Package.swift for a Swift module is hello-swift's, which the test above builds.
        with open(os.path.join(ROOT, "docs/MODULES.md")) as f:
            guide = f.read()
        shown = re.findall(r"```swift\n(// swift-tools-version.*?)```", guide, re.S)
        with open(os.path.join(HERE, "hello-swift", "Package.swift")) as f:
            self.assertEqual(shown, [f.read()])

    def test_z_both_declare_the_same_interface(self):
        # Named to run last: the fingerprint hashes method signatures, not the language they were written in.
        c, swift = getattr(type(self), "c_fingerprint", None), getattr(type(self), "swift_fingerprint", None)
        if c is None or swift is None:
            self.skipTest("an example did not build; see its own test")
        self.assertEqual(c, swift)


if __name__ == "__main__":
    unittest.main()
