"""Interop test: clients nobody here wrote call a real rpcd over HTTP and WebSocket (docs/PROTOCOL.md §9).

curl (single, batch, notification, errors, a Unix socket), Python's requests with the jsonrpcclient library,
the websockets library with a subscription, and Node's built-in fetch (and WebSocket, when this Node has it).
Also the web defenses (docs/SECURITY.md): foreign Origin, non-JSON Content-Type and a rebinding Host are
refused with real requests. Needs RPCD_BIN_DIR as examples/python does, and `pip install requests websockets
jsonrpcclient` (scripts/install-deps.sh).
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

import requests
import websockets
from jsonrpcclient import Error, Ok, parse, request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../python"))
from test_rpcd_client import BIN_DIR, EXAMPLE_HANDLERS, Daemon, make_pki  # noqa: E402

PING = {"jsonrpc": "2.0", "method": "rpcd.ping", "id": 1}


class HTTPDaemonTest(unittest.TestCase):
    """One rpcd with an http:// listener on loopback and an http+unix: one, the shipped handler files and
    access rules (calls that change state only for administrators on a Unix socket: root, group rpcd, and the
    user running the tests), MaxFrameSize=64K."""

    @classmethod
    def setUpClass(cls):
        def prepare(directory):
            cls.http_socket = os.path.join(directory, "http.sock")
            return f"Listen=http+unix:{cls.http_socket}\nMaxFrameSize=64K\n"

        cls.daemon = Daemon(handlers_dir=EXAMPLE_HANDLERS, module_dir=BIN_DIR, tcp="http://127.0.0.1:0", prepare=prepare)
        cls.base = cls.daemon.tcp_address
        cls.url = cls.base + "/rpc"

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def curl(self, *arguments, data=None, content_type="application/json", url=None):
        """curl's body and status code."""
        command = ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "--max-time", "20"]
        if data is not None:
            command += ["-H", f"Content-Type: {content_type}", "--data-binary", data]
        result = subprocess.run(command + list(arguments) + [url or self.url], capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 0, result.stderr)
        body, _, status = result.stdout.rpartition("\n")
        return body, int(status)


@unittest.skipIf(shutil.which("curl") is None, "curl is not installed")
class CurlTest(HTTPDaemonTest):
    def test_single_call(self):
        body, status = self.curl(data=json.dumps(PING))
        self.assertEqual((status, json.loads(body)), (200, {"jsonrpc": "2.0", "result": "pong", "id": 1}))

    def test_batch_with_an_error_and_a_notification(self):
        batch = [{"jsonrpc": "2.0", "method": "calc.add", "params": [1, 2], "id": 1},
                 {"jsonrpc": "2.0", "method": "no.such", "id": 2},
                 {"jsonrpc": "2.0", "method": "rpcd.ping"}]
        body, status = self.curl(data=json.dumps(batch))
        self.assertEqual(status, 200)
        replies = {reply["id"]: reply for reply in json.loads(body)}
        self.assertEqual(replies[1]["result"], 3)
        self.assertEqual(replies[2]["error"]["code"], -32601)
        self.assertEqual(len(replies), 2)

    def test_notification_is_204(self):
        body, status = self.curl(data='{"jsonrpc":"2.0","method":"rpcd.ping"}')
        self.assertEqual((status, body), (204, ""))

    def test_jsonrpc_errors_are_200_and_the_rest_are_http_statuses(self):
        body, status = self.curl(data='{"jsonrpc":"2.0","method":"calc.divide","params":{"dividend":1,"divisor":0},"id":1}')
        self.assertEqual((status, json.loads(body)["error"]["code"]), (200, 1))
        body, status = self.curl(data='{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]')
        self.assertEqual((status, json.loads(body)["error"]["code"]), (200, -32700))
        self.assertEqual(self.curl("-X", "PUT", data="{}")[1], 405)
        self.assertEqual(self.curl(url=self.base + "/nothing")[1], 404)
        body, status = self.curl(data=" " * (65 * 1024))
        self.assertEqual((status, json.loads(body)["error"]["code"]), (413, -32000))

    def test_access_rules_apply_by_peer_over_tcp_and_by_credentials_on_the_unix_socket(self):
        change = '{"jsonrpc":"2.0","method":"kv.set","params":{"key":"curl","value":1},"id":7}'
        body, status = self.curl(data=change)
        self.assertEqual((status, json.loads(body)["error"]["code"]), (200, -32007))
        body, status = self.curl("--unix-socket", self.http_socket, data=change, url="http://localhost/rpc")
        self.assertEqual((status, json.loads(body)), (200, {"jsonrpc": "2.0", "result": True, "id": 7}))

    def test_a_form_cannot_post(self):
        for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
            body, status = self.curl(data=json.dumps(PING), content_type=content_type)
            self.assertEqual(status, 415, content_type)

    def test_another_sites_page_cannot_call(self):
        body, status = self.curl("-H", "Origin: https://attacker.example", data=json.dumps(PING))
        self.assertEqual(status, 403)
        body, status = self.curl("-X", "OPTIONS", "-H", "Origin: https://attacker.example",
                                 "-H", "Access-Control-Request-Method: POST")
        self.assertEqual(status, 403)

    def test_a_rebound_dns_name_is_refused(self):
        port = self.base.rsplit(":", 1)[1]
        body, status = self.curl("-H", f"Host: attacker.example:{port}", data=json.dumps(PING))
        self.assertEqual(status, 421)
        body, status = self.curl("-H", f"Host: localhost:{port}", data=json.dumps(PING))
        self.assertEqual(status, 200)


class RequestsTest(HTTPDaemonTest):
    def test_jsonrpcclient_over_a_keep_alive_session(self):
        with requests.Session() as session:
            for a in range(3):
                response = session.post(self.url, json=request("calc.add", params=[a, 2]))
                self.assertEqual(response.headers["content-type"], "application/json")
                result = parse(response.json())
                self.assertIsInstance(result, Ok)
                self.assertEqual(result.result, a + 2)
            error = parse(session.post(self.url, json=request("no.such")).json())
            self.assertIsInstance(error, Error)
            self.assertEqual(error.code, -32601)

    def test_subscribing_needs_websocket(self):
        reply = requests.post(self.url, json=request("rpc.subscribe", params={"event": "kv.changed"})).json()
        self.assertIn("WebSocket", reply["error"]["data"]["detail"])


class WebSocketTest(HTTPDaemonTest):
    def ws_url(self):
        return self.base.replace("http://", "ws://") + "/rpc"

    def test_subscription_events_cancellation_ping(self):
        async def scenario():
            async with websockets.connect(self.ws_url()) as ws:
                await ws.send(json.dumps({"jsonrpc": "2.0", "method": "rpc.subscribe",
                                          "params": {"event": "kv.changed"}, "id": 1}))
                subscription = json.loads(await ws.recv())["result"]["subscription"]
                # Another client changes a key: as an administrator over the HTTP Unix socket.
                change = json.dumps({"jsonrpc": "2.0", "method": "kv.set", "params": {"key": "ws", "value": [1]}, "id": 2})
                await asyncio.to_thread(
                    self.curl, "--unix-socket", self.http_socket, data=change, url="http://localhost/rpc")
                event = json.loads(await asyncio.wait_for(ws.recv(), 20))
                self.assertEqual(event["method"], "rpc.event")
                self.assertEqual(event["params"], {"subscription": subscription, "event": "kv.changed", "seq": 1,
                                                   "data": {"key": "ws", "value": [1]}})
                # A slow call cancelled by rpc.cancel is answered -32011.
                await ws.send(json.dumps({"jsonrpc": "2.0", "method": "echo.sleep", "params": [10000], "id": "slow"}))
                await ws.send(json.dumps({"jsonrpc": "2.0", "method": "rpc.cancel", "params": {"id": "slow"}}))
                reply = json.loads(await asyncio.wait_for(ws.recv(), 20))
                self.assertEqual((reply["id"], reply["error"]["code"]), ("slow", -32011))
                pong = await ws.ping()
                await asyncio.wait_for(pong, 20)
                await ws.send(json.dumps([PING]))
                self.assertEqual(json.loads(await ws.recv()), [{"jsonrpc": "2.0", "result": "pong", "id": 1}])

        asyncio.run(scenario())

    def test_refusals_have_close_codes(self):
        async def scenario():
            async with websockets.connect(self.ws_url(), max_size=None) as ws:
                await ws.send(" " * (65 * 1024))
                with self.assertRaises(websockets.ConnectionClosed) as caught:
                    await asyncio.wait_for(ws.recv(), 20)
                self.assertEqual(caught.exception.rcvd.code, 1009)
            async with websockets.connect(self.ws_url()) as ws:
                await ws.send(b"\x00binary")
                with self.assertRaises(websockets.ConnectionClosed) as caught:
                    await asyncio.wait_for(ws.recv(), 20)
                self.assertEqual(caught.exception.rcvd.code, 1003)

        asyncio.run(scenario())

    def test_another_sites_page_cannot_open_a_socket(self):
        async def scenario():
            with self.assertRaises(websockets.InvalidStatus) as caught:
                async with websockets.connect(self.ws_url(), origin="https://attacker.example"):
                    pass
            self.assertEqual(caught.exception.response.status_code, 403)

        asyncio.run(scenario())


def protocol_section_9():
    """The items of PROTOCOL.md §9 (table rows, list items, paragraphs), each as one line of text."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "PROTOCOL.md")) as f:
        text = f.read()
    section = text.split("## 9. HTTP and WebSocket", 1)[1].split("\n## ", 1)[0]
    items, current = [], []
    for line in section.split("\n"):
        if not line.strip() or line.startswith("|") or line.startswith("- ") or line.startswith("```"):
            if current:
                items.append(" ".join(current))
            current = [line] if line.strip() else []
        else:
            current.append(line.strip())
    if current:
        items.append(" ".join(current))
    return items


def raw_exchange(address, request, *, read_for=20):
    """Sends REQUEST (bytes) on a new connection to ADDRESS ("host:port" or a Unix socket path), reads until
    the server closes or one whole response has arrived; returns (status, headers, body) of the first response."""
    import socket
    if address.startswith("/"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(address)
    else:
        host, port = address.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)))
    sock.settimeout(read_for)
    try:
        if request:
            sock.sendall(request)
        data = b""
        while True:
            head_end = data.find(b"\r\n\r\n")
            if head_end >= 0:
                head = data[:head_end].decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in head[1:])}
                length = int(headers.get("content-length", "0"))
                if len(data) >= head_end + 4 + length:
                    return int(head[0].split()[1]), headers, data[head_end + 4:head_end + 4 + length]
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError(f"closed without a whole answer, after {data!r}")
            data += chunk
    finally:
        sock.close()


class RefusalStatusTest(HTTPDaemonTest):
    """Each refusal of an HTTP listener gets the status PROTOCOL.md §9 names for it, and a JSON-RPC error body
    with the code §9 gives that status (issue 40: the 400s for HTTP/2's preface and an oversize head were
    empty; a missing Host: was documented as 421, a WebSocket handshake on another path as 405)."""

    CODES = {413: -32000, 408: -32010, 503: -32009}

    def assert_documented(self, phrase, status):
        items = [item for item in protocol_section_9() if phrase in item]
        self.assertEqual(len(items), 1, f"PROTOCOL.md §9 has {len(items)} items with {phrase!r}")
        self.assertRegex(items[0], rf"\b{status}\b", f"PROTOCOL.md §9 does not give {status} for: {items[0]}")

    def assert_refused(self, request, status, phrase, code=None):
        got, headers, body = raw_exchange(self.base.removeprefix("http://"), request)
        self.assertEqual(got, status, body)
        self.assertEqual(headers.get("content-type"), "application/json")
        error = json.loads(body)
        self.assertEqual((error["jsonrpc"], error["id"]), ("2.0", None))
        self.assertEqual(error["error"]["code"], code or self.CODES.get(status, -32600), error)
        self.assertIsInstance(error["error"].get("data"), dict, error)
        self.assert_documented(phrase, status)
        return error

    def post(self, headers, body=b"{}"):
        return (b"POST /rpc HTTP/1.1\r\n" + b"".join(h.encode() + b"\r\n" for h in headers)
                + b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    def test_every_refusal_has_its_documented_status_and_an_error_body(self):
        host = "Host: " + self.base.removeprefix("http://")
        self.assert_refused(self.post([]), 400, "carry exactly one `Host:`")
        self.assert_refused(self.post([host, host]), 400, "carry exactly one `Host:`")
        self.assert_refused(self.post(["Host: attacker.example"]), 421, "carry exactly one `Host:`")
        self.assert_refused(self.post([host, "Origin: https://attacker.example"]), 403, "if it carries `Origin:`")
        self.assert_refused(
            self.post([host]).replace(b"application/json", b"text/plain"), 415, "`POST` with another `Content-Type`")
        self.assert_refused(self.post([host], b" " * (65 * 1024)), 413, "a body longer than `MaxFrameSize=`")
        self.assert_refused(f"PUT /rpc HTTP/1.1\r\n{host}\r\nContent-Length: 0\r\n\r\n".encode(), 405, "another method on `/rpc`")
        self.assert_refused(f"GET /nothing HTTP/1.1\r\n{host}\r\n\r\n".encode(), 404, "| anything else |")
        upgrade = f"GET /other HTTP/1.1\r\n{host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        self.assert_refused(upgrade.encode(), 404, "a refused handshake gets")
        error = self.assert_refused(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "A request head larger than 80 KiB")
        self.assertIn("HTTP/2", error["error"]["data"]["detail"])
        oversize = f"GET /rpc HTTP/1.1\r\n{host}\r\nX-Filler: {'x' * (81 * 1024)}\r\n\r\n".encode()
        error = self.assert_refused(oversize, 400, "A request head larger than 80 KiB")
        self.assertIn("80 KiB", error["error"]["data"]["detail"])


class ConnectionLimitTest(unittest.TestCase):
    """A connection an HTTP listener refuses by MaxConnectionsPerPeer= is told so with a 503 and Retry-After
    (issue 40: 769 of 1000 concurrent fetch calls from one host saw "other side closed"), and a body that
    does not arrive within FrameTimeout= gets its 408."""

    def test_a_connection_past_the_peer_limit_gets_503_and_a_slow_body_408(self):
        daemon = Daemon(tcp="http://127.0.0.1:0", prepare=lambda _: "MaxConnectionsPerPeer=1\nFrameTimeout=1s\n")
        try:
            import socket
            address = daemon.tcp_address.removeprefix("http://")
            host, port = address.rsplit(":", 1)
            holder = socket.create_connection((host, int(port)))
            try:
                # The first connection is the peer's one; a request on it is served.
                holder.sendall(f"POST /rpc HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n"
                               f"Content-Length: {len(json.dumps(PING))}\r\n\r\n{json.dumps(PING)}".encode())
                self.assertIn(b"pong", holder.recv(4096))
                request = f"POST /rpc HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n" \
                          f"Content-Length: {len(json.dumps(PING))}\r\n\r\n{json.dumps(PING)}".encode()
                status, headers, body = raw_exchange(address, request)
                self.assertEqual((status, headers.get("retry-after")), (503, "1"))
                self.assertEqual(json.loads(body)["error"], {"code": -32009, "message": "Server busy", "data": {"limit": 1}})
                # As fetch() does it: the answer is read even when the request is sent after it arrived.
                status, _, _ = raw_exchange(address, b"")
                self.assertEqual(status, 503)
            finally:
                holder.close()
            RefusalStatusTest.assert_documented(self, "a connection past `MaxConnectionsPerPeer=`", 503)
            # The peer's connection is free again: a body that stops arriving gets 408 after FrameTimeout=.
            deadline = time.time() + 10
            while True:
                try:
                    status, _, body = raw_exchange(
                        address, f"POST /rpc HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n"
                                 "Content-Length: 100\r\n\r\n{}".encode())
                except AssertionError:
                    status = None
                if status != 503 or time.time() > deadline:
                    break
                time.sleep(0.05)
            self.assertEqual((status, json.loads(body)["error"]["code"]), (408, -32010))
            RefusalStatusTest.assert_documented(self, "a body not complete `FrameTimeout=` after the request head", 408)
        finally:
            daemon.stop()


class ShutdownTest(unittest.TestCase):
    def test_stopping_tells_websockets_the_cut_closes_them_with_1001_and_idle_keep_alive_connections_at_once(self):
        daemon = Daemon(tcp="http://127.0.0.1:0")
        try:
            async def scenario():
                session = requests.Session()
                self.assertEqual(session.post(daemon.tcp_address + "/rpc", json=PING, timeout=20).status_code, 200)
                ws = await websockets.connect(daemon.tcp_address.replace("http://", "ws://") + "/rpc")
                await ws.send(json.dumps(PING))
                await ws.recv()
                started = asyncio.get_running_loop().time()
                daemon.process.terminate()
                # PROTOCOL.md §4 "Shutdown": first which messages were accepted (the one ping), then the close.
                going_away = json.loads(await asyncio.wait_for(ws.recv(), 20))
                self.assertEqual(going_away, {"jsonrpc": "2.0", "method": "rpc.goingAway",
                                              "params": {"lastId": PING["id"], "accepted": 1}})
                with self.assertRaises(websockets.ConnectionClosed) as caught:
                    await asyncio.wait_for(ws.recv(), 20)
                self.assertEqual(caught.exception.rcvd.code, 1001)
                await asyncio.to_thread(daemon.process.wait, 20)
                # Well inside ShutdownGracePeriod= (10 s): nothing was in flight, so nothing was waited for.
                self.assertLess(asyncio.get_running_loop().time() - started, 5)
                session.close()

            asyncio.run(scenario())
        finally:
            daemon.stop()


class HTTPSTest(unittest.TestCase):
    """An https:// listener that requires client certificates: the certificate names the caller for the access
    rules, as on tls:// (make_pki: Allow=client:alice)."""

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon(tcp="https://127.0.0.1:0", prepare=make_pki)
        cls.url = cls.daemon.tcp_address.replace("127.0.0.1", "localhost") + "/rpc"

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def file(self, name):
        return os.path.join(self.daemon.directory, name)

    def test_a_client_certificate_names_the_caller(self):
        # verify= per request: a Session's verify yields to REQUESTS_CA_BUNDLE when the environment sets it.
        tls = {"verify": self.file("ca.pem"), "cert": (self.file("alice.pem"), self.file("alice.key")), "timeout": 20}
        change = {"jsonrpc": "2.0", "method": "rpcd.setLogLevel", "params": ["debug"], "id": 1}  # state-changing
        self.assertIn("result", requests.post(self.url, json=change, **tls).json())
        read = {"jsonrpc": "2.0", "method": "rpcd.logLevel", "id": 2}
        self.assertEqual(requests.post(self.url, json=read, **tls).json()["result"], "debug")

    def test_without_a_client_certificate_nothing_is_served(self):
        with self.assertRaises(requests.exceptions.RequestException):
            requests.post(self.url, json=PING, verify=self.file("ca.pem"), timeout=20)


NODE_SCRIPT = r"""
const url = process.argv[1];
const reply = await (await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"},
  body: JSON.stringify({jsonrpc: "2.0", method: "calc.add", params: [40, 2], id: 1})})).json();
const out = {fetch: reply.result};
if (typeof WebSocket !== "undefined") {
  out.websocket = await new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace("http://", "ws://"));
    ws.onopen = () => ws.send(JSON.stringify({jsonrpc: "2.0", method: "rpcd.ping", id: 2}));
    ws.onmessage = (event) => { resolve(JSON.parse(event.data).result); ws.close(); };
    ws.onerror = reject;
  });
}
console.log(JSON.stringify(out));
"""


@unittest.skipIf(shutil.which("node") is None, "node is not installed")
class NodeTest(HTTPDaemonTest):
    def test_builtin_fetch_and_websocket(self):
        # Node 20 has WebSocket behind --experimental-websocket (from 20.10; by default from 22).
        flags = []
        probe = subprocess.run(["node", "--experimental-websocket", "-e", "0"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            flags = ["--experimental-websocket"]
        result = subprocess.run(["node", *flags, "--input-type=module", "-e", NODE_SCRIPT, self.url],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout)
        self.assertEqual(out["fetch"], 42)
        if flags:
            self.assertEqual(out["websocket"], "pong")


if __name__ == "__main__":
    unittest.main()
