"""Interop test: the rpcd Python package's clients (python/rpcd) against a real rpcd process, over every
transport it serves: framed TCP and Unix socket, TLS, HTTP and WebSocket, synchronous and asyncio, with
failover between two daemons.

Needs the built daemon and example modules: RPCD_BIN_DIR names the directory holding `rpcd` and
`libecho.so`, `libcalc.so`, ... (make test sets it). The daemon serves the handler files shipped in
config/handlers.d, as an installed rpcd does.
"""

import asyncio
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.normpath(os.path.join(HERE, "../../python"))
sys.path.insert(0, PACKAGE)
from rpcd import RPCError  # noqa: E402
from rpcd.client import AsyncClient, Client, ConnectionClosed, Event, Resubscribed, tls_context  # noqa: E402

# `python3 -m rpcd` from the checkout, as after `pip install ./python`.
SCRIPT_ENV = dict(os.environ, PYTHONPATH=PACKAGE)
BIN_DIR = os.environ.get("RPCD_BIN_DIR", os.path.join(HERE, "../../.build/debug"))
EXAMPLE_HANDLERS = os.path.join(HERE, "../../config/handlers.d")


class Daemon:
    """rpcd on an ephemeral loopback port and a Unix socket in a temporary directory, serving the handler
    files of `handlers_dir` (none by default) with modules from `module_dir`. `tcp` is the TCP listener
    (tls://127.0.0.1:0 for TLS); `config` is appended to rpcd.conf. `directory` exists before the daemon starts,
    so `prepare(directory)` can write files there (certificates) and return the text of `config`. Unless that
    text has an [Access] section, the shipped access rules apply with the user running the tests as an
    administrator too (root already is one), so that `make check` runs as any user."""

    def __init__(self, handlers_dir=None, module_dir=None, tcp="127.0.0.1:0", prepare=None):
        bin_dir = BIN_DIR
        self.directory = tempfile.mkdtemp(prefix="rpcd-py-")
        self.socket_path = os.path.join(self.directory, "rpcd.sock")
        config = os.path.join(self.directory, "rpcd.conf")
        extra = prepare(self.directory) if prepare else ""
        if "[Access]" not in extra:
            extra += f"\n[Access]\nAllow=user:root group:rpcd user:{os.getuid()}\n"
        with open(config, "w") as f:
            f.write(f"[Server]\nListen={tcp}\nListen={self.socket_path}\n{extra}")
        command = [os.path.join(bin_dir, "rpcd"), "--config", config,
                   "--handlers-dir", handlers_dir or os.path.join(self.directory, "none")]
        if module_dir:
            command += ["--module-dir", module_dir]
        self.process = subprocess.Popen(
            command,
            stderr=subprocess.PIPE, text=True, env=dict(os.environ, SWIFTNIO_STRICT="1"))
        self.tcp_address = self._wait_for_listener()

    def _wait_for_listener(self):
        found = {}
        done = threading.Event()

        def read():
            for line in self.process.stderr:
                match = re.search(r"rpcd_listener=((?:tls://|https?://)?127\.0\.0\.1:\d+)", line)
                if match:
                    found["address"] = match.group(1)
                    done.set()
            done.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        if not done.wait(30) or "address" not in found:
            self.stop()
            raise RuntimeError("rpcd did not start listening")
        return found["address"]

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(10)
        self.process.stderr.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class ExampleDaemonTest(unittest.TestCase):
    """One rpcd serving the shipped handler files for all tests of the class."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(handlers_dir=EXAMPLE_HANDLERS, module_dir=BIN_DIR)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()


class PythonClientTest(ExampleDaemonTest):
    def test_call_over_tcp_and_unix_socket(self):
        for address in (self.daemon.tcp_address, self.daemon.socket_path):
            with Client(address) as client:
                self.assertEqual(client.call("rpcd.ping"), "pong")

    def test_params_by_position_and_by_name(self):
        with Client(self.daemon.tcp_address) as client:
            self.assertEqual(client.call("calc.add", [1, 2.5]), 3.5)
            self.assertEqual(client.call("calc.add", {"a": 40, "b": 2}), 42)
            self.assertEqual(client.call("echo.echo", {"nested": [1, {"x": None}]}), {"nested": [1, {"x": None}]})

    def test_errors_are_raised_with_code_and_data(self):
        with Client(self.daemon.tcp_address) as client:
            with self.assertRaises(RPCError) as caught:
                client.call("no.such", [])
            self.assertEqual(caught.exception.code, -32601)
            self.assertEqual(caught.exception.data, {"method": "no.such"})
            with self.assertRaises(RPCError) as caught:
                client.call("calc.divide", {"dividend": 7, "divisor": 0})
            self.assertEqual((caught.exception.code, caught.exception.message, caught.exception.data),
                             (1, "Division by zero", {"dividend": 7}))

    def test_batch_and_notification(self):
        with Client(self.daemon.tcp_address) as client:
            client.notify("echo.echo", [1])
            results = client.batch([("calc.add", [1, 2]), ("nope.nope", None), ("rpcd.ping", None)])
            self.assertEqual(results[0], 3)
            self.assertIsInstance(results[1], RPCError)
            self.assertEqual(results[2], "pong")

    def test_pipelined_replies_are_matched_by_id(self):
        with Client(self.daemon.tcp_address) as client:
            client.send({"jsonrpc": "2.0", "method": "echo.sleep", "params": [200], "id": "slow"})
            client.send({"jsonrpc": "2.0", "method": "rpcd.ping", "id": "fast"})
            self.assertEqual(client.receive()["id"], "fast")
            self.assertEqual(client.receive()["id"], "slow")

    def test_invalid_json_gets_parse_error_and_connection_survives(self):
        with Client(self.daemon.tcp_address) as client:
            client.send_payload(b'{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]')
            reply = json.loads(client.receive_payload())
            self.assertEqual(reply["error"]["code"], -32700)
            self.assertIsNone(reply["id"])
            self.assertEqual(client.call("rpcd.ping"), "pong")

    def test_script_entry_point(self):
        result = subprocess.run(
            [sys.executable, "-m", "rpcd", self.daemon.tcp_address, "calc.add", "[2, 3]"],
            capture_output=True, text=True, timeout=60, env=SCRIPT_ENV)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout), 5)


class PythonEventTest(ExampleDaemonTest):
    """Events with the standard library only: subscribe, read rpc.event notifications between calls,
    unsubscribe."""

    def test_subscribe_receive_and_unsubscribe(self):
        # kv.set changes state: over the Unix socket, as root or group rpcd (the shipped access rules).
        with Client(self.daemon.tcp_address) as watcher, Client(self.daemon.socket_path) as admin:
            subscription = watcher.subscribe("kv.changed")
            admin.call("kv.set", {"key": "py", "value": [1, 2]})
            admin.call("kv.delete", ["py"])
            # A call made meanwhile still gets its reply; the events wait their turn.
            self.assertEqual(watcher.call("rpcd.ping"), "pong")
            method, params = watcher.next_notification()
            self.assertEqual(method, "rpc.event")
            self.assertEqual(params, {"subscription": subscription, "event": "kv.changed", "seq": 1,
                                      "data": {"key": "py", "value": [1, 2]}})
            self.assertEqual(watcher.next_notification()[1]["data"], {"key": "py", "deleted": True})
            self.assertTrue(watcher.unsubscribe(subscription))
            self.assertFalse(watcher.unsubscribe(subscription))
            admin.call("kv.set", {"key": "py", "value": 3})
            self.assertEqual(watcher.call("rpcd.ping"), "pong")
            self.assertEqual(len(watcher._notifications), 0, "no event after unsubscribing")

    def test_unknown_event_is_invalid_params(self):
        with Client(self.daemon.tcp_address) as client:
            with self.assertRaises(RPCError) as caught:
                client.subscribe("kv.nothing")
            self.assertEqual(caught.exception.code, -32602)

    def test_script_watch_prints_json_lines(self):
        watcher = subprocess.Popen([sys.executable, "-m", "rpcd", self.daemon.tcp_address, "--watch", "kv.changed"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=SCRIPT_ENV)
        try:
            with Client(self.daemon.socket_path) as admin:
                # The watcher subscribes on its own schedule: set until its first line arrives.
                lines = []
                reader = threading.Thread(target=lambda: lines.append(watcher.stdout.readline()), daemon=True)
                reader.start()
                for attempt in range(500):
                    admin.call("kv.set", {"key": "watched", "value": attempt})
                    reader.join(0.02)
                    if lines:
                        break
            event = json.loads(lines[0])
            self.assertEqual(event["event"], "kv.changed")
            self.assertEqual(event["seq"], 1)
            self.assertEqual(event["data"]["key"], "watched")
        finally:
            watcher.terminate()
            watcher.wait(30)
            watcher.stdout.close()
            watcher.stderr.close()


class PythonTransportsTest(unittest.TestCase):
    """Both clients over HTTP and WebSocket, on TCP and on Unix sockets (docs/PROTOCOL.md §9)."""

    @classmethod
    def setUpClass(cls):
        def prepare(directory):
            cls.http_socket = os.path.join(directory, "http.sock")
            return f"Listen=http+unix:{cls.http_socket}\n"

        cls.daemon = Daemon(handlers_dir=EXAMPLE_HANDLERS, module_dir=BIN_DIR, tcp="http://127.0.0.1:0",
                            prepare=prepare)
        cls.http = cls.daemon.tcp_address
        cls.ws = cls.http.replace("http://", "ws://")

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def addresses(self):
        return [self.http, self.ws, f"http+unix:{self.http_socket}", f"ws+unix:{self.http_socket}"]

    def test_sync_calls_batches_and_errors_over_every_transport(self):
        for address in self.addresses():
            with self.subTest(address=address), Client(address) as client:
                self.assertEqual(client.call("rpcd.ping"), "pong")
                self.assertEqual(client.call("calc.add", {"a": 40, "b": 2}), 42)
                client.notify("echo.echo", [1])  # HTTP: answered 204, nothing to read
                with self.assertRaises(RPCError) as caught:
                    client.call("calc.divide", [7, 0])
                self.assertEqual((caught.exception.code, caught.exception.data), (1, {"dividend": 7}))
                results = client.batch([("calc.add", [1, 2]), ("nope.nope", None)])
                self.assertEqual(results[0], 3)
                self.assertEqual(results[1].code, -32601)

    def test_async_pipelined_calls_over_every_transport(self):
        async def main(address):
            async with AsyncClient(address) as client:
                slow = asyncio.ensure_future(client.call("echo.sleep", [300]))
                results = await asyncio.gather(*(client.call("calc.add", [i, 1]) for i in range(200)))
                self.assertEqual(results, [i + 1 for i in range(200)])
                self.assertEqual(await slow, "done")
        for address in self.addresses():
            with self.subTest(address=address):
                asyncio.run(main(address))

    def test_events_over_a_websocket(self):
        async def main():
            async with AsyncClient(self.ws) as watcher:
                events = await watcher.subscribe("kv.changed")
                with Client(self.daemon.socket_path) as admin:
                    admin.call("kv.set", {"key": "ws", "value": 1})
                item = await asyncio.wait_for(events.__anext__(), 10)
                self.assertEqual(item, Event("kv.changed", 1, {"key": "ws", "value": 1}))
                await events.aclose()
        asyncio.run(main())


class PythonFailoverTest(unittest.TestCase):
    """Two daemons, the asyncio client on the first: when it dies, the client fails over to the second, its
    calls in flight fail, and its subscription comes back on the second with a Resubscribed marker; when it
    stops (SIGTERM, as `systemctl restart` does), it says which calls it accepted (rpc.goingAway) and answers
    those, and the client sends the rest to the second: not one call fails, `kv.set` (not idempotent) included."""

    def setUp(self):
        self.first = Daemon(handlers_dir=EXAMPLE_HANDLERS, module_dir=BIN_DIR)
        self.addCleanup(self.first.stop)
        self.second = Daemon(handlers_dir=EXAMPLE_HANDLERS, module_dir=BIN_DIR)
        self.addCleanup(self.second.stop)

    def test_failover_and_resubscribe(self):
        first, second = self.first, self.second
        async def main():
            async with AsyncClient([first.tcp_address, second.tcp_address], timeout=20) as client:
                self.assertEqual((await client.call("rpcd.info"))["pid"], first.process.pid)
                events = await client.subscribe("kv.changed")
                in_flight = asyncio.ensure_future(client.call("echo.sleep", [10000]))
                await asyncio.sleep(0.2)
                # Dead, not dying: a dying daemon's listening socket still queues a new connection,
                # which the kernel then resets (a call on it would fail as a call on a broken connection).
                await asyncio.get_running_loop().run_in_executor(
                    None, lambda: (first.process.kill(), first.process.wait()))
                with self.assertRaises(ConnectionClosed):
                    await in_flight
                self.assertEqual((await client.call("rpcd.info"))["pid"], second.process.pid)
                self.assertEqual(await asyncio.wait_for(events.__anext__(), 10), Resubscribed())
                with Client(second.socket_path) as admin:
                    admin.call("kv.set", {"key": "after", "value": 2})
                item = await asyncio.wait_for(events.__anext__(), 10)
                self.assertEqual((item.seq, item.data), (1, {"key": "after", "value": 2}))
        asyncio.run(main())

    def test_no_call_fails_across_a_stop(self):
        first, second = self.first, self.second
        async def main():
            async with AsyncClient([first.socket_path, second.socket_path], timeout=20) as client:
                events = await client.subscribe("kv.changed")
                stopping = asyncio.Event()
                counts = {"ok": 0}

                async def caller(n):
                    i = 0
                    while not stopping.is_set():
                        i += 1
                        if i % 2:
                            self.assertTrue(await client.call("kv.set", {"key": f"restart-{n}", "value": i}))
                        else:
                            self.assertEqual(await client.call("calc.add", [i, 1]), i + 1)
                        counts["ok"] += 1
                callers = [asyncio.ensure_future(caller(n)) for n in range(8)]
                accepted = asyncio.ensure_future(client.call("echo.sleep", [300]))  # runs through the stop
                await asyncio.sleep(0.3)
                before = counts["ok"]
                await asyncio.get_running_loop().run_in_executor(
                    None, lambda: (first.process.terminate(), first.process.wait(30)))
                await asyncio.sleep(0.3)
                stopping.set()
                await asyncio.gather(*callers)  # any failed call fails the test here
                self.assertEqual(await accepted, "done")
                self.assertGreater(counts["ok"], before)
                self.assertEqual((await client.call("rpcd.info"))["pid"], second.process.pid)
                with Client(second.socket_path) as admin:
                    admin.call("kv.set", {"key": "after", "value": 2})
                items = []
                while not items or not isinstance(items[-1], Event) or Resubscribed() not in items:
                    items.append(await asyncio.wait_for(events.__anext__(), 10))
        asyncio.run(main())


def make_pki(directory):
    """A throw-away CA, a server certificate for localhost and a client certificate for alice, with the openssl
    commands of docs/SECURITY.md; returns the [TLS] and [Access] sections that use them."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    def issue(name, common_name, extensions):
        with open(os.path.join(directory, f"{name}.ext"), "w") as file:
            file.write(extensions)
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={common_name}",
                "-keyout", f"{name}.key", "-out", f"{name}.csr")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem")

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=rpcd test CA", "-keyout", "ca.key", "-out", "ca.pem")
    issue("server", "localhost", "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n")
    issue("alice", "alice", "extendedKeyUsage=clientAuth\n")
    path = lambda name: os.path.join(directory, name)  # noqa: E731
    return (f"[TLS]\nCertificate={path('server.pem')}\nPrivateKey={path('server.key')}\n"
            f"ClientCA={path('ca.pem')}\nRequireClientCertificate=yes\n[Access]\nAllow=client:alice\n")


class PythonTLSClientTest(unittest.TestCase):
    """The same client over a tls:// listener that requires client certificates, with the standard ssl module."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(tcp="tls://127.0.0.1:0", prepare=make_pki)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def file(self, name):
        return os.path.join(self.daemon.directory, name)

    def test_call_with_a_client_certificate(self):
        context = tls_context(self.file("ca.pem"), self.file("alice.pem"), self.file("alice.key"))
        with Client(self.daemon.tcp_address, tls=context, server_name="localhost") as client:
            self.assertEqual(client.call("rpcd.ping"), "pong")
            client.call("rpcd.setLogLevel", ["debug"])  # state-changing: Allow=client:alice
            self.assertEqual(client.call("rpcd.logLevel"), "debug")

    def test_the_server_certificate_and_name_are_checked(self):
        with self.assertRaises(ssl.SSLCertVerificationError):
            Client(self.daemon.tcp_address, tls=tls_context(), server_name="localhost")
        with self.assertRaises(ssl.SSLCertVerificationError):
            Client(self.daemon.tcp_address, tls=tls_context(self.file("ca.pem")))  # 127.0.0.1 is not named

    def test_without_a_client_certificate_nothing_is_served(self):
        with self.assertRaises((ssl.SSLError, ConnectionError, RPCError)):
            with Client(self.daemon.tcp_address, tls=tls_context(self.file("ca.pem")), server_name="localhost") as client:
                client.call("rpcd.ping")

    def test_asyncio_client_with_a_client_certificate(self):
        async def main():
            context = tls_context(self.file("ca.pem"), self.file("alice.pem"), self.file("alice.key"))
            async with AsyncClient(self.daemon.tcp_address, tls=context, server_name="localhost") as client:
                self.assertEqual(await asyncio.gather(*(client.call("rpcd.ping") for _ in range(50))), ["pong"] * 50)
        asyncio.run(main())

    def test_script_entry_point_with_tls(self):
        host_address = self.daemon.tcp_address.replace("127.0.0.1", "localhost")
        result = subprocess.run(
            [sys.executable, "-m", "rpcd", "--ca", self.file("ca.pem"), "--cert", self.file("alice.pem"),
             "--key", self.file("alice.key"), host_address, "rpcd.ping"],
            capture_output=True, text=True, timeout=60, env=SCRIPT_ENV)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout), "pong")


if __name__ == "__main__":
    unittest.main()
