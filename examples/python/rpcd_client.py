"""A minimal rpcd client using only the Python standard library.

It implements docs/PROTOCOL.md: each message is a frame made of a 4-byte big-endian length and a UTF-8
JSON-RPC 2.0 payload. Calls may be pipelined; replies are matched by id.

    from rpcd_client import Client
    with Client("127.0.0.1:7390") as rpcd:
        print(rpcd.call("rpcd.ping"))                  # 'pong'
        print(rpcd.call("calc.add", [1, 2]))           # 3
        print(rpcd.batch([("calc.add", [1, 2]), ("rpcd.ping", None)]))

Events (docs/PROTOCOL.md section 8): subscribe, then read them as they come, between calls:

    with Client("127.0.0.1:7390") as rpcd:
        subscription = rpcd.subscribe("kv.changed")
        for method, params in rpcd.notifications():     # ("rpc.event", {"seq": 1, "data": {...}, ...})
            print(params["data"])

A tls:// listener (docs/SECURITY.md) takes an ssl.SSLContext, which tls_context() makes from PEM files:

    context = tls_context(ca_file="ca.pem", cert_file="ops.pem", key_file="ops.key")
    with Client("tls://rpcd.example.org:7391", tls=context) as rpcd:
        print(rpcd.call("kv.set", {"key": "k", "value": 1}))

Run it as a script for a quick call:  python3 rpcd_client.py 127.0.0.1:7390 calc.add '[1, 2]'
(with TLS: python3 rpcd_client.py --ca ca.pem tls://host:7391 rpcd.ping), or to print events as JSON lines:
python3 rpcd_client.py 127.0.0.1:7390 --watch kv.changed
"""

import collections
import itertools
import json
import socket
import ssl
import struct
import sys

__all__ = ["Client", "RemoteError", "ProtocolError", "connect", "tls_context"]

_HEADER = struct.Struct(">I")


class RemoteError(Exception):
    """The server answered with a JSON-RPC error object."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{message} ({code})" + (f": {json.dumps(data)}" if data is not None else ""))
        self.code = code
        self.message = message
        self.data = data


class ProtocolError(Exception):
    """The server sent something that is not a valid reply, or closed the connection early."""


def tls_context(ca_file=None, cert_file=None, key_file=None):
    """A client context for rpcd's tls:// listeners: TLS 1.2 or later, the server's certificate checked
    against CA_FILE (default: the system's CAs) and its host name; CERT_FILE and KEY_FILE are this client's
    certificate for servers that ask for one."""
    context = ssl.create_default_context(cafile=ca_file)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


def connect(address, timeout=10.0, tls=None, server_name=None):
    """Opens a socket to ADDRESS: 'host:port', '[v6]:port', 'tls://host:port', or an absolute Unix socket
    path. A tls:// address needs TLS, an ssl.SSLContext; SERVER_NAME is the name the server's certificate must
    carry (default: the host)."""
    if address.startswith("/"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(address)
        return sock
    is_tls = address.startswith("tls://")
    host, _, port = address.removeprefix("tls://").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"invalid address {address!r}: expected HOST:PORT, [IPV6]:PORT, tls://HOST:PORT or /path")
    host = host.strip("[]")
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if is_tls:
        try:
            sock = (tls or tls_context()).wrap_socket(sock, server_hostname=server_name or host)
        except BaseException:
            sock.close()
            raise
    return sock


class Client:
    """One connection to rpcd. Not thread-safe: use one Client per thread."""

    def __init__(self, address, timeout=10.0, tls=None, server_name=None):
        self._sock = connect(address, timeout, tls, server_name)
        self._ids = itertools.count(1)
        self._early = {}  # replies that arrived while waiting for another id
        self._notifications = collections.deque()  # events that arrived while waiting for a reply

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # Framing -------------------------------------------------------------------------------------

    def send_payload(self, payload: bytes):
        self._sock.sendall(_HEADER.pack(len(payload)) + payload)

    def receive_payload(self):
        """The next frame's payload, or None when the server closed the connection."""
        header = self._receive_exactly(_HEADER.size)
        if header is None:
            return None
        (length,) = _HEADER.unpack(header)
        payload = self._receive_exactly(length)
        if payload is None:
            raise ProtocolError("connection closed in the middle of a frame")
        return payload

    def _receive_exactly(self, count):
        chunks, received = [], 0
        while received < count:
            chunk = self._sock.recv(min(count - received, 1 << 20))
            if not chunk:
                if received == 0:
                    return None
                raise ProtocolError("connection closed in the middle of a frame")
            chunks.append(chunk)
            received += len(chunk)
        return b"".join(chunks)

    # JSON-RPC ------------------------------------------------------------------------------------

    @staticmethod
    def _request(method, params, id=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if id is not None:
            message["id"] = id
        return message

    def send(self, message):
        self.send_payload(json.dumps(message, separators=(",", ":")).encode("utf-8"))

    def receive(self):
        payload = self.receive_payload()
        if payload is None:
            raise ProtocolError("connection closed before the reply arrived")
        try:
            return json.loads(payload)
        except ValueError as error:
            raise ProtocolError(f"reply is not JSON: {error}") from None

    def call(self, method, params=None):
        """Calls METHOD with PARAMS (a list, a dict or None); returns the result or raises RemoteError."""
        id = next(self._ids)
        self.send(self._request(method, params, id))
        return self._result(self._wait_for(id))

    def notify(self, method, params=None):
        self.send(self._request(method, params))

    def batch(self, calls):
        """Sends [(method, params), ...] as one batch; returns results (or RemoteError objects) in call order."""
        ids = [next(self._ids) for _ in calls]
        self.send([self._request(method, params, id) for (method, params), id in zip(calls, ids)])
        replies = self.receive()
        if not isinstance(replies, list):
            raise self._error(replies)  # the whole batch was refused
        by_id = {reply.get("id"): reply for reply in replies}
        results = []
        for id in ids:
            try:
                results.append(self._result(by_id[id]))
            except RemoteError as error:
                results.append(error)
        return results

    # Events ----------------------------------------------------------------------------------------

    def subscribe(self, event):
        """Subscribes this connection to EVENT ('kv.changed'); returns the subscription id. The events then
        arrive as notifications (see notifications())."""
        return self.call("rpc.subscribe", {"event": event})["subscription"]

    def unsubscribe(self, subscription):
        """Ends a subscription; True when there was one. Events already sent may still be read afterwards."""
        return self.call("rpc.unsubscribe", {"subscription": subscription})

    def next_notification(self):
        """The next notification the server sent: (method, params), e.g. ('rpc.event', {'subscription': 1,
        'event': 'kv.changed', 'seq': 1, 'data': ...}), ('rpc.eventsLost', {'subscription': 1, 'count': 3}) or
        ('rpc.subscriptionEnded', {'subscription': 1, 'reason': ...}). Blocks up to the socket's timeout."""
        if self._notifications:
            return self._notifications.popleft()
        while True:
            message = self.receive()
            if self._is_notification(message):
                return message["method"], message.get("params")
            if isinstance(message, dict) and "id" in message:
                self._early[message["id"]] = message  # a reply to a request sent with send()
            else:
                raise ProtocolError(f"unexpected message {message!r}")

    def notifications(self):
        """Every notification as it arrives, forever (until the connection closes or times out)."""
        while True:
            yield self.next_notification()

    @staticmethod
    def _is_notification(message):
        return isinstance(message, dict) and "method" in message and "id" not in message

    def _wait_for(self, id):
        if id in self._early:
            return self._early.pop(id)
        while True:
            reply = self.receive()
            if self._is_notification(reply):
                self._notifications.append((reply["method"], reply.get("params")))
                continue
            if not isinstance(reply, dict):
                raise ProtocolError(f"unexpected reply {reply!r}")
            if reply.get("id") == id:
                return reply
            if reply.get("id") is None and "error" in reply:
                raise self._error(reply)  # the server could not read our request
            self._early[reply.get("id")] = reply

    @staticmethod
    def _error(reply):
        error = reply.get("error") or {}
        return RemoteError(error.get("code"), error.get("message"), error.get("data"))

    def _result(self, reply):
        if "error" in reply:
            raise self._error(reply)
        if "result" not in reply:
            raise ProtocolError(f"reply has neither result nor error: {reply!r}")
        return reply["result"]


def main(argv):
    files = {}
    argv = list(argv)
    while len(argv) > 2 and argv[1] in ("--ca", "--cert", "--key"):
        files[argv[1][2:]] = argv[2]
        del argv[1:3]
    if len(argv) < 3:
        print("usage: rpcd_client.py [--ca FILE] [--cert FILE --key FILE] ADDRESS METHOD [PARAMS_JSON]\n"
              "       rpcd_client.py [--ca FILE] [--cert FILE --key FILE] ADDRESS --watch SERVICE.EVENT",
              file=sys.stderr)
        return 64
    if argv[2] == "--watch":
        return watch(argv[1], argv[3], files)
    params = json.loads(argv[3]) if len(argv) > 3 else None
    context = tls_context(files.get("ca"), files.get("cert"), files.get("key")) if files else None
    with Client(argv[1], tls=context) as client:
        try:
            print(json.dumps(client.call(argv[2], params), indent=2))
        except RemoteError as error:
            print(f"rpcd_client: {argv[2]}: {error}", file=sys.stderr)
            return 1
    return 0


def watch(address, event, files):
    """Prints each event of EVENT as one JSON line ({"event", "seq", "data"}, or {"lost": N}) until the
    server ends the subscription or the connection closes."""
    context = tls_context(files.get("ca"), files.get("cert"), files.get("key")) if files else None
    # No timeout: events may be minutes apart.
    with Client(address, timeout=None, tls=context) as client:
        try:
            client.subscribe(event)
        except RemoteError as error:
            print(f"rpcd_client: {event}: {error}", file=sys.stderr)
            return 1
        try:
            for method, params in client.notifications():
                if method == "rpc.event":
                    line = {"event": params["event"], "seq": params["seq"], "data": params.get("data")}
                elif method == "rpc.eventsLost":
                    line = {"lost": params["count"]}
                elif method == "rpc.subscriptionEnded":
                    print(f"rpcd_client: {event}: subscription ended: {params.get('reason')}", file=sys.stderr)
                    return 69
                else:
                    continue
                print(json.dumps(line, separators=(",", ":")), flush=True)
        except ProtocolError:
            return 76  # the connection closed
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
