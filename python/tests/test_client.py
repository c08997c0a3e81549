"""rpcd.client without rpcd: the codecs fed bytes one at a time and in batches, and both clients against a
small framed server in a thread (pipelining, failover, reconnect, timeouts and cancellation, events). The
same clients against a real rpcd, over every transport, are examples/python/test_rpcd_client.py."""

import asyncio
import json
import os
import re
import socket
import struct
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import rpcd  # noqa: E402
from rpcd._wire import Address, FramedCodec, HTTPCodec, WebSocketCodec, parse_address  # noqa: E402
from rpcd.client import AsyncClient, Client, Event, Lost, Resubscribed  # noqa: E402
from rpcd.errors import ConnectFailed, ConnectionClosed, ProtocolError, RPCError  # noqa: E402


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


class AddressTests(unittest.TestCase):
    def test_every_form(self):
        self.assertEqual(parse_address("127.0.0.1:7390"), Address("tcp", "127.0.0.1", 7390, text="127.0.0.1:7390"))
        self.assertEqual(parse_address("[::1]:7390").host, "::1")
        self.assertEqual(parse_address("/run/rpcd/rpcd.sock").path, "/run/rpcd/rpcd.sock")
        self.assertEqual(parse_address("unix:/x.sock").scheme, "unix")
        self.assertTrue(parse_address("tls://h:1").is_tls)
        self.assertEqual(parse_address("http://h:80").resource, "/rpc")
        self.assertEqual(parse_address("https://h:443/").resource, "/")
        self.assertEqual(parse_address("http+unix:/run/h.sock").path, "/run/h.sock")
        self.assertEqual(parse_address("ws://h:1/rpc").scheme, "ws")
        for bad in ("h", "ftp://h:1", "h:port"):
            with self.assertRaises(ValueError):
                parse_address(bad)


class CodecTests(unittest.TestCase):
    def feed_bytewise(self, codec, data):
        out = []
        for byte in data:
            out += codec.feed(bytes([byte]))
        return out

    def test_frames_split_and_joined(self):
        data = frame(b'{"a":1}') + frame(b"") + frame(b"[2]")
        self.assertEqual(self.feed_bytewise(FramedCodec(100), data), [b'{"a":1}', b"", b"[2]"])
        self.assertEqual(FramedCodec(100).feed(data), [b'{"a":1}', b"", b"[2]"])
        with self.assertRaises(ProtocolError):
            FramedCodec(10).feed(struct.pack(">I", 11))
        codec = FramedCodec(100)
        codec.feed(frame(b"abc")[:5])
        with self.assertRaises(ConnectionClosed):
            codec.eof()

    def test_http_answers_by_length_chunked_and_204(self):
        codec = HTTPCodec(parse_address("http://127.0.0.1:7380"), 1 << 20)
        self.assertTrue(codec.encode(b"{}").startswith(b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:7380\r\n"))
        data = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
                b"HTTP/1.1 204 No Content\r\n\r\n"
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"b\r\n4\r\n\":2}\r\n0\r\n\r\n"
                b"HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
        self.assertEqual(self.feed_bytewise(codec, data), [b'{"a":1}', b'{"b":2}', b"{}"])
        self.assertEqual(codec.going_away, 4)  # Connection: close is HTTP's rpc.goingAway: 4 answered, no more

    def test_websocket_handshake_frames_fragments_ping_and_close(self):
        import base64
        import hashlib
        codec = WebSocketCodec(parse_address("ws://localhost:7380"), 1 << 20)
        self.assertIn(b"Upgrade: websocket\r\n", codec.handshake)
        accept = base64.b64encode(hashlib.sha1((codec.key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        response = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        big = b"x" * 300
        frames = (bytes([0x81, 3]) + b"one" + bytes([0x01, 2]) + b"tw" + bytes([0x89, 1]) + b"p"
                  + bytes([0x80, 1]) + b"o" + bytes([0x81, 126]) + struct.pack(">H", 300) + big)
        self.assertEqual(self.feed_bytewise(codec, response + frames), [b"one", b"two", big])
        self.assertTrue(codec.ready)
        pong = codec.outgoing
        self.assertEqual(pong[0], 0x8A)
        self.assertEqual(bytes(b ^ pong[2 + i % 4] for i, b in enumerate(pong[6:])), b"p")  # masked "p"
        with self.assertRaises(ConnectionClosed) as closed:
            codec.feed(bytes([0x88, 2]) + struct.pack(">H", 1009))
        self.assertIn("1009", str(closed.exception))

    def test_websocket_client_frames_are_masked(self):
        payload = b'{"jsonrpc":"2.0"}' * 10
        data = WebSocketCodec.frame(0x1, payload)
        self.assertEqual(data[0], 0x81)
        self.assertEqual(data[1], 0x80 | 126)
        mask = data[4:8]
        self.assertEqual(bytes(b ^ mask[i % 4] for i, b in enumerate(data[8:])), payload)

    def test_refused_handshake(self):
        codec = WebSocketCodec(parse_address("ws://h:1"), 1 << 20)
        with self.assertRaises(ProtocolError):
            codec.feed(b"HTTP/1.1 421 Misdirected Request\r\nContent-Length: 0\r\n\r\n")

    def test_version_is_rpcds(self):
        swift = os.path.join(HERE, "..", "..", "Sources", "RPCProtocol", "RPCDaemonVersion.swift")
        if os.path.exists(swift):  # in a checkout; an installed package has no Swift sources beside it
            with open(swift) as file:
                self.assertEqual(re.search(r'static let version = "(.*)"', file.read()).group(1), rpcd.__version__)


class FakeServer:
    """rpcd's framed protocol on a Unix socket, for a few methods: `ping`, `sleep` (answers after
    params[0] seconds, or on rpc.cancel), `rpc.subscribe` (then 3 events and a lost marker),
    `rpc.unsubscribe`, `incr` (counts: a call that changes state; alone or in a batch with `cut`), the
    notification `note` (kept in `notes`),
    and three that end the connection while `self.ends` counts down and answer "ran" after: `cut` (rpcd
    stopping: `rpc.goingAway` accepting the frames before it, answers for the accepted calls, then the close,
    reading no more; so does a `note` whose second param is "cut"), `refuse` (the same, but this call is read
    and answered -32006) and `die` (closed without a word). `kill()` closes every connection."""

    def __init__(self, directory, name="fake.sock"):
        self.path = os.path.join(directory, name)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen()
        self.connections = []
        self.cancelled = []
        self.notes = []
        self.count = 0
        self.ends = 1
        self.stopping = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.stopping:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(connection)
            threading.Thread(target=self.serve, args=(connection,), daemon=True).start()

    def serve(self, connection):
        codec, lock, timers, frames = FramedCodec(1 << 20), threading.Lock(), {}, 0

        def send(message):
            with lock:
                try:
                    connection.sendall(frame(json.dumps(message).encode()))
                except OSError:
                    pass

        def end(accepted, refused_id=None):
            if accepted is not None:
                send({"jsonrpc": "2.0", "method": "rpc.goingAway", "params": {"lastId": None, "accepted": accepted}})
            if refused_id is not None:
                send({"jsonrpc": "2.0", "error": {"code": -32006, "message": "Server shutting down"}, "id": refused_id})
            for timer in list(timers.values()):
                timer.join()
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()

        while True:
            try:
                data = connection.recv(65536)
            except OSError:
                return
            if not data:
                return
            for payload in codec.feed(data):
                frames += 1
                message = json.loads(payload)
                if isinstance(message, list):  # a batch of `incr` and `cut`: the whole frame is cut, or runs
                    if self.ends > 0 and any(entry["method"] == "cut" for entry in message):
                        self.ends -= 1
                        return end(frames - 1)
                    self.count += sum(entry["method"] == "incr" for entry in message)
                    send([{"jsonrpc": "2.0", "result": self.count if entry["method"] == "incr" else "ran",
                           "id": entry["id"]} for entry in message])
                    continue
                method, id = message["method"], message.get("id")
                cuts = method in ("cut", "refuse", "die") or (method == "note" and message["params"][1:] == ["cut"])
                if cuts and self.ends > 0:
                    self.ends -= 1
                    return end(None if method == "die" else frames - 1, id if method == "refuse" else None)
                if method in ("cut", "refuse", "die"):
                    send({"jsonrpc": "2.0", "result": "ran", "id": id})
                elif method == "ping":
                    send({"jsonrpc": "2.0", "result": "pong", "id": id})
                elif method == "incr":
                    self.count += 1
                    send({"jsonrpc": "2.0", "result": self.count, "id": id})
                elif method == "note":
                    self.notes.append(message["params"][0])
                elif method == "sleep":
                    timer = threading.Timer(message["params"][0], send, ({"jsonrpc": "2.0", "result": "slept", "id": id},))
                    timers[id] = timer
                    timer.start()
                elif method == "rpc.cancel":
                    cancelled = message["params"]["id"]
                    self.cancelled.append(cancelled)
                    if cancelled in timers:
                        timers.pop(cancelled).cancel()
                        send({"jsonrpc": "2.0", "error": {"code": -32011, "message": "Call cancelled"}, "id": cancelled})
                elif method == "rpc.subscribe":
                    send({"jsonrpc": "2.0", "result": {"subscription": 7, "event": "x.y"}, "id": id})
                    for seq in (1, 2):
                        send({"jsonrpc": "2.0", "method": "rpc.event",
                              "params": {"subscription": 7, "event": "x.y", "seq": seq, "data": seq}})
                    send({"jsonrpc": "2.0", "method": "rpc.eventsLost", "params": {"subscription": 7, "count": 4}})
                    send({"jsonrpc": "2.0", "method": "rpc.event",
                          "params": {"subscription": 7, "event": "x.y", "seq": 7, "data": 7}})
                elif method == "rpc.unsubscribe":
                    send({"jsonrpc": "2.0", "result": True, "id": id})
                elif id is not None:
                    send({"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found",
                                                      "data": {"method": method}}, "id": id})

    def kill(self):
        for connection in self.connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()
        self.connections.clear()

    def stop(self):
        self.stopping = True
        self.kill()
        self.listener.close()
        os.unlink(self.path)


class ClientTests(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="rpcd-client-")
        self.server = FakeServer(self.directory)
        self.addCleanup(self.server.stop)
        self.missing = os.path.join(self.directory, "missing.sock")

    def test_sync_calls_errors_failover_and_reconnect(self):
        with Client([self.missing, self.server.path], timeout=5) as client:
            self.assertEqual(client.address.path, self.server.path)  # failed over
            self.assertEqual(client.call("ping"), "pong")
            with self.assertRaises(RPCError) as caught:
                client.call("nope", [1])
            self.assertEqual((caught.exception.code, caught.exception.data), (-32601, {"method": "nope"}))
            self.server.kill()
            self.assertEqual(client.call("ping"), "pong")  # the close was seen before sending: reconnected
            with self.assertRaises(ConnectionClosed):
                client.call("die")  # no rpc.goingAway: it may have run
            self.assertEqual(client.call("die"), "ran")  # reconnected

    def test_sync_restart_resends_what_did_not_run(self):
        with Client(self.server.path, timeout=5) as client:
            self.assertEqual(client.call("incr"), 1)
            client.notify("note", ["a", "cut"])  # after the cut
            self.assertEqual(client.call("incr"), 2)  # on a new connection, after the note sent again
            self.assertEqual(self.server.notes, ["a"])
            self.server.ends = 1
            self.assertEqual(client.call("cut"), "ran")
            self.server.ends = 1
            self.assertEqual(client.call("refuse"), "ran")  # -32006: sent again
            self.server.ends = 1
            self.assertEqual(client.call("die", idempotent=True), "ran")  # fate unknown, but safe to repeat
            self.assertEqual(client.call("incr"), 3)
            self.assertEqual(len(self.server.connections), 5)

    def test_sync_timeout_cancels_on_the_server(self):
        with Client(self.server.path, timeout=0.2) as client:
            with self.assertRaises(TimeoutError):
                client.call("sleep", [30])
            client.timeout = 5
            client._sock.settimeout(5)
            self.assertEqual(client.call("ping"), "pong")
            self.assertEqual(self.server.cancelled, [1])

    def test_sync_no_address_answers(self):
        with self.assertRaises(ConnectFailed) as caught:
            Client([self.missing, self.missing + "2"])
        self.assertEqual(len(caught.exception.errors), 2)
        with self.assertRaises(FileNotFoundError):
            Client(self.missing)

    def test_sync_events(self):
        with Client(self.server.path, timeout=5) as client:
            events = client.events("x.y")
            self.assertEqual([next(events) for _ in range(4)],
                             [Event("x.y", 1, 1), Event("x.y", 2, 2), Lost(4), Event("x.y", 7, 7)])
            self.assertEqual(client.call("cut"), "ran")  # a restart: the next item says so
            self.assertEqual([next(events) for _ in range(2)], [Resubscribed(), Event("x.y", 1, 1)])

    def test_async_pipelining_timeout_cancel_and_reconnect(self):
        async def main():
            async with AsyncClient([self.missing, self.server.path]) as client:
                results = await asyncio.gather(*(client.call("ping") for _ in range(500)))
                self.assertEqual(results, ["pong"] * 500)
                slow = asyncio.ensure_future(client.call("sleep", [0.3]))
                self.assertEqual(await client.call("ping"), "pong")  # overtakes
                self.assertEqual(await slow, "slept")
                with self.assertRaises(TimeoutError):
                    await client.call("sleep", [30], timeout=0.1)
                task = asyncio.ensure_future(client.call("sleep", [30]))
                await asyncio.sleep(0.05)
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                self.assertEqual(await client.call("ping"), "pong")
                self.assertEqual(len(self.server.cancelled), 2)
                in_flight = asyncio.ensure_future(client.call("sleep", [30]))
                await asyncio.sleep(0.05)
                self.server.kill()
                with self.assertRaises(ConnectionClosed):
                    await in_flight
                self.assertEqual(await client.call("ping"), "pong")
        asyncio.run(main())

    def test_async_restart_resends_what_did_not_run(self):
        async def main():
            async with AsyncClient(self.server.path) as client:
                # Pipelined: the calls before the cut are answered on the old connection, those after it run
                # once on the new one; every one succeeds and the counter counts each once.
                slow = asyncio.ensure_future(client.call("sleep", [0.2]))
                await client.notify("note", ["a"])
                calls = [client.call("incr") for _ in range(50)] + [client.call("cut")] + \
                        [client.call("incr") for _ in range(50)]
                results = await asyncio.gather(*calls)
                self.assertEqual(sorted(results[:50] + results[51:]), list(range(1, 101)))
                self.assertEqual((results[50], self.server.count, self.server.notes), ("ran", 100, ["a"]))
                self.assertEqual(await slow, "slept")  # accepted: answered before the close
                self.server.ends = 1
                self.assertEqual(await client.call("refuse"), "ran")
                self.server.ends = 1
                with self.assertRaises(ConnectionClosed):
                    await client.call("die")
                self.server.ends = 1
                self.assertEqual(await client.call("die", idempotent=True), "ran")
                self.server.ends = 1
                self.assertEqual(await client.batch([("incr", None), ("cut", None)]), [101, "ran"])
                self.assertEqual(self.server.count, 101)
        asyncio.run(main())

    def test_async_subscription_markers_and_resubscribe(self):
        async def main():
            async with AsyncClient(self.server.path) as client:
                events = await client.subscribe("x.y")
                items = [await events.__anext__() for _ in range(4)]
                self.assertEqual(items, [Event("x.y", 1, 1), Event("x.y", 2, 2), Lost(4), Event("x.y", 7, 7)])
                self.server.kill()
                self.assertEqual(await events.__anext__(), Resubscribed())
                self.assertEqual(await events.__anext__(), Event("x.y", 1, 1))
                for _ in range(3):
                    await events.__anext__()
                self.assertEqual(await client.call("cut"), "ran")  # a restart: subscribed again on the new one
                self.assertEqual(await events.__anext__(), Resubscribed())
                self.assertEqual(await events.__anext__(), Event("x.y", 1, 1))
                await events.aclose()
                with self.assertRaises(StopAsyncIteration):
                    await events.__anext__()
        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()
