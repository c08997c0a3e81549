"""What goes over a connection to rpcd, without sockets: addresses, and one codec per transport that turns
JSON-RPC payloads into bytes and bytes back into payloads. The synchronous and the asyncio client share them.

    framed (tcp, tls, unix)   | length N, 4 bytes big-endian | N bytes of JSON |     docs/PROTOCOL.md §2
    http, https, http+unix    POST /rpc, one message per request; answers in request order   §9
    ws, wss                   GET /rpc Upgrade: websocket, then one text message per message  §9, RFC 6455

A codec is fed the bytes that arrive (`feed`, returns the payloads now complete) and encodes payloads
(`encode`); bytes it must send on its own (a WebSocket pong) wait in `outgoing`. It raises ProtocolError
for what the protocol does not allow, and ConnectionClosed when the server ends the exchange.
"""

import base64
import hashlib
import os
import struct
import urllib.parse
from dataclasses import dataclass

from .errors import ConnectionClosed, ProtocolError

__all__ = ["Address", "parse_address", "codec_for"]

DEFAULT_MAX_MESSAGE = 64 << 20  # what a client holds at most for one reply; rpcd's own limit is MaxFrameSize=
_HEADER = struct.Struct(">I")


@dataclass(frozen=True)
class Address:
    """Where and how to connect: `scheme` is tcp, tls, unix, http, https, http+unix, ws, wss or ws+unix;
    `host` and `port` for IP ones, `path` the socket for Unix ones, `resource` the HTTP path."""
    scheme: str
    host: str = ""
    port: int = 0
    path: str = ""
    resource: str = "/rpc"
    text: str = ""

    @property
    def is_unix(self):
        return self.scheme in ("unix", "http+unix", "ws+unix")

    @property
    def is_tls(self):
        return self.scheme in ("tls", "https", "wss")

    def __str__(self):
        return self.text


def parse_address(text):
    """An address as rpcctl and rpcd's configuration write them: `HOST:PORT`, `[V6]:PORT`, `tls://HOST:PORT`,
    `/run/rpcd/rpcd.sock` (or `unix:/path`), `http://HOST:PORT[/rpc]`, `https://...`, `http+unix:/path`,
    `ws://HOST:PORT[/rpc]`, `wss://...`, `ws+unix:/path`."""
    if isinstance(text, Address):
        return text
    if text.startswith("/"):
        return Address("unix", path=text, text=text)
    scheme, sep, rest = text.partition("://") if "://" in text else text.partition(":")
    if scheme in ("unix", "http+unix", "ws+unix") and sep:
        return Address(scheme, path=rest, text=text)
    if "://" not in text:
        scheme, rest = "tcp", text
    elif scheme not in ("tcp", "tls", "http", "https", "ws", "wss"):
        raise ValueError(f"invalid address {text!r}: unknown scheme {scheme!r}")
    resource = "/rpc"
    if scheme in ("http", "https", "ws", "wss"):
        parsed = urllib.parse.urlsplit(f"{scheme}://{rest}")
        rest = parsed.netloc
        resource = parsed.path or "/rpc"
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"invalid address {text!r}: expected HOST:PORT, [IPV6]:PORT, tls://HOST:PORT, "
                         "http(s)://HOST:PORT, ws(s)://HOST:PORT or a Unix socket path")
    return Address(scheme, host=host.strip("[]"), port=int(port), resource=resource, text=text)


def codec_for(address, max_message=DEFAULT_MAX_MESSAGE):
    if address.scheme in ("tcp", "tls", "unix"):
        return FramedCodec(max_message)
    if address.scheme in ("http", "https", "http+unix"):
        return HTTPCodec(address, max_message)
    return WebSocketCodec(address, max_message)


def _host_header(address):
    if address.is_unix:
        return "localhost"
    host = f"[{address.host}]" if ":" in address.host else address.host
    return f"{host}:{address.port}"


class FramedCodec:
    """rpcd's frames: a 4-byte big-endian length, then the payload."""
    handshake = b""
    pipelines = True

    def __init__(self, max_message):
        self.max_message = max_message
        self.buffer = bytearray()
        self.outgoing = b""
        self.ready = True

    def encode(self, payload):
        return _HEADER.pack(len(payload)) + payload

    def feed(self, data):
        buffer = self.buffer
        buffer += data
        messages, start, end = [], 0, len(buffer)
        while end - start >= 4:
            (length,) = _HEADER.unpack_from(buffer, start)
            if length > self.max_message:
                raise ProtocolError(f"a frame of {length} bytes is longer than this client accepts ({self.max_message})")
            if end - start - 4 < length:
                break
            messages.append(bytes(buffer[start + 4:start + 4 + length]))
            start += 4 + length
        if start:
            del buffer[:start]
        return messages

    def eof(self):
        if self.buffer:
            raise ConnectionClosed("connection closed in the middle of a frame")


class _HTTPResponseParser:
    """HTTP/1.1 responses, one after the other: status, headers, a body by Content-Length or chunked."""

    def __init__(self, max_message):
        self.max_message = max_message
        self.buffer = bytearray()

    def next(self):
        """(status, headers, body) of the next complete response, or None."""
        buffer = self.buffer
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > 81920:
                raise ProtocolError("HTTP response head too long")
            return None
        lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            raise ProtocolError(f"not an HTTP response: {lines[0]!r}") from None
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        position = end + 4
        if status in (101, 204, 304) or 100 <= status < 200:
            del buffer[:position]
            return status, headers, b""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = bytearray()
            while True:
                line_end = buffer.find(b"\r\n", position)
                if line_end < 0:
                    return None
                size = int(bytes(buffer[position:line_end]).split(b";")[0], 16)
                if size == 0:
                    if len(buffer) < line_end + 4:
                        return None
                    if buffer[line_end + 2:line_end + 4] == b"\r\n":
                        position = line_end + 4
                    else:
                        trailer_end = buffer.find(b"\r\n\r\n", line_end + 2)
                        if trailer_end < 0:
                            return None
                        position = trailer_end + 4
                    break
                if len(buffer) < line_end + 2 + size + 2:
                    return None
                body += buffer[line_end + 2:line_end + 2 + size]
                position = line_end + 2 + size + 2
            del buffer[:position]
            return status, headers, bytes(body)
        length = int(headers.get("content-length", "0"))
        if length > self.max_message:
            raise ProtocolError(f"an HTTP body of {length} bytes is longer than this client accepts")
        if len(buffer) < position + length:
            return None
        body = bytes(buffer[position:position + length])
        del buffer[:position + length]
        return status, headers, body


class HTTPCodec:
    """JSON-RPC over POST: each payload is one request; answers come in request order. A 204 (nothing to
    answer) yields no payload; another status's body (a JSON-RPC error with id null) is yielded as it is."""
    handshake = b""
    pipelines = True

    def __init__(self, address, max_message):
        self.head = (f"POST {address.resource} HTTP/1.1\r\nHost: {_host_header(address)}\r\n"
                     "Content-Type: application/json\r\nContent-Length: ").encode()
        self.parser = _HTTPResponseParser(max_message)
        self.outgoing = b""
        self.ready = True
        self.answered = 0
        # HTTP's rpc.goingAway: a `Connection: close` answer is the last; the requests after it were not read
        # (docs/PROTOCOL.md §4 "Shutdown"). The number of requests answered up to it, else None.
        self.going_away = None

    def encode(self, payload):
        return self.head + str(len(payload)).encode() + b"\r\n\r\n" + payload

    def feed(self, data):
        self.parser.buffer += data
        messages = []
        while self.going_away is None and (response := self.parser.next()) is not None:
            status, headers, body = response
            self.answered += 1
            if body:
                if status != 200 and not body.lstrip().startswith(b"{"):
                    raise ProtocolError(f"HTTP {status}: {body[:200]!r}")
                messages.append(body)
            elif status not in (200, 204):
                raise ProtocolError(f"HTTP {status} without a body")
            if headers.get("connection", "").lower() == "close":
                self.going_away = self.answered
        return messages

    def eof(self):
        if self.parser.buffer:
            raise ConnectionClosed("connection closed in the middle of an HTTP answer")


class WebSocketCodec:
    """RFC 6455, client side: the upgrade handshake, masked text frames out, the server's frames in (text
    messages, fragmented or not; pings answered; a close ends the exchange)."""
    pipelines = True

    def __init__(self, address, max_message):
        self.key = base64.b64encode(os.urandom(16)).decode()
        self.handshake = (f"GET {address.resource} HTTP/1.1\r\nHost: {_host_header(address)}\r\n"
                          "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                          f"Sec-WebSocket-Key: {self.key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
        self.max_message = max_message
        self.parser = _HTTPResponseParser(max_message)
        self.ready = False  # until the 101 arrives
        self.buffer = bytearray()
        self.fragments = None
        self.outgoing = b""
        self.close_code = None
        self.close_reason = ""

    @staticmethod
    def frame(opcode, payload):
        n = len(payload)
        if n < 126:
            head = struct.pack(">BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack(">BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack(">BBQ", 0x80 | opcode, 0x80 | 127, n)
        mask = os.urandom(4)
        if n:
            repeated = (mask * (n // 4 + 1))[:n]
            payload = (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(n, "big")
        return head + mask + payload

    def encode(self, payload):
        return self.frame(0x1, payload)

    def close_frame(self, code=1000):
        return self.frame(0x8, struct.pack(">H", code))

    def _closed(self):
        return ConnectionClosed(f"the server closed the WebSocket ({self.close_code}"
                                + (f": {self.close_reason})" if self.close_reason else ")"))

    def feed(self, data):
        if self.close_code is not None:
            raise self._closed()
        if not self.ready:
            self.parser.buffer += data
            response = self.parser.next()
            if response is None:
                return []
            status, headers, body = response
            if status != 101:
                raise ProtocolError(f"WebSocket handshake refused: HTTP {status} {body[:200]!r}")
            expected = base64.b64encode(hashlib.sha1(
                (self.key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            if headers.get("sec-websocket-accept") != expected:
                raise ProtocolError("WebSocket handshake: wrong Sec-WebSocket-Accept")
            self.ready = True
            data = bytes(self.parser.buffer)
            self.parser.buffer.clear()
        buffer = self.buffer
        buffer += data
        messages, start = [], 0
        while len(buffer) - start >= 2:
            first, second = buffer[start], buffer[start + 1]
            fin, opcode, masked, length = first & 0x80, first & 0x0F, second & 0x80, second & 0x7F
            position = start + 2
            if length == 126:
                if len(buffer) < position + 2:
                    break
                (length,) = struct.unpack_from(">H", buffer, position)
                position += 2
            elif length == 127:
                if len(buffer) < position + 8:
                    break
                (length,) = struct.unpack_from(">Q", buffer, position)
                position += 8
            if masked:
                raise ProtocolError("the server sent a masked WebSocket frame")
            if length > self.max_message:
                raise ProtocolError(f"a WebSocket frame of {length} bytes is longer than this client accepts")
            if len(buffer) < position + length:
                break
            payload = bytes(buffer[position:position + length])
            start = position + length
            if opcode == 0x9:  # ping
                self.outgoing += self.frame(0xA, payload)
            elif opcode == 0xA:  # pong
                pass
            elif opcode == 0x8:  # close
                self.close_code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
                self.close_reason = payload[2:].decode("utf-8", "replace")
                del buffer[:start]
                if messages:
                    return messages  # the close is raised at the next feed or at the end of the stream
                raise self._closed()
            elif opcode in (0x1, 0x2, 0x0):
                if opcode == 0x2:
                    raise ProtocolError("the server sent a binary WebSocket message")
                if opcode == 0x0:
                    if self.fragments is None:
                        raise ProtocolError("a WebSocket continuation frame without a message")
                    self.fragments += payload
                else:
                    self.fragments = bytearray(payload)
                if fin:
                    messages.append(bytes(self.fragments))
                    self.fragments = None
            else:
                raise ProtocolError(f"unknown WebSocket opcode {opcode}")
        if start:
            del buffer[:start]
        return messages

    def eof(self):
        if self.close_code is not None:
            raise self._closed()
        if self.buffer or self.fragments:
            raise ConnectionClosed("connection closed in the middle of a WebSocket frame")
