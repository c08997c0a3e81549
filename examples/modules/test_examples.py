"""The module guide's out-of-tree examples, built the way docs/MODULES.md tells a module author to, then
loaded into a real rpcd and called over the wire.

Needs a C compiler, the Swift toolchain and the built daemon (RPCD_BIN_DIR, set by `make test`).
"""

import json
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

# Where hello-swift's Package.swift finds the Swift SDK: rpcd-dev's copy, as a module author's package names it.
INSTALLED_SDK = "/usr/share/rpcd/swift-sdk"


def pkg_config_from_checkout(*arguments):
    """pkg-config as docs/MODULES.md has a module author run it on a source checkout: rpcd-module-uninstalled.pc."""
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(ROOT, "packaging"))
    return subprocess.run(["pkg-config", *arguments, "rpcd-module"], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def offline():
    """A command prefix that runs a command in a network namespace of its own (nothing but a down loopback), or
    None where unshare cannot make one (not root, and no unprivileged user namespaces)."""
    for prefix in (["unshare", "--net"], ["unshare", "--net", "--map-root-user"]):
        if subprocess.run(prefix + ["true"], capture_output=True).returncode == 0:
            return prefix
    return None


def build_swift_module(test, package, sdk):
    """Builds the Swift module package PACKAGE (examples/modules/hello-swift) as a module author with rpcd-dev
    does, against the Swift SDK package in the folder SDK: a copy of it, whose Package.swift names SDK where it
    names rpcd-dev's, built with no network. Checks that the SDK is the only package it resolves, and returns the
    folder holding the built library. The copy goes when TEST ends."""
    build = tempfile.mkdtemp(prefix="rpcd-swift-module-")
    test.addCleanup(shutil.rmtree, build, ignore_errors=True)
    copy = os.path.join(build, os.path.basename(package))
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns(".build*", "Package.resolved", ".swiftpm"))
    with open(os.path.join(copy, "Package.swift")) as f:
        manifest = f.read()
    test.assertEqual(manifest.count(f'"{INSTALLED_SDK}"'), 1, "Package.swift names rpcd-dev's SDK once")
    with open(os.path.join(copy, "Package.swift"), "w") as f:
        f.write(manifest.replace(f'"{INSTALLED_SDK}"', '"' + sdk + '"'))
    prefix = offline()
    if prefix is None:
        test.skipTest("unshare cannot make a network namespace here (needs root or user namespaces)")
    graph = json.loads(subprocess.run(
        prefix + ["swift", "package", "--package-path", copy, "show-dependencies", "--format", "json"],
        check=True, capture_output=True, text=True).stdout)
    test.assertEqual([(d["identity"], d["path"], d["dependencies"]) for d in graph["dependencies"]],
                     [("swift-sdk", sdk, [])], "the SDK and nothing else")
    subprocess.run(prefix + ["swift", "build", "--package-path", copy], check=True, stdout=subprocess.DEVNULL)
    test.assertFalse(os.path.exists(os.path.join(copy, "Package.resolved")), "nothing to pin")
    return os.path.join(copy, ".build", "debug")


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

    def test_swift_module_builds_offline_against_the_sdk_package_and_loads(self):
        # hello-swift against the checkout's Swift SDK package (swift-sdk/, found as docs/MODULES.md says through
        # pkg-config's swiftsdkdir), with no network and nothing else resolved; then served by rpcd.
        sdk = os.path.normpath(pkg_config_from_checkout("--variable=swiftsdkdir"))
        self.assertEqual(sdk, os.path.join(ROOT, "swift-sdk"))
        module_dir = build_swift_module(self, os.path.join(HERE, "hello-swift"), sdk)
        type(self).swift_fingerprint = self.check_hello(os.path.join(HERE, "hello-swift"), module_dir)

    def test_the_installed_sdk_is_the_same_files_without_links(self):
        # What rpcd-dev ships (make install's install-swift-sdk): swift-sdk/ with each link into Sources/ replaced
        # by the files it points to, so that the copy in /usr/share stands alone and builds as the test above.
        destdir = tempfile.mkdtemp(prefix="rpcd-swift-sdk-")
        self.addCleanup(shutil.rmtree, destdir, ignore_errors=True)
        subprocess.run(["make", "-C", ROOT, "--no-print-directory", "install-swift-sdk", "DESTDIR=" + destdir,
                        "PREFIX=/usr"], check=True, stdout=subprocess.DEVNULL)
        installed = destdir + INSTALLED_SDK

        def files(top):
            return sorted(os.path.relpath(os.path.join(d, f), top) for d, _, names in os.walk(top, followlinks=True)
                          for f in names)

        self.assertEqual(files(installed), files(os.path.join(ROOT, "swift-sdk")))
        for name in files(installed):
            with open(os.path.join(installed, name), "rb") as a, open(os.path.join(ROOT, "swift-sdk", name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)
        links = [os.path.join(d, n) for d, dirs, names in os.walk(installed) for n in dirs + names
                 if os.path.islink(os.path.join(d, n))]
        self.assertEqual(links, [])

    def test_pkg_config_from_a_source_checkout(self):
        # docs/MODULES.md: PKG_CONFIG_PATH=<checkout>/packaging finds rpcd-module-uninstalled.pc, whose flags
        # build hello.c and whose version is rpcd's.
        pkg_config = pkg_config_from_checkout
        version = subprocess.run([os.path.join(BIN_DIR, "rpcd"), "--version"], check=True, capture_output=True,
                                 text=True).stdout.strip()
        self.assertEqual(pkg_config("--modversion"), version)
        for variable, inside in (("moduledir", ".build/debug"), ("handlersdir", "config/handlers.d"),
                                 ("swiftsdkdir", "swift-sdk")):
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
