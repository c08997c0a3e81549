"""rpcd's metrics from outside, with real processes (`make test-metrics`, docs/OPERATIONS.md#metrics):

- the Prometheus exposition (`rpcd.metrics` with format=prometheus) passes `promtool check metrics` with no
  warnings, and every family it holds is documented in OPERATIONS.md's table;
- OPERATIONS.md's five alerting rules pass `promtool check rules`;
- `rpcctl top` in a real terminal (tmux: new-session, send-keys, capture-pane) against a daemon under load
  (rpcctl bench on the Unix socket, peer "uid N") and under an attack (connections from loopback that
  pipeline large calls and never read their replies, bench/hostile.py's "pipeline" class): the attacking peer
  is listed first, the load's method shows calls/s, `s` changes the order and `q` quits;
- `rpcctl top --once --json` names the same heaviest peer to root on the Unix socket (an administrator under
  the shipped access rules), and to a local user (loopback TCP) gives only the aggregate: no peer is named.

Needs rpcd, rpcctl and the example modules (RPCD_BIN_DIR, default .build/debug), promtool (Debian's
prometheus package) and tmux. Loopback and a temporary Unix socket only; every process it starts is stopped,
and the load and the attack end by themselves. The tmux server is a private one (-L), never the user's.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN_DIR = os.environ.get("RPCD_BIN_DIR", os.path.join(ROOT, ".build/debug"))
OPERATIONS = os.path.join(ROOT, "docs", "OPERATIONS.md")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def read(path):
    with open(path) as file:
        return file.read()


def documented_metrics():
    """The metric names of OPERATIONS.md's table (### What each metric means)."""
    text = read(OPERATIONS)
    table = text.split("### What each metric means", 1)[1].split("###", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", table, re.M))


def alerting_rules():
    text = read(OPERATIONS)
    section = text.split("### Alerting rules", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


class Daemon:
    def __init__(self, workdir, http=False):
        self.port = free_port()
        self.http_port = free_port() if http else None
        self.socket_path = os.path.join(workdir, "rpcd.sock")
        config = os.path.join(workdir, "rpcd.conf")
        with open(config, "w") as file:
            file.write(f"[Server]\nListen=127.0.0.1:{self.port}\nListen={self.socket_path}\nThreads=1\n")
            if http:
                file.write(f"Listen=http://127.0.0.1:{self.http_port}\n")
            # The shipped access rules ([Access] left out): root and group rpcd may call everything and see the
            # peers rpcd.metrics names, every local user may read.
            file.write("[Avahi]\nEnabled=no\n")
        self.log = open(os.path.join(workdir, "rpcd.log"), "w")
        self.process = subprocess.Popen(
            [os.path.join(BIN_DIR, "rpcd"), "--config", config, "--handlers-dir", os.path.join(ROOT, "config", "handlers.d"),
             "--module-dir", BIN_DIR], stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: "Started" in read(self.log.name) or self.process.poll() is not None, 60):
            raise RuntimeError("rpcd did not start")
        if self.process.poll() is not None:
            raise RuntimeError(f"rpcd exited: {read(self.log.name)}")

    def rpcctl(self, *arguments, timeout=30, address=None):
        """rpcctl on the Unix socket (as root: an administrator under the shipped rules), or on `address`."""
        return subprocess.run([os.path.join(BIN_DIR, "rpcctl"), *arguments, "--address", address or self.socket_path],
                              capture_output=True, text=True, timeout=timeout)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


class Attack:
    """bench/hostile.py's pipeline class: connections from loopback send echo.echo calls with 256 KB of params
    and never read, so their replies pile up in rpcd, charged to the loopback peer. A small receive buffer
    keeps the kernel from taking the replies off rpcd's hands (past what its send buffer takes, a few MiB). Ends
    after `seconds`. One connection, 8 MiB of calls: within the peer's share (16 MiB), as each call is charged
    its frame, its copy to echo's module host and its reply as it arrives from the host, and a peer whose share
    is spent has its connections closed, which `rpcctl top` would then not show."""

    def __init__(self, port, seconds, connections=1, calls=32):
        self.sockets = []
        payload = json.dumps({"jsonrpc": "2.0", "method": "echo.echo", "params": ["x" * 256_000], "id": 1}).encode()
        frame = len(payload).to_bytes(4, "big") + payload
        for _ in range(connections):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", port))
            self.sockets.append(s)
        self.thread = threading.Thread(target=self._send, args=(frame, calls), daemon=True)
        self.thread.start()
        self.timer = threading.Timer(seconds, self.stop)
        self.timer.start()

    def _send(self, frame, calls):
        for s in self.sockets:
            s.settimeout(5)
            try:
                for _ in range(calls):
                    s.sendall(frame)
            except OSError:
                pass

    def stop(self):
        self.timer.cancel()
        for s in self.sockets:
            s.close()


@unittest.skipUnless(shutil.which("promtool") and shutil.which("tmux"), "needs promtool (prometheus) and tmux")
class MetricsTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="rpcd-metrics-test-")
        cls.daemon = Daemon(cls.workdir)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def exposition(self):
        result = self.daemon.rpcctl("call", "rpcd.metrics", "format=prometheus")
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)

    def test_promtool_accepts_the_exposition_and_every_family_is_documented(self):
        for method in ("calc.add", "nope.nothing", "rpcd.ping"):
            self.daemon.rpcctl("call", method, "1", "2")
        text = self.exposition()
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertEqual(check.stdout + check.stderr, "", "no warnings")
        self.assertIn('rpcd_calls_total{service="calc",method="add",outcome="ok"} 1', text)
        self.assertIn('rpcd_calls_total{service="(unknown)",method="(unknown)",outcome="-32601"}', text,
                      "a method nobody declares is counted under a fixed label")
        self.assertNotIn("nope", text)
        families = set(re.findall(r"^# TYPE ([a-z_]+) ", text, re.M))
        self.assertLessEqual(families, documented_metrics(), "families missing from OPERATIONS.md's table")

    def test_promtool_accepts_the_documented_alerting_rules(self):
        path = os.path.join(self.workdir, "rpcd-rules.yml")
        with open(path, "w") as file:
            file.write(alerting_rules())
        check = subprocess.run(["promtool", "check", "rules", path], capture_output=True, text=True, timeout=30)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertIn("SUCCESS: 5 rules found", check.stdout)

    def test_top_in_a_terminal_shows_the_load_and_the_attacker_first(self):
        load = subprocess.Popen(
            [os.path.join(BIN_DIR, "rpcctl"), "bench", "calc.add", "--params", "[1, 2]", "--connections", "4",
             "--depth", "4", "--duration", "20", "--warmup", "0", "--threads", "1", "--address", self.daemon.socket_path],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        attack = Attack(self.daemon.port, seconds=35)
        tmux = ["tmux", "-L", f"rpcd-metrics-test-{os.getpid()}"]
        session = "top"
        try:
            subprocess.run(tmux + ["new-session", "-d", "-s", session, "-x", "80", "-y", "40",
                                   f"{os.path.join(BIN_DIR, 'rpcctl')} top --address {self.daemon.socket_path}"],
                           check=True, timeout=10)

            def screen():
                result = subprocess.run(tmux + ["capture-pane", "-p", "-t", session], capture_output=True, text=True,
                                        timeout=10)
                return result.stdout if result.returncode == 0 else ""

            def attacked():
                lines = screen().splitlines()
                peers = next((i for i, line in enumerate(lines) if line.startswith("PEER")), None)
                calc = next((line for line in lines if line.startswith("calc.add ")), None)
                if peers is None or calc is None or peers + 1 >= len(lines):
                    return None
                if not lines[peers + 1].startswith("loopback") or float(calc.split()[1]) <= 0:
                    return None
                return lines

            lines = wait_for(attacked, 20)
            captured = screen()
            path = os.path.join(tempfile.gettempdir(), f"rpcctl-top-{os.getpid()}.txt")
            with open(path, "w") as file:
                file.write(captured)
            print(f"\nrpcctl top under load and attack (captured to {path}):\n{captured}", file=sys.stderr)
            self.assertTrue(lines, f"the attacking peer (loopback) first and calc.add with calls/s:\n{captured}")
            self.assertTrue(all(len(line) <= 80 for line in captured.splitlines()))
            self.assertGreater(int(lines[lines.index(next(l for l in lines if l.startswith("PEER"))) + 1].split()[1]
                                   .split(".")[0]), 100, "the attacker holds more than 100 KB")

            once = self.daemon.rpcctl("top", "--once", "--json")
            self.assertEqual(once.returncode, 0, once.stderr)
            snapshot = json.loads(once.stdout)
            self.assertEqual(snapshot["peers"][0]["peer"], "loopback")
            self.assertTrue(any(m["service"] == "calc" and m["method"] == "add" and m["calls"] > 0
                                for m in snapshot["methods"]))

            # Over loopback TCP the caller is a local user, not an administrator (users are only known on the
            # Unix socket): rpcd.metrics names no peer, only how many there are and what the heaviest holds.
            tcp = f"127.0.0.1:{self.daemon.port}"
            once = self.daemon.rpcctl("top", "--once", "--json", address=tcp)
            self.assertEqual(once.returncode, 0, once.stderr)
            unnamed = json.loads(once.stdout)
            self.assertNotIn("peers", unnamed)
            self.assertGreaterEqual(unnamed["budget"]["peers"], 2, unnamed["budget"])
            self.assertGreater(unnamed["budget"]["largest_peer_bytes"], 100_000, unnamed["budget"])
            plain = self.daemon.rpcctl("top", "--once", "--interval", "0.2", address=tcp)
            self.assertEqual(plain.returncode, 0, plain.stderr)
            self.assertIn("(names: administrators only)", plain.stdout)
            self.assertNotIn("\nloopback ", plain.stdout)

            subprocess.run(tmux + ["send-keys", "-t", session, "s"], check=True, timeout=10)
            self.assertTrue(wait_for(lambda: "sort (by errors)" in screen(), 5), screen())
            subprocess.run(tmux + ["send-keys", "-t", session, "q"], check=True, timeout=10)
            gone = wait_for(lambda: subprocess.run(tmux + ["has-session", "-t", session], capture_output=True,
                                                   timeout=10).returncode != 0, 5)
            self.assertTrue(gone, "q quits rpcctl top")
        finally:
            subprocess.run(tmux + ["kill-server"], capture_output=True, timeout=10)
            attack.stop()
            load.terminate()
            load.wait(timeout=30)


@unittest.skipUnless(shutil.which("prometheus"), "needs prometheus (Debian's package)")
class PrometheusScrapeTests(unittest.TestCase):
    """A real Prometheus server scrapes rpcd's GET /metrics (an http:// listener) every second while rpcctl bench
    calls calc.add; PromQL through Prometheus' HTTP API then finds a non-zero call rate and a latency quantile."""

    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="rpcd-prometheus-test-")
        self.processes = []

    def tearDown(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        if self.daemon:
            self.daemon.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def query(self, port, promql):
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=10) as response:
            answer = json.load(response)
        self.assertEqual(answer["status"], "success", answer)
        return [float(sample["value"][1]) for sample in answer["data"]["result"]]

    def test_prometheus_scrapes_rpcd_under_load(self):
        try:
            self.daemon = Daemon(self.workdir, http=True)
        except RuntimeError as error:
            self.daemon = None
            if "Listen=" in str(error):
                self.skipTest("this rpcd has no HTTP listener (Listen=http://)")
            raise
        port = free_port()
        config = os.path.join(self.workdir, "prometheus.yml")
        with open(config, "w") as file:
            file.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: rpcd\n"
                       f"    metrics_path: /metrics\n    static_configs:\n      - targets: ['127.0.0.1:{self.daemon.http_port}']\n")
        log = open(os.path.join(self.workdir, "prometheus.log"), "w")
        self.addCleanup(log.close)
        self.processes.append(subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={self.workdir}/tsdb",
             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT))
        self.processes.append(subprocess.Popen(
            [os.path.join(BIN_DIR, "rpcctl"), "bench", "calc.add", "--params", "[1, 2]", "--connections", "2",
             "--depth", "2", "--duration", "15", "--warmup", "0", "--threads", "1", "--address", self.daemon.socket_path],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        selector = 'service="calc",method="add"'

        def rate():
            try:
                values = self.query(port, f'sum(rate(rpcd_calls_total{{{selector},outcome="ok"}}[5s]))')
            except OSError:
                return None
            return values[0] if values and values[0] > 0 else None

        calls_per_second = wait_for(rate, 25, interval=1)
        self.assertTrue(calls_per_second, read(log.name))
        p99 = self.query(port, f"histogram_quantile(0.99, sum by (le) (rate(rpcd_call_duration_seconds_bucket{{{selector}}}[5s])))")
        self.assertTrue(p99 and 0 < p99[0] < 10, p99)
        up = self.query(port, 'up{job="rpcd"}')
        self.assertEqual(up, [1.0])
        print(f"\nPrometheus: calc.add {calls_per_second:.0f} calls/s, p99 {p99[0] * 1000:.2f} ms", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
