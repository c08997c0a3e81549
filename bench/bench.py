#!/usr/bin/env python3
"""rpcd's benchmark: the workloads users spend their calls on, each beside a reference measured in the same run.

    bench/bench.py BIN_DIR [--seconds N] [--warmup N] [--idle N] [--hummingbird PATH] [--reference PATH]
                   [--rounds N] [--only NAME ...]

The server runs pinned to CPU 0 with one event loop; the load client (bench/loadgen.c, a single-threaded C
epoll client, so the client is not what is measured) runs pinned to CPU 1. Workloads:

    ping        rpcd.ping against rpcd and against rpcd-echo-reference (raw SwiftNIO frame echo, no JSON, the
                whole frames of each read written back as one buffer), 50 connections x depth 16 and x 1, and
                1 x 1 for latency; and the same echo writing each frame on its own (--per-frame) at 50 x 16.
                With --reference, also against the C++ JSON-RPC reference (bench/jsonrpc-reference.cpp: the
                same protocol work as rpcd.ping), and server CPU per call (utime + stime over the measured
                window / calls) of rpcd and of it, medians of --rounds rounds, and their ratio (--rounds also
                applies to the isolation, metrics, WebSocket and HTTP rows: each side's median round, runs alternated)
    c-module    sysinfo.hostname (a C module) at 50 x 16 and 50 x 1
    swift-sdk   calc.add (a Swift SDK module) at 50 x 16 and 50 x 1, compared with the C module
    echo-1mib   echo.echo with 1 MiB of params on one connection: bytes per second each way
    idle        RSS per idle connection with N (default 10000) open connections, rpcd and the reference,
                each a fresh process
    tls         rpcd.ping over a tls:// listener against the same rpcd's plain listener, 50 x 16, and a new
                connection per call (4 workers: connect, handshake, call, close) against the same over plain TCP,
                without and with the client offering its previous session (TLS 1.3 resumption)
    ready       exec to "Started" (every listener bound, every module loaded), the four example modules
    isolation   calc.add at 50 x 16, 50 x 1 and 1 x 1, and echo.echo with 1 MiB, through the shipped handlers
                (every module in a module host process) against the same handlers with Isolation=none, and each
                idle module host's RSS, PSS, private dirty memory, threads and sealed module copy, and its memory by
                origin (Swift runtime, system libraries, host binary, module, anonymous), beside a Swift program
                that does nothing
    metrics     rpcd.ping and calc.add (in-process) at 50 x 16 and 1 x 1 with metrics kept (the default) against
                the same rpcd with Metrics=no: what counting and timing every call costs
    http        rpcd.ping over HTTP/1.1 keep-alive (POST /rpc, wrk with 50 connections) against a minimal
                Hummingbird 2 server answering the same JSON body (bench/hummingbird-reference), and rpcd.ping
                over WebSocket (loadgen, LOADGEN_WEBSOCKET=1) against the same rpcd's framed TCP at 50 x 16
    events      kv.changed delivered to 1 and to 100 subscribers while one connection stores as fast as it can
                (kv.set, 16 in flight; bench/eventload.c, one epoll thread, on CPU 1), and the RSS one idle
                subscription costs (the first on a connection, and each further one), in a fresh process

Prints a table of calls/s, p50/p99 and the ratios, and writes bench-results/<stamp>.json. A benchmark, not a
test: nothing is asserted. Bounded: every load run stops by itself (loadgen's own clock, plus a timeout
backstop); servers are stopped on exit. Loopback only.
"""

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER_CPU, CLIENT_CPU = "0", "1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned(cpu, command):
    return ["taskset", "-c", cpu] + command if shutil.which("taskset") and os.cpu_count() >= 2 else command


class Server:
    """A server process under test, pinned to SERVER_CPU, listening on a fresh loopback port."""

    def __init__(self, name, command, port, workdir, ready_text):
        self.name, self.port = name, port
        self.log_path = os.path.join(workdir, f"{name}-{port}.log")
        self.log = open(self.log_path, "w")
        self.started = time.monotonic()
        self.process = subprocess.Popen(pinned(SERVER_CPU, command), stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while ready_text not in open(self.log_path).read():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start; see {self.log_path}")
            time.sleep(0.01)
        self.ready_after = time.monotonic() - self.started

    def cpu_seconds(self):
        """User and system CPU time the server has used so far."""
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def in_process_handlers(workdir):
    """config/handlers.d with every handler in rpcd's own process (Isolation=none): what isolation costs is
    measured against it."""
    shipped = os.path.join(ROOT, "config", "handlers.d")
    directory = os.path.join(workdir, "handlers-in-process")
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(shipped):
        if name.endswith(".conf"):
            with open(os.path.join(shipped, name)) as file:
                text = file.read().replace("[Handler]\n", "[Handler]\nIsolation=none\n", 1)
            with open(os.path.join(directory, name), "w") as file:
                file.write(text)
    return directory


def smaps_rollup(pid):
    """The kB fields of /proc/PID/smaps_rollup (Rss, Pss, Private_Dirty, ...)."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as file:
        for line in file:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                fields[parts[0].rstrip(":")] = int(parts[1])
    return fields


def memory_origin(path):
    """Where a mapping of /proc/PID/smaps comes from, for the breakdown of a module host's memory."""
    name = os.path.basename(path)
    if name.startswith("memfd:rpcd-module-"):
        return "module"
    if name == "rpcd-module-host":
        return "host binary"
    if "/swift/" in path or name.startswith(("libswift", "lib_swift", "libdispatch", "libBlocksRuntime", "libFoundation",
                                             "lib_Foundation")):
        return "Swift runtime"
    if path.startswith("/"):
        return "system libraries"
    return "anonymous"


def memory_by_origin(pid):
    """RSS, PSS and private dirty KiB of a process by where its mappings come from (`memory_origin`): what is
    the process's own (anonymous memory, its module) and what every Swift process maps (the runtime)."""
    origins, current = {}, None
    with open(f"/proc/{pid}/smaps") as file:
        for line in file:
            parts = line.split()
            if "-" in parts[0] and not parts[0].endswith(":"):
                origin = memory_origin(parts[5] if len(parts) > 5 else "")
                current = origins.setdefault(origin, {"rss_kib": 0, "pss_kib": 0, "private_dirty_kib": 0})
            elif len(parts) == 3 and parts[2] == "kB" and current is not None:
                key = {"Rss:": "rss_kib", "Pss:": "pss_kib", "Private_Dirty:": "private_dirty_kib"}.get(parts[0])
                if key:
                    current[key] += int(parts[1])
    return origins


def module_hosts(parent):
    """(pid, handler) of each module host the process `parent` started: its children running
    `rpcd-module-host HANDLER ...`."""
    hosts = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                ppid = int(file.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                argv = file.read().split(b"\0")
            if ppid == parent and len(argv) > 1 and argv[0].endswith(b"rpcd-module-host"):
                hosts.append((int(entry), argv[1].decode()))
        except (OSError, IndexError, ValueError):
            continue
    return hosts


def module_host_memory(server):
    """Each module host of `server`, before any call: RSS, PSS (shared pages divided among the processes
    mapping them) and private dirty memory, from /proc/PID/smaps_rollup, its threads, and the same by origin
    (`memory_by_origin`)."""
    hosts = []
    for pid, handler in module_hosts(server.process.pid):
        try:
            fields = smaps_rollup(pid)
            threads = len(os.listdir(f"/proc/{pid}/task"))
            origins = memory_by_origin(pid)
            copy = module_copy_kib(pid)
        except (OSError, ValueError):
            continue
        hosts.append({"handler": handler, "rss_kib": fields.get("Rss", 0), "pss_kib": fields.get("Pss", 0),
                      "private_dirty_kib": fields.get("Private_Dirty", 0), "threads": threads, "by_origin": origins,
                      "module_copy_kib": copy})
    return sorted(hosts, key=lambda host: host["handler"])


def module_copy_kib(pid):
    """KiB the sealed memory copies of a process's modules hold (memfd:rpcd-module-*), mapped or not: memory
    that smaps shows only where it is mapped."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:rpcd-module-"):
                total += os.stat(f"/proc/{pid}/fd/{fd}").st_blocks // 2
        except OSError:
            continue
    return total


def swift_floor_memory(workdir):
    """The idle memory of a Swift program that does nothing (bench/swift-floor.swift, built here with the
    toolchain's swiftc): the runtime's share of every module host's RSS, which no change to the host can cut.
    None without swiftc."""
    swiftc = shutil.which("swiftc") or "/opt/swift/usr/bin/swiftc"
    if not os.access(swiftc, os.X_OK):
        return None
    binary = os.path.join(workdir, "swift-floor")
    subprocess.run([swiftc, "-O", "-o", binary, os.path.join(ROOT, "bench", "swift-floor.swift")], check=True,
                   stdout=subprocess.DEVNULL)
    process = subprocess.Popen(pinned(SERVER_CPU, [binary]), stdout=subprocess.PIPE)
    try:
        process.stdout.readline()
        fields = smaps_rollup(process.pid)
        return {"rss_kib": fields.get("Rss", 0), "pss_kib": fields.get("Pss", 0),
                "private_dirty_kib": fields.get("Private_Dirty", 0), "by_origin": memory_by_origin(process.pid)}
    finally:
        process.kill()
        process.wait()


def one_mib_params(workdir):
    """A params file for loadgen (`@PATH`): one string of 1 MiB."""
    path = os.path.join(workdir, "params-1mib.json")
    with open(path, "w") as file:
        file.write('["' + "x" * (1 << 20) + '"]')
    return path


def start_rpcd(bin_dir, workdir, tls_port=None, extra="", handlers=None, http_port=None):
    """rpcd on a plain loopback port and, with `tls_port`, a tls:// one with a certificate made here, and with
    `http_port` an http:// one; `extra` is appended to its rpcd.conf; `handlers` replaces the shipped handlers.d."""
    port = free_port()
    config = os.path.join(workdir, f"rpcd-{port}.conf")
    with open(config, "w") as file:
        file.write(f"[Server]\nListen=127.0.0.1:{port}\nThreads=1\nMaxConnections=100000\nMaxConnectionsPerPeer=100000\n"
                   "IdleTimeout=0\n")
        if http_port:
            file.write(f"Listen=http://127.0.0.1:{http_port}\n")
        file.write(extra)
        if tls_port:
            certificate, key = make_certificate(workdir)
            file.write(f"Listen=tls://127.0.0.1:{tls_port}\n[TLS]\nCertificate={certificate}\nPrivateKey={key}\n")
    server = Server("rpcd", [os.path.join(bin_dir, "rpcd"), "--config", config,
                             "--handlers-dir", handlers or os.path.join(ROOT, "config", "handlers.d"), "--module-dir", bin_dir],
                    port, workdir, "Started")
    server.tls_port = tls_port
    server.http_port = http_port
    return server


def make_certificate(workdir):
    """A self-signed P-256 certificate for localhost (the load client does not check it), as docs/SECURITY.md
    makes keys."""
    certificate, key = os.path.join(workdir, "bench.pem"), os.path.join(workdir, "bench.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", key, "-out", certificate], check=True, capture_output=True)
    return certificate, key


def start_reference(bin_dir, workdir, per_frame=False):
    port = free_port()
    return Server("reference", [os.path.join(bin_dir, "rpcd-echo-reference"), "--listen", f"127.0.0.1:{port}",
                                "--threads", "1"] + (["--per-frame"] if per_frame else []), port, workdir, "listening on")


def start_cpp_reference(path, workdir):
    """bench/jsonrpc-reference.cpp (`make bench-reference`): rpcd.ping's protocol work in C++ with simdjson."""
    port = free_port()
    return Server("cpp-reference", [path, "--listen", f"127.0.0.1:{port}"], port, workdir, "listening on")


class MeasuredWindow:
    """The CPU time (utime + stime, /proc/PID/stat) `server` uses during a load run's measured window: sampled
    `warmup` seconds after the run starts and again `seconds` later, by timers beside the run. `cpu` is None
    when the run ended before the second sample."""

    def __init__(self, server, warmup, seconds):
        self.server, self.cpu, self.started = server, None, None
        self.timers = [threading.Timer(warmup, self.start), threading.Timer(warmup + seconds, self.end)]

    def start(self):
        self.started = self.server.cpu_seconds()

    def end(self):
        if self.started is not None:
            self.cpu = self.server.cpu_seconds() - self.started

    def __enter__(self):
        for timer in self.timers:
            timer.start()
        return self

    def __exit__(self, *exc):
        for timer in self.timers:
            timer.cancel()
            timer.join()


def start_hummingbird(path, workdir):
    port = free_port()
    return Server("hummingbird", [path, str(port)], port, workdir, "listening on")


WRK_SCRIPT = """wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","method":"rpcd.ping","id":1}'
wrk.headers["Content-Type"] = "application/json"
"""


def wrk_load(workdir, port, connections, seconds, warmup):
    """rpcd.ping POSTed to /rpc by wrk (one thread on CLIENT_CPU, `connections` keep-alive connections, one
    request at a time on each), after a warm-up run; the same shape of result as loadgen's."""
    script = os.path.join(workdir, "post.lua")
    with open(script, "w") as file:
        file.write(WRK_SCRIPT)
    url = f"http://127.0.0.1:{port}/rpc"

    def run(duration):
        command = pinned(CLIENT_CPU, ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", script, url])
        result = subprocess.run(command, capture_output=True, text=True, timeout=duration + 60)
        if result.returncode != 0:
            raise RuntimeError(f"wrk: {result.stderr.strip()}")
        return result.stdout

    if warmup > 0:
        run(max(1, round(warmup)))
    output = run(max(1, round(seconds)))
    units = {"us": 1, "ms": 1000, "s": 1000000}

    def microseconds(text):
        number = text.rstrip("usm")
        return float(number) * units[text[len(number):]]

    latencies, rate, errors = {}, 0.0, 0
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] in ("50%", "99%"):
            latencies[fields[0]] = microseconds(fields[1])
        elif line.startswith("Requests/sec:"):
            rate = float(fields[1])
        elif "Non-2xx" in line:
            errors = int(fields[-1])
    return {"calls": int(rate * seconds), "errors": errors, "calls_per_second": rate, "bytes_per_second": 0,
            "p50_us": latencies.get("50%", 0), "p99_us": latencies.get("99%", 0), "client": "wrk"}


def load(loadgen, port, method, params, connections, depth, seconds, warmup, tls=False, connection_per_call=False,
         resume=False, websocket=False):
    command = pinned(CLIENT_CPU, [loadgen, "127.0.0.1", str(port), method, params, str(connections), str(depth),
                                  str(seconds), str(warmup)])
    environment = dict(os.environ, LOADGEN_TLS="1" if tls else "0",
                       LOADGEN_CONNECTION_PER_CALL="1" if connection_per_call else "0",
                       LOADGEN_TLS_RESUME="1" if resume else "0",
                       LOADGEN_WEBSOCKET="1" if websocket else "0")
    result = subprocess.run(command, capture_output=True, text=True, timeout=seconds + warmup + 60, env=environment)
    if result.returncode != 0:
        raise RuntimeError(f"loadgen {method} {connections}x{depth}: {result.stderr.strip()}")
    return json.loads(result.stdout)


def open_idle_connections(server, count, sockets):
    """Appends `count` connections to `server` to `sockets` (the caller closes them), then gives the server a
    moment to accept and set up every one."""
    for _ in range(count):
        s = socket.socket()
        s.connect(("127.0.0.1", server.port))
        sockets.append(s)
    time.sleep(1.0)


def idle_rss_per_connection(server, count):
    """KiB of RSS each of `count` idle connections adds to `server`."""
    before = server.rss_kib()
    sockets = []
    try:
        open_idle_connections(server, count, sockets)
        after = server.rss_kib()
    finally:
        for s in sockets:
            s.close()
    return (after - before) / count, before, after


def frame(payload):
    data = json.dumps(payload, separators=(",", ":")).encode()
    return len(data).to_bytes(4, "big") + data


def read_frame(sock):
    def exactly(count):
        data = b""
        while len(data) < count:
            chunk = sock.recv(count - len(data))
            if not chunk:
                raise RuntimeError("rpcd closed a connection")
            data += chunk
        return data
    return json.loads(exactly(int.from_bytes(exactly(4), "big")))


def idle_rss_per_subscription(server, connections):
    """KiB of RSS an idle subscription adds: the first on each of `connections` connections (which also makes
    the connection's subscription table), then a second on each. Each connection has made a call first, so
    what any first request costs a connection (its read buffer, say) is not counted as the subscription's."""
    def round_trip(request):
        for s in sockets:
            s.sendall(frame(request))
        for s in sockets:
            if "result" not in read_frame(s):
                raise RuntimeError(f"{request['method']} failed")

    sockets = []
    try:
        open_idle_connections(server, connections, sockets)
        round_trip({"jsonrpc": "2.0", "method": "rpcd.ping", "id": 1})
        costs, before = [], server.rss_kib()
        for _ in range(2):
            round_trip({"jsonrpc": "2.0", "method": "rpc.subscribe", "params": ["kv.changed"], "id": 1})
            after = server.rss_kib()
            costs.append((after - before) / connections)
            before = after
        return costs
    finally:
        for s in sockets:
            s.close()


def events_workload(args, workdir, eventload):
    """Events delivered per second to 1 and to 100 subscribers of kv.changed, and idle subscription memory,
    each against a fresh rpcd (kv.set over TCP needs Allow=local)."""
    results = {}
    for subscribers in (1, 100):
        server = start_rpcd(args.bin_dir, workdir, extra="[Access]\nAllow=local\n")
        try:
            command = pinned(CLIENT_CPU, [eventload, "127.0.0.1", str(server.port), str(subscribers), "16",
                                          str(args.seconds), str(args.warmup)])
            result = subprocess.run(command, capture_output=True, text=True, timeout=args.seconds + args.warmup + 60)
            if result.returncode != 0:
                raise RuntimeError(f"eventload {subscribers}: {result.stderr.strip()}")
            results[f"{subscribers} subscribers"] = json.loads(result.stdout)
        finally:
            server.stop()
    server = start_rpcd(args.bin_dir, workdir)
    try:
        first, further = idle_rss_per_subscription(server, min(args.idle, 5000))
        results["idle_subscription_kib"] = {"first_on_a_connection": round(first, 2), "each_further": round(further, 2)}
    finally:
        server.stop()
    return results


def print_cpu_per_call(cpu_rows, rounds):
    """Server CPU per call, rpcd against the C++ reference (the same protocol work): the medians over the
    rounds of utime + stime in each run's measured window divided by its calls, and the ratio of the medians."""
    def median(values):
        values = sorted(values)
        middle = len(values) // 2
        return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2

    print(f"\nserver CPU per call, utime + stime over the measured window / calls"
          f"{f' (medians of {rounds} rounds)' if rounds > 1 else ''}:")
    print(f"{'workload':<46} {'rpcd us':>10} {'busy':>6}   {'C++ reference us':>16} {'busy':>6}   {'rpcd / reference':>16}")
    for label, pairs in cpu_rows:
        mine = median([r["server_cpu_window_us_per_call"] for r, _ in pairs])
        ref = median([c["server_cpu_window_us_per_call"] for _, c in pairs])
        mine_busy = median([r["server_cpu_window_share"] for r, _ in pairs])
        ref_busy = median([c["server_cpu_window_share"] for _, c in pairs])
        print(f"{label:<46} {mine:>10.2f} {mine_busy:>6.0%}   {ref:>16.2f} {ref_busy:>6.0%}   "
              f"{mine / ref if ref else 0:>16.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bin_dir")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=1)
    parser.add_argument("--idle", type=int, default=10000)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--hummingbird", help="the Hummingbird 2 reference server (bench/hummingbird-reference)")
    parser.add_argument("--reference", help="the C++ JSON-RPC reference server (make bench-reference)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds of rpcd against the C++ reference per shape, and of the isolation, metrics, "
                             "WebSocket and HTTP rows against theirs; medians are printed")
    args = parser.parse_args()
    want = lambda name: args.only is None or name in args.only  # noqa: E731

    workdir = tempfile.mkdtemp(prefix="rpcd-bench-")
    loadgen = os.path.join(workdir, "loadgen")
    subprocess.run(["cc", "-O2", "-o", loadgen, os.path.join(ROOT, "bench", "loadgen.c"), "-lssl", "-lcrypto"], check=True)
    eventload = os.path.join(workdir, "eventload")
    subprocess.run(["cc", "-O2", "-o", eventload, os.path.join(ROOT, "bench", "eventload.c")], check=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.idle * 2 + 1024)), hard))

    rows, cpu_rows, record = [], [], {"cpus": os.cpu_count(), "seconds": args.seconds, "warmup": args.warmup}

    def run(label, server, method, params, connections, depth, tls=False, connection_per_call=False, resume=False,
            websocket=False, http=False):
        port = server.tls_port if tls else server.http_port if (websocket or http) and server.name == "rpcd" else server.port
        cpu_before = server.cpu_seconds()
        if http:
            result = wrk_load(workdir, port, connections, args.seconds, args.warmup)
        else:
            with MeasuredWindow(server, args.warmup, args.seconds) as window:
                result = load(loadgen, port, method, params, connections, depth, args.seconds, args.warmup, tls=tls,
                              connection_per_call=connection_per_call, resume=resume, websocket=websocket)
            # Over the measured window only (loadgen counts the calls of that window): what a call costs the
            # server, the headline figure against the C++ reference.
            if window.cpu is not None:
                result["server_cpu_window_us_per_call"] = round(window.cpu * 1e6 / max(1, result["calls"]), 3)
                result["server_cpu_window_share"] = round(window.cpu / args.seconds, 2)
        # Over the whole run (warm-up and draining too), so per call it is an upper bound; it tells whether the
        # server was the bottleneck (near 1 s per second) and what a call costs it when the client is.
        cpu = server.cpu_seconds() - cpu_before
        result["server_cpu_share"] = round(cpu / (args.seconds + args.warmup), 2)
        result["server_cpu_us_per_call"] = round(cpu * 1e6 / max(1, result["calls"] * (args.seconds + args.warmup) / args.seconds), 1)
        result.setdefault("server_cpu_window_us_per_call", result["server_cpu_us_per_call"])
        result.setdefault("server_cpu_window_share", result["server_cpu_share"])
        record[label] = result
        return result

    def paired(label, reference_label, mine, reference, key="calls_per_second"):
        """`mine` and `reference` (each `round -> result`) run alternately, --rounds rounds, and each side's
        median round by `key`: the isolation, WebSocket and HTTP rows, whose single rounds scatter by more than
        the changes they are to show."""
        results = [(mine(""), reference(""))]
        for again in range(2, args.rounds + 1):
            results.append((mine(f" round {again}"), reference(f" round {again}")))

        def median(side):
            ordered = sorted((pair[side] for pair in results), key=lambda result: result[key])
            return ordered[(len(ordered) - 1) // 2]
        rows.append((label, median(0), reference_label, median(1)))

    servers = []
    try:
        rpcd = start_rpcd(args.bin_dir, workdir, tls_port=free_port(), http_port=free_port())
        reference = start_reference(args.bin_dir, workdir)
        servers += [rpcd, reference]
        record["ready_ms"] = round(rpcd.ready_after * 1000, 1)
        if want("ping"):
            cpp = None
            if args.reference:
                cpp = start_cpp_reference(args.reference, workdir)
                servers.append(cpp)
            for shape in ((50, 16), (50, 1), (1, 1)):
                mine = run(f"ping {shape[0]}x{shape[1]}", rpcd, "rpcd.ping", "[]", *shape)
                ref = run(f"reference {shape[0]}x{shape[1]}", reference, "rpcd.ping", "[]", *shape)
                rows.append((f"rpcd.ping {shape[0]}x{shape[1]}", mine, "raw NIO echo", ref))
                if cpp:
                    # The same work as rpcd.ping's, so per call the server's CPU is what compares (at 50 x 16 the
                    # client sets the pace); rounds alternate the two, and the medians are quoted.
                    rounds = [(mine, run(f"cpp reference {shape[0]}x{shape[1]}", cpp, "rpcd.ping", "[]", *shape))]
                    for again in range(2, args.rounds + 1):
                        rounds.append((run(f"ping {shape[0]}x{shape[1]} round {again}", rpcd, "rpcd.ping", "[]", *shape),
                                       run(f"cpp reference {shape[0]}x{shape[1]} round {again}", cpp, "rpcd.ping",
                                           "[]", *shape)))
                    rows.append((f"rpcd.ping {shape[0]}x{shape[1]}", mine, "C++ JSON-RPC reference", rounds[0][1]))
                    cpu_rows.append((f"rpcd.ping {shape[0]}x{shape[1]}", rounds))
            # The reference the issue first measured (one write per frame), against the one quoted above.
            per_frame = start_reference(args.bin_dir, workdir, per_frame=True)
            servers.append(per_frame)
            slow = run("reference per frame 50x16", per_frame, "rpcd.ping", "[]", 50, 16)
            ref = run("reference 50x16 again", reference, "rpcd.ping", "[]", 50, 16)
            rows.append(("raw NIO echo, one write per frame 50x16", slow, "raw NIO echo", ref))
        if want("c-module") or want("swift-sdk"):
            for shape in ((50, 16), (50, 1)):
                c = run(f"sysinfo.hostname {shape[0]}x{shape[1]}", rpcd, "sysinfo.hostname", "[]", *shape)
                if want("c-module"):
                    rows.append((f"sysinfo.hostname (C) {shape[0]}x{shape[1]}", c, None, None))
                if want("swift-sdk"):
                    swift = run(f"calc.add {shape[0]}x{shape[1]}", rpcd, "calc.add", "[1, 2]", *shape)
                    rows.append((f"calc.add (Swift SDK) {shape[0]}x{shape[1]}", swift, "sysinfo.hostname (C)", c))
        if want("echo-1mib"):
            params_path = one_mib_params(workdir)
            echo = run("echo.echo 1MiB", rpcd, "echo.echo", "@" + params_path, 1, 1)
            ref = run("reference 1MiB", reference, "echo.echo", "@" + params_path, 1, 1)
            rows.append(("echo.echo 1 MiB, 1 connection (MB/s each way)", echo, "raw NIO echo", ref))
        if want("isolation"):
            record["module_hosts_idle"] = module_host_memory(rpcd)
            record["swift_floor_idle"] = swift_floor_memory(workdir)
            in_process = start_rpcd(args.bin_dir, workdir, handlers=in_process_handlers(workdir))
            servers.append(in_process)
            for shape in ((50, 16), (50, 1), (1, 1)):
                name = f"{shape[0]}x{shape[1]}"
                paired(f"calc.add isolated {name}", "Isolation=none",
                       lambda round, name=name, shape=shape: run(
                           f"calc.add isolated {name}{round}", rpcd, "calc.add", "[1, 2]", *shape),
                       lambda round, name=name, shape=shape: run(
                           f"calc.add in-process {name}{round}", in_process, "calc.add", "[1, 2]", *shape))
            params = "@" + one_mib_params(workdir)
            paired("echo.echo 1 MiB isolated (MB/s each way)", "Isolation=none",
                   lambda round: run(f"echo.echo 1MiB isolated{round}", rpcd, "echo.echo", params, 1, 1),
                   lambda round: run(f"echo.echo 1MiB in-process{round}", in_process, "echo.echo", params, 1, 1),
                   key="bytes_per_second")
        if want("metrics"):
            # Both in-process (Isolation=none), so that calc.add's row is rpcd's own path, not a module host's.
            handlers = in_process_handlers(workdir)
            kept = start_rpcd(args.bin_dir, workdir, handlers=handlers)
            off = start_rpcd(args.bin_dir, workdir, extra="Metrics=no\n", handlers=handlers)
            servers += [kept, off]
            for method, params in (("rpcd.ping", "[]"), ("calc.add", "[1, 2]")):
                for shape in ((50, 16), (1, 1)):
                    name = f"{shape[0]}x{shape[1]}"
                    paired(f"{method} {name}, metrics kept", "Metrics=no",
                           lambda round, method=method, params=params, name=name, shape=shape: run(
                               f"{method} metrics {name}{round}", kept, method, params, *shape),
                           lambda round, method=method, params=params, name=name, shape=shape: run(
                               f"{method} Metrics=no {name}{round}", off, method, params, *shape))
        if want("tls"):
            mine = run("tls ping 50x16", rpcd, "rpcd.ping", "[]", 50, 16, tls=True)
            plain = run("plain ping 50x16", rpcd, "rpcd.ping", "[]", 50, 16)
            rows.append(("rpcd.ping over TLS 50x16", mine, "plain TCP", plain))
            mine = run("tls connection per call", rpcd, "rpcd.ping", "[]", 4, 1, tls=True, connection_per_call=True)
            plain = run("plain connection per call", rpcd, "rpcd.ping", "[]", 4, 1, connection_per_call=True)
            rows.append(("new connection per call, TLS (4 workers)", mine, "plain TCP", plain))
            resumed = run("tls connection per call resumed", rpcd, "rpcd.ping", "[]", 4, 1, tls=True,
                          connection_per_call=True, resume=True)
            rows.append(("new connection per call, TLS resumed", resumed, "plain TCP", plain))
        if want("http"):
            if args.hummingbird:
                hummingbird = start_hummingbird(args.hummingbird, workdir)
                servers.append(hummingbird)
                for connections in (50, 1):
                    paired(f"rpcd.ping HTTP/1.1 keep-alive, {connections} conn (wrk)", "Hummingbird 2",
                           lambda round, connections=connections: run(
                               f"http ping {connections}{round}", rpcd, "rpcd.ping", "[]", connections, 1, http=True),
                           lambda round, connections=connections: run(
                               f"hummingbird {connections}{round}", hummingbird, "rpcd.ping", "[]", connections, 1,
                               http=True))
            paired("rpcd.ping over WebSocket 50x16", "framed TCP",
                   lambda round: run(f"websocket ping 50x16{round}", rpcd, "rpcd.ping", "[]", 50, 16, websocket=True),
                   lambda round: run(f"framed ping 50x16 (websocket row){round}", rpcd, "rpcd.ping", "[]", 50, 16))
    finally:
        for server in servers:
            server.stop()

    idle = {}
    if want("idle"):
        for start in (start_rpcd, start_reference):
            server = start(args.bin_dir, workdir)
            try:
                idle[server.name] = idle_rss_per_connection(server, args.idle)
            finally:
                server.stop()
        record["idle"] = {name: {"kib_per_connection": round(v[0], 2), "rss_before_kib": v[1], "rss_after_kib": v[2]}
                          for name, v in idle.items()}

    print(f"\nrpcd benchmark: server on CPU {SERVER_CPU} (1 event loop), loadgen on CPU {CLIENT_CPU}; "
          f"{args.seconds:g} s per run after {args.warmup:g} s warm-up")
    print(f"{'workload':<46} {'calls/s':>10} {'p50 ms':>8} {'p99 ms':>8}   {'reference':<22} {'calls/s':>10} {'ratio':>6}")
    for label, mine, ref_label, ref in rows:
        mb = "MB/s" in label

        def rate(r):
            return f"{r['bytes_per_second'] / 1e6:,.0f}" if mb else f"{r['calls_per_second']:,.0f}"
        ratio = ""
        if ref:
            key = "bytes_per_second" if mb else "calls_per_second"
            ratio = f"{mine[key] / ref[key]:.2f}" if ref[key] else "-"
        print(f"{label:<46} {rate(mine):>10} {mine['p50_us'] / 1000:>8.3f} {mine['p99_us'] / 1000:>8.3f}   "
              f"{(ref_label or ''):<22} {(rate(ref) if ref else ''):>10} {ratio:>6}")
        if mine.get("errors"):
            print(f"   ({mine['errors']} error replies)")
        if mine.get("connections") and "resumed" in label:
            print(f"   resumed {mine['resumed']:,} of {mine['connections']:,} handshakes "
                  f"({mine['resumed'] / mine['connections']:.0%}, as the client's SSL_session_reused tells)")
        if "TLS" in label or "HTTP" in label or "WebSocket" in label:
            print(f"   server CPU per call {mine['server_cpu_us_per_call']:.1f} us vs {ref['server_cpu_us_per_call']:.1f} us "
                  f"(server busy {mine['server_cpu_share']:.0%} vs {ref['server_cpu_share']:.0%} of its core)")
    if cpu_rows:
        print_cpu_per_call(cpu_rows, args.rounds)
        record["cpu_per_call_against_cpp_reference"] = {label: [{"rpcd": r["server_cpu_window_us_per_call"],
                                                                  "reference": c["server_cpu_window_us_per_call"]}
                                                                 for r, c in rounds] for label, rounds in cpu_rows}
    if idle:
        print(f"{'idle RSS per connection, ' + str(args.idle) + ' connections':<46} "
              f"{idle['rpcd'][0]:>9.2f}K {'':>8} {'':>8}   {'raw NIO echo':<22} {idle['reference'][0]:>9.2f}K "
              f"{idle['rpcd'][0] / idle['reference'][0] if idle['reference'][0] else 0:>6.2f}")
    print(f"exec to Started (4 example modules): {record['ready_ms']} ms")
    def memory_line(label, memory):
        origins = ", ".join(f"{origin} {values['rss_kib'] / 1024:.1f}/{values['pss_kib'] / 1024:.1f}/"
                            f"{values['private_dirty_kib'] / 1024:.1f}"
                            for origin, values in sorted(memory["by_origin"].items(), key=lambda item: -item[1]["rss_kib"]))
        threads = f", {memory['threads']} threads" if "threads" in memory else ""
        if "module_copy_kib" in memory:
            threads += f", module copy {memory['module_copy_kib'] / 1024:.1f} MiB"
        print(f"{label}, idle: RSS {memory['rss_kib'] / 1024:.1f} MiB, PSS {memory['pss_kib'] / 1024:.1f} MiB, "
              f"private dirty {memory['private_dirty_kib'] / 1024:.1f} MiB{threads}\n   RSS/PSS/private dirty MiB by origin: {origins}")
    for host in record.get("module_hosts_idle", []):
        memory_line(f"module host {host['handler']}", host)
    if record.get("swift_floor_idle"):
        memory_line("a Swift program that does nothing (the runtime's floor)", record["swift_floor_idle"])
    if want("events"):
        events = record["events"] = events_workload(args, workdir, eventload)
        for subscribers in (1, 100):
            r = events[f"{subscribers} subscribers"]
            print(f"{'kv.changed to ' + str(subscribers) + ' subscriber' + ('s' if subscribers > 1 else ''):<46} "
                  f"{r['delivered_per_second']:>10,.0f} events/s delivered ({r['per_subscriber_per_second']:,.0f} each), "
                  f"{r['published_per_second']:,.0f} published/s, {r['lost']} lost")
        idle_cost = events["idle_subscription_kib"]
        print(f"{'idle subscription RSS':<46} {idle_cost['first_on_a_connection']:>9.2f}K first on a connection, "
              f"{idle_cost['each_further']:.2f}K each further")

    os.makedirs(os.path.join(ROOT, "bench-results"), exist_ok=True)
    path = os.path.join(ROOT, "bench-results", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + ".json")
    with open(path, "w") as file:
        json.dump(record, file, indent=2)
    print(f"results: {path}")
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
