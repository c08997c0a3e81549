"""The Debian packages on a Debian 12 root that never saw Swift, under its own systemd (issue: packaging).

`make test-package` builds the packages twice (`make deb`, then `make deb DEB_VERSION=...` for an upgrade)
into .build-deb/test/, and the Debian root below (`python3 test_package.py --base-root`), then this test:

- makes a minimal Debian 12 root with debootstrap from the mirror this machine's apt uses (read from its
  sources, never written down here), cached in .build-deb/debootstrap/ between runs, and copies it afresh;
- downloads what the packages depend on with apt inside that root (the only step with the network), then
  boots the root's systemd in private namespaces without a network (systemd_namespace.py, as the systemd
  tests do) and, as an administrator would: installs rpcd with apt, checks it runs (ping, a module call,
  journal, reload), installs the example modules (rpcd-examples), serves Listen= entries added as the docs
  say and advertises them over DNS-SD through the root's own avahi-daemon, builds and loads a C module with
  rpcd-dev, gcc and pkg-config only (and, outside the root, a Swift module against rpcd-dev's Swift SDK), calls through python3-rpcd's client, serves its example handler under the shipped unit and checks it with
  rpcd-handler-check, installs the Python package with pip from a copy of the checkout as a user who is not root (a
  venv, offline: build requirements from Debian's wheels), upgrades to the rebuilt packages keeping an edited rpcd.conf, and purges
  everything.

Needs root. Under CI=true a missing prerequisite fails instead of skipping. Figures go to stderr.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from systemd_namespace import SystemdNamespace  # noqa: E402
from test_systemd import make_pki  # noqa: E402
from netns import parse_browse  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "modules"))
import test_examples as module_examples  # noqa: E402  (a module, not its TestCase: unittest finds no test in it here)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORK = os.path.join(ROOT, ".build-deb")
PACKAGES = os.path.join(WORK, "test")
CACHE = os.path.join(WORK, "debootstrap")
SUITE = "bookworm"
# What the root holds besides debootstrap's minimal base: the init system a server runs, and its bus.
INCLUDE = "systemd,dbus"
DEBS_INSIDE = "/var/cache/rpcd-test"
APT = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "-q", "-o", "Dpkg::Use-Pty=0"]


def apt_mirror():
    """The Debian archive this machine's apt is configured with (deb822 .sources or one-line lists)."""
    candidates = []
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path) as file:
            for stanza in file.read().split("\n\n"):
                fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
                if "deb" in fields.get("Types", "").split() and SUITE in fields.get("Suites", "").split():
                    candidates += fields.get("URIs", "").split()
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
        if os.path.exists(path):
            with open(path) as file:
                for line in file:
                    match = re.match(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
                    if match and match.group(2) == SUITE:
                        candidates.append(match.group(1))
    for uri in candidates:
        if "security" not in uri:
            return uri
    return None


def package_files(version_suffix=""):
    """(rpcd.deb, rpcd-dev.deb, rpcd-examples.deb, python3-rpcd.deb) of the test build, the plain one or the
    upgrade."""
    directory = os.path.join(PACKAGES, "v2" if version_suffix else "v1")
    found = [glob.glob(os.path.join(directory, pattern))
             for pattern in ("rpcd_*_amd64.deb", "rpcd-dev_*_all.deb", "rpcd-examples_*_amd64.deb",
                             "python3-rpcd_*_all.deb")]
    return tuple(paths[0] if paths else None for paths in found)


def prerequisites(packages=True):
    if os.geteuid() != 0:
        return "the package test needs root (debootstrap, chroot, namespaces)"
    for tool in ("debootstrap", "unshare", "nsenter", "chroot", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is missing: run scripts/install-deps.sh"
    if apt_mirror() is None:
        return f"no Debian {SUITE} mirror in this machine's apt sources"
    if packages and (None in package_files() or None in package_files("upgrade")):
        return "no packages in .build-deb/test: run `make test-package`, which builds them"
    return None


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def cached_base_root():
    """A minimal Debian root, made once per mirror and kept in CACHE."""
    mirror = apt_mirror()
    stamp_text = f"{SUITE} {mirror} minbase {INCLUDE}\n"
    base, stamp = os.path.join(CACHE, "root"), os.path.join(CACHE, "root.stamp")
    if os.path.exists(stamp):
        with open(stamp) as file:
            if file.read() == stamp_text:
                return base
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(CACHE, exist_ok=True)
    started = time.monotonic()
    run(["debootstrap", "--variant=minbase", f"--include={INCLUDE}", SUITE, base, mirror], timeout=1800)
    with open(stamp, "w") as file:
        file.write(stamp_text)
    print(f"\ndebootstrap {SUITE} from {mirror}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    return base


def in_root(root, script, timeout=900):
    """Runs a shell script chrooted in ROOT with the host's network (apt's downloads), in a mount namespace of
    its own so that /proc and /dev mounted for it vanish with it."""
    wrapper = (f'set -eu; R="{root}"; mount --make-rprivate /; mount -t proc proc "$R/proc"; '
               f'mount --rbind /dev "$R/dev"; exec chroot "$R" /bin/sh -eu -c "$1"')
    return run(["unshare", "--mount", "--fork", "/bin/sh", "-c", wrapper, "in_root", script], timeout=timeout)


namespace = None
root = None


def setUpModule():
    global namespace, root
    problem = prerequisites()
    if problem:
        if os.geteuid() != 0 and os.environ.get("CI") != "true":
            raise unittest.SkipTest(problem)
        raise RuntimeError(problem)
    base = cached_base_root()
    root = os.path.join(WORK, "root")
    shutil.rmtree(root, ignore_errors=True)
    run(["cp", "-a", base, root])
    assert not glob.glob(os.path.join(root, "opt/swift*")) and not glob.glob(os.path.join(root, "usr/bin/swift*"))
    shutil.copy("/etc/resolv.conf", os.path.join(root, "etc/resolv.conf"))
    inside = root + DEBS_INSIDE
    os.makedirs(inside)
    for path in package_files() + package_files("upgrade"):
        shutil.copy(path, inside)
    for name in ("hello.c", "hello.conf"):
        shutil.copy(os.path.join(ROOT, "examples", "modules", "hello-c", name), inside)
    # Everything the tests install later, fetched now: the namespace has no network.
    rpcd, dev, examples, python = (os.path.basename(p) for p in package_files())
    in_root(root, f"apt-get update -q && apt-get install -y -q --download-only {DEBS_INSIDE}/{rpcd} "
                  f"{DEBS_INSIDE}/{dev} {DEBS_INSIDE}/{examples} {DEBS_INSIDE}/{python} gcc pkg-config "
                  "avahi-daemon avahi-utils python3-venv python3-wheel-whl")
    namespace = SystemdNamespace.booted(os.path.join(WORK, "ns"), timeout=120, root=root)


def tearDownModule():
    if namespace is not None:
        namespace.close()
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


class PackageTests(unittest.TestCase):
    """One story, in order: install, use, develop, upgrade, purge."""

    def sh(self, script, check=True, timeout=300):
        result = namespace.run("/bin/sh", "-c", script, check=False, timeout=timeout)
        if check:
            self.assertEqual(result.returncode, 0, f"{script}\nstdout: {result.stdout}\nstderr: {result.stderr}")
        return result

    def put(self, path, text):
        """Writes a file into the root, as an administrator with an editor would."""
        target = root + path
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as file:
            file.write(text)

    def wait_active(self):
        try:
            namespace.wait_for(
                lambda: self.sh("systemctl is-active rpcd.service", check=False).stdout.strip() == "active",
                timeout=60, what="rpcd.service to be active")
        except Exception:
            status = self.sh("systemctl status --no-pager rpcd.service rpcd.socket; journalctl --no-pager -n 40",
                             check=False)
            self.fail(f"rpcd.service is not active:\n{status.stdout}{status.stderr}")

    def test_install_use_develop_upgrade_purge(self):
        rpcd, dev, examples, python = (os.path.basename(p) for p in package_files())
        rpcd2, _, examples2, _ = (os.path.basename(p) for p in package_files("upgrade"))
        self.assertEqual(self.sh("command -v swift swiftc || ls -d /opt/swift* /usr/lib/swift 2>/dev/null", check=False).stdout, "",
                         "the root must not have Swift")

        # Install: apt resolves the dependencies; the maintainer scripts enable and start the units.
        self.sh(" ".join(APT + ["install", f"{DEBS_INSIDE}/{rpcd}"]))
        self.wait_active()
        self.assertEqual(self.sh("systemctl is-enabled rpcd.service").stdout.strip(), "enabled")
        self.assertEqual(self.sh("ldd /usr/bin/rpcd | grep -c 'not found' || true").stdout.strip(), "0")
        self.assertIn("/usr/lib/rpcd/swift/libswiftCore.so", self.sh("ldd /usr/bin/rpcd").stdout)
        self.assertRegex(self.sh("rpcctl ping").stdout, r"^pong from /run/rpcd/rpcd.sock")
        # The example modules are a package of their own (echo.sleep lets any local user hold a call slot):
        # rpcd alone serves its own methods only. Installing rpcd-examples makes rpcd reload (its dpkg trigger
        # on the module directories), and they are served when apt returns.
        self.assertNotIn("calc.add", self.sh("rpcctl list").stdout)
        self.assertEqual(self.sh("ls /usr/lib/rpcd/modules /usr/lib/rpcd/handlers.d").stdout.split(),
                         ["/usr/lib/rpcd/handlers.d:", "/usr/lib/rpcd/modules:"])
        self.sh(" ".join(APT + ["install", f"{DEBS_INSIDE}/{examples}"]))
        self.assertIn("calc.add", self.sh("rpcctl list").stdout)
        self.assertEqual(self.sh("rpcctl call calc.add 1 2").stdout.strip(), "3")
        journal = self.sh("journalctl -u rpcd.service --no-pager -o cat").stdout
        self.assertIn("Started", journal)
        pid = self.sh("systemctl show -p MainPID --value rpcd.service").stdout.strip()
        self.sh("systemctl reload rpcd.service")
        namespace.wait_for(lambda: "Reloaded" in self.sh("journalctl -u rpcd.service --no-pager -o cat").stdout,
                           timeout=30, what="the reload's journal entry")
        self.assertEqual(self.sh("systemctl show -p MainPID --value rpcd.service").stdout.strip(), pid)
        # `systemctl reload` tells the truth: it fails on a configuration rpcd refuses (which keeps serving the
        # previous one), and returns only once a good one serves.
        self.put("/etc/rpcd/rpcd.conf.d/60-broken.conf", "[Server]\nMaxFrameSize=16MB\n")
        refused = self.sh("systemctl reload rpcd.service", check=False)
        self.assertNotEqual(refused.returncode, 0, "a refused reload fails systemctl reload")
        self.assertEqual(self.sh("systemctl is-active rpcd.service").stdout.strip(), "active")
        self.assertEqual(self.sh("rpcctl call calc.add 1 1").stdout.strip(), "2")
        self.sh("rm /etc/rpcd/rpcd.conf.d/60-broken.conf && systemctl reload rpcd.service")

        # DNS-SD (DISCOVERY.md): the root's own avahi-daemon, from the mirror, on a veth pair made inside this
        # namespace's network namespace (mDNS needs an interface that is not loopback; nothing here reaches the
        # machine's network). The harness masks avahi-daemon for the tests that share the machine's /run; this
        # root has its own. With only the package's loopback listeners rpcd advertises nothing.
        self.sh("rm -f /run/systemd/system/avahi-daemon.service /run/systemd/system/avahi-daemon.socket && "
                "systemctl daemon-reload")
        run(["nsenter", "-t", str(namespace.pid), "-n", "sh", "-c",
             "ip link add veth0 type veth peer name veth1 && ip address add 10.231.254.1/24 dev veth0 && "
             "ip link set veth0 up && ip link set veth1 up"])
        self.sh(" ".join(APT + ["install", "avahi-daemon", "avahi-utils"]))
        started = self.sh("systemctl start avahi-daemon.service", check=False)
        if started.returncode != 0:
            status = self.sh("systemctl status --no-pager avahi-daemon.service dbus.service; "
                             "journalctl --no-pager -n 30 -u avahi-daemon.service", check=False)
            self.fail(f"avahi-daemon did not start: {started.stderr}\n{status.stdout}{status.stderr}")
        self.sh("systemctl restart rpcd.service")
        self.wait_active()
        self.assertEqual(parse_browse(self.sh("avahi-browse -rpt --no-db-lookup _rpcd._tcp").stdout), [])

        # Listen= as README and SECURITY.md say, in a drop-in beside the shipped conffile: TCP on every address
        # and TLS. The package enables rpcd.service only, which binds them after a restart.
        self.assertEqual(self.sh("systemctl is-enabled rpcd.socket", check=False).stdout.strip(), "disabled")
        pki = make_pki([])
        for name in ("server.pem", "server.key", "ca.pem"):
            self.put(f"/etc/rpcd/tls/{name}", pki[name])
        self.sh("chgrp rpcd /etc/rpcd/tls/server.key && chmod 0640 /etc/rpcd/tls/server.key")
        self.put("/etc/rpcd/rpcd.conf.d/50-listen.conf",
                 "[Server]\nListen=0.0.0.0:7390\nListen=tls://0.0.0.0:7391\n"
                 "[TLS]\nCertificate=/etc/rpcd/tls/server.pem\nPrivateKey=/etc/rpcd/tls/server.key\n")
        self.sh("systemctl restart rpcd.service")
        self.wait_active()
        self.assertEqual(self.sh("rpcctl call calc.add 1 2 --address 127.0.0.2:7390").stdout.strip(), "3")
        self.assertEqual(self.sh("rpcctl call calc.add 2 2 --address tls://127.0.0.1:7391 --server-name localhost "
                                 "--ca /etc/rpcd/tls/ca.pem").stdout.strip(), "4")
        listeners = self.sh("rpcctl info --json").stdout
        self.assertIn('"0.0.0.0:7390"', listeners)
        self.assertIn('"tls://0.0.0.0:7391"', listeners)
        # Now reachable, so advertised: each example module as SERVICE on HOST, at the veth's address.
        advertised = namespace.wait_for(
            lambda: [record for record in parse_browse(
                self.sh("avahi-browse -rpt --no-db-lookup _rpcd._tcp", check=False).stdout)
                if record["address"] == "10.231.254.1"],
            timeout=30, what="rpcd's services in avahi-browse")
        host = self.sh("hostname").stdout.strip()
        self.assertIn(f"calc on {host}", {record["name"] for record in advertised})
        self.assertIn(7390, {record["port"] for record in advertised})
        pid = self.sh("systemctl show -p MainPID --value rpcd.service").stdout.strip()

        sizes = self.sh(f"dpkg-deb -I {DEBS_INSIDE}/{rpcd} | sed -n 's/ *Installed-Size: //p'; du -k {DEBS_INSIDE}/{rpcd}").stdout.split()
        print(f"\nrpcd .deb {sizes[1]} KiB, installed {sizes[0]} KiB", file=sys.stderr)

        # A C module, with only gcc, pkg-config and rpcd-dev, installed where README.Debian says modules an
        # administrator builds go (not in dpkg's /usr/lib/rpcd/modules).
        self.sh(" ".join(APT + ["install", f"{DEBS_INSIDE}/{dev}", "gcc", "pkg-config"]))
        self.sh(f"mkdir -p /usr/local/lib/rpcd/modules && cc $(pkg-config --cflags rpcd-module) -std=c99 -Wall -Werror "
                f"-shared -fPIC -fvisibility=hidden -o /usr/local/lib/rpcd/modules/hello.so {DEBS_INSIDE}/hello.c")
        self.sh(f"cp {DEBS_INSIDE}/hello.conf /etc/rpcd/handlers.d/hello.conf && systemctl reload rpcd.service")
        # Served as soon as systemctl reload returned.
        self.assertIn("hello.greet", self.sh("rpcctl list").stdout)
        self.assertEqual(self.sh("rpcctl call hello.greet world").stdout.strip(), '"Hello, world!"')
        # rpcd-dev's Swift SDK package, where pkg-config says, standing alone (its files, not links into a
        # checkout). This root has no Swift: test_swift_module_builds_against_rpcd_dev_s_sdk builds against it.
        self.assertEqual(self.sh("pkg-config --variable=swiftsdkdir rpcd-module").stdout.strip(),
                         module_examples.INSTALLED_SDK)
        self.sh(f"test -f {module_examples.INSTALLED_SDK}/Package.swift && "
                f"test -f {module_examples.INSTALLED_SDK}/Sources/RPCModuleSDK/RPCModule.swift")
        self.assertEqual(self.sh(f"find {module_examples.INSTALLED_SDK} -type l").stdout, "")

        # The Python package (python3-rpcd, Debian's Python policy): its client calls over the Unix socket and
        # TCP, and its example handler (a program handler: rpcd's side is issue 37's) declares itself when
        # spoken to over pipes as rpcd will.
        self.sh(" ".join(APT + ["install", f"{DEBS_INSIDE}/{python}"]))
        self.assertEqual(self.sh("python3 -c 'from rpcd.client import Client; "
                                 "print(Client([\"/run/rpcd/rpcd.sock\"]).call(\"calc.add\", [1, 2]))'").stdout.strip(), "3")
        self.assertEqual(self.sh("python3 -m rpcd 127.0.0.2:7390 rpcd.ping").stdout.strip(), '"pong"')
        declared = self.sh("printf '%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"rpcd.start\","
                           "\"params\":{\"protocol\":1,\"handler\":\"notes\",\"config\":{}}}' | "
                           "python3 /usr/share/doc/python3-rpcd/examples/notes.py").stdout
        self.assertIn('"name":"notes"', declared)
        # That example served under the shipped unit, installed as MODULES.md ("Program handlers") says: the
        # program where only root writes, a handler file naming it with Exec=, a reload. rpcd-handler-check passes
        # it first, as a program and as the handler file (rpcd's own reading of it, then its program).
        self.sh("install -D -m 0755 /usr/share/doc/python3-rpcd/examples/notes.py "
                "/usr/local/lib/rpcd/handlers/notes.py")
        checked = self.sh("rpcd-handler-check /usr/local/lib/rpcd/handlers/notes.py --config MaxNotes=100").stdout
        self.assertIn("ok flood (1000 calls of notes.search pipelined", checked)
        self.put("/etc/rpcd/handlers.d/notes.conf",
                 "[Handler]\nExec=/usr/local/lib/rpcd/handlers/notes.py\n[Config]\nMaxNotes=100\n")
        checked = self.sh("rpcd-handler-check /etc/rpcd/handlers.d/notes.conf").stdout
        self.assertIn("ok handler file (rpcd accepts it; its program /usr/local/lib/rpcd/handlers/notes.py declared "
                      "itself to rpcd)", checked)
        self.sh("systemctl reload rpcd.service")
        self.assertEqual(self.sh("rpcctl call notes.add text=milk").stdout.strip(), "1")
        self.assertEqual(json.loads(self.sh("rpcctl call notes.search word=mi").stdout), ["milk"])
        # In its module host's sandbox, as a user of its own, not root (the root has no ps: /proc).
        owners = self.sh('for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = notes.py ] && stat -c %u $p; '
                         'done; true').stdout.split()
        self.assertEqual(len(set(owners)), 1, owners)
        self.assertNotIn(owners[0], ("0", self.sh("id -u rpcd").stdout.strip()))

        # pip from a clone, by a user who is not root (python/README.md): a venv of Debian's Python. The namespace
        # has no network, so pip's isolated build takes setuptools and wheel from Debian's wheels, not from PyPI.
        self.sh(" ".join(APT + ["install", "python3-venv", "python3-wheel-whl"]))
        self.sh("useradd --create-home alice")
        shutil.copytree(os.path.join(ROOT, "python"), root + "/home/alice/rpcd/python",
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        self.sh("chown -R alice: /home/alice/rpcd")
        self.sh("runuser -l alice -c 'python3 -m venv venv && venv/bin/pip install -q --no-index "
                "--find-links /usr/share/python-wheels rpcd/python'")
        self.assertEqual(self.sh("runuser -l alice -c 'venv/bin/python -m rpcd /run/rpcd/rpcd.sock rpcd.ping'")
                         .stdout.strip(), '"pong"')
        self.assertIn("ok declaration (notes.add, notes.search)", self.sh(
            "runuser -l alice -c 'venv/bin/rpcd-handler-check /usr/local/lib/rpcd/handlers/notes.py'").stdout)

        # Upgrade: the administrator's rpcd.conf stays; rpcd is restarted on the new version, and clients that
        # call and listen meanwhile lose nothing (OPERATIONS.md, "Restarts and upgrades"): a raw framed client
        # (restart_client.py), applications on python3-rpcd's AsyncClient (ns_client.py restart) and on the
        # Swift client (rpcd-systemtest-client, of the build the packages were made from: the Swift runtime
        # the rpcd package ships is the one it was built with), and `rpcctl watch`. kv keeps its values in a
        # state directory, so that they outlive the restart.
        self.sh("printf '\\n# edited by the administrator\\n[Server]\\nLogLevel=notice\\n' >> /etc/rpcd/rpcd.conf")
        self.put("/etc/rpcd/handlers.d/kv.conf.d/50-state.conf", "[Handler]\nStateDirectory=kv\n")
        self.sh("systemctl reload rpcd.service")
        for client in ("restart_client.py", "ns_client.py"):
            shutil.copy(os.path.join(ROOT, "Tests", "SystemTests", client), root + "/root/" + client)
        shutil.copy(os.path.join(ROOT, ".build", "debug", "rpcd-systemtest-client"), root + "/root/")
        stop_file = "/run/upgrade-stop"
        clients = [namespace.popen("python3", "/root/restart_client.py", "/run/rpcd/rpcd.sock", "4", stop_file),
                   namespace.popen("python3", "/root/ns_client.py", "restart", "/run/rpcd/rpcd.sock", stop_file),
                   namespace.popen("env", "LD_LIBRARY_PATH=/usr/lib/rpcd/swift", "/root/rpcd-systemtest-client",
                                   "/run/rpcd/rpcd.sock", stop_file),
                   namespace.popen("sh", "-c", "echo $$ > /run/upgrade-watch.pid; "
                                   "exec rpcctl watch kv.changed --json > /run/upgrade-watch.json")]
        try:
            time.sleep(2)
            self.sh(" ".join(APT + ["install", f"{DEBS_INSIDE}/{rpcd2}", f"{DEBS_INSIDE}/{examples2}"]))
            self.wait_active()
            time.sleep(2)
        finally:
            self.sh(f"touch {stop_file}")
            outputs = [client.communicate(timeout=60) for client in clients[:3]]
            # nsenter passes no signal on to the process it started (and the root has no pkill).
            self.sh("kill $(cat /run/upgrade-watch.pid)", check=False)
            clients[3].communicate(timeout=30)
        raw, python, swift = (json.loads((output.strip().splitlines() or [json.dumps({"error": errors[-2000:]})])[-1])
                              for output, errors in outputs)
        watched = [json.loads(line) for line in self.sh("cat /run/upgrade-watch.json").stdout.splitlines()]
        self.assertEqual((raw["refused"], raw["unknown"], raw["errors"]), (0, 0, []), raw)
        self.assertGreaterEqual(raw["going_away"], 1, raw)
        for name, library in (("python3-rpcd", python), ("the Swift client", swift)):
            self.assertEqual((library.get("failed"), library.get("errors")), (0, []), (name, library))
            self.assertGreaterEqual(library["resubscribed"], 1, (name, library))
            self.assertGreater(library["events_after_last"], 0, f"{name}: the subscription resumed")
        resubscribed = [i for i, line in enumerate(watched) if line.get("resubscribed")]
        self.assertTrue(resubscribed, "rpcctl watch subscribed again")
        self.assertTrue(any("event" in line for line in watched[resubscribed[-1]:]), "rpcctl watch: events after")
        for key, value in [item for report in (raw, python, swift) for item in report["acknowledged"].items()]:
            self.assertEqual(json.loads(self.sh(f"rpcctl call kv.get {key}").stdout), value, key)
        print(f"\nupgrade under load: raw client {raw['ok']} calls, {raw['resent']} sent again, longest gap "
              f"{raw['max_gap_ms']} ms; python3-rpcd {python['ok']} calls, longest gap {python['max_gap_ms']} ms; "
              f"the Swift client {swift['ok']} calls, longest gap {swift['max_gap_ms']} ms",
              file=sys.stderr)
        self.assertIn("# edited by the administrator", self.sh("cat /etc/rpcd/rpcd.conf").stdout)
        self.assertNotEqual(self.sh("systemctl show -p MainPID --value rpcd.service").stdout.strip(), pid, "restarted")
        self.assertIn("+test", self.sh("dpkg-query -W -f '${Version}' rpcd").stdout)
        self.assertEqual(self.sh("rpcctl call calc.add 2 2").stdout.strip(), "4")
        self.assertEqual(self.sh("rpcctl call notes.add text=eggs").stdout.strip(), "1", "a new program")

        # Purge: no files, no process, no enabled unit. (The module built here is the administrator's to remove.)
        self.sh("rm /usr/local/lib/rpcd/modules/hello.so /usr/local/lib/rpcd/handlers/notes.py "
                "/etc/rpcd/handlers.d/notes.conf")
        self.sh(" ".join(APT + ["purge", "rpcd", "rpcd-dev", "rpcd-examples", "python3-rpcd"]))
        left = self.sh("ls -d /etc/rpcd /var/lib/rpcd /usr/lib/rpcd /usr/share/rpcd /usr/bin/rpcd /usr/bin/rpcctl /lib/systemd/system/rpcd.* "
                       "/usr/lib/python3/dist-packages/rpcd "
                       "/etc/systemd/system/*/rpcd.* 2>/dev/null", check=False).stdout
        self.assertEqual(left, "")
        self.assertEqual(self.sh("pgrep -x rpcd", check=False).stdout, "")
        self.assertEqual(self.sh("dpkg -l | grep -c '^.. *\\(python3-\\)\\?rpcd' || true").stdout.strip(), "0")

    def test_swift_module_builds_against_rpcd_dev_s_sdk(self):
        # What a Swift module author with rpcd-dev does, on this machine (which has the Swift that built the
        # packages): hello-swift against the SDK package as the .deb holds it, with no network, resolving
        # nothing else (examples/modules/test_examples.py builds it against the checkout's swift-sdk/).
        if shutil.which("swift") is None:
            self.skipTest("no Swift toolchain on this machine")
        unpacked = os.path.join(WORK, "rpcd-dev-unpacked")
        shutil.rmtree(unpacked, ignore_errors=True)
        self.addCleanup(shutil.rmtree, unpacked, ignore_errors=True)
        run(["dpkg-deb", "-x", package_files()[1], unpacked])
        module_dir = module_examples.build_swift_module(
            self, os.path.join(ROOT, "examples", "modules", "hello-swift"), unpacked + module_examples.INSTALLED_SDK)
        self.assertTrue(os.path.exists(os.path.join(module_dir, "libhello.so")))


if __name__ == "__main__":
    if sys.argv[1:] == ["--base-root"]:
        # `make test-package-root`: only the cached Debian root, so that it can be made while the packages build.
        problem = prerequisites(packages=False)
        if problem:
            sys.exit(f"test_package.py: {problem}")
        print(cached_base_root())
    else:
        unittest.main(verbosity=2)
