"""rpcd under a real systemd (v252), booted as PID 1 of its own namespaces (systemd_namespace.py).

The tests install rpcd with `make install BUILD=debug DESTDIR=...` into a staging directory that only the
namespace sees, boot systemd once, and drive it the way an administrator would: systemctl, journalctl,
rpcctl. Between tests rpcd and its socket are stopped and test drop-ins removed. They need root; in CI
(CI=true) a missing prerequisite fails rather than skips.

Figures (exec to READY, freeze to restart, security score) are printed and written to
.build/systemtest/figures.json.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

from systemd_namespace import SystemdNamespace

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORK = os.path.join(ROOT, ".build", "systemtest")
STAGE = os.path.join(WORK, "stage")
# The client that runs inside the namespace travels in the staged tree: the checkout itself may be under /tmp,
# which the namespace covers with its own tmpfs.
CLIENT_SOURCE = os.path.join(ROOT, "Tests", "SystemTests", "ns_client.py")
CLIENT = "/usr/local/libexec/rpcd-systemtest/ns_client.py"
RESTART_CLIENT = "/usr/local/libexec/rpcd-systemtest/restart_client.py"
SWIFT_CLIENT = "/usr/local/libexec/rpcd-systemtest/rpcd-systemtest-client"
SOCKET = "/run/rpcd/rpcd.sock"
DROPIN_DIR = "/etc/systemd/system/rpcd.service.d"
CONFIG_DROPIN = "/etc/rpcd/rpcd.conf.d/50-systemtest.conf"
FAULTY_HANDLER = "/etc/rpcd/handlers.d/faulty.conf"
KV_DROPIN = "/etc/rpcd/handlers.d/kv.conf.d/50-systemtest.conf"
PROGRAMS = "/usr/local/lib/rpcd/handlers"
# Issue 37's three kinds of handler that are not modules, as MODULES.md installs them.
ANY_LANGUAGE_HANDLERS = ["/etc/rpcd/handlers.d/notes.conf", "/etc/rpcd/handlers.d/uptime.conf",
                         "/etc/rpcd/handlers.d/units.conf"]
MESSAGE_STARTED = "aad5022865d24348ac0a29890bd17352"
MESSAGE_RELOADED = "9220cd891469400890406a1980afcd0e"
MESSAGE_STOPPING = "522642a65a4d4f47a058c329cbc31d39"
FIGURES = {}


def prerequisites():
    """Why the tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "the systemd system tests need root (unshare, nsenter, mounts)"
    for tool in ("unshare", "nsenter", "systemd-analyze", "journalctl", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is missing: run scripts/install-deps.sh"
    if not os.path.exists("/lib/systemd/systemd"):
        return "/lib/systemd/systemd is missing: run scripts/install-deps.sh"
    if not os.path.exists(os.path.join(ROOT, ".build", "debug", "rpcd")):
        return "no debug build: run `swift build` first (make test does)"
    return None


namespace = None


def setUpModule():
    global namespace
    problem = prerequisites()
    if problem:
        if os.geteuid() != 0 and os.environ.get("CI") != "true":
            raise unittest.SkipTest(problem)
        raise RuntimeError(problem)
    shutil.rmtree(WORK, ignore_errors=True)
    subprocess.run(
        ["make", "--no-print-directory", "-s", "install", "BUILD=debug", f"DESTDIR={STAGE}", "PREFIX=/usr/local"],
        cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    staged_client = STAGE + CLIENT
    os.makedirs(os.path.dirname(staged_client), exist_ok=True)
    shutil.copy(CLIENT_SOURCE, staged_client)
    shutil.copy(os.path.join(ROOT, "Tests", "SystemTests", "restart_client.py"), STAGE + RESTART_CLIENT)
    shutil.copy(os.path.join(ROOT, ".build", "debug", "rpcd-systemtest-client"), STAGE + SWIFT_CLIENT)
    shutil.copytree(os.path.join(ROOT, "python", "rpcd"), os.path.join(os.path.dirname(staged_client), "rpcd"),
                    ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    # The misbehaving test module (Tests/Modules/Faulty), for the walls around module hosts.
    shutil.copy(os.path.join(ROOT, ".build", "debug", "libfaulty.so"), STAGE + "/usr/local/lib/rpcd/modules/")
    # The program handlers' examples where MODULES.md installs them (only root may write there).
    programs = STAGE + PROGRAMS
    os.makedirs(programs, exist_ok=True)
    for example in ("examples/program-handlers/uptime.sh", "examples/python-handler/notes.py"):
        shutil.copy(os.path.join(ROOT, example), programs)
    with open(os.path.join(programs, "notes"), "w") as file:
        # The rpcd package where the system tests stage it (python3-rpcd installs it for the package test).
        file.write(f"#!/bin/sh\nPYTHONPATH={os.path.dirname(CLIENT)} exec /usr/bin/python3 {PROGRAMS}/notes.py\n")
    for name in ("uptime.sh", "notes.py", "notes"):
        os.chmod(os.path.join(programs, name), 0o755)
    namespace = SystemdNamespace.booted(os.path.join(WORK, "run"), stage=STAGE)


def tearDownModule():
    if namespace is not None:
        namespace.close()
    if FIGURES:
        os.makedirs(WORK, exist_ok=True)
        with open(os.path.join(WORK, "figures.json"), "w") as file:
            json.dump(FIGURES, file, indent=2)
        print("\nrpcd under systemd: " + ", ".join(f"{key}={value}" for key, value in FIGURES.items()), file=sys.stderr)


class SystemdTests(unittest.TestCase):
    def setUp(self):
        ns = namespace
        ns.run("systemctl", "stop", "rpcd.socket", "rpcd.service", check=False)
        ns.run("rm", "-rf", DROPIN_DIR, CONFIG_DROPIN, "/etc/rpcd/handlers.d/echo2.conf", FAULTY_HANDLER, KV_DROPIN,
               *ANY_LANGUAGE_HANDLERS)
        ns.run("systemctl", "daemon-reload")
        ns.run("systemctl", "reset-failed", "rpcd.service", "rpcd.socket", check=False)
        self.ns = ns

    # Helpers ----------------------------------------------------------------------------------------

    def start(self):
        self.ns.run("systemctl", "start", "rpcd.service", timeout=90)

    def rpcctl(self, *args, check=True):
        return self.ns.run("rpcctl", *args, "--address", SOCKET, check=check)

    def journal(self, *matches):
        """rpcd's journal entries matching MATCHES, as dicts."""
        result = self.ns.run("journalctl", "--no-pager", "-o", "json", "-u", "rpcd.service", *matches, check=False)
        return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    def main_pid(self):
        return int(self.ns.show("rpcd.service", "MainPID")["MainPID"])

    def write(self, path, text):
        self.ns.run("mkdir", "-p", os.path.dirname(path))
        self.ns.run("tee", path, input=text)

    def add_test_user(self):
        """A local user that is neither root nor in group rpcd; returns a runner of rpcctl as that user."""
        self.ns.run("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "rpcd-test-user", check=False)
        self.addCleanup(self.ns.run, "userdel", "rpcd-test-user", check=False)

        def as_user(*args):
            return self.ns.run("setpriv", "--reuid=rpcd-test-user", "--regid=rpcd-test-user", "--init-groups",
                               "/usr/local/bin/rpcctl", *args, "--address", SOCKET, check=False)
        return as_user

    # Tests ------------------------------------------------------------------------------------------

    def test_units_verify_clean_and_score_at_most_2(self):
        result = self.ns.run(
            "systemd-analyze", "verify", "/usr/local/lib/systemd/system/rpcd.service",
            "/usr/local/lib/systemd/system/rpcd.socket", check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr.strip(), "", "systemd-analyze verify is not clean")
        result = self.ns.run("systemd-analyze", "security", "--no-pager", "rpcd.service", check=False)
        match = re.search(r"Overall exposure level for rpcd\.service: (\d+\.\d+)", result.stdout)
        self.assertIsNotNone(match, result.stdout + result.stderr)
        score = float(match.group(1))
        FIGURES["security_score"] = score
        self.assertLessEqual(score, 2.0)

    def test_sandbox_keeps_dbus_and_module_loading_working(self):
        # ExecStartPost= runs with the unit's user and sandbox: the system bus (which the Avahi publisher
        # uses) must answer from inside it, and every example module must load with dlopen.
        self.write(
            f"{DROPIN_DIR}/50-dbus.conf",
            "[Service]\nExecStartPost=/usr/bin/busctl --system call org.freedesktop.DBus /org/freedesktop/DBus "
            "org.freedesktop.DBus GetId\n")
        self.ns.run("systemctl", "daemon-reload")
        self.start()
        self.assertEqual(self.ns.show("rpcd.service", "User")["User"], "rpcd")
        self.assertEqual(len(self.journal(f"_PID={self.main_pid()}", "MESSAGE=Handler started")), 4)
        self.assertEqual(self.rpcctl("call", "calc.add", "1", "2").stdout.strip(), "3")
        # sysinfo reads /proc/uptime: ProtectProc=invisible must leave it readable.
        self.assertGreater(float(self.rpcctl("call", "sysinfo.uptime").stdout), 0)

    def cgroup_of(self, pid):
        """PID's cgroup v2 path, as the namespace sees it (None once the process is gone)."""
        result = self.ns.run("cat", f"/proc/{pid}/cgroup", check=False)
        return next((line[3:] for line in result.stdout.splitlines() if line.startswith("0::")), None)

    def running(self, pid):
        result = self.ns.run("cat", f"/proc/{pid}/stat", check=False)
        return result.returncode == 0 and not result.stdout.rsplit(")", 1)[-1].startswith(" Z")

    def test_module_hosts_run_in_cgroups_of_their_own_and_take_what_they_start_with_them(self):
        self.write(FAULTY_HANDLER, "[Handler]\nModule=faulty\n")
        self.start()
        unit = "/system.slice/rpcd.service"
        self.assertEqual(self.cgroup_of(self.main_pid()), unit + "/daemon", "rpcd moved itself out of the way")
        entries = [entry["MESSAGE"] for entry in self.journal(f"_PID={self.main_pid()}")]
        self.assertTrue(any(message.startswith("Module hosts run in cgroups of their own") for message in entries), entries)
        host = int(self.rpcctl("call", "faulty.pid").stdout)
        cgroup = self.cgroup_of(host)
        self.assertRegex(cgroup, re.escape(unit) + r"/host-faulty-\d+$")
        # Only its link and rpcd's own standard output and error, the journal's stream: no listener, no peer's
        # connection (the rpcctl calls are peers while it runs).
        self.assertEqual(json.loads(self.rpcctl("call", "faulty.sockets").stdout), [1, 2, 3])
        for fd in (1, 2):
            self.assertEqual(self.ns.run("readlink", f"/proc/{host}/fd/{fd}").stdout,
                             self.ns.run("readlink", f"/proc/{self.main_pid()}/fd/{fd}").stdout)
        # Where the kernel gives the unit the controllers (a Debian 12 host does; this machine's hybrid hierarchy
        # may not), the host's limits are its cgroup's.
        enabled = self.ns.run("cat", f"/sys/fs/cgroup{unit}/cgroup.subtree_control").stdout.split()
        FIGURES["host_cgroup_controllers"] = " ".join(enabled) or "none"
        limits = {"memory": ("memory.max", str(512 << 20)), "pids": ("pids.max", "128")}
        for controller in enabled:
            if controller in limits:
                file, value = limits[controller]
                self.assertEqual(self.ns.run("cat", f"/sys/fs/cgroup{cgroup}/{file}").stdout.strip(), value)
        child = int(self.rpcctl("call", "faulty.fork_orphan").stdout)
        self.assertEqual(self.cgroup_of(child), cgroup, "what a host starts is in its cgroup")
        self.assertNotEqual(self.rpcctl("call", "faulty.crash", check=False).returncode, 0)
        self.ns.wait_for(lambda: not self.running(child), timeout=10, what="the host's child to end with it")
        self.ns.wait_for(
            lambda: self.ns.run("test", "-d", "/sys/fs/cgroup" + cgroup, check=False).returncode != 0, timeout=10,
            what="the dead host's cgroup to be removed")
        self.ns.wait_for(lambda: self.rpcctl("call", "faulty.ok", check=False).returncode == 0, timeout=10,
                         what="faulty to serve again")
        self.assertNotEqual(self.cgroup_of(int(self.rpcctl("call", "faulty.pid").stdout)), cgroup, "a new host, a new cgroup")

    def test_a_module_host_is_nobody_to_rpcd_under_the_shipped_unit(self):
        self.write(FAULTY_HANDLER, "[Handler]\nModule=faulty\nTasksMax=24\n")
        self.start()
        host = int(self.rpcctl("call", "faulty.pid").stdout)
        status = dict(line.split(":", 1) for line in self.ns.run("cat", f"/proc/{host}/status").stdout.splitlines())
        uids = {int(uid) for uid in status["Uid"].split()}
        self.assertEqual(len(uids), 1, status["Uid"])
        self.assertIn(uids.pop(), range(0x60000, 0x61000), "a module host's user, not rpcd's")
        self.assertEqual(status["Groups"].strip(), "", "no supplementary group (not rpcd's)")
        self.assertEqual(status["CapEff"].strip(), "0000000000000000", "rpcd's CAP_SETUID is not the host's")
        # It calls rpcd back through the socket every local user may connect to: nobody the rules know.
        for method in ("rpcd.setLogLevel", "kv.set", "rpcd.ping"):
            reply = json.loads(self.rpcctl("call", "faulty.call_back", "--params", json.dumps([SOCKET, method])).stdout)
            self.assertEqual(reply["error"]["code"], -32007, f"{method}: {reply}")
        self.assertEqual(self.rpcctl("call", "faulty.read", "--params", json.dumps([f"/proc/{self.main_pid()}/environ"])).stdout.strip(), "false")
        forked = int(self.rpcctl("call", "faulty.forks").stdout)
        self.assertLess(forked, 24, "TasksMax= bounds its forks")
        self.assertEqual(self.rpcctl("call", "calc.add", "1", "2").stdout.strip(), "3")

    def test_a_state_directory_is_made_given_to_the_host_and_kept_under_the_shipped_unit(self):
        """StateDirectory= beneath the unit's /var/lib/rpcd (rpcd's user, UMask=0007): rpcd makes it, the host's
        user may write it without ReadWritePaths=, and what it wrote is there after rpcd restarts."""
        self.ns.run("rm", "-rf", "/var/lib/rpcd/faulty")
        self.write(FAULTY_HANDLER, "[Handler]\nModule=faulty\nStateDirectory=faulty\n")
        self.start()
        self.assertEqual(json.loads(self.rpcctl("call", "faulty.state_directory").stdout), "/var/lib/rpcd/faulty")
        owner, mode = self.ns.run("stat", "-c", "%U %a", "/var/lib/rpcd/faulty").stdout.split()
        self.assertEqual(owner, "rpcd")
        self.assertEqual(int(mode, 8) & 0o707, 0o700, mode)
        self.assertEqual(self.rpcctl("call", "faulty.write", "--params", '["/var/lib/rpcd/faulty/kept"]').stdout.strip(), "true")
        self.assertEqual(self.rpcctl("call", "faulty.write", "--params", '["/var/lib/rpcd/planted"]').stdout.strip(), "false")
        self.ns.run("systemctl", "restart", "rpcd.service", timeout=90)
        self.assertEqual(self.rpcctl("call", "faulty.read", "--params", '["/var/lib/rpcd/faulty/kept"]').stdout.strip(), "true")

    def test_a_hostile_module_is_contained_under_the_shipped_unit(self):
        """The `faulty` module tries what a hostile one would, from inside its sandbox, while root pings rpcd and
        another client calls another service: each try is refused or contained, and neither notices."""
        self.write(FAULTY_HANDLER, "[Handler]\nModule=faulty\n")
        self.start()
        ping = self.ns.popen("python3", CLIENT, "loop", SOCKET, "rpcd.ping", "[]", "20", "1000000")
        other = self.ns.popen("python3", CLIENT, "loop", SOCKET, "calc.add", "[1, 2]", "20", "1000000")

        def call(method, *params):
            result = self.rpcctl("call", method, "--params", json.dumps(list(params)), check=False)
            return result.stdout.strip(), result.stderr.strip()

        try:
            for method in ("rpcd.setLogLevel", "kv.set", "rpcd.ping"):
                reply = json.loads(call("faulty.call_back", SOCKET, method)[0])
                self.assertEqual(reply["error"]["code"], -32007, f"connect back, {method}: {reply}")
            self.assertEqual(json.loads(call("faulty.sockets")[0]), [1, 2, 3], "inherited descriptors")
            for path in (f"/proc/{self.main_pid()}/environ", f"/proc/{self.main_pid()}/maps", "/etc/rpcd/rpcd.conf"):
                self.assertEqual(call("faulty.read", path)[0], "false", f"read {path}")
            for path in ("/var/lib/rpcd/planted", "/run/rpcd/planted", "/etc/rpcd/handlers.d/planted.conf"):
                self.assertEqual(call("faulty.write", path)[0], "false", f"write {path}")
            self.assertNotEqual(call("faulty.unshare")[0], "0", "namespaces")
            forked = int(call("faulty.forks")[0])
            self.assertLess(forked, 128, "a fork bomb stops at TasksMax=")
            orphan = int(call("faulty.fork_orphan")[0]) if forked < 120 else None
            self.assertIn("-32005", call("faulty.crash")[1])
            if orphan:
                self.ns.wait_for(lambda: not self.running(orphan), timeout=10, what="the host's children to end with it")
            self.ns.wait_for(lambda: call("faulty.ok")[0] == '"ok"', timeout=10, what="faulty to serve again")
            started = time.monotonic()
            self.assertIn("-32005", call("faulty.fork_abort")[1], "its child holds the link")
            self.assertLess(time.monotonic() - started, 3, "seen at once")
        finally:
            reports = [json.loads(process.communicate(timeout=60)[0].strip().splitlines()[-1]) for process in (ping, other)]
        FIGURES["hostile_module_root_ping_p99_ms"] = round(reports[0]["p99_ms"], 2)
        FIGURES["hostile_module_root_ping_max_ms"] = round(reports[0]["max_ms"], 2)
        self.assertEqual(reports[0]["errors"], [])
        self.assertEqual(reports[1]["errors"], [], "no call to another service failed")
        self.assertLess(reports[0]["p99_ms"], 50)

    def test_handlers_in_python_shell_and_commands_serve_under_the_shipped_unit(self):
        """examples/python-handler/notes.py, examples/program-handlers/uptime.sh and
        examples/command-handlers/units.conf installed as MODULES.md says, served under the shipped unit and
        called through rpcctl, HTTP (curl) and a WebSocket subscription (the rpcd Python package); each is in
        rpc.discover; units.isActive asks the real systemd."""
        self.write(ANY_LANGUAGE_HANDLERS[0], f"[Handler]\nExec={PROGRAMS}/notes\n[Config]\nMaxNotes=10\n")
        self.write(ANY_LANGUAGE_HANDLERS[1], f"[Handler]\nExec={PROGRAMS}/uptime.sh\n")
        with open(os.path.join(ROOT, "examples/command-handlers/units.conf")) as file:
            self.write(ANY_LANGUAGE_HANDLERS[2], file.read())
        self.write(CONFIG_DROPIN, "[Server]\nListen=http://127.0.0.1:7381\n")
        self.start()

        # systemctl asks systemd over D-Bus, which refuses a uid without a name: the host's user has one.
        self.assertEqual(json.loads(self.rpcctl("call", "units.isActive", "--params", '["rpcd.service"]').stdout), "active")
        self.assertIn(":rpcd module host:", self.ns.run("getent", "passwd", "rpcd-units").stdout)
        self.assertEqual(json.loads(self.rpcctl("call", "units.isActive", "--params", '["nothing-here.service"]').stdout),
                         "inactive", "exit status 3 is a result: SuccessExitStatus=3")
        refused = self.rpcctl("call", "units.isActive", "--params", '["rpcd.service; reboot"]', check=False)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("-32602", refused.stdout + refused.stderr)
        usage = json.loads(self.rpcctl("call", "units.diskUsage", "--params", '["/"]').stdout)
        self.assertTrue(usage[0].startswith("Filesystem"), usage)
        self.assertGreater(json.loads(self.rpcctl("call", "uptime.seconds").stdout), 0)

        subscriber = self.ns.popen("python3", CLIENT, "event", "ws://127.0.0.1:7381/rpc", "notes.added", "20")
        self.addCleanup(lambda: (subscriber.kill(), subscriber.communicate()))
        self.assertEqual(subscriber.stdout.readline().strip(), "subscribed")
        self.assertEqual(json.loads(self.rpcctl("call", "notes.add", "--params", '{"text": "milk"}').stdout), 1)
        event = json.loads(subscriber.stdout.readline())
        self.assertEqual(event.get("data", {}).get("text"), "milk", event)

        body = '{"jsonrpc":"2.0","method":"notes.search","params":{"word":"mi"},"id":1}'
        reply = self.ns.run("curl", "-sS", "--max-time", "10", "-H", "Content-Type: application/json", "-d", body,
                            "http://127.0.0.1:7381/rpc")
        self.assertEqual(json.loads(reply.stdout).get("result"), ["milk"], reply.stdout)
        discovered = self.rpcctl("call", "rpc.discover").stdout
        for method in ("notes.add", "uptime.seconds", "units.isActive", "units.diskUsage"):
            self.assertIn(method, discovered)

    def test_access_rules_tell_users_and_groups_apart_under_the_shipped_unit(self):
        """The shipped rules by SO_PEERCRED inside the unit's sandbox (no PrivateUsers=, or every uid would read
        as 65534): another local user may read but not change state; in group rpcd it may change state."""
        self.start()
        as_user = self.add_test_user()
        read = as_user("call", "calc.add", "1", "2")
        self.assertEqual((read.returncode, read.stdout.strip()), (0, "3"), read.stderr)
        refused = as_user("call", "kv.set", "key=k", "value=1")
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertIn("Access denied (-32007)", refused.stderr)
        self.assertEqual(self.rpcctl("call", "kv.set", "key=k", "value=1").stdout.strip(), "true", "root may")

        self.ns.run("usermod", "--append", "--groups", "rpcd", "rpcd-test-user")
        allowed = as_user("call", "kv.set", "key=k", "value=2")
        self.assertEqual((allowed.returncode, allowed.stdout.strip()), (0, "true"), allowed.stderr)
        self.assertEqual(self.rpcctl("call", "kv.get", "k").stdout.strip(), "2")

    def test_only_administrators_see_peers_under_the_shipped_unit(self):
        """rpcd.metrics (rpcctl top) names peers to root and group rpcd only; another local user gets the
        aggregate figures (docs/SECURITY.md)."""
        self.start()
        as_user = self.add_test_user()
        user = as_user("top", "--once", "--json")
        self.assertEqual(user.returncode, 0, user.stderr)
        unnamed = json.loads(user.stdout)
        self.assertNotIn("peers", unnamed)
        self.assertGreaterEqual(unnamed["budget"]["peers"], 1, unnamed["budget"])
        root = json.loads(self.rpcctl("top", "--once", "--json").stdout)
        self.assertIn("uid 0", [peer["peer"] for peer in root["peers"]])

    def test_prometheus_scrapes_rpcd_as_a_unit(self):
        """Prometheus (Debian's package), started as a unit beside rpcd's shipped unit, scrapes GET /metrics of
        an http:// listener added by a drop-in, while rpcctl bench (a unit too) calls calc.add: PromQL through
        Prometheus' HTTP API finds the call rate and a latency quantile, and promtool accepts the scrape."""
        if shutil.which("prometheus") is None and os.environ.get("CI") != "true":
            self.skipTest("needs prometheus (scripts/install-deps.sh)")
        self.write(CONFIG_DROPIN, "[Server]\nListen=http://127.0.0.1:7380\n")
        self.start()
        directory = "/run/prometheus-systemtest"
        self.write(f"{directory}/prometheus.yml",
                   "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: rpcd\n"
                   "    metrics_path: /metrics\n    static_configs:\n      - targets: ['127.0.0.1:7380']\n")
        for unit in ("prometheus-systemtest", "rpcd-systemtest-load"):
            self.addCleanup(self.ns.run, "systemctl", "reset-failed", unit, check=False)
            self.addCleanup(self.ns.run, "systemctl", "stop", unit, check=False)
        self.ns.run("systemd-run", "--unit=prometheus-systemtest", "/usr/bin/prometheus",
                    f"--config.file={directory}/prometheus.yml", f"--storage.tsdb.path={directory}/tsdb",
                    "--web.listen-address=127.0.0.1:9090")
        self.ns.run("systemd-run", "--unit=rpcd-systemtest-load", "/usr/local/bin/rpcctl", "bench", "calc.add",
                    "--params", "[1, 2]", "--connections", "2", "--depth", "2", "--duration", "20", "--warmup", "0",
                    "--threads", "1", "--address", SOCKET)

        def get(url):
            result = self.ns.run(
                "python3", "-c",
                "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())",
                url, check=False)
            return result.stdout if result.returncode == 0 else None

        def query(promql):
            answer = get("http://127.0.0.1:9090/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
            if answer is None:
                return []
            answer = json.loads(answer)
            self.assertEqual(answer["status"], "success", answer)
            return [float(sample["value"][1]) for sample in answer["data"]["result"]]

        selector = 'service="calc",method="add"'

        def rate():
            values = query(f'sum(rate(rpcd_calls_total{{{selector},outcome="ok"}}[5s]))')
            return values[0] if values and values[0] > 0 else None

        calls_per_second = self.ns.wait_for(rate, timeout=30, what="Prometheus to see calc.add calls", interval=1)
        p99 = query(f"histogram_quantile(0.99, sum by (le) (rate(rpcd_call_duration_seconds_bucket{{{selector}}}[5s])))")
        self.assertTrue(p99 and 0 < p99[0] < 10, p99)
        self.assertEqual(query('up{job="rpcd"}'), [1.0])
        scrape = get("http://127.0.0.1:7380/metrics")
        self.assertIn('rpcd_calls_total{service="calc",method="add",outcome="ok"}', scrape)
        check = self.ns.run("promtool", "check", "metrics", input=scrape, check=False)
        self.assertEqual((check.returncode, check.stdout + check.stderr), (0, ""), "promtool: no errors, no warnings")
        FIGURES["prometheus_calc_add_per_s"] = round(calls_per_second)
        FIGURES["prometheus_calc_add_p99_ms"] = round(p99[0] * 1000, 2)

    def test_start_becomes_active_only_after_ready(self):
        self.start()
        show = self.ns.show(
            "rpcd.service", "ActiveState", "ExecMainStartTimestampMonotonic", "ActiveEnterTimestampMonotonic", "Type")
        self.assertEqual(show["ActiveState"], "active")
        self.assertEqual(show["Type"], "notify")
        exec_start = int(show["ExecMainStartTimestampMonotonic"])
        active = int(show["ActiveEnterTimestampMonotonic"])
        FIGURES["exec_to_ready_ms"] = round((active - exec_start) / 1000, 1)
        # Every listener bound and every handler loaded before systemd saw READY=1.
        entries = self.journal(f"_PID={self.main_pid()}")
        preparations = [e for e in entries if e.get("MESSAGE") in ("Listening", "Handler started")]
        self.assertEqual(len([e for e in preparations if e["MESSAGE"] == "Handler started"]), 4)
        self.assertEqual(len([e for e in preparations if e["MESSAGE"] == "Listening"]), 2)
        # journald stamps entries when it reads them, which under load can be after PID 1 has handled READY=1,
        # so the stamps cannot order them against READY. The order journald read rpcd's entries in is exact:
        # each preparation comes before rpcd's own "Started", which it logs right after sending READY=1 (and
        # systemd reporting the unit active at all means READY=1 arrived, Type=notify).
        started = [e for e in entries if e.get("MESSAGE") == "Started"]
        self.assertEqual(len(started), 1)
        def seqnum(entry):  # the "i=" part of the cursor (this journalctl's JSON has no __SEQNUM)
            return int(dict(part.split("=", 1) for part in entry["__CURSOR"].split(";"))["i"], 16)
        for entry in preparations:
            self.assertLess(seqnum(entry), seqnum(started[0]), entry["MESSAGE"])
        # And calls work the moment `systemctl start` returns.
        self.assertEqual(self.rpcctl("call", "calc.add", "1", "2").stdout.strip(), "3")

    def test_status_shows_the_status_text(self):
        self.start()
        status = self.ns.run("systemctl", "status", "--no-pager", "rpcd.service", check=False).stdout
        self.assertRegex(status, r'Status: "Serving 6 services on 2 listeners; local only \(no listener other hosts can reach\); \d+ connections; [\d.]+ calls/s; last error: none"')
        # STATUS= is kept current: an internal error shows up as the last error within a few seconds.
        self.rpcctl("call", "calc.add", "1", check=False)
        self.rpcctl("call", "calc.divide", "1", "0", check=False)
        self.write(CONFIG_DROPIN, "[Server]\nNoSuchKey=1\n")
        # systemctl reload fails when rpcd refuses the configuration (rpcctl reload), and rpcd keeps serving.
        refused = self.ns.run("systemctl", "reload", "rpcd.service", check=False)
        self.assertNotEqual(refused.returncode, 0)
        self.assertEqual(self.ns.show("rpcd.service", "ActiveState")["ActiveState"], "active")
        text = self.ns.wait_for(
            lambda: (lambda t: t if "last error: reload:" in t else None)(
                self.ns.show("rpcd.service", "StatusText")["StatusText"]),
            timeout=10, what="the status text to name the failed reload")
        self.assertIn("NoSuchKey", text)

    def test_reload_keeps_calls_working(self):
        self.start()
        pid = self.main_pid()
        reloads = len(self.journal(f"MESSAGE_ID={MESSAGE_RELOADED}"))
        client = self.ns.popen("python3", CLIENT, "loop", SOCKET, "calc.add", "[1, 2]", "8", "200000")
        try:
            self.write("/etc/rpcd/handlers.d/echo2.conf", "[Handler]\nModule=echo\nService=echo2\n")
            self.ns.wait_for(lambda: self.journal("MESSAGE=Started"), timeout=10, what="rpcd to have started")
            self.ns.run("systemctl", "reload", "rpcd.service", timeout=60)
            self.ns.wait_for(
                lambda: len(self.journal(f"MESSAGE_ID={MESSAGE_RELOADED}")) > reloads, timeout=20,
                what="the Reloaded entry")
            self.ns.wait_for(
                lambda: self.ns.show("rpcd.service", "ActiveState")["ActiveState"] == "active", timeout=20,
                what="rpcd to be active again after RELOADING=1/READY=1")
            self.assertEqual(json.loads(self.rpcctl("call", "echo2.echo", "--params", '["hi"]').stdout), ["hi"])
        finally:
            output, errors = client.communicate(timeout=60)
        report = json.loads(output.strip().splitlines()[-1])
        self.assertEqual(report["errors"], [], errors)
        self.assertGreater(report["ok"], 0)
        self.assertEqual(self.main_pid(), pid, "reload must not restart rpcd")

    def test_reload_that_refuses_a_handler_fails_and_the_previous_instance_keeps_serving(self):
        self.start()
        self.rpcctl("call", "kv.set", "k", "1")
        # A value kv's init refuses: systemctl reload fails (rpcctl reload, ExecReload=), and says why and where.
        self.write(KV_DROPIN, "[Config]\nMaxKeys=lots\n")
        refused = self.ns.run("systemctl", "reload", "rpcd.service", check=False, timeout=90)
        self.assertNotEqual(refused.returncode, 0, refused.stdout + refused.stderr)
        self.assertEqual(self.ns.show("rpcd.service", "ActiveState")["ActiveState"], "active")
        told = self.ns.wait_for(
            lambda: [e["MESSAGE"] for e in self.journal() if "handler 'kv'" in str(e.get("MESSAGE", ""))],
            timeout=10, what="rpcctl reload's refusal in the journal")
        self.assertIn(f"({KV_DROPIN}:2) refused:", told[-1])
        self.assertIn("MaxKeys=", told[-1])
        self.assertIn("its previous instance keeps serving", told[-1])
        # The previous instance, with its state, keeps serving.
        self.assertEqual(json.loads(self.rpcctl("call", "kv.get", "k").stdout), 1)
        # Fixed, the next reload succeeds.
        self.ns.run("rm", "-f", KV_DROPIN)
        self.ns.run("systemctl", "reload", "rpcd.service", timeout=90)

    def test_journal_has_structured_entries_and_catalog(self):
        self.write(CONFIG_DROPIN, "[Server]\nLogCalls=yes\nSlowCallThreshold=200ms\n")
        self.start()
        pid = f"_PID={self.main_pid()}"
        self.rpcctl("call", "calc.add", "40", "2")
        self.rpcctl("call", "echo.sleep", "300")
        calls = self.ns.wait_for(
            lambda: self.journal(pid, "RPCD_METHOD=calc.add"), timeout=10, what="a journal entry for calc.add")
        entry = calls[-1]
        self.assertEqual(entry["MESSAGE"], "Call completed")
        self.assertEqual(entry["PRIORITY"], "6")
        self.assertEqual(entry["SYSLOG_IDENTIFIER"], "rpcd")
        self.assertEqual(entry["RPCD_SERVICE"], "calc")
        self.assertEqual(entry["RPCD_PEER"], "unix")
        for field in ("RPCD_CALL_ID", "RPCD_CONN_ID", "RPCD_DURATION_USEC", "CODE_FILE", "CODE_LINE", "CODE_FUNC"):
            self.assertIn(field, entry)
        slow = self.ns.wait_for(
            lambda: self.journal(pid, "RPCD_METHOD=echo.sleep", "MESSAGE=Slow call"), timeout=10, what="a slow call entry")
        self.assertEqual(slow[-1]["PRIORITY"], "4")
        self.assertGreaterEqual(int(slow[-1]["RPCD_DURATION_USEC"]), 300_000)
        loaded = self.journal(pid, "RPCD_MODULE=libcalc.so", "MESSAGE=Handler started")
        self.assertTrue(loaded)
        explained = self.ns.run("journalctl", "--no-pager", "-x", "-u", "rpcd.service", f"MESSAGE_ID={MESSAGE_STARTED}").stdout
        self.assertIn("rpcd started and is serving", explained)

    def test_calls_are_not_logged_by_default_but_failures_are(self):
        self.start()
        pid = f"_PID={self.main_pid()}"
        self.rpcctl("call", "calc.add", "1", "2")
        self.rpcctl("call", "calc.divide", "1", "0", check=False)
        failed = self.ns.wait_for(
            lambda: self.journal(pid, "RPCD_METHOD=calc.divide"), timeout=10, what="the failed call's entry")
        self.assertEqual(failed[-1]["RPCD_ERROR_CODE"], "1")
        self.assertEqual(self.journal(pid, "RPCD_METHOD=calc.add"), [])

    def test_log_level_changes_at_run_time(self):
        self.start()
        self.assertEqual(self.rpcctl("log-level").stdout.strip(), "info")
        self.assertEqual(self.rpcctl("log-level", "debug").stdout.strip(), "debug (was info)")
        self.rpcctl("ping")
        self.ns.wait_for(
            lambda: self.journal("MESSAGE=Connection opened", "PRIORITY=7"), timeout=10,
            what="a debug entry after rpcctl log-level debug")
        # A reload goes back to LogLevel= from rpcd.conf.
        self.ns.run("systemctl", "reload", "rpcd.service")
        self.ns.wait_for(lambda: self.rpcctl("log-level").stdout.strip() == "info", timeout=10, what="level info again")

    def test_frozen_rpcd_is_restarted_by_the_watchdog(self):
        self.start()
        pid = self.main_pid()
        restarts = int(self.ns.show("rpcd.service", "NRestarts")["NRestarts"])
        frozen = time.monotonic()
        self.ns.run("kill", "-STOP", str(pid))
        self.ns.wait_for(
            lambda: (lambda s: s["MainPID"] not in ("0", str(pid)) and s["ActiveState"] == "active")(
                self.ns.show("rpcd.service", "MainPID", "ActiveState")),
            timeout=60, what="systemd to restart the frozen rpcd", interval=0.2)
        elapsed = time.monotonic() - frozen
        FIGURES["freeze_to_restart_s"] = round(elapsed, 1)
        self.assertEqual(int(self.ns.show("rpcd.service", "NRestarts")["NRestarts"]), restarts + 1)
        # The last ping came at most WatchdogSec/3 before the freeze, so systemd's timer fires 6.7 s after it
        # at the earliest; an earlier restart would have another cause.
        self.assertGreater(elapsed, 6.5, "restarted before the watchdog could have expired")
        result = self.ns.run("journalctl", "--no-pager", "-u", "rpcd.service", "-o", "cat").stdout
        self.assertIn("Watchdog timeout", result)
        self.assertEqual(self.rpcctl("call", "calc.add", "1", "2").stdout.strip(), "3")

    def test_socket_activation_starts_rpcd_on_first_connection(self):
        self.ns.run("systemctl", "start", "rpcd.socket")
        self.assertEqual(self.ns.show("rpcd.service", "ActiveState")["ActiveState"], "inactive")
        info = json.loads(self.rpcctl("info", "--json").stdout)
        self.assertEqual(sorted(info["listeners"]), sorted([SOCKET, "127.0.0.1:7390"]))
        self.assertEqual(self.ns.show("rpcd.service", "ActiveState")["ActiveState"], "active")
        self.assertTrue(self.journal("MESSAGE=Socket activated"))
        # The TCP socket of rpcd.socket is served too, and Listen=, which names the same addresses, was not
        # bound a second time.
        self.assertEqual(
            self.ns.run("rpcctl", "call", "calc.add", "2", "3", "--address", "127.0.0.1:7390").stdout.strip(), "5")

    def test_socket_activation_binds_listen_addresses_the_socket_unit_does_not_hold(self):
        # The administrator adds a listener to rpcd.conf as the docs say; rpcd.socket passes its two sockets.
        self.write(CONFIG_DROPIN, "[Server]\nListen=127.0.0.1:7392\n")
        self.ns.run("systemctl", "start", "rpcd.socket")
        info = json.loads(self.rpcctl("info", "--json").stdout)
        self.assertEqual(sorted(info["listeners"]), sorted([SOCKET, "127.0.0.1:7390", "127.0.0.1:7392"]))
        self.assertEqual(
            self.ns.run("rpcctl", "call", "calc.add", "2", "3", "--address", "127.0.0.1:7392").stdout.strip(), "5")
        pid = f"_PID={self.main_pid()}"
        self.ns.wait_for(lambda: len(self.journal("MESSAGE=Listening", pid)) == 3, timeout=10,
                         what="a Listening entry for each of the three listeners")

    def test_stop_is_clean_and_answers_calls_in_flight(self):
        self.start()
        client = self.ns.popen("python3", CLIENT, "inflight", SOCKET, "20", "1500")
        try:
            self.assertEqual(client.stdout.readline().strip(), "sent")
            polls = []

            def routed():
                # Each earlier rpcd.info poll is a call too: subtract them. This one is answered at once (never in
                # flight), so it is not counted until answered.
                info = json.loads(self.rpcctl("info", "--json").stdout)
                routed = info["calls"]["total"] - len(polls)
                polls.append(1)
                return routed >= 20

            self.ns.wait_for(routed, timeout=10, what="the 20 calls to be in flight")
            stop_started = time.monotonic()
            self.ns.run("systemctl", "stop", "rpcd.service", timeout=60)
            FIGURES["stop_s"] = round(time.monotonic() - stop_started, 1)
        finally:
            output, errors = client.communicate(timeout=60)
        report = json.loads(output.strip().splitlines()[-1])
        self.assertIsNone(report["error"], errors)
        self.assertEqual(report["answered"], 20)
        self.assertTrue(all(reply.get("result") == "done" for reply in report["results"]), report["results"])
        self.assertEqual(report["notifications"], ["rpc.goingAway"], "told which calls were accepted")
        show = self.ns.show("rpcd.service", "ActiveState", "Result", "ExecMainStatus")
        self.assertEqual((show["ActiveState"], show["Result"], show["ExecMainStatus"]), ("inactive", "success", "0"))
        self.assertTrue(self.journal(f"MESSAGE_ID={MESSAGE_STOPPING}"))

    def test_restarts_refuse_no_connection_and_leave_no_call_of_unknown_fate(self):
        """Under the shipped unit (FileDescriptorStoreMax=, docs/OPERATIONS.md "Restarts and upgrades"), 20
        `systemctl restart rpcd` (the last as a package upgrade's postinst restarts it) while clients call and
        listen: two raw framed clients that follow PROTOCOL.md (restart_client.py: on rpc.goingAway they resend
        what came after the cut) call, four calls in flight each, kv.set and calc.add over the Unix socket and
        calc.add over TCP: no connection is refused, every call's fate is known, and every acknowledged kv.set
        is there afterwards. Beside them, applications on the client libraries, which resend what did not run
        by themselves: the rpcd package's AsyncClient (ns_client.py restart) and the Swift client's typed
        proxies (rpcd-systemtest-client) call kv.set and calc.add and hold a kv.changed subscription, and
        `rpcctl watch` holds one too: no call fails, and every subscription comes back after each restart.
        About a minute."""
        restarts = 20
        self.write(KV_DROPIN, "[Handler]\nStateDirectory=kv\n")
        self.start()
        stop_file = "/run/rpcd-systemtest-stop"
        self.ns.run("rm", "-f", stop_file)
        # TCP peers may only read under the shipped access rules.
        clients = [self.ns.popen("python3", RESTART_CLIENT, SOCKET, "4", stop_file),
                   self.ns.popen("python3", RESTART_CLIENT, "127.0.0.1:7390", "4", stop_file, "read-only")]
        libraries = {"python": self.ns.popen("python3", CLIENT, "restart", SOCKET, stop_file),
                     "swift": self.ns.popen(SWIFT_CLIENT, SOCKET, stop_file)}
        # Into a file: thousands of events would fill a pipe read only at the end.
        watch_file = "/run/rpcd-systemtest-watch.json"
        watch = self.ns.popen("sh", "-c", f"echo $$ > {watch_file}.pid; "
                              f"exec rpcctl watch kv.changed --json --address {SOCKET} > {watch_file}")
        durations = []
        try:
            # Apart enough for systemd's start limit (StartLimitBurst=5 in StartLimitIntervalSec=10s by default),
            # which an administrator restarting in a loop meets too.
            for restart in range(restarts):
                time.sleep(2.2)
                pid = self.main_pid()
                started = time.monotonic()
                if restart == restarts - 1:
                    # The last as a package upgrade's postinst does it (dh_installsystemd, compat 13; its prerm
                    # does not stop the unit on upgrade): the new unit files read, then one restart job
                    # (`deb-systemd-invoke restart`, which runs systemctl restart unless policy-rc.d says no, as
                    # this machine's may: so systemctl itself here). The package test upgrades a real package.
                    self.ns.run("systemctl", "daemon-reload")
                    self.ns.run("systemctl", "restart", "rpcd.service", timeout=90)
                else:
                    self.ns.run("systemctl", "restart", "rpcd.service", timeout=90)
                durations.append(time.monotonic() - started)
                self.assertNotEqual(self.main_pid(), pid)
            time.sleep(1)
        finally:
            self.ns.run("touch", stop_file)
            reports = [json.loads(client.communicate(timeout=60)[0].strip().splitlines()[-1]) for client in clients]
            applications = {name: json.loads(process.communicate(timeout=60)[0].strip().splitlines()[-1])
                            for name, process in libraries.items()}
            # In the namespace: nsenter passes no signal on to the process it started.
            self.ns.run("sh", "-c", f"kill $(cat {watch_file}.pid)", check=False)
            watch_errors = watch.communicate(timeout=30)[1]
            watched = [json.loads(line) for line in self.ns.run("cat", watch_file).stdout.splitlines()]
        for report in reports:
            self.assertEqual(report["refused"], 0, report)
            self.assertEqual(report["unknown"], 0, report)
            self.assertEqual(report["errors"], [], report)
            self.assertEqual(report["last_id_mismatches"], 0, report)
            self.assertGreaterEqual(report["going_away"], 1, report)
            self.assertGreater(report["ok"], 0, report)
        self.assertTrue(reports[0]["acknowledged"], reports[0])
        for name, application in applications.items():
            self.assertEqual((application["failed"], application["errors"]), (0, []), (name, application))
            self.assertGreater(application["ok"], 0, (name, application))
            self.assertGreaterEqual(application["resubscribed"], restarts, (name, application))
            self.assertGreater(application["events_after_last"], 0,
                               f"{name}: the subscription resumed after the last restart")
        resubscribed = [i for i, line in enumerate(watched) if line.get("resubscribed")]
        self.assertGreaterEqual(len(resubscribed), restarts,
                                f"rpcctl watch: subscribed again after each restart ({watch.returncode}: {watch_errors})")
        self.assertTrue(any("event" in line for line in watched[resubscribed[-1]:]),
                        "rpcctl watch: events after the last restart")
        for report in reports + list(applications.values()):
            for key, value in report["acknowledged"].items():
                self.assertEqual(json.loads(self.rpcctl("call", "kv.get", key).stdout), value, key)
        kept = self.ns.wait_for(
            lambda: self.journal(f"_PID={self.main_pid()}", "MESSAGE=Listening sockets kept across the restart"),
            timeout=10, what="the new rpcd to serve the sockets of the store")
        self.assertIn("listen-127.0.0.1%3A7390", kept[-1]["RPCD_SOCKETS"])
        FIGURES["restarts"] = restarts
        FIGURES["restart_s_max"] = round(max(durations), 2)
        FIGURES["restart_client_max_gap_ms"] = max(report["max_gap_ms"] for report in reports)
        FIGURES["restart_client_max_call_ms"] = max(report["max_call_ms"] for report in reports)
        FIGURES["restart_client_calls"] = sum(report["ok"] for report in reports)
        FIGURES["restart_client_resent"] = sum(report["resent"] for report in reports)
        for name, application in applications.items():
            FIGURES[f"restart_{name}_client_calls"] = application["ok"]
            FIGURES[f"restart_{name}_client_max_gap_ms"] = application["max_gap_ms"]
            FIGURES[f"restart_{name}_client_resubscribed"] = application["resubscribed"]
        FIGURES["restart_rpcctl_watch_resubscribed"] = len(resubscribed)

    def test_a_restart_keeps_the_sockets_listen_names_and_drops_the_others(self):
        """The file descriptor store follows rpcd.conf: a Listen= address added is kept from the next restart on,
        one removed is closed and leaves the store, and a stop followed by a start (two jobs) keeps nothing."""
        def kept():
            # The entry comes before READY=1, which rpcd's "Started" follows: once journald has that, it has both.
            pid = f"_PID={self.main_pid()}"
            self.ns.wait_for(lambda: self.journal(pid, "MESSAGE=Started"), timeout=10, what="rpcd's Started entry")
            entries = self.journal(pid, "MESSAGE=Listening sockets kept across the restart")
            return entries[-1]["RPCD_SOCKETS"] if entries else ""

        def connects(port):
            return self.ns.run("python3", "-c", f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)",
                               check=False).returncode == 0

        self.write(CONFIG_DROPIN, "[Server]\nListen=127.0.0.1:7392\n")
        self.start()
        self.ns.run("systemctl", "restart", "rpcd.service", timeout=90)
        for name in ("listen-/run/rpcd/rpcd.sock", "listen-127.0.0.1%3A7390", "listen-127.0.0.1%3A7392"):
            self.assertIn(name, kept())
        self.write(CONFIG_DROPIN, "[Server]\nListen=\nListen=/run/rpcd/rpcd.sock\nListen=127.0.0.1:7390\n")
        self.ns.run("systemctl", "restart", "rpcd.service", timeout=90)
        self.assertIn("listen-127.0.0.1%3A7392", kept(), "passed once more, then closed")
        self.assertFalse(connects(7392), "no longer listening")
        self.assertTrue(connects(7390))
        self.ns.run("systemctl", "restart", "rpcd.service", timeout=90)
        self.assertNotIn("7392", kept(), "removed from the store")
        self.assertIn("listen-127.0.0.1%3A7390", kept())
        # The kept 127.0.0.1:7390 holds the port a wildcard address needs: it goes before the new one is bound
        # (README's "every address" drop-in, as the package test writes it).
        self.write(CONFIG_DROPIN, "[Server]\nListen=\nListen=/run/rpcd/rpcd.sock\nListen=0.0.0.0:7390\n")
        self.ns.run("systemctl", "reset-failed", "rpcd.service")  # five starts so far: within StartLimitBurst=
        self.ns.run("systemctl", "restart", "rpcd.service", timeout=90)
        self.assertTrue(connects(7390))
        self.ns.run("systemctl", "restart", "rpcd.service", timeout=90)
        self.assertIn("listen-0.0.0.0%3A7390", kept())
        self.ns.run("systemctl", "stop", "rpcd.service")
        self.ns.run("systemctl", "reset-failed", "rpcd.service", check=False)
        self.start()
        self.assertEqual(kept(), "", "a stop empties the store")

    def test_tls_with_client_certificates_under_the_shipped_unit(self):
        """A tls:// listener as docs/SECURITY.md sets it up: the key readable by group rpcd only, read by the
        unit's user inside its sandbox; a client named by its certificate may change state; a renewed
        certificate is read on reload without a restart; an unreadable key is a configuration error (78)."""
        tls_dir, client_dir = "/etc/rpcd/tls", "/root/rpcd-client"
        self.addCleanup(self.ns.run, "rm", "-rf", tls_dir, client_dir, check=False)
        pki = make_pki(["ops"])
        for name in ("server.pem", "ca.pem"):
            self.write(f"{tls_dir}/{name}", pki[name])
        self.write(f"{tls_dir}/server.key", pki["server.key"])
        self.ns.run("chmod", "0640", f"{tls_dir}/server.key")
        self.ns.run("chgrp", "rpcd", f"{tls_dir}/server.key")
        for name in ("ca.pem", "ops.pem", "ops.key"):
            self.write(f"{client_dir}/{name}", pki[name])
        # rpcctl, like ssh, refuses a private key other users may read.
        self.ns.run("chmod", "0600", f"{client_dir}/ops.key")
        self.write(CONFIG_DROPIN, (
            "[Server]\nListen=/run/rpcd/rpcd.sock\nListen=tls://127.0.0.1:7391\nLogCalls=yes\n"
            f"[TLS]\nCertificate={tls_dir}/server.pem\nPrivateKey={tls_dir}/server.key\n"
            f"ClientCA={tls_dir}/ca.pem\nRequireClientCertificate=yes\n"
            "[Access]\nAllow=user:root group:rpcd client:ops\n"))
        self.start()
        pid = self.main_pid()

        def tls_call(*args, ca=f"{client_dir}/ca.pem", check=True):
            return self.ns.run(
                "rpcctl", "call", *args, "--address", "tls://127.0.0.1:7391", "--server-name", "localhost",
                "--ca", ca, "--cert", f"{client_dir}/ops.pem", "--key", f"{client_dir}/ops.key", check=check)

        self.assertEqual(tls_call("kv.set", "key=k", "value=1").stdout.strip(), "true")
        entries = self.ns.wait_for(
            lambda: self.journal(f"_PID={pid}", "RPCD_METHOD=kv.set", "RPCD_TLS_CLIENT=ops"), timeout=10,
            what="the call's entry naming the client")
        self.assertTrue(entries)

        # Renewal: a certificate from another CA under the same names, then a reload.
        renewed = make_pki([])
        self.write(f"{tls_dir}/server.pem", renewed["server.pem"])
        self.write(f"{tls_dir}/server.key", renewed["server.key"])
        self.write(f"{client_dir}/renewed-ca.pem", renewed["ca.pem"])
        self.ns.run("systemctl", "reload", "rpcd.service", timeout=60)
        self.ns.wait_for(lambda: self.journal(f"_PID={pid}", "MESSAGE=TLS files read again"), timeout=20,
                         what="the TLS files to be read again")
        self.assertEqual(tls_call("kv.get", "k", ca=f"{client_dir}/renewed-ca.pem").stdout.strip(), "1")
        self.assertEqual(self.main_pid(), pid, "a renewal needs no restart")

        # A key the rpcd user cannot read stops the start with the file named, and no restart loop.
        self.ns.run("chgrp", "root", f"{tls_dir}/server.key")
        self.ns.run("systemctl", "stop", "rpcd.service")
        result = self.ns.run("systemctl", "start", "rpcd.service", check=False, timeout=90)
        self.assertNotEqual(result.returncode, 0)
        show = self.ns.show("rpcd.service", "ActiveState", "StatusText", "ExecMainStatus")
        self.assertEqual((show["ActiveState"], show["ExecMainStatus"]), ("failed", "78"), show)
        self.assertIn(f"{tls_dir}/server.key: Permission denied", show["StatusText"])

    def test_start_failure_reports_errno_and_status(self):
        self.write(CONFIG_DROPIN, "[Server]\nMaxFrameSize=16MB\n")
        result = self.ns.run("systemctl", "start", "rpcd.service", check=False, timeout=90)
        self.assertNotEqual(result.returncode, 0)
        show = self.ns.show("rpcd.service", "ActiveState", "StatusText", "StatusErrno", "ExecMainStatus")
        self.assertEqual(show["ActiveState"], "failed")
        self.assertEqual(show["ExecMainStatus"], "78")
        self.assertEqual(show["StatusErrno"], "22")
        self.assertIn("50-systemtest.conf:2: invalid value '16MB' for MaxFrameSize=", show["StatusText"])


def make_pki(clients):
    """A throw-away CA with a server certificate for localhost and a client certificate per name in CLIENTS, made
    with the openssl commands of docs/SECURITY.md; returns {file name: PEM text}."""
    with tempfile.TemporaryDirectory(prefix="rpcd-pki-") as directory:
        def openssl(*args):
            subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

        def issue(name, extensions):
            with open(os.path.join(directory, f"{name}.ext"), "w") as file:
                file.write(extensions)
            openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={name}",
                    "-keyout", f"{name}.key", "-out", f"{name}.csr")
            openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                    "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem")

        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=rpcd system test CA", "-keyout", "ca.key", "-out", "ca.pem")
        issue("server", "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n")
        for client in clients:
            issue(client, "extendedKeyUsage=clientAuth\n")
        names = ["ca.pem", "server.pem", "server.key"] + [f"{c}.{e}" for c in clients for e in ("pem", "key")]
        pki = {}
        for name in names:
            with open(os.path.join(directory, name)) as file:
                pki[name] = file.read()
        return pki


if __name__ == "__main__":
    unittest.main(verbosity=2)
