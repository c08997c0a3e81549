"""Clients for rpcd (docs/PROTOCOL.md), standard library only: `Client` (synchronous, one thread) and
`AsyncClient` (asyncio, calls pipelined on one connection).

Both speak every transport rpcd serves, chosen by the address: `HOST:PORT` and `/path/to/socket` (framed),
`tls://HOST:PORT` (framed over TLS), `http://`, `https://`, `http+unix:/path` (one POST per message),
`ws://`, `wss://`, `ws+unix:/path` (WebSocket). Give several addresses to fail over: a client connects to
the first that answers, and after its connection breaks reconnects first to the one it had, then to each
other in order (the Swift client's policy, docs/CLIENT.md).

Restarts (docs/PROTOCOL.md §4 "Shutdown"): when rpcd stops it says which calls it accepted (`rpc.goingAway`;
over HTTP, `Connection: close`). Those are answered as usual; every call and notification sent after them
did not run, and the client sends it again on a new connection (the same address, then the others), trying
for up to `reconnect_for` seconds (30 by default; 50 ms doubling to 1 s between tries), within the call's
timeout; so does a call answered -32006. A call whose fate is unknown (the connection ended without saying,
or before its reply) fails with ConnectionClosed: it may have run. Mark a call that is safe to run twice
(read-only, or idempotent like `kv.set` of a fixed value) with `idempotent=True` and it is sent again in
that case too. Subscriptions are made again on the new connection, with a Resubscribed marker.

    from rpcd.client import Client
    with Client("127.0.0.1:7390") as rpcd:
        rpcd.call("calc.add", [1, 2])                       # 3
        rpcd.call("kv.get", ["k"], idempotent=True)          # sent again even when its fate is unknown

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
import ssl
import time

from ._async import AsyncClient, Subscription
from ._messages import (RECONNECT_FOR, Event, Lost, Resubscribed, _addresses, _batch_results, _dumps, _event_item,
                        _is_going_away, _is_notification, _not_run, _request, _result, tls_context)
from ._wire import DEFAULT_MAX_MESSAGE, codec_for
from .errors import ConnectFailed, ConnectionClosed, ProtocolError, RPCError, SubscriptionEnded, _NotRun

__all__ = ["Client", "AsyncClient", "Subscription", "Event", "Lost", "Resubscribed", "tls_context",
           "RPCError", "ProtocolError", "ConnectionClosed", "ConnectFailed", "SubscriptionEnded"]


class Client:
    """A synchronous client: one connection at a time, to the first of ADDRESSES that answers. Not
    thread-safe: use one Client per thread. TIMEOUT (seconds, None: none) bounds connecting and each wait for
    a reply; a call that times out is cancelled on the server (`rpc.cancel`) and raises TimeoutError.
    TLS is an ssl.SSLContext (tls_context()) for tls://, https:// and wss:// addresses; SERVER_NAME the name
    their certificate must carry (default: the host). RECONNECT_FOR (seconds) bounds how long a call that
    must be sent again (the module's docstring) waits for a new connection. The connection is made here;
    errors of the only address are raised as they are (ssl.SSLCertVerificationError,
    ConnectionRefusedError), of several as ConnectFailed."""

    def __init__(self, addresses, timeout=10.0, tls=None, server_name=None, max_message=DEFAULT_MAX_MESSAGE,
                 reconnect_for=RECONNECT_FOR):
        self.addresses = _addresses(addresses)
        self.timeout = timeout
        self.reconnect_for = reconnect_for
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
        self._generation = 0  # connections made: a subscription belongs to one
        self._resend = []  # notifications to send again on the next connection (they did not run)
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
        # What the server says about this connection: frames sent on it, how many of them it accepted when it
        # went away (None until it does), notifications not yet known to have been read (ordinal, payload).
        self._sent, self._going_away, self._unsure = 0, None, []
        self._generation += 1
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
            resend, self._resend = self._resend, []
            for payload in resend:
                self._sent += 1
                self._unsure.append((self._sent, payload))
                self._sock.sendall(self._codec.encode(payload))
        return self._sock

    def _reconnect(self, until):
        """Connects again, trying (50 ms doubling to 1 s apart) until the monotonic time UNTIL."""
        pause = 0.05
        while True:
            try:
                return self._connection()
            except (OSError, ProtocolError):
                if time.monotonic() + pause >= until:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 1.0)

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
            self._sent += 1
        except (BrokenPipeError, ConnectionResetError) as error:
            raise self._broken(f"connection closed while sending: {error}") from None

    def _fed(self, data):
        self._ready.extend(self._codec.feed(data))
        if self._codec.outgoing:
            self._sock.sendall(self._codec.outgoing)
            self._codec.outgoing = b""
        accepted = getattr(self._codec, "going_away", None)
        if accepted is not None and self._going_away is None:
            self._gone_away(accepted)

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
            self._fed(data)
        return self._ready.pop(0)

    def send(self, message):
        """Sends a message (a dict, or a list for a batch) without waiting for anything."""
        self.send_payload(_dumps(message).encode("utf-8"))

    def receive(self):
        """The next message the server sent: a reply, a batch's replies or a notification. `rpc.goingAway` is
        the client's: it is taken in and not returned."""
        while True:
            payload = self.receive_payload()
            if payload is None:
                raise ConnectionClosed("connection closed before the reply arrived")
            try:
                message = json.loads(payload)
            except ValueError as error:
                raise ProtocolError(f"reply is not JSON: {error}") from None
            accepted = _is_going_away(message)
            if accepted is None:
                return message
            self._gone_away(accepted)

    # Restarts (docs/PROTOCOL.md §4 "Shutdown") -----------------------------------------------------------

    def _gone_away(self, accepted):
        """The server accepted the first ACCEPTED frames of this connection and will read no more: the
        notifications after them are sent again on the next connection."""
        self._going_away = accepted
        self._resend.extend(payload for ordinal, payload in self._unsure if ordinal > accepted)
        self._unsure = []

    def _answered(self, ordinal):
        """The frame ORDINAL was answered, so every frame before it was read."""
        if self._unsure:
            self._unsure = [entry for entry in self._unsure if entry[0] > ordinal]

    def _poll(self):
        """Takes in, without waiting, what the server sent while nobody read (an `rpc.goingAway`, the end of
        the stream, events), and leaves a connection the server has left; True when it left one for that."""
        sock, ended = self._sock, False
        sock.setblocking(False)
        try:
            while True:
                try:
                    data = sock.recv(1 << 20)
                except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
                    break
                except ConnectionResetError:
                    data = b""
                if not data:
                    ended = True
                    break
                try:
                    self._fed(data)
                except ConnectionClosed:  # a WebSocket close
                    ended = True
                    break
        finally:
            sock.settimeout(self.timeout)
        while self._ready:
            try:
                message = json.loads(self._ready.pop(0))
            except ValueError:
                ended = True
                break
            accepted = _is_going_away(message)
            if accepted is not None:
                self._gone_away(accepted)
            elif _is_notification(message) or isinstance(message, dict):
                self._keep(message)
        if ended or self._going_away is not None:
            self._broken("the server left the connection")
            return True
        return False

    def _send_call(self, payload, until=None):
        """Sends PAYLOAD as the next frame of a connection the server has not left (connecting until UNTIL, or
        once); returns its ordinal on the connection."""
        if self._sock is not None and self._poll() and until is None:
            until = time.monotonic() + self.reconnect_for  # the server is restarting: wait for the new one
        sock = self._connection() if until is None else self._reconnect(until)
        self._sent += 1
        try:
            sock.sendall(self._codec.encode(payload))
        except (BrokenPipeError, ConnectionResetError):
            pass  # what the server sent before it closed says whether it ran: the wait for the reply reads it
        return self._sent

    def _exchange(self, payload, wait, idempotent):
        """Sends PAYLOAD and returns WAIT(ordinal), its reply; sends it again on a new connection while the server
        says it did not run, or when IDEMPOTENT and its fate is unknown, for up to reconnect_for seconds."""
        until = None
        while True:
            try:
                reply = wait(self._send_call(payload, until))
                if not _not_run(reply) or (until is not None and time.monotonic() >= until):
                    return reply
                self._broken("the server is stopping")  # -32006: the next try goes to a new connection
            except _NotRun:
                if until is not None and time.monotonic() >= until:
                    raise
            except ConnectionClosed:
                if not idempotent or (until is not None and time.monotonic() >= until):
                    raise
            if until is None:
                until = time.monotonic() + self.reconnect_for

    def _unless_cut(self, ordinal, receive):
        """RECEIVE(), the next message, or _NotRun once the server has said frame ORDINAL did not run."""
        if self._going_away is not None and ordinal > self._going_away:
            raise _NotRun(f"the server stopped before reading this call (accepted {self._going_away})")
        try:
            return receive()
        except ConnectionClosed:
            if self._going_away is not None and ordinal > self._going_away:
                raise _NotRun(f"the server stopped before reading this call (accepted {self._going_away})") from None
            raise

    # Calls ------------------------------------------------------------------------------------------

    def call(self, method, params=None, *, idempotent=False):
        """Calls METHOD with PARAMS (a list, a dict or None); returns the result or raises RPCError. IDEMPOTENT:
        safe to run twice, so sent again when the connection ends before its reply (the module's docstring)."""
        id = next(self._ids)
        payload = _dumps(_request(method, params, id)).encode("utf-8")
        return _result(self._exchange(payload, lambda ordinal: self._wait_for(id, ordinal), idempotent))

    def notify(self, method, params=None):
        """Sends METHOD as a notification: run by the server, never answered. One sent after the cut of an
        `rpc.goingAway` is sent again on the next connection."""
        payload = _dumps(_request(method, params)).encode("utf-8")
        ordinal = self._send_call(payload)
        if method != "rpc.cancel":  # a cancel names a call of this connection: meaningless on another
            # Kept until a later frame is answered; a client that only notifies never learns, so only the last
            # are kept (rpcd reads frames as they come: older ones were read).
            self._unsure = self._unsure[-1023:] + [(ordinal, payload)]

    def batch(self, calls, *, idempotent=False):
        """Sends [(method, params), ...] as one batch; returns results (or RPCError objects) in call order."""
        ids = [next(self._ids) for _ in calls]
        payload = _dumps([_request(method, params, id) for (method, params), id in zip(calls, ids)]).encode("utf-8")

        def wait(ordinal):
            while True:
                replies = self._unless_cut(ordinal, lambda: self._receive_timed(ids[0]))
                if isinstance(replies, list) or (isinstance(replies, dict) and replies.get("id") is None
                                                 and "error" in replies):
                    self._answered(ordinal)
                    return replies
                self._keep(replies)
        return _batch_results(ids, self._exchange(payload, wait, idempotent))

    def _receive_timed(self, id):
        try:
            return self.receive()
        except (socket.timeout, TimeoutError):
            try:
                if self._sock is not None:
                    self._sock.sendall(self._codec.encode(_dumps(_request("rpc.cancel", {"id": id})).encode()))
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

    def _wait_for(self, id, ordinal):
        if id in self._early:
            self._answered(ordinal)
            return self._early.pop(id)
        while True:
            reply = self._unless_cut(ordinal, lambda: self._receive_timed(id))
            if isinstance(reply, dict) and reply.get("id") == id:
                self._answered(ordinal)
                return reply
            if isinstance(reply, dict) and reply.get("id") is None and "error" in reply:
                raise RPCError.from_json(reply["error"])  # the server could not read our request
            self._keep(reply)

    # Events ----------------------------------------------------------------------------------------

    def subscribe(self, event):
        """Subscribes this connection to EVENT ('kv.changed'); returns the subscription id. The events then
        arrive as notifications (next_notification())."""
        return self.call("rpc.subscribe", {"event": event}, idempotent=True)["subscription"]

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
        breaks or the server restarts, it connects again (the same address, then the others; 50 ms doubling to
        2 s between tries) and subscribes again, yielding Resubscribed (so it does when a call made between two
        items moved the client to a new connection). Raises SubscriptionEnded when the server ends it,
        RPCError when subscribing is refused. Make the client with timeout=None: events may be minutes apart."""
        subscription = self.subscribe(event)
        generation = self._generation
        while True:
            if generation == self._generation and self._sock is not None:
                try:
                    method, params = self.next_notification()
                except ConnectionClosed:
                    method = None
            else:
                method = None
            if method is None:
                subscription = self._resubscribe(event)
                generation = self._generation
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
