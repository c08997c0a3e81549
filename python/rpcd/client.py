"""Clients for rpcd (docs/PROTOCOL.md), standard library only: `Client` (synchronous, one thread) and
`AsyncClient` (asyncio, calls pipelined on one connection).

Both speak every transport rpcd serves, chosen by the address: `HOST:PORT` and `/path/to/socket` (framed),
`tls://HOST:PORT` (framed over TLS), `http://`, `https://`, `http+unix:/path` (one POST per message),
`ws://`, `wss://`, `ws+unix:/path` (WebSocket). Give several addresses to fail over: a client connects to
the first that answers, and after its connection breaks reconnects first to the one it had, then to each
other in order (the Swift client's policy, docs/CLIENT.md). Calls in flight when a connection breaks fail
with ConnectionClosed (they may have run); the next call reconnects.

    from rpcd.client import Client
    with Client("127.0.0.1:7390") as rpcd:
        rpcd.call("calc.add", [1, 2])                       # 3

    from rpcd.client import AsyncClient
    async with AsyncClient(["/run/rpcd/rpcd.sock", "127.0.0.1:7390"]) as rpcd:
        results = await asyncio.gather(*(rpcd.call("rpcd.ping") for _ in range(1000)))
        async for item in await rpcd.subscribe("kv.changed"):   # Event, Lost or Resubscribed
            print(item)

Errors the server answers are RPCError (code, message, data); failures of the connection are
ConnectionClosed, ConnectFailed (no address answered), ProtocolError, ssl.SSLError and TimeoutError.
"""
import itertools
import json
import socket
import time

from ._async import AsyncClient, Subscription
from ._messages import (Event, Lost, Resubscribed, _addresses, _batch_results, _dumps, _event_item, _is_notification,
                        _request, _result, tls_context)
from ._wire import DEFAULT_MAX_MESSAGE, codec_for
from .errors import ConnectFailed, ConnectionClosed, ProtocolError, RPCError, SubscriptionEnded

__all__ = ["Client", "AsyncClient", "Subscription", "Event", "Lost", "Resubscribed", "tls_context",
           "RPCError", "ProtocolError", "ConnectionClosed", "ConnectFailed", "SubscriptionEnded"]


class Client:
    """A synchronous client: one connection at a time, to the first of ADDRESSES that answers. Not
    thread-safe: use one Client per thread. TIMEOUT (seconds, None: none) bounds connecting and each wait for
    a reply; a call that times out is cancelled on the server (`rpc.cancel`) and raises TimeoutError.
    TLS is an ssl.SSLContext (tls_context()) for tls://, https:// and wss:// addresses; SERVER_NAME the name
    their certificate must carry (default: the host). The connection is made here; errors of the only
    address are raised as they are (ssl.SSLCertVerificationError, ConnectionRefusedError), of several as
    ConnectFailed."""

    def __init__(self, addresses, timeout=10.0, tls=None, server_name=None, max_message=DEFAULT_MAX_MESSAGE):
        self.addresses = _addresses(addresses)
        self.timeout = timeout
        self._tls = tls
        self._server_name = server_name
        self._max_message = max_message
        self._current = 0
        self._sock = None
        self._codec = None
        self._ids = itertools.count(1)
        self._early = {}  # replies that arrived while waiting for another id
        self._notifications = []  # notifications that arrived while waiting for a reply
        self._ready = []  # payloads decoded but not yet taken
        self._connect()

    @property
    def address(self):
        """The address connected to now (or last)."""
        return self.addresses[self._current]

    def close(self):
        if self._sock is not None:
            try:
                if getattr(self._codec, "close_frame", None) and self._codec.ready:
                    self._sock.sendall(self._codec.close_frame())
            except OSError:
                pass
            self._sock.close()
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # Connecting ----------------------------------------------------------------------------------

    def _open(self, address):
        if address.is_unix:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect(address.path)
            except BaseException:
                sock.close()
                raise
        else:
            sock = socket.create_connection((address.host, address.port), timeout=self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if address.is_tls:
                try:
                    sock = (self._tls or tls_context()).wrap_socket(
                        sock, server_hostname=self._server_name or address.host)
                except BaseException:
                    sock.close()
                    raise
        codec = codec_for(address, self._max_message)
        try:
            if codec.handshake:
                sock.sendall(codec.handshake)
                while not codec.ready:
                    data = sock.recv(65536)
                    if not data:
                        raise ConnectionClosed("connection closed during the WebSocket handshake")
                    self._ready.extend(codec.feed(data))
        except BaseException:
            sock.close()
            raise
        return sock, codec

    def _connect(self):
        """Connects to the current address, then to each other in order (failover)."""
        errors = {}
        count = len(self.addresses)
        for step in range(count):
            index = (self._current + step) % count
            try:
                self._sock, self._codec = self._open(self.addresses[index])
                self._current = index
                return
            except (OSError, ProtocolError) as error:
                if count == 1:
                    raise
                errors[str(self.addresses[index])] = f"{type(error).__name__}: {error}"
        raise ConnectFailed(errors)

    def _connection(self):
        if self._sock is None:
            self._early.clear()
            self._ready.clear()
            self._connect()
        return self._sock

    def _broken(self, reason):
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        return ConnectionClosed(reason)

    # Messages -------------------------------------------------------------------------------------

    def send_payload(self, payload: bytes):
        """Sends one JSON-RPC payload (bytes of JSON) as the transport wants it."""
        sock = self._connection()
        try:
            sock.sendall(self._codec.encode(payload))
        except (BrokenPipeError, ConnectionResetError) as error:
            raise self._broken(f"connection closed while sending: {error}") from None

    def receive_payload(self):
        """The next payload the server sent (bytes of JSON), or None when it closed the connection."""
        while not self._ready:
            if self._sock is None:
                return None
            try:
                data = self._sock.recv(1 << 20)
            except ConnectionResetError:
                data = b""
            if not data:
                try:
                    self._codec.eof()
                finally:
                    self._broken("connection closed")
                return None
            self._ready.extend(self._codec.feed(data))
            if self._codec.outgoing:
                self._sock.sendall(self._codec.outgoing)
                self._codec.outgoing = b""
        return self._ready.pop(0)

    def send(self, message):
        """Sends a message (a dict, or a list for a batch) without waiting for anything."""
        self.send_payload(_dumps(message).encode("utf-8"))

    def receive(self):
        """The next message the server sent: a reply, a batch's replies or a notification."""
        payload = self.receive_payload()
        if payload is None:
            raise ConnectionClosed("connection closed before the reply arrived")
        try:
            return json.loads(payload)
        except ValueError as error:
            raise ProtocolError(f"reply is not JSON: {error}") from None

    # Calls ------------------------------------------------------------------------------------------

    def call(self, method, params=None):
        """Calls METHOD with PARAMS (a list, a dict or None); returns the result or raises RPCError."""
        id = next(self._ids)
        self.send(_request(method, params, id))
        return _result(self._wait_for(id))

    def notify(self, method, params=None):
        """Sends METHOD as a notification: run by the server, never answered."""
        self.send(_request(method, params))

    def batch(self, calls):
        """Sends [(method, params), ...] as one batch; returns results (or RPCError objects) in call order."""
        ids = [next(self._ids) for _ in calls]
        self.send([_request(method, params, id) for (method, params), id in zip(calls, ids)])
        while True:
            replies = self._receive_timed(ids[0])
            if isinstance(replies, list) or (isinstance(replies, dict) and replies.get("id") is None
                                             and "error" in replies):
                return _batch_results(ids, replies)
            self._keep(replies)

    def _receive_timed(self, id):
        try:
            return self.receive()
        except (socket.timeout, TimeoutError):
            try:
                self.notify("rpc.cancel", {"id": id})
            except OSError:
                pass
            raise TimeoutError(f"no reply to call {id} within {self.timeout} s (cancelled)") from None

    def _keep(self, message):
        if _is_notification(message):
            self._notifications.append((message["method"], message.get("params")))
        elif isinstance(message, dict):
            self._early[message.get("id")] = message
        else:
            raise ProtocolError(f"unexpected message {message!r}")

    def _wait_for(self, id):
        if id in self._early:
            return self._early.pop(id)
        while True:
            reply = self._receive_timed(id)
            if isinstance(reply, dict) and reply.get("id") == id:
                return reply
            if isinstance(reply, dict) and reply.get("id") is None and "error" in reply:
                raise RPCError.from_json(reply["error"])  # the server could not read our request
            self._keep(reply)

    # Events ----------------------------------------------------------------------------------------

    def subscribe(self, event):
        """Subscribes this connection to EVENT ('kv.changed'); returns the subscription id. The events then
        arrive as notifications (next_notification())."""
        return self.call("rpc.subscribe", {"event": event})["subscription"]

    def unsubscribe(self, subscription):
        """Ends a subscription; True when there was one. Events already sent may still be read afterwards."""
        return self.call("rpc.unsubscribe", {"subscription": subscription})

    def next_notification(self):
        """The next notification the server sent: (method, params), e.g. ('rpc.event', {'subscription': 1,
        'event': 'kv.changed', 'seq': 1, 'data': ...}), ('rpc.eventsLost', {'subscription': 1, 'count': 3}) or
        ('rpc.subscriptionEnded', {'subscription': 1, 'reason': ...}). Blocks up to the timeout."""
        if self._notifications:
            return self._notifications.pop(0)
        while True:
            message = self.receive()
            if _is_notification(message):
                return message["method"], message.get("params")
            self._keep(message)

    def notifications(self):
        """Every notification as it arrives, until the connection closes or times out."""
        while True:
            yield self.next_notification()

    def events(self, event):
        """Subscribes to EVENT and yields Event, Lost and Resubscribed items, forever: when the connection
        breaks it connects again (the same address, then the others; 50 ms doubling to 2 s between tries) and
        subscribes again, yielding Resubscribed. Raises SubscriptionEnded when the server ends it, RPCError
        when subscribing is refused. Make the client with timeout=None: events may be minutes apart."""
        subscription = self.subscribe(event)
        while True:
            try:
                method, params = self.next_notification()
            except ConnectionClosed:
                subscription = self._resubscribe(event)
                yield Resubscribed()
                continue
            if not isinstance(params, dict) or params.get("subscription") != subscription:
                continue
            if method == "rpc.event":
                yield _event_item(params)
            elif method == "rpc.eventsLost":
                yield Lost(params.get("count", 0))
            elif method == "rpc.subscriptionEnded":
                raise SubscriptionEnded(event, params.get("reason"))

    def _resubscribe(self, event):
        pause = 0.05
        while True:
            try:
                return self.subscribe(event)
            except (OSError, ProtocolError):
                self._broken("reconnecting")
                time.sleep(pause)
                pause = min(pause * 2, 2.0)
