#!/usr/bin/env python3
"""What hostile peers can make rpcd hold, with the default limits (issue 14's figures).

    bench/hostile.py BIN_DIR [--connections N] [--only NAME ...] [--short] [--check-bound]

rpcd runs with the shipped defaults (only Listen= and Threads=1 set), pinned to CPU 0; the peers run here,
pinned to CPU 1, spread over the loopback addresses 127.0.0.2-127.0.0.9 so that MaxConnectionsPerPeer= (256
per address) does not hide the other limits. Scenarios:

    trickle     N connections each announce a frame of MaxFrameSize= (4 MiB), send 1 MiB of it, then a byte
                a second: RSS, how many were refused at once (-32009), and how long the others survive (-32010)
    no-read     N connections each send 10 echo.echo calls with 100 KiB of params and never read: RSS
    batch       one kv value of 1000 KB, then a batch of 500 kv.get of it (a 500 MB reply): the answer and RSS

and the classes of issue 21, each measured with the peak RSS and an administrator's rpcd.ping on the Unix
socket (latency p50/p99/max, failures) while the attack holds (this user is made the administrator with
Administrators=, as root would be):

    announce    N connections each send only a 4-byte length of 4 MiB, and hold
    pipeline    4 connections each pipeline 128 echo.echo calls with 1 MB ids and never read
    discover    4 connections each send a batch of 1024 rpc.discover
    events      8 subscribers to kv.changed never read while 900 KB values are set 300 times
    connections N connections from the loopback addresses, then the administrator connects
    module-calls  4 connections each pipeline 128 echo.echo calls with 512 KB params to the isolated echo
                module and never read (params crossing the link to the module host, replies coming back)
    websocket   N WebSocket connections (an http:// listener) each send 1 MiB of a 4 MiB frame, and hold
    ws-pings    200 WebSocket connections each send 1,000 pings of 125 bytes and never read the pongs
    http-gets   200 connections to the http:// listener each pipeline 1,500 GET /metrics and never read
    slowloris   N connections to the http:// listener each send a request head a byte a second, and hold

and the classes of issue 36 (a `faulty` handler, Tests/Modules/Faulty, is added to the shipped ones):

    hung-module   50 rounds: a read-only peer sends 8 calls with 1 MiB params to faulty.hang, then disconnects
    module-reply  4 read-only callers each ask faulty.reply for 200 MiB
    large-ids     12 local users (needs root) x 32 Unix connections, each pipelining 64 rpcd.ping with 256 KiB
                  ids and never reading; large-ids-module the same with echo.echo (an isolated module)
    tls-idle      N (at most 250: one loopback peer) idle TLS connections: what each costs
    fan-out       100 WebSocket connections x 64 subscriptions to faulty.tick, never reading, then one call
                  makes the module emit 100,000 events
    chunks        two connections post bodies of a million one-byte chunks, again and again

Each attack's result has its peak RSS, the peak charge (rpcd.info's frames.buffered_bytes), and the bound of
docs/SECURITY.md ("Fair shares") for the connections it holds. `--check-bound` fails when a peak passes its
bound or a root ping failed; `--short` makes each attack smaller and shorter and skips the three that wait out
FrameTimeout= (what `make test-bound` runs on the debug build; `make soak` runs them whole on the release one).

Prints one line per scenario and a JSON summary. Bounded: every scenario stops by itself (the trickle waits at
most FrameTimeout= plus 30 s); loopback only; rpcd is stopped on exit.
"""

import argparse
import json
import os
import selectors
import shutil
import socket
import ssl
import subprocess
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, Server, free_port  # noqa: E402

CLIENT_CPU = 1
SOURCES = [f"127.0.0.{host}" for host in range(2, 10)]


def frame(payload):
    data = payload.encode() if isinstance(payload, str) else payload
    return struct.pack(">I", len(data)) + data


def connect(port, index):
    s = socket.socket()
    s.bind((SOURCES[index % len(SOURCES)], 0))
    s.connect(("127.0.0.1", port))
    return s


def read_frame(s, timeout=10):
    s.settimeout(timeout)
    data = b""
    while len(data) < 4:
        chunk = s.recv(4 - len(data))
        if not chunk:
            return None
        data += chunk
    (length,) = struct.unpack(">I", data)
    body = b""
    while len(body) < length:
        chunk = s.recv(min(1 << 20, length - len(body)))
        if not chunk:
            return None
        body += chunk
    return json.loads(body)


def start(bin_dir, workdir):
    port, http_port, tls_port = free_port(), free_port(), free_port()
    socket_path = os.path.join(workdir, f"rpcd-{port}.sock")
    config = os.path.join(workdir, f"rpcd-{port}.conf")
    handlers = os.path.join(workdir, "handlers.d")
    if not os.path.isdir(handlers):
        shutil.copytree(os.path.join(ROOT, "config", "handlers.d"), handlers)
        # The test module that misbehaves on request (Tests/Modules/Faulty): hangs, huge replies, event bursts.
        with open(os.path.join(handlers, "faulty.conf"), "w") as file:
            file.write("[Handler]\nModule=faulty\n")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-days", "2", "-subj", "/CN=localhost", "-keyout", "tls.key", "-out", "tls.pem"],
                       cwd=workdir, check=True, capture_output=True)
    with open(config, "w") as file:
        file.write(f"[Server]\nListen=127.0.0.1:{port}\nListen={socket_path}\nListen=http://127.0.0.1:{http_port}\n"
                   f"Listen=tls://127.0.0.1:{tls_port}\nThreads=1\nAdministrators=user:{os.getuid()}\n"
                   f"[TLS]\nCertificate={workdir}/tls.pem\nPrivateKey={workdir}/tls.key\n")
    server = Server("rpcd", [os.path.join(bin_dir, "rpcd"), "--config", config,
                             "--handlers-dir", handlers, "--module-dir", bin_dir],
                    port, workdir, "Started")
    server.socket_path = socket_path
    server.http_port = http_port
    server.tls_port = tls_port
    return server


def peak_rss(server, seconds, sample=0.2):
    """The highest RSS (KiB) seen in `seconds`, and the highest charge: rpcd.info's frames.buffered_bytes, what
    rpcd counts as held for peers, asked as the administrator."""
    peak, charged = 0, 0
    admin = socket.socket(socket.AF_UNIX)
    admin.connect(server.socket_path)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        peak = max(peak, server.rss_kib())
        try:
            admin.sendall(frame('{"jsonrpc":"2.0","method":"rpcd.info","id":1}'))
            reply = read_frame(admin, timeout=5) or {}
            charged = max(charged, reply.get("result", {}).get("frames", {}).get("buffered_bytes") or 0)
        except OSError:
            pass
        time.sleep(sample)
    admin.close()
    return peak, charged


def trickle(server, count):
    start_rss = server.rss_kib()
    sockets = []
    for index in range(count):
        s = connect(server.port, index)
        s.setblocking(False)
        try:
            s.send(struct.pack(">I", 4 << 20))
            s.send(b"x" * (1 << 20))
        except BlockingIOError:
            pass  # the server stopped reading this one: its frame was refused
        sockets.append(s)
    began = time.monotonic()
    refused, closed_at = 0, {}
    selector = selectors.DefaultSelector()
    for s in sockets:
        selector.register(s, selectors.EVENT_READ)
    peak = server.rss_kib()
    codes = {}
    while len(closed_at) < len(sockets) and time.monotonic() - began < 90:
        for key, _ in selector.select(timeout=1.0):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except (ConnectionResetError, BlockingIOError):
                data = b""
            if len(data) > 4:
                reply = json.loads(data[4:4 + struct.unpack(">I", data[:4])[0]])
                code = reply.get("error", {}).get("code")
                codes[code] = codes.get(code, 0) + 1
            closed_at[s] = time.monotonic() - began
            selector.unregister(s)
        for s in sockets:
            if s not in closed_at:
                try:
                    s.send(b"x")  # a byte a second
                except OSError:
                    pass
        peak = max(peak, server.rss_kib())
    for s in sockets:
        s.close()
    survived = sorted(t for t in closed_at.values() if t > 5)
    return {
        "connections": count, "rss_start_mib": start_rss / 1024, "rss_peak_mib": peak / 1024,
        "rss_after_mib": server.rss_kib() / 1024, "replies_by_code": codes,
        "trickled_frame_survived_s": (survived[0], survived[-1]) if survived else None,
    }


def no_read(server, count):
    start_rss = server.rss_kib()
    params = json.dumps(["x" * (100 << 10)])
    payload = b"".join(frame(f'{{"jsonrpc":"2.0","method":"echo.echo","params":{params},"id":{i}}}') for i in range(10))
    sockets, refused = [], 0
    for index in range(count):
        s = connect(server.port, index)
        s.setblocking(False)
        try:
            s.sendall(payload)
        except BlockingIOError:
            pass
        except OSError:  # past the loopback peer's MaxConnectionsPerPeer=, or its share: closed by rpcd
            refused += 1
        sockets.append(s)
    peak, _ = peak_rss(server, 10)
    for s in sockets:
        s.close()
    time.sleep(2)
    return {"connections": count, "refused": refused, "rss_start_mib": start_rss / 1024, "rss_peak_mib": peak / 1024,
            "rss_after_close_mib": server.rss_kib() / 1024}


def batch(server):
    start_rss = server.rss_kib()
    admin = socket.socket(socket.AF_UNIX)
    admin.connect(server.socket_path)  # kv.set is for root and group rpcd, on the socket
    admin.sendall(frame(json.dumps({"jsonrpc": "2.0", "method": "kv.set", "params": ["big", "v" * 1_000_000], "id": 1})))
    set_reply = read_frame(admin)
    admin.close()
    entries = ",".join(f'{{"jsonrpc":"2.0","method":"kv.get","params":["big"],"id":{i}}}' for i in range(500))
    s = connect(server.port, 0)
    s.sendall(frame("[" + entries + "]"))
    reply = read_frame(s, timeout=60)
    peak, _ = peak_rss(server, 2)
    s.close()
    return {"set": set_reply.get("result", set_reply.get("error")), "request_bytes": len(entries) + 2,
            "reply": reply.get("error") if isinstance(reply, dict) else f"array of {len(reply)}",
            "rss_start_mib": start_rss / 1024, "rss_peak_mib": peak / 1024}


class RootPings:
    """rpcd.ping on the Unix socket, one every 20 ms, from a connection made before or during an attack."""

    def __init__(self, server):
        self.server = server
        self.latencies, self.failures = [], 0

    def run(self, seconds):
        end = time.monotonic() + seconds
        s = None
        while time.monotonic() < end:
            began = time.monotonic()
            try:
                if s is None:
                    s = socket.socket(socket.AF_UNIX)
                    s.connect(self.server.socket_path)
                s.sendall(frame('{"jsonrpc":"2.0","method":"rpcd.ping","id":1}'))
                reply = read_frame(s, timeout=5)
                if not reply or "result" not in reply:
                    raise OSError(f"reply {reply}")
                self.latencies.append(time.monotonic() - began)
            except OSError:
                self.failures += 1
                s = None
            time.sleep(0.02)
        if s:
            s.close()

    def summary(self):
        ordered = sorted(self.latencies) or [float("nan")]
        pick = lambda q: round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)  # noqa: E731
        return {"root_ping_ms": {"p50": pick(0.5), "p99": pick(0.99), "max": pick(1.0), "n": len(self.latencies)},
                "root_ping_failures": self.failures}


SHORT = False  # --short: what `make test` runs, each attack smaller and shorter (set in main)


def attack_seconds():
    return 3 if SHORT else 8


# The bound of docs/SECURITY.md, "Fair shares", with the shipped limits: R0 + 2 x MaxBufferedBytes= +
# connections x c + handlers x l, where c is 16 KiB for a connection and 32 KiB for a TLS one, and l 272 KiB for
# each isolated handler's link (the shipped four and faulty).
MAX_BUFFERED_MIB = 128
CONNECTION_KIB = 16
TLS_CONNECTION_KIB = 32
ISOLATED_HANDLERS, LINK_KIB = 5, 272


def bound_mib(r0_kib, connections, tls_connections=0):
    return round(r0_kib / 1024 + 2 * MAX_BUFFERED_MIB + (connections * CONNECTION_KIB + tls_connections * TLS_CONNECTION_KIB
                                                          + ISOLATED_HANDLERS * LINK_KIB) / 1024, 1)


def under_attack(server, attack, seconds=None, connections=None, tls_connections=0):
    """Runs `attack` (which returns what it holds: sockets, or anything with close()), then pings as root while
    peak RSS is sampled; the result has the bound for the connections the attack holds."""
    seconds = seconds or attack_seconds()
    start_rss = server.rss_kib()
    sockets = attack()
    pings = RootPings(server)
    thread = threading.Thread(target=pings.run, args=(seconds,))
    thread.start()
    peak, charged = peak_rss(server, seconds)
    thread.join()
    for s in sockets:
        s.close()
    time.sleep(2)
    held = len(sockets) if connections is None else connections
    result = {"rss_start_mib": start_rss / 1024, "rss_peak_mib": peak / 1024, "rss_after_close_mib": server.rss_kib() / 1024,
              "charged_peak_mib": round(charged / (1 << 20), 1), "bound_mib": bound_mib(start_rss, held, tls_connections)}
    result.update(pings.summary())
    # What the daemon still holds for peers once they left: rpcd.info's frames.buffered_bytes.
    s = socket.socket(socket.AF_UNIX)
    s.connect(server.socket_path)
    s.sendall(frame('{"jsonrpc":"2.0","method":"rpcd.info","id":1}'))
    try:
        reply = read_frame(s) or {}
    except OSError:  # still busy with what the attack left: said as such
        reply = {"result": {"frames": {"buffered_bytes": "rpcd.info unanswered for 10 s"}}}
    s.close()
    result["buffered_bytes_after_close"] = reply.get("result", {}).get("frames", {}).get("buffered_bytes")
    return result


class Repeating:
    """Runs `step` again and again in a thread of its own until closed: an attacker that comes back."""

    def __init__(self, step):
        self.stopped = threading.Event()
        self.rounds = 0
        self.thread = threading.Thread(target=self.run, args=(step,), daemon=True)
        self.thread.start()

    def run(self, step):
        while not self.stopped.is_set():
            try:
                step()
            except OSError:
                pass
            self.rounds += 1

    def close(self):
        self.stopped.set()
        self.thread.join(timeout=30)


class Child:
    """A process of the attack's (another local user's): closing it kills it."""

    def __init__(self, pid):
        self.pid = pid

    def close(self):
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except OSError:
            pass


def send_quietly(s, data):
    s.setblocking(False)
    try:
        s.sendall(data)
    except (BlockingIOError, OSError):
        pass


def announce(server, count):
    def attack():
        sockets = []
        for index in range(count):
            try:
                s = connect(server.port, index)
            except OSError:
                break
            send_quietly(s, struct.pack(">I", 4 << 20))
            sockets.append(s)
        return sockets
    return under_attack(server, attack)


def senders_that_never_read(server, payload, count):
    """`count` connections that send `payload` and never read, with a small receive buffer: what rpcd answers
    stays with rpcd (or is refused)."""
    sockets = []
    for index in range(count):
        s = connect(server.port, index)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        send_quietly(s, payload)
        sockets.append(s)
    return sockets


def pipeline(server, count=4):
    ids = "i" * 1_000_000
    payload = b"".join(frame(f'{{"jsonrpc":"2.0","method":"echo.echo","params":[{n}],"id":"{ids}{n}"}}') for n in range(128))
    return under_attack(server, lambda: senders_that_never_read(server, payload, count))


def discover(server, count=4):
    entries = ",".join(f'{{"jsonrpc":"2.0","method":"rpc.discover","id":{n}}}' for n in range(1024))

    def attack():
        sockets = []
        for index in range(count):
            s = connect(server.port, index)
            send_quietly(s, frame("[" + entries + "]") * 4)
            sockets.append(s)
        return sockets
    return under_attack(server, attack)


def events(server, count=8):
    def attack():
        sockets = []
        for index in range(count):
            s = connect(server.port, index)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(frame('{"jsonrpc":"2.0","method":"rpc.subscribe","params":["kv.changed"],"id":1}'))
            sockets.append(s)
        admin = socket.socket(socket.AF_UNIX)
        admin.connect(server.socket_path)
        for n in range(300):
            admin.sendall(frame(json.dumps({"jsonrpc": "2.0", "method": "kv.set", "params": [f"k{n % 3}", "v" * 900_000],
                                            "id": n})))
            read_frame(admin)
        sockets.append(admin)
        return sockets
    return under_attack(server, attack)


def module_calls(server, count=4):
    params = json.dumps(["x" * 512_000])
    payload = b"".join(frame(f'{{"jsonrpc":"2.0","method":"echo.echo","params":{params},"id":{n}}}') for n in range(128))
    return under_attack(server, lambda: senders_that_never_read(server, payload, count))


UPGRADE = (b"GET /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
           b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")


def http_connect(server, index, upgrade=False):
    s = socket.socket()
    s.bind((SOURCES[index % len(SOURCES)], 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", server.http_port))
    if upgrade:
        s.sendall(UPGRADE)
        s.settimeout(5)
        if b"101" not in s.recv(4096):
            s.close()
            raise OSError("upgrade refused")
    return s


def http_senders(server, count, payload, upgrade=False):
    """`count` connections to the http:// listener (upgraded to WebSocket if `upgrade`) that send `payload` and
    never read."""
    def attack():
        sockets = []
        for index in range(count):
            try:
                s = http_connect(server, index, upgrade=upgrade)
            except OSError:
                break
            send_quietly(s, payload)
            sockets.append(s)
        return sockets
    return under_attack(server, attack)


def websocket(server, count):
    # A masked text frame announcing 4 MiB (the 64-bit length form), then 1 MiB of it.
    partial = bytes([0x81, 0x80 | 127]) + struct.pack(">Q", 4 << 20) + b"\x01\x02\x03\x04" + b"x" * (1 << 20)
    return http_senders(server, count, partial, upgrade=True)


def ws_pings(server, count=200):
    # 1,000 masked pings of 125 bytes each: 127 bytes of pong apiece that the peer never takes.
    ping = bytes([0x89, 0x80 | 125]) + b"\x01\x02\x03\x04" + b"p" * 125
    return http_senders(server, count, ping * 1000, upgrade=True)


def http_gets(server, count=200):
    return http_senders(server, count, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 1500)


def slowloris(server, count):
    """Heads trickled a byte a second: how many connections are still open after FrameTimeout= (60 s) + 10 s."""
    head = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Padding: " + b"x" * 4000
    sockets = []
    for index in range(count):
        try:
            s = http_connect(server, index)
        except OSError:
            break
        s.setblocking(False)
        sockets.append(s)
    began = time.monotonic()
    open_after = None
    sent = 0
    while time.monotonic() - began < 70:
        for s in list(sockets):
            try:
                s.send(head[sent % len(head):sent % len(head) + 1])
            except OSError:
                sockets.remove(s)
        sent += 1
        if open_after is None and time.monotonic() - began > 30:
            open_after = {"after_30s": len(sockets)}
        time.sleep(1)
    result = {"connections": count, "open": open_after or {}, "open_after_70s": len(sockets),
              "rss_mib": server.rss_kib() / 1024}
    for s in sockets:
        s.close()
    return result


def connections(server, count):
    def attack():
        sockets = []
        for index in range(count):
            try:
                sockets.append(connect(server.port, index))
            except OSError:
                break
        return sockets
    return under_attack(server, attack, seconds=4)


# Each scenario by name: (server, --connections) -> its figures.
def ws_text(payload):
    """A masked WebSocket text frame (the mask is zero: the payload goes as it is)."""
    data = payload.encode()
    if len(data) < 126:
        header = bytes([0x81, 0x80 | len(data)])
    elif len(data) < 1 << 16:
        header = bytes([0x81, 0x80 | 126]) + struct.pack(">H", len(data))
    else:
        header = bytes([0x81, 0x80 | 127]) + struct.pack(">Q", len(data))
    return header + b"\0\0\0\0" + data


def sendall_within(s, data, seconds=5):
    """Sends what rpcd takes within `seconds`; a refusal (reset, closed) or a full socket ends it quietly."""
    s.settimeout(seconds)
    try:
        s.sendall(data)
    except OSError:
        pass


def hung_module(server, count):
    """Issue 36, finding 1: a read-only peer sends calls with 1 MiB params to a method that hangs its module
    host, then disconnects, round after round."""
    rounds = 10 if SHORT else 50
    params = json.dumps(["x" * (1 << 20)])
    payload = b"".join(frame(f'{{"jsonrpc":"2.0","method":"faulty.hang","params":{params},"id":{n}}}') for n in range(8))

    def attack():
        for index in range(rounds):
            s = connect(server.port, index)
            sendall_within(s, payload, seconds=1)
            s.close()
        return []
    return under_attack(server, attack, connections=1)


def module_reply(server, count):
    """Finding 2: read-only callers ask a module for replies of 200 MiB each."""
    def attack():
        sockets = []
        for index in range(2 if SHORT else 4):
            s = connect(server.port, index)
            s.sendall(frame('{"jsonrpc":"2.0","method":"faulty.reply","params":[200],"id":1}'))
            sockets.append(s)
        return sockets
    return under_attack(server, attack, seconds=attack_seconds() + 4)


def large_ids(server, count, method="rpcd.ping"):
    """Finding 3: 12 local users (Unix socket peers of their own), each with 32 connections that pipeline calls
    with 256 KiB ids and never read. Needs root, to be those users."""
    if os.getuid() != 0:
        return {"skipped": "needs root (the attackers are 12 local users)"}
    users, per_user = 12, 8 if SHORT else 32
    os.chmod(os.path.dirname(server.socket_path), 0o755)
    ids = "i" * (256 << 10)
    payload = b"".join(frame(f'{{"jsonrpc":"2.0","method":"{method}","params":[{n}],"id":"{ids}{n}"}}') for n in range(64))

    def attack():
        children = []
        for user in range(users):
            pid = os.fork()
            if pid == 0:
                try:
                    os.setgroups([])
                    os.setresgid(40000 + user, 40000 + user, 40000 + user)
                    os.setresuid(40000 + user, 40000 + user, 40000 + user)
                    for _ in range(per_user):
                        s = socket.socket(socket.AF_UNIX)
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                        s.connect(server.socket_path)
                        threading.Thread(target=sendall_within, args=(s, payload, 600), daemon=True).start()
                    time.sleep(600)
                finally:
                    os._exit(0)
            children.append(Child(pid))
        time.sleep(1)
        return children
    return under_attack(server, attack, connections=users * per_user)


def tls_idle(server, count):
    """Finding 4: what an idle TLS connection costs: handshaken connections that then send nothing."""
    count = min(count, 250)  # all loopback addresses are one peer: MaxConnectionsPerPeer= is 256
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    before = server.rss_kib()
    sockets = []
    for index in range(count):
        raw = connect(server.tls_port, index)
        sockets.append(context.wrap_socket(raw, server_hostname="localhost"))
    time.sleep(1)
    per_connection = (server.rss_kib() - before) / count
    result = under_attack(server, lambda: sockets, connections=0, tls_connections=count)
    result["kib_per_tls_connection"] = round(per_connection, 1)
    return result


def fan_out(server, count):
    """Finding 5: one loopback peer, 100 WebSocket connections x 64 subscriptions to the same event, never
    reading; one read-only call makes a module emit 100,000 events."""
    connections, duplicates, burst = (20, 64, 20_000) if SHORT else (100, 64, 100_000)
    subscribe = b"".join(ws_text(json.dumps({"jsonrpc": "2.0", "method": "rpc.subscribe", "params": ["faulty.tick"],
                                              "id": n})) for n in range(duplicates))

    def attack():
        sockets = []
        for index in range(connections):
            s = http_connect(server, index, upgrade=True)
            s.sendall(subscribe)
            sockets.append(s)
        time.sleep(0.5)
        caller = connect(server.port, 0)
        caller.sendall(frame(f'{{"jsonrpc":"2.0","method":"faulty.emit","params":[{burst}],"id":1}}'))
        sockets.append(caller)
        return sockets
    return under_attack(server, attack)


def chunks(server, count):
    """Finding 6: two read-only connections post bodies of a million one-byte chunks, again and again."""
    call = b'{"jsonrpc":"2.0","method":"rpcd.ping","id":1}'
    body = b"%x\r\n%s\r\n" % (len(call), call) + b"1\r\n \r\n" * (300_000 if SHORT else 1_000_000) + b"0\r\n\r\n"
    request = (b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n" + body)

    def step(index):
        s = http_connect(server, index)
        try:
            sendall_within(s, request, seconds=10)
            s.settimeout(10)
            s.recv(4096)
        finally:
            s.close()
    return under_attack(server, lambda: [Repeating(lambda: step(0)), Repeating(lambda: step(1))], connections=2)


SCENARIOS = {
    "trickle": trickle,
    "no-read": no_read,
    "batch": lambda server, count: batch(server),
    "announce": announce,
    "pipeline": lambda server, count: pipeline(server),
    "discover": lambda server, count: discover(server),
    "events": lambda server, count: events(server),
    "connections": connections,
    "module-calls": lambda server, count: module_calls(server),
    "websocket": websocket,
    "ws-pings": lambda server, count: ws_pings(server),
    "http-gets": lambda server, count: http_gets(server),
    "slowloris": slowloris,
    "hung-module": hung_module,
    "module-reply": module_reply,
    "large-ids": large_ids,
    "large-ids-module": lambda server, count: large_ids(server, count, method="echo.echo"),
    "tls-idle": tls_idle,
    "fan-out": fan_out,
    "chunks": chunks,
}
# What `--short` runs (make test): the classes of the bound; trickle and slowloris wait out FrameTimeout=.
SHORT_SCENARIOS = [name for name in SCENARIOS if name not in ("trickle", "slowloris", "connections")]


def main():
    global SHORT
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bin_dir")
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--only", nargs="*", choices=list(SCENARIOS))
    parser.add_argument("--short", action="store_true", help="smaller, shorter attacks: what make test runs")
    parser.add_argument("--check-bound", action="store_true",
                        help="fail when a scenario's peak RSS passes its bound, or root's ping failed")
    args = parser.parse_args()
    SHORT = args.short
    if not 1 <= args.connections <= 2000:
        sys.exit("hostile.py: --connections must be 1 to 2000 (MaxConnections= is 4096, 256 per address)")
    try:
        os.sched_setaffinity(0, {CLIENT_CPU})
    except (AttributeError, OSError):
        pass
    results, broken = {}, []
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.only or (SHORT_SCENARIOS if SHORT else list(SCENARIOS)):
            server = start(args.bin_dir, workdir)  # a fresh process per scenario
            try:
                results[name] = result = SCENARIOS[name](server, args.connections)
                print(f"{name}: {json.dumps(result)}", flush=True)
            finally:
                server.stop()
            if "bound_mib" in result and result["rss_peak_mib"] > result["bound_mib"]:
                broken.append(f"{name}: peak RSS {result['rss_peak_mib']:.1f} MiB passed the bound {result['bound_mib']} MiB")
            if result.get("root_ping_failures"):
                broken.append(f"{name}: {result['root_ping_failures']} of root's rpcd.ping failed")
    print(json.dumps(results, indent=2))
    if args.check_bound and broken:
        sys.exit("hostile.py: " + "; ".join(broken))


if __name__ == "__main__":
    main()
