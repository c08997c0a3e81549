#!/usr/bin/env python3
"""Soak test: valid calls that must all succeed while rpcd is reloaded and attacked, for a bounded time.

    Tests/SoakTests/soak.py BIN_DIR [--seconds N]

Starts rpcd (from BIN_DIR, with the example modules and the shipped limits, pinned to CPU 0) on a loopback
port and a Unix socket of its own, then, for N seconds (default 30, at most 7200):

    valid       4 clients from 127.0.0.1 and the socket, one call in flight each, checking every answer:
                calc.add, echo.echo of random bytes, kv.set then kv.get, a batch of 10 calc.add
    reloads     SIGHUP every 3 s
    hostile     from 127.0.0.2-9, continuously: oversize lengths, random bytes, frames trickled a byte a
                second, clients that send 1 MiB of calls and never read, amplifying kv.get batches, and
                issue 21's mixes: lengths announced and nothing sent, calls with 1 MB ids never read,
                batches of rpc.discover, subscribers that never read

Fails (exit 1) if any valid call fails or gets a wrong answer, if rpcd dies, or if its RSS at the end, once
the hostile clients are gone, is more than 64 MiB above the RSS after the warm-up. Prints the counts and
RSS (start, peak, end) as JSON. Loopback only; every loop stops at the deadline; rpcd is stopped on exit.
"""

import argparse
import json
import os
import random
import signal
import socket
import struct
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from bench import Server, free_port  # noqa: E402
HOSTILE_SOURCES = [f"127.0.0.{host}" for host in range(2, 10)]
RSS_GROWTH_LIMIT_KIB = 64 * 1024


def frame(payload):
    data = payload.encode() if isinstance(payload, str) else payload
    return struct.pack(">I", len(data)) + data


def read_frame(s):
    def exactly(count):
        data = b""
        while len(data) < count:
            chunk = s.recv(count - len(data))
            if not chunk:
                raise ConnectionError("closed by rpcd")
            data += chunk
        return data
    (length,) = struct.unpack(">I", exactly(4))
    return json.loads(exactly(length))


class Daemon:
    """rpcd under test, started and stopped as the benchmark does (bench/bench.py's Server: pinned to CPU 0)."""

    def __init__(self, bin_dir, workdir):
        self.port = free_port()
        self.socket_path = os.path.join(workdir, "rpcd.sock")
        config = os.path.join(workdir, "rpcd.conf")
        with open(config, "w") as file:
            file.write(f"[Server]\nListen=127.0.0.1:{self.port}\nListen={self.socket_path}\n"
                       f"[Access]\nAllow=user:root group:rpcd user:{os.getuid()}\n")
        self.server = Server(
            "rpcd", [os.path.join(bin_dir, "rpcd"), "--config", config, "--handlers-dir",
                     os.path.join(ROOT, "config", "handlers.d"), "--module-dir", bin_dir],
            self.port, workdir, "Started")
        self.process = self.server.process

    def rss_kib(self):
        return self.server.rss_kib()

    def tcp(self, source="127.0.0.1", timeout=30):
        s = socket.socket()
        s.settimeout(timeout)
        s.bind((source, 0))
        s.connect(("127.0.0.1", self.port))
        return s

    def unix(self, timeout=30):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(timeout)
        s.connect(self.socket_path)
        return s

    def stop(self):
        self.server.stop()


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.values = {}
        self.failures = []

    def add(self, name, count=1):
        with self.lock:
            self.values[name] = self.values.get(name, 0) + count

    def fail(self, what):
        with self.lock:
            self.failures.append(what)
            self.values["valid_failed"] = self.values.get("valid_failed", 0) + 1


def valid_client(daemon, kind, stop, counters):
    rng = random.Random(kind)
    connection = daemon.unix() if kind == "kv" else daemon.tcp()
    call_id = 0

    def call(method, params):
        nonlocal call_id
        call_id += 1
        connection.sendall(frame(json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": call_id})))
        return read_frame(connection)

    while not stop.is_set():
        try:
            if kind == "calc":
                a, b = rng.randint(-10**6, 10**6), rng.randint(-10**6, 10**6)
                reply = call("calc.add", [a, b])
                ok = reply.get("result") == a + b
            elif kind == "echo":
                text = "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(rng.randint(0, 2000)))
                reply = call("echo.echo", [text])
                ok = reply.get("result") == [text]
            elif kind == "kv":
                key, value = f"k{rng.randint(0, 50)}", rng.randint(0, 10**9)
                reply = call("kv.set", [key, value])
                ok = "error" not in reply
                if ok:
                    reply = call("kv.get", [key])
                    ok = reply.get("result") == value
            else:  # batch
                pairs = [(rng.randint(0, 1000), rng.randint(0, 1000)) for _ in range(10)]
                call_id += 1
                batch = [{"jsonrpc": "2.0", "method": "calc.add", "params": list(p), "id": call_id * 100 + i}
                         for i, p in enumerate(pairs)]
                connection.sendall(frame(json.dumps(batch)))
                reply = read_frame(connection)
                answers = {entry["id"]: entry.get("result") for entry in reply} if isinstance(reply, list) else {}
                ok = all(answers.get(call_id * 100 + i) == a + b for i, (a, b) in enumerate(pairs))
            counters.add("valid_calls")
            if not ok:
                counters.fail(f"{kind}: {str(reply)[:200]}")
        except (OSError, ConnectionError, ValueError) as error:
            counters.fail(f"{kind}: {error}")
            try:
                connection.close()
                connection = daemon.unix() if kind == "kv" else daemon.tcp()
            except OSError:
                time.sleep(0.1)
    connection.close()


def reloader(daemon, stop, counters):
    while not stop.wait(3):
        daemon.process.send_signal(signal.SIGHUP)
        counters.add("reloads")


def hostile(daemon, stop, counters):
    rng = random.Random(7)
    trickling, silent, held = [], [], []
    big_value = "v" * 100_000
    admin = daemon.unix()
    admin.sendall(frame(json.dumps({"jsonrpc": "2.0", "method": "kv.set", "params": ["soak-big", big_value], "id": 1})))
    read_frame(admin)
    admin.close()
    turn = 0
    while not stop.wait(0.2):
        turn += 1
        source = HOSTILE_SOURCES[turn % len(HOSTILE_SOURCES)]
        try:
            kind = turn % 9
            if kind == 0:  # oversize length: answered -32000 and closed
                with daemon.tcp(source, timeout=5) as s:
                    s.sendall(struct.pack(">I", 1 << 31))
                    counters.add("hostile_oversize")
                    read_frame(s)
            elif kind == 1:  # random bytes
                with daemon.tcp(source, timeout=2) as s:
                    s.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4096))))
                    counters.add("hostile_random")
                    try:
                        while s.recv(65536):
                            pass
                    except socket.timeout:
                        pass
            elif kind == 2:  # trickled frames: up to 10 at a time, each a byte a second until FrameTimeout= ends it
                if len(trickling) < 10:
                    s = daemon.tcp(source, timeout=1)
                    s.sendall(struct.pack(">I", 4 << 20) + b"[" * 65536)
                    trickling.append(s)
                    counters.add("hostile_trickle")
            elif kind == 3:  # never reading: 10 x 100 KiB echoes; one of 10 replaced each round
                if len(silent) >= 10:
                    silent.pop(0).close()
                s = daemon.tcp(source, timeout=1)
                s.setblocking(False)
                payload = frame(json.dumps({"jsonrpc": "2.0", "method": "echo.echo", "params": ["x" * 100_000], "id": 1}))
                try:
                    s.sendall(payload * 10)
                except BlockingIOError:
                    pass
                silent.append(s)
                counters.add("hostile_silent")
            elif kind == 5:  # announced lengths, nothing sent: up to 64 held (they hold what they sent, 4 bytes)
                if len(held) < 64:
                    s = daemon.tcp(source, timeout=1)
                    s.sendall(struct.pack(">I", 4 << 20))
                    held.append(s)
                    counters.add("hostile_announce")
            elif kind == 6:  # 16 calls with 1 MB ids, never read: closed when the replies fill the peer's share
                if len(silent) >= 10:
                    silent.pop(0).close()
                s = daemon.tcp(source, timeout=1)
                s.setblocking(False)
                ids = "i" * 1_000_000
                try:
                    s.sendall(b"".join(frame(f'{{"jsonrpc":"2.0","method":"echo.echo","params":[{n}],"id":"{ids}{n}"}}')
                                       for n in range(16)))
                except (BlockingIOError, OSError):
                    pass
                silent.append(s)
                counters.add("hostile_big_ids")
            elif kind == 7:  # a batch of 64 rpc.discover: served in turns, not ahead of everyone
                with daemon.tcp(source, timeout=30) as s:
                    s.sendall(frame(json.dumps([{"jsonrpc": "2.0", "method": "rpc.discover", "id": i} for i in range(64)])))
                    counters.add("hostile_discover")
                    read_frame(s)
            elif kind == 8:  # a subscriber that never reads (its events are charged by bytes)
                if len(silent) >= 10:
                    silent.pop(0).close()
                s = daemon.tcp(source, timeout=5)
                s.sendall(frame('{"jsonrpc":"2.0","method":"rpc.subscribe","params":["kv.changed"],"id":1}'))
                read_frame(s)
                silent.append(s)
                counters.add("hostile_subscriber")
            else:  # amplifying batch: 200 x 100 KB replies, answered -32008
                with daemon.tcp(source, timeout=30) as s:
                    entries = [{"jsonrpc": "2.0", "method": "kv.get", "params": ["soak-big"], "id": i} for i in range(200)]
                    s.sendall(frame(json.dumps(entries)))
                    counters.add("hostile_batch")
                    reply = read_frame(s)
                    if reply.get("error", {}).get("code") != -32008:
                        counters.add("hostile_batch_unexpected")
            for s in list(trickling):
                try:
                    s.send(b"[")
                except OSError:
                    trickling.remove(s)
                    s.close()
        except (OSError, ConnectionError, ValueError):
            counters.add("hostile_closed_by_rpcd")
    for s in trickling + silent + held:
        s.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bin_dir")
    parser.add_argument("--seconds", type=int, default=30)
    args = parser.parse_args()
    if not 10 <= args.seconds <= 7200:
        sys.exit("soak.py: --seconds must be 10 to 7200")
    counters = Counters()
    with tempfile.TemporaryDirectory() as workdir:
        daemon = Daemon(args.bin_dir, workdir)
        try:
            stop, hostile_stop = threading.Event(), threading.Event()
            threads = [threading.Thread(target=valid_client, args=(daemon, kind, stop, counters))
                       for kind in ("calc", "echo", "kv", "batch")]
            threads.append(threading.Thread(target=reloader, args=(daemon, stop, counters)))
            attacker = threading.Thread(target=hostile, args=(daemon, hostile_stop, counters))
            for thread in threads + [attacker]:
                thread.start()
            warmup = min(10, args.seconds // 3)
            time.sleep(warmup)
            start_rss = peak = daemon.rss_kib()
            deadline = time.monotonic() + args.seconds - warmup
            while time.monotonic() < deadline and daemon.process.poll() is None:
                peak = max(peak, daemon.rss_kib())
                time.sleep(1)
            hostile_stop.set()
            attacker.join(timeout=60)
            time.sleep(2)  # rpcd notices the closed connections
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
            alive = daemon.process.poll() is None
            end_rss = daemon.rss_kib() if alive else 0
        finally:
            daemon.stop()
        result = {"seconds": args.seconds, "rss_start_mib": round(start_rss / 1024, 1),
                  "rss_peak_mib": round(peak / 1024, 1), "rss_end_mib": round(end_rss / 1024, 1),
                  "alive": alive, **counters.values, "first_failures": counters.failures[:5]}
        print(json.dumps(result, indent=2))
        problems = []
        if counters.failures:
            problems.append(f"{len(counters.failures)} valid calls failed")
        if not alive:
            problems.append("rpcd died")
        elif end_rss > start_rss + RSS_GROWTH_LIMIT_KIB:
            problems.append(f"RSS grew from {start_rss} KiB to {end_rss} KiB")
        if counters.values.get("valid_calls", 0) == 0:
            problems.append("no valid call was made")
        if problems:
            print("soak: FAILED: " + "; ".join(problems), file=sys.stderr)
            sys.exit(1)
        print("soak: passed", file=sys.stderr)


if __name__ == "__main__":
    main()
