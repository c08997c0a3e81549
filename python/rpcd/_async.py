"""The asyncio client, `AsyncClient` (import it from rpcd.client): one connection at a time, calls from any
number of tasks pipelined on it, replies matched by id, subscriptions as async iterators."""

import asyncio
import itertools
import json
import socket
import time

from ._messages import (RECONNECT_FOR, SHUTTING_DOWN, Event, Lost, Resubscribed, _addresses, _batch_results, _dumps,
                        _event_item, _is_going_away, _not_run, _request, tls_context)
from ._wire import DEFAULT_MAX_MESSAGE, codec_for
from .errors import ConnectFailed, ConnectionClosed, ProtocolError, RPCError, SubscriptionEnded, _NotRun

__all__ = ["AsyncClient", "Subscription"]


class _Connection(asyncio.Protocol):
    """One connection of an AsyncClient: writes are gathered and written once per turn of the event loop;
    replies are matched to their calls' futures by id; notifications go to the client. Each frame written has
    an ordinal (1, 2, ...), so that an `rpc.goingAway` {"accepted": N} tells which calls did not run: those
    after N fail with _NotRun, which the client sends again elsewhere."""

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
        self.ordinals = {}       # id of a call or batch entry in flight -> its frame's ordinal
        self.unsure = []         # (ordinal, payload) of notifications not yet known to have been read
        self.written = 0         # frames handed to write(); the last one's ordinal
        self.flushed = 0         # frames handed to the transport: those after it were never sent
        self.going_away = None   # from rpc.goingAway (or HTTP's Connection: close): the frames accepted
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
        accepted = getattr(self.codec, "going_away", None)  # HTTP's, after these answers
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
                    if self.unsure:
                        self._answered(self.ordinals.get(id, 0))
                    self.ordinals.pop(id, None)
                    if not future.done():
                        future.set_result(message)
                elif "method" in message and "id" not in message:
                    if message["method"] == "rpc.goingAway" and (going := _is_going_away(message)) is not None:
                        self.gone_away(going)
                    else:
                        self.client._notification(self, message["method"], message.get("params"))
                elif id is None and "error" in message:
                    self._fail_oldest(RPCError.from_json(message["error"]))
            elif type(message) is list:
                for entry in message:
                    future = self.batches.get(entry.get("id")) if type(entry) is dict else None
                    if future is not None:
                        for key in [key for key, value in self.batches.items() if value is future]:
                            del self.batches[key]
                            ordinal = self.ordinals.pop(key, 0)
                        if self.unsure:
                            self._answered(ordinal)
                        if not future.done():
                            future.set_result(message)
                        break
        if accepted is not None and self.going_away is None:
            self.gone_away(accepted)

    def gone_away(self, accepted):
        """The server accepted the first ACCEPTED frames and will read no more (docs/PROTOCOL.md §4
        "Shutdown"): what came after did not run. Calls and notifications after the cut are sent again on a
        new connection; the accepted calls' replies and the subscriptions' events still come on this one,
        until the server closes it."""
        self.going_away = accepted
        self.client._retire(self)
        for table in (self.pending, self.batches):
            for id, future in list(table.items()):
                if self.ordinals.get(id, 0) > accepted:
                    del table[id]
                    self.ordinals.pop(id, None)
                    if not future.done():
                        future.set_exception(_NotRun(f"{self.address} stopped before reading the call"))
        resend = [payload for ordinal, payload in self.unsure if ordinal > accepted]
        self.unsure = []
        if resend:
            self.client._resend(resend)

    def _answered(self, ordinal):
        """The frame ORDINAL was answered, so every frame before it was read."""
        self.unsure = [entry for entry in self.unsure if entry[0] > ordinal]

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
        # A frame never handed to the transport did not run; after rpc.goingAway, those past the cut have
        # failed already. What is left may have run: `error`.
        not_sent = _NotRun(f"connection to {self.address} closed before the call was sent")
        for table in (self.pending, self.batches):
            for id, future in table.items():
                if not future.done():
                    future.set_exception(not_sent if self.ordinals.get(id, 0) > self.flushed else error)
        self.pending.clear()
        self.batches.clear()
        self.ordinals.clear()
        self.client._lost(self)

    # Writing
    def write(self, payload, cancel=False):
        """Queues PAYLOAD as the next frame and returns its ordinal. Raises _NotRun when the server will not
        read it: the connection closed, or went away (an `rpc.cancel` goes out still: it ends accepted calls)."""
        if self.closed or (self.going_away is not None and not cancel):
            raise _NotRun(f"connection to {self.address} " + ("closed" if self.closed else "is going away"))
        self.out.append(self.codec.encode(payload))
        self.written += 1
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)
        return self.written

    def flush(self):
        self.flush_scheduled = False
        if self.out and not self.closed:
            data = b"".join(self.out)
            self.out.clear()
            self.flushed = self.written
            self.transport.write(data)


class Subscription:
    """The events of one subscription, as an async iterator of Event, Lost and Resubscribed. When the
    connection breaks or the server restarts, the client subscribes again as soon as it can connect (50 ms
    doubling to 2 s between tries) and yields Resubscribed. It ends by raising SubscriptionEnded (the server ended it), RPCError
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
    (`rpc.cancel`). A call the server did not run (`rpc.goingAway`, -32006), or an `idempotent=True` one
    whose fate is unknown, is sent again on a new connection, which it waits for up to RECONNECT_FOR seconds
    (rpcd.client's docstring). Use it from one event loop."""

    subscription_buffer = 1024  # rpcd's default MaxQueuedEvents=

    def __init__(self, addresses, *, timeout=None, connect_timeout=10.0, tls=None, server_name=None,
                 max_message=DEFAULT_MAX_MESSAGE, reconnect_for=RECONNECT_FOR):
        self.addresses = _addresses(addresses)
        self.timeout = timeout
        self.reconnect_for = reconnect_for
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

    def _retire(self, connection):
        """CONNECTION takes no new calls (the server is leaving it); the next call connects again."""
        if self._connection is connection:
            self._connection = None

    def _resend(self, payloads):
        """Sends notifications that did not run again, on the next connection."""
        async def resend():
            try:
                connection = await self._connection_until(time.monotonic() + self.reconnect_for)
                for payload in payloads:
                    connection.unsure.append((connection.write(payload), payload))
            except (OSError, ProtocolError, asyncio.TimeoutError):
                pass  # a notification has no one to tell
        self._background_task(resend())

    def _background_task(self, coroutine):
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)  # the loop holds tasks weakly
        task.add_done_callback(self._background.discard)

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

    async def call(self, method, params=None, *, timeout=..., idempotent=False):
        """Calls METHOD with PARAMS (a list, a dict or None); returns the result or raises RPCError,
        TimeoutError (after telling the server to cancel), ConnectionClosed or ConnectFailed. IDEMPOTENT: safe
        to run twice, so sent again when the connection ends before its reply (rpcd.client's docstring)."""
        timeout = self.timeout if timeout is ... else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        return await self._again(lambda connection: self._call_on(connection, method, params, deadline),
                                 deadline, idempotent)

    async def _again(self, attempt, deadline, idempotent):
        """ATTEMPT(connection), made again on a new connection while the server says it did not run (or, when
        IDEMPOTENT, its fate is unknown), for up to reconnect_for seconds and within DEADLINE."""
        until = deadline
        retrying = False
        while True:
            connection = self._connection
            if connection is None or connection.closed:
                connection = await self._connection_until(until)
            try:
                return await attempt(connection)
            except _NotRun:
                if retrying and time.monotonic() >= until:
                    raise
            except RPCError as error:
                if error.code != SHUTTING_DOWN or (retrying and time.monotonic() >= until):
                    raise
                self._retire(connection)
            except ConnectionClosed:
                if not idempotent or self._closed or (retrying and time.monotonic() >= until):
                    raise
            if not retrying:
                retrying = True
                limit = time.monotonic() + self.reconnect_for
                until = limit if deadline is None else min(deadline, limit)

    async def _call_on(self, connection, method, params, deadline):
        id = next(self._ids)
        if params is None:
            payload = b'{"jsonrpc":"2.0","method":"%s","id":%d}' % (_dumps(method)[1:-1].encode(), id)
        else:
            payload = _dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": id}).encode()
        connection.ordinals[id] = connection.write(payload)
        future = connection.loop.create_future()
        connection.pending[id] = future
        if connection.paused is not None:
            await connection.paused
        try:
            if deadline is None:
                reply = await future
            else:
                reply = await asyncio.wait_for(future, max(0.0, deadline - time.monotonic()))
        except (asyncio.CancelledError, asyncio.TimeoutError):
            connection.pending.pop(id, None)
            connection.ordinals.pop(id, None)
            if not connection.closed:
                connection.write(b'{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":%d}}' % id, cancel=True)
            raise
        if "error" in reply:
            raise RPCError.from_json(reply["error"])
        try:
            return reply["result"]
        except KeyError:
            raise ProtocolError(f"reply has neither result nor error: {reply!r}") from None

    async def notify(self, method, params=None):
        """Sends METHOD as a notification: run by the server, never answered. One sent after the cut of an
        `rpc.goingAway` is sent again on the next connection."""
        payload = _dumps(_request(method, params)).encode()

        async def attempt(connection):
            ordinal = connection.write(payload)
            # Kept until a later frame is answered; a client that only notifies never learns, so only the last
            # are kept (rpcd reads frames as they come: older ones were read).
            connection.unsure = connection.unsure[-1023:] + [(ordinal, payload)]
        await self._again(attempt, None, False)

    async def batch(self, calls, *, timeout=..., idempotent=False):
        """Sends [(method, params), ...] as one batch; returns results (or RPCError objects) in call order."""
        timeout = self.timeout if timeout is ... else timeout
        deadline = None if timeout is None else time.monotonic() + timeout

        async def attempt(connection):
            ids = [next(self._ids) for _ in calls]
            ordinal = connection.write(_dumps([_request(m, p, id) for (m, p), id in zip(calls, ids)]).encode())
            future = connection.loop.create_future()
            for id in ids:
                connection.batches[id] = future
                connection.ordinals[id] = ordinal
            try:
                replies = await asyncio.wait_for(future, None if deadline is None else deadline - time.monotonic())
            except RPCError as error:  # the whole batch refused (id null)
                return [error for _ in ids]
            if _not_run(replies):
                raise RPCError(SHUTTING_DOWN, "Server shutting down")
            return _batch_results(ids, replies)
        return await self._again(attempt, deadline, idempotent)

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
        connections = []

        async def attempt(connection):
            connections.append(connection)
            return await self._call_on(connection, "rpc.subscribe", {"event": subscription.event}, deadline)
        result = await self._again(attempt, deadline, True)
        connection = connections[-1]
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
            self._background_task(self._resubscribe(subscription))
        connection.subscriptions.clear()

    async def _resubscribe(self, subscription):
        pause = 0.05
        while not self._closed and not subscription._ended:
            try:
                await self._subscribe_on(subscription, None, marker=Resubscribed())
                return
            except RPCError as error:
                if error.code != SHUTTING_DOWN:
                    self._subscriptions.discard(subscription)
                    subscription._put(error)
                    return
            except (OSError, ProtocolError, asyncio.TimeoutError):
                await asyncio.sleep(pause)
                pause = min(pause * 2, 2.0)
        subscription._put(ConnectionClosed("the client was closed"))
