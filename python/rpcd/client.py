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

import asyncio
import itertools
import json
import socket
import ssl
import time
from dataclasses import dataclass

from ._wire import DEFAULT_MAX_MESSAGE, codec_for, parse_address
from .errors import ConnectFailed, ConnectionClosed, ProtocolError, RPCError, SubscriptionEnded

__all__ = ["Client", "AsyncClient", "Subscription", "Event", "Lost", "Resubscribed", "tls_context",
           "RPCError", "ProtocolError", "ConnectionClosed", "ConnectFailed", "SubscriptionEnded"]

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def tls_context(ca_file=None, cert_file=None, key_file=None):
    """A client context for rpcd's tls://, https:// and wss:// listeners: TLS 1.2 or later, the server's
    certificate checked against CA_FILE (default: the system's CAs) and its host name; CERT_FILE and KEY_FILE
    are this client's certificate, for servers that ask for one (`client:` access rules)."""
    context = ssl.create_default_context(cafile=ca_file)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


@dataclass(frozen=True)
class Event:
    """One event of a subscription: its full name, `seq` (from 1; a gap means events were lost) and payload."""
    event: str
    seq: int
    data: object


@dataclass(frozen=True)
class Lost:
    """`count` events were lost just before the next Event (the server dropped them for a slow subscriber,
    or this client's buffer was full)."""
    count: int


@dataclass(frozen=True)
class Resubscribed:
    """The connection broke and the client subscribed again: events in between are unknown, `seq` restarts."""


def _request(method, params, id=None):
    message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    return message


def _result(reply):
    if "error" in reply:
        raise RPCError.from_json(reply["error"])
    if "result" not in reply:
        raise ProtocolError(f"reply has neither result nor error: {reply!r}")
    return reply["result"]


def _batch_results(ids, replies):
    if not isinstance(replies, list):
        raise RPCError.from_json(replies.get("error"))  # the whole batch was refused
    by_id = {reply.get("id"): reply for reply in replies if isinstance(reply, dict)}
    results = []
    for id in ids:
        try:
            results.append(_result(by_id[id]))
        except RPCError as error:
            results.append(error)
        except KeyError:
            results.append(ProtocolError(f"no reply for id {id}"))
    return results


def _is_notification(message):
    return isinstance(message, dict) and "method" in message and "id" not in message


def _event_item(params):
    return Event(params.get("event"), params.get("seq"), params.get("data"))


def _addresses(addresses):
    if isinstance(addresses, (str, bytes)) or not hasattr(addresses, "__iter__"):
        addresses = [addresses]
    parsed = [parse_address(address) for address in addresses]
    if not parsed:
        raise ValueError("no address given")
    return parsed


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


class _Connection(asyncio.Protocol):
    """One connection of an AsyncClient: writes are gathered and written once per turn of the event loop;
    replies are matched to their calls' futures by id; notifications go to the client."""

    def __init__(self, client, address, codec):
        self.client = client
        self.address = address
        self.codec = codec
        self.loop = asyncio.get_running_loop()
        self.transport = None
        self.pending = {}        # id -> future of the reply
        self.batches = {}        # id of a batch entry -> future of the batch's replies
        self.subscriptions = {}  # server's subscription id -> Subscription
        self.orphans = []        # notifications for a subscription whose rpc.subscribe reply is being read
        self.out = []
        self.flush_scheduled = False
        self.closed = False
        self.error = None
        self.handshake = self.loop.create_future()
        self.paused = None

    # asyncio.Protocol
    def connection_made(self, transport):
        self.transport = transport
        if self.codec.handshake:
            transport.write(self.codec.handshake)
        else:
            self.handshake.set_result(None)

    def data_received(self, data):
        try:
            payloads = self.codec.feed(data)
        except (ProtocolError, ValueError) as error:
            self.fail(error if isinstance(error, ProtocolError) else ProtocolError(str(error)))
            self.transport.close()
            return
        if self.codec.outgoing:
            self.transport.write(self.codec.outgoing)
            self.codec.outgoing = b""
        if not self.handshake.done() and self.codec.ready:
            self.handshake.set_result(None)
        pending = self.pending
        for payload in payloads:
            try:
                message = json.loads(payload)
            except ValueError:
                self.fail(ProtocolError(f"reply is not JSON: {payload[:200]!r}"))
                self.transport.close()
                return
            if type(message) is dict:
                id = message.get("id")
                future = pending.pop(id, None) if id is not None else None
                if future is not None:
                    if not future.done():
                        future.set_result(message)
                elif "method" in message and "id" not in message:
                    self.client._notification(self, message["method"], message.get("params"))
                elif id is None and "error" in message:
                    self._fail_oldest(RPCError.from_json(message["error"]))
            elif type(message) is list:
                for entry in message:
                    future = self.batches.get(entry.get("id")) if type(entry) is dict else None
                    if future is not None:
                        for key in [key for key, value in self.batches.items() if value is future]:
                            del self.batches[key]
                        if not future.done():
                            future.set_result(message)
                        break

    def _fail_oldest(self, error):
        """A reply with id null answers a message the server could not take apart: the oldest batch's."""
        table = self.batches or self.pending
        for key, future in list(table.items()):
            for other in [k for k, v in table.items() if v is future]:
                del table[other]
            if not future.done():
                future.set_exception(error)
            return

    def connection_lost(self, exc):
        if not self.closed:
            try:
                self.codec.eof()
                reason = ConnectionClosed(f"connection to {self.address} closed" + (f": {exc}" if exc else ""))
            except ConnectionClosed as error:
                reason = error
            self.fail(self.error or reason)
        if not self.handshake.done():
            self.handshake.set_exception(self.error)
        if self.paused and not self.paused.done():
            self.paused.set_result(None)

    def pause_writing(self):
        self.paused = self.loop.create_future()

    def resume_writing(self):
        if self.paused and not self.paused.done():
            self.paused.set_result(None)
        self.paused = None

    def fail(self, error):
        if self.closed:
            return
        self.closed = True
        self.error = error
        for future in itertools.chain(self.pending.values(), self.batches.values()):
            if not future.done():
                future.set_exception(error)
        self.pending.clear()
        self.batches.clear()
        self.client._lost(self)

    # Writing
    def write(self, payload):
        if self.closed:
            raise self.error
        self.out.append(self.codec.encode(payload))
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self):
        self.flush_scheduled = False
        if self.out and not self.closed:
            data = b"".join(self.out)
            self.out.clear()
            self.transport.write(data)


class Subscription:
    """The events of one subscription, as an async iterator of Event, Lost and Resubscribed. When the
    connection breaks, the client subscribes again as soon as it can connect (50 ms doubling to 2 s between
    tries) and yields Resubscribed. It ends by raising SubscriptionEnded (the server ended it), RPCError
    (subscribing again was refused) or ConnectionClosed (the client was closed). `aclose()` (or leaving
    `async with`) unsubscribes. At most `buffer` items wait for a slow consumer; past it the newest are
    dropped and counted as a Lost marker."""

    def __init__(self, client, event, id, buffer):
        self.client = client
        self.event = event
        self.id = id  # the server's id on the current connection
        self.connection = None
        self._queue = asyncio.Queue()
        self._buffer = buffer
        self._dropped = 0
        self._ended = False

    def _put(self, item):
        if self._ended:
            return
        if isinstance(item, BaseException):
            self._ended = True
            self._queue.put_nowait(item)
            return
        if self._queue.qsize() >= self._buffer:
            self._dropped += 1 if isinstance(item, Event) else getattr(item, "count", 0)
            return
        if self._dropped:
            self._queue.put_nowait(Lost(self._dropped))
            self._dropped = 0
        self._queue.put_nowait(item)

    def __aiter__(self):
        return self

    async def __anext__(self):
        item = await self._queue.get()
        if isinstance(item, StopAsyncIteration):
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            raise item
        return item

    async def aclose(self):
        """Unsubscribes (when the connection is up) and ends the iteration."""
        if self._ended:
            return
        self._ended = True
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(StopAsyncIteration())
        connection = self.connection
        self.client._subscriptions.discard(self)
        if connection is not None and not connection.closed:
            connection.subscriptions.pop(self.id, None)
            try:
                await self.client._call_on(connection, "rpc.unsubscribe", {"subscription": self.id}, None)
            except (RPCError, ProtocolError, OSError):
                pass

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()


class AsyncClient:
    """An asyncio client: calls from any number of tasks are pipelined on one connection and matched by id
    (rpcd answers them as they complete). Connects on first use (or `await connect()`, `async with`) to
    the first of ADDRESSES that answers; after the connection breaks, the next call reconnects (the address
    it had, then each other in order). When none answers, a call with a TIMEOUT retries (50 ms doubling to
    1 s) until it passes; one without fails at once with ConnectFailed. A call's TIMEOUT (seconds; the
    client's `timeout` by default, None: none) and its task's cancellation cancel it on the server too
    (`rpc.cancel`). Use it from one event loop."""

    subscription_buffer = 1024  # rpcd's default MaxQueuedEvents=

    def __init__(self, addresses, *, timeout=None, connect_timeout=10.0, tls=None, server_name=None,
                 max_message=DEFAULT_MAX_MESSAGE):
        self.addresses = _addresses(addresses)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._tls = tls
        self._server_name = server_name
        self._max_message = max_message
        self._current = 0
        self._connection = None
        self._connecting = None
        self._ids = itertools.count(1)
        self._subscriptions = set()
        self._background = set()
        self._closed = False

    @property
    def address(self):
        return self.addresses[self._current]

    async def __aenter__(self):
        await self.connect()
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def close(self):
        """Closes the connection; calls in flight and subscriptions end with ConnectionClosed."""
        self._closed = True
        connection, self._connection = self._connection, None
        for subscription in list(self._subscriptions):
            subscription._put(ConnectionClosed("the client was closed"))
        self._subscriptions.clear()
        if connection is not None and not connection.closed:
            connection.flush()
            if getattr(connection.codec, "close_frame", None):
                connection.transport.write(connection.codec.close_frame())
            connection.fail(ConnectionClosed("the client was closed"))
            connection.transport.close()

    # Connecting ---------------------------------------------------------------------------------

    async def connect(self):
        """The open connection, connecting first if needed (the address it had, then each other)."""
        if self._closed:
            raise ConnectionClosed("the client was closed")
        connection = self._connection
        if connection is not None and not connection.closed:
            return connection
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._connect_any())
        task = self._connecting
        try:
            return await asyncio.shield(task)
        finally:
            if task.done() and self._connecting is task:
                self._connecting = None

    async def _connect_any(self):
        errors = {}
        count = len(self.addresses)
        for step in range(count):
            index = (self._current + step) % count
            address = self.addresses[index]
            try:
                connection = await asyncio.wait_for(self._open(address), self.connect_timeout)
            except (OSError, ProtocolError, asyncio.TimeoutError) as error:
                if count == 1:
                    raise
                errors[str(address)] = f"{type(error).__name__}: {error}"
                continue
            self._current = index
            self._connection = connection
            return connection
        raise ConnectFailed(errors)

    async def _open(self, address):
        loop = asyncio.get_running_loop()
        codec = codec_for(address, self._max_message)
        factory = lambda: _Connection(self, address, codec)  # noqa: E731
        if address.is_unix:
            _, connection = await loop.create_unix_connection(factory, address.path)
        else:
            tls = (self._tls or tls_context()) if address.is_tls else None
            _, connection = await loop.create_connection(
                factory, address.host, address.port, ssl=tls,
                server_hostname=(self._server_name or address.host) if tls else None)
            sock = connection.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await connection.handshake
        except BaseException:
            connection.transport.close()
            raise
        return connection

    async def _connection_until(self, deadline):
        pause = 0.05
        while True:
            try:
                return await self.connect()
            except (OSError, ProtocolError, asyncio.TimeoutError):
                if self._closed or deadline is None or time.monotonic() + pause >= deadline:
                    raise
                await asyncio.sleep(pause)
                pause = min(pause * 2, 1.0)

    # Calls ------------------------------------------------------------------------------------------

    async def call(self, method, params=None, *, timeout=...):
        """Calls METHOD with PARAMS (a list, a dict or None); returns the result or raises RPCError,
        TimeoutError (after telling the server to cancel), ConnectionClosed or ConnectFailed."""
        timeout = self.timeout if timeout is ... else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        connection = self._connection
        if connection is None or connection.closed:
            connection = await self._connection_until(deadline)
        return await self._call_on(connection, method, params, deadline)

    async def _call_on(self, connection, method, params, deadline):
        id = next(self._ids)
        future = connection.loop.create_future()
        connection.pending[id] = future
        if params is None:
            payload = b'{"jsonrpc":"2.0","method":"%s","id":%d}' % (_dumps(method)[1:-1].encode(), id)
        else:
            payload = _dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": id}).encode()
        connection.write(payload)
        if connection.paused is not None:
            await connection.paused
        try:
            if deadline is None:
                reply = await future
            else:
                reply = await asyncio.wait_for(future, max(0.0, deadline - time.monotonic()))
        except (asyncio.CancelledError, asyncio.TimeoutError):
            connection.pending.pop(id, None)
            if not connection.closed:
                connection.write(b'{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":%d}}' % id)
            raise
        if "error" in reply:
            raise RPCError.from_json(reply["error"])
        try:
            return reply["result"]
        except KeyError:
            raise ProtocolError(f"reply has neither result nor error: {reply!r}") from None

    async def notify(self, method, params=None):
        """Sends METHOD as a notification: run by the server, never answered."""
        connection = await self.connect()
        connection.write(_dumps(_request(method, params)).encode())

    async def batch(self, calls, *, timeout=...):
        """Sends [(method, params), ...] as one batch; returns results (or RPCError objects) in call order."""
        timeout = self.timeout if timeout is ... else timeout
        connection = await self.connect()
        ids = [next(self._ids) for _ in calls]
        future = connection.loop.create_future()
        for id in ids:
            connection.batches[id] = future
        connection.write(_dumps([_request(m, p, id) for (m, p), id in zip(calls, ids)]).encode())
        try:
            replies = await asyncio.wait_for(future, timeout)
        except RPCError as error:  # the whole batch refused (id null)
            return [error for _ in ids]
        return _batch_results(ids, replies)

    # Events ----------------------------------------------------------------------------------------

    async def subscribe(self, event, *, timeout=...):
        """Subscribes to EVENT ('kv.changed') and returns its Subscription (an async iterator). Raises
        RPCError with the server's refusal: -32602 for an unknown event, -32007 when the access rules do
        not allow it, -32012 past the connection's subscription limit."""
        timeout = self.timeout if timeout is ... else timeout
        subscription = Subscription(self, event, None, self.subscription_buffer)
        await self._subscribe_on(subscription, timeout)
        self._subscriptions.add(subscription)
        return subscription

    async def _subscribe_on(self, subscription, timeout, marker=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        connection = await self._connection_until(deadline)
        # Registered before the reply: events may follow it in the same read.
        result = await self._call_on(connection, "rpc.subscribe", {"event": subscription.event}, deadline)
        subscription.id = result["subscription"]
        subscription.connection = connection
        connection.subscriptions[subscription.id] = subscription
        if marker is not None:
            subscription._put(marker)
        # Events that arrived with the reply, before the subscription's id was known (PROTOCOL.md §8).
        early = [(m, p) for m, p in connection.orphans if p.get("subscription") == subscription.id]
        connection.orphans = [(m, p) for m, p in connection.orphans if p.get("subscription") != subscription.id]
        for method, params in early:
            self._notification(connection, method, params)

    def _notification(self, connection, method, params):
        if not isinstance(params, dict):
            return
        subscription = connection.subscriptions.get(params.get("subscription"))
        if subscription is None:
            if len(connection.orphans) < self.subscription_buffer:
                connection.orphans.append((method, params))
            return
        if method == "rpc.event":
            subscription._put(_event_item(params))
        elif method == "rpc.eventsLost":
            subscription._put(Lost(params.get("count", 0)))
        elif method == "rpc.subscriptionEnded":
            connection.subscriptions.pop(subscription.id, None)
            self._subscriptions.discard(subscription)
            subscription._put(SubscriptionEnded(subscription.event, params.get("reason")))

    def _lost(self, connection):
        if self._connection is connection:
            self._connection = None
        if self._closed:
            return
        for subscription in list(connection.subscriptions.values()):
            task = asyncio.ensure_future(self._resubscribe(subscription))
            self._background.add(task)  # the loop holds tasks weakly
            task.add_done_callback(self._background.discard)
        connection.subscriptions.clear()

    async def _resubscribe(self, subscription):
        pause = 0.05
        while not self._closed and not subscription._ended:
            try:
                await self._subscribe_on(subscription, None, marker=Resubscribed())
                return
            except RPCError as error:
                self._subscriptions.discard(subscription)
                subscription._put(error)
                return
            except (OSError, ProtocolError, asyncio.TimeoutError):
                await asyncio.sleep(pause)
                pause = min(pause * 2, 2.0)
        subscription._put(ConnectionClosed("the client was closed"))
