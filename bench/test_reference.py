"""The C++ reference server (bench/jsonrpc-reference.cpp) against rpcd: the benchmark's yardstick must do the
protocol work rpcd does, or its ratio means nothing.

- The same 77 cases (framing, JSON, envelope, ids of every type and size, batches, notifications, limits) go
  to the debug rpcd and to the reference, each on a connection of its own; the replies must be the same bytes,
  except a -32700's data.detail (rpcd names the offending byte and its offset, the reference simdjson's
  error), which are compared as JSON values without it.
- A bounded mutation run (seeded, 20,000 mutated requests by default, REFERENCE_MUTATIONS to change it):
  whether the reference refuses a frame with -32700 must agree with Python's strict `json` (UTF-8 decoded
  strictly, NaN and Infinity refused).

Needs RPCD_BIN_DIR (the directory holding `rpcd`; make test sets it) and the reference, built by
`make bench-reference` (RPCD_REFERENCE names it; default .build/jsonrpc-reference/jsonrpc-reference).
"""

import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN_DIR = os.environ.get("RPCD_BIN_DIR", os.path.join(ROOT, ".build", "debug"))
REFERENCE = os.environ.get("RPCD_REFERENCE", os.path.join(ROOT, ".build", "jsonrpc-reference", "jsonrpc-reference"))
MUTATIONS = int(os.environ.get("REFERENCE_MUTATIONS", "20000"))
SEED = int(os.environ.get("REFERENCE_SEED", "39"))
MAX_FRAME_SIZE = 4 << 20


def frame(payload):
    data = payload.encode() if isinstance(payload, str) else payload
    return struct.pack(">I", len(data)) + data


def request(method="rpcd.ping", id=1, **members):
    message = {"jsonrpc": "2.0", "method": method}
    message.update(members)
    if id is not None:
        message["id"] = id
    return json.dumps(message, separators=(",", ":"))


class Server:
    """A server process on a loopback port; `address` is (host, port)."""

    def __init__(self, command, pattern, stream):
        self.directory = tempfile.mkdtemp(prefix="rpcd-reference-test-")
        self.process = subprocess.Popen(command(self.directory), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        found, done = {}, threading.Event()

        def read():
            for line in getattr(self.process, stream):
                match = re.search(pattern, line)
                if match and "port" not in found:
                    found["port"] = int(match.group(1))
                    done.set()
            done.set()

        self.readers = [threading.Thread(target=read, daemon=True)]
        other = "stderr" if stream == "stdout" else "stdout"
        self.readers.append(threading.Thread(target=lambda: getattr(self.process, other).read(), daemon=True))
        for reader in self.readers:
            reader.start()
        if not done.wait(30) or "port" not in found:
            self.stop()
            raise RuntimeError(f"{command(self.directory)[0]} did not start listening")
        self.address = ("127.0.0.1", found["port"])

    def stop(self):
        self.process.terminate()  # both stop at once on SIGTERM; a hang fails the test with TimeoutExpired
        self.process.wait(30)
        shutil.rmtree(self.directory, ignore_errors=True)


def start_rpcd():
    def command(directory):
        config = os.path.join(directory, "rpcd.conf")
        with open(config, "w") as file:
            file.write("[Server]\nListen=127.0.0.1:0\nIdleTimeout=0\n")
        return [os.path.join(BIN_DIR, "rpcd"), "--config", config, "--handlers-dir", os.path.join(directory, "none")]
    return Server(command, r"rpcd_listener=127\.0\.0\.1:(\d+)", "stderr")


def start_reference():
    return Server(lambda directory: [REFERENCE], r"listening on 127\.0\.0\.1:(\d+)", "stdout")


def read_frames(sock, data=b"", until_id=None):
    """Frames from `sock` (after the bytes `data` already read) up to one whose id is `until_id`, which is not
    included, and the bytes read past it; with `until_id` None, up to EOF."""
    frames = []
    suffix = b',"id":' + json.dumps(until_id).encode() + b"}"
    while True:
        while len(data) >= 4 and len(data) - 4 >= struct.unpack(">I", data[:4])[0]:
            length = struct.unpack(">I", data[:4])[0]
            body, data = data[4:4 + length], data[4 + length:]
            if until_id is not None and body.endswith(suffix):
                return frames, data
            frames.append(body)
        chunk = sock.recv(1 << 20)
        if not chunk:
            if until_id is not None:
                raise AssertionError("the server closed the connection")
            return frames, data
        data += chunk


SENTINEL = "~sentinel~"


def exchange(address, stream, closes=False, half_close=False):
    """The reply frames `stream` gets on a fresh connection: up to a sentinel ping sent after it, or until
    the server closes (`closes`, or `half_close`: the client shuts its side down after the stream)."""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(stream)
        if closes or half_close:
            if half_close:
                sock.shutdown(socket.SHUT_WR)
            return read_frames(sock)[0]
        sock.sendall(frame(request(id=SENTINEL)))
        return read_frames(sock, until_id=SENTINEL)[0]


def without_parse_detail(reply):
    """A reply as a JSON value, without the data.detail of -32700 errors (a diagnostic rpcd words its way)."""
    def strip(value):
        if isinstance(value, dict) and isinstance(value.get("error"), dict) and value["error"].get("code") == -32700:
            value = json.loads(json.dumps(value))
            value["error"].get("data", {}).pop("detail", None)
        return value
    value = json.loads(reply)
    return [strip(v) for v in value] if isinstance(value, list) else strip(value)


def is_parse_error(reply):
    return reply.startswith(b'{"jsonrpc":"2.0","error":{"code":-32700,')


def nested(levels, inner="1"):
    return "[" * levels + inner + "]" * levels


LONG = "x" * 70000


# Each case: (name, bytes sent on one connection, how it ends: None (a sentinel ping follows), "closes" (the
# server closes after its answer) or "half-close" (the client shuts its side after sending)).
CASES = [
    # Framing
    ("ping", frame(request()), None),
    ("two frames in one write", frame(request(id=1)) + frame(request(id=2)), None),
    ("zero-length frame", frame(b""), None),
    ("whitespace frame", frame(b" \n\t\r "), None),
    ("frame at the limit announced, truncated", struct.pack(">I", MAX_FRAME_SIZE) + b"{", "half-close"),
    ("frame over the limit", struct.pack(">I", MAX_FRAME_SIZE + 1) + b"{}", "closes"),
    ("replies before an oversized frame", frame(request(id=7)) + struct.pack(">I", 0xFFFFFFFF), "closes"),
    ("TLS ClientHello on a plain listener", bytes.fromhex("16030100c4010000c00303") + b"\0" * 40, "closes"),
    ("truncated tail at EOF", frame(request(id=3)) + frame(request(id=4))[:-5], "half-close"),
    ("large frame with a 70 kB string param", frame(request(params=[LONG])), None),
    ("frame of exactly the largest size",
     frame(request(params=["y" * (MAX_FRAME_SIZE - len(request(params=[""])))])), None),
    ("long string of escapes", frame(request(x="\n\u00e9\ud83d\ude00" * 20000)), None),
    # JSON
    ("not JSON", frame(b"hello"), None),
    ("unclosed object", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","id":1'), None),
    ("colon in an array", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","params":["a":1],"id":1}'), None),
    ("bad escape", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","x":"\\q","id":1}'), None),
    ("bad escape in a key", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","\\x":1,"id":1}'), None),
    ("control character in a string", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","x":"\x01","id":1}'), None),
    ("invalid UTF-8", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","x":"\xc3\x28","id":1}'), None),
    ("UTF-8 encoded surrogate", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","x":"\xed\xa0\x80","id":1}'), None),
    ("lone surrogate escape is valid JSON", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","x":"\\ud800","id":1}'), None),
    ("leading zero", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","x":01,"id":1}'), None),
    ("NaN", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","x":NaN,"id":1}'), None),
    ("1e400 is valid JSON", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","x":1e400,"id":1}'), None),
    ("trailing comma", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","id":1,}'), None),
    ("trailing data", frame(request() + " x"), None),
    ("two objects", frame(request() + request()), None),
    ("byte order mark", frame(b"\xef\xbb\xbf" + request().encode()), None),
    ("truncated literal", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","x":tru,"id":1}'), None),
    ("single quotes", frame(b"{'jsonrpc':'2.0'}"), None),
    # Envelope
    ("not an object or array", frame(b"42"), None),
    ("a string message", frame(b'"hello"'), None),
    ("jsonrpc 1.0", frame(b'{"jsonrpc":"1.0","method":"rpcd.ping","id":1}'), None),
    ("jsonrpc missing", frame(b'{"method":"rpcd.ping","id":1}'), None),
    ("jsonrpc as a number", frame(b'{"jsonrpc":2.0,"method":"rpcd.ping","id":1}'), None),
    ("jsonrpc escaped", frame(b'{"jsonrpc":"2\\u002e0","method":"rpcd.ping","id":1}'), None),
    ("method missing", frame(b'{"jsonrpc":"2.0","id":1}'), None),
    ("method not a string", frame(b'{"jsonrpc":"2.0","method":7,"id":1}'), None),
    ("method escaped", frame(b'{"jsonrpc":"2.0","method":"rpcd.\\u0070ing","id":1}'), None),
    ("unknown method", frame(request("no.such")), None),
    ("unknown method with quotes and control characters",
     frame(b'{"jsonrpc":"2.0","method":"a\\"b\\\\c\\n\\u0001\\u00e9","id":1}'), None),
    ("params a string", frame(request(params="x")), None),
    ("params null", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","params":null,"id":1}'), None),
    ("params empty array and object", frame(request(params=[])) + frame(request(params={}, id=2)), None),
    ("ping with positional params", frame(request(params=[1, 2])), None),
    ("ping with named params", frame(request(params={"zeta": 1, "alpha": [2], "mid": {}})), None),
    ("duplicate method", frame(b'{"jsonrpc":"2.0","method":"x","method":"rpcd.ping","id":1}'), None),
    ("duplicate id", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","id":1,"id":2}'), None),
    ("other members ignored", frame(b'{"extra":{"a":[1,{"b":null}]},"jsonrpc":"2.0","method":"rpcd.ping","id":1}'), None),
    # Ids
    ("id string", frame(request(id="abc")), None),
    ("id string with escapes, copied as sent", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","id":"a\\u0062\\n\\"\xc3\xa9"}'), None),
    ("id negative exponent", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","id":-1.5e-7}'), None),
    ("id huge integer", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","id":123456789012345678901234567890}'), None),
    ("id null", frame(request(id=None).replace("}", ',"id":null}')), None),
    ("id with whitespace around", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","id" :  7 \n}'), None),
    ("id true", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","id":true}'), None),
    ("id object", frame(b'{"jsonrpc":"2.0","method":"rpcd.ping","id":{"a":1}}'), None),
    ("id array in an invalid request", frame(b'{"jsonrpc":"1.0","method":"rpcd.ping","id":[1]}'), None),
    ("id of 60 kB", frame(request(id="i" * 60000)), None),
    # Notifications
    ("notification", frame(request(id=None)), None),
    ("notification to an unknown method", frame(request("no.such", id=None)), None),
    ("notification with params to ping", frame(request(id=None, params=[1])), None),
    ("invalid notification", frame(b'{"jsonrpc":"1.0","method":"rpcd.ping"}'), None),
    # Batches
    ("batch", frame("[" + request(id=1) + "," + request("no.such", id=2) + "," + request(id=None) + "]"), None),
    ("batch of notifications", frame("[" + request(id=None) + "," + request(id=None) + "]"), None),
    ("empty batch", frame(b"[]"), None),
    ("empty batch with trailing data", frame(b"[] 1"), None),
    ("batch of scalars", frame(b'[1,"a",null,[2]]'), None),
    ("batch with a syntax error after valid entries", frame("[" + request() + ",{]"), None),
    ("batch at the length limit", frame("[" + ",".join(request(id=i) for i in range(1024)) + "]"), None),
    ("batch over the length limit", frame("[" + ",".join(request(id=i) for i in range(1025)) + "]"), None),
    ("nested batch", frame("[[" + request() + "]]"), None),
    # Nesting
    ("nesting at the limit", frame(request(params=json.loads(nested(62)))), None),
    ("nesting over the limit", frame(request(params=json.loads(nested(63)))), None),
    ("nesting over the limit in a batch", frame("[" + request(params=json.loads(nested(62))) + "]"), None),
    ("a deep array message", frame(nested(100)), None),
    ("nesting over the limit, then broken", frame(b'{"x":' + b"[" * 80), None),
]


class ReferenceAgainstRpcdTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(REFERENCE, os.X_OK):
            raise unittest.SkipTest(f"no reference server at {REFERENCE}: make bench-reference")
        cls.rpcd = start_rpcd()
        try:
            cls.reference = start_reference()
        except Exception:
            cls.rpcd.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.reference.stop()
        cls.rpcd.stop()

    def test_limits_are_rpcds(self):
        with open(os.path.join(ROOT, "Sources", "RPCProtocol", "RPCLimits.swift")) as file:
            limits = file.read()
        with open(os.path.join(ROOT, "bench", "jsonrpc-reference.cpp")) as file:
            reference = file.read()
        for swift, cpp in (("maxFrameSize", "max_frame_size"), ("maxNestingDepth", "max_nesting_depth"),
                           ("maxBatchLength", "max_batch_length")):
            rpcd_default = re.search(rf"static let {swift} = RPCLimit\(default: ([^,]+),", limits).group(1)
            reference_value = re.search(rf"constexpr \w+ {cpp} = ([^;]+);", reference).group(1)
            self.assertEqual(eval(rpcd_default.replace("_", "")), eval(reference_value), swift)

    def test_same_replies_as_rpcd(self):
        self.assertGreaterEqual(len(CASES), 60)
        for name, stream, ending in CASES:
            with self.subTest(name):
                expected = exchange(self.rpcd.address, stream, ending == "closes", ending == "half-close")
                got = exchange(self.reference.address, stream, ending == "closes", ending == "half-close")
                self.assertEqual([without_parse_detail(r) for r in got], [without_parse_detail(r) for r in expected])
                for mine, theirs in zip(got, expected):
                    if not is_parse_error(theirs):
                        self.assertEqual(mine, theirs)

    def test_mutated_requests_agree_with_strict_json(self):
        deadline = time.monotonic() + 60
        mutations = list(mutated_requests(random.Random(SEED), MUTATIONS))
        replies = pipelined(self.reference.address, mutations)
        self.assertLess(time.monotonic(), deadline, "the mutation run took too long")
        disagreements = [(mutation, reply) for mutation, reply in zip(mutations, replies)
                         if any(is_parse_error(r) for r in reply) == strict_json(mutation)]
        self.assertEqual(disagreements[:5], [], f"{len(disagreements)} of {len(mutations)} disagree")

    def test_mutated_requests_get_rpcds_replies(self):
        """The first 2,000 mutations to rpcd too: the same replies (a -32700's detail aside)."""
        mutations = list(mutated_requests(random.Random(SEED), min(MUTATIONS, 2000)))
        expected = pipelined(self.rpcd.address, mutations)
        got = pipelined(self.reference.address, mutations)
        differences = [(mutation, mine, theirs) for mutation, mine, theirs in zip(mutations, got, expected)
                       if [without_parse_detail(r) for r in mine] != [without_parse_detail(r) for r in theirs]]
        self.assertEqual(differences[:5], [], f"{len(differences)} of {len(mutations)} differ")


def pipelined(address, frames):
    """The replies to each of `frames` (a list of frames each), sent 500 at a time on one connection, each
    followed by a sentinel ping whose reply marks where the frame's replies end."""
    replies = []
    with socket.create_connection(address, timeout=30) as sock:
        for start in range(0, len(frames), 500):
            chunk = frames[start:start + 500]
            sock.sendall(b"".join(frame(f) + frame(request(id=f"{SENTINEL}{start + k}")) for k, f in enumerate(chunk)))
            rest = b""
            for k in range(len(chunk)):
                frame_replies, rest = read_frames(sock, rest, f"{SENTINEL}{start + k}")
                replies.append(frame_replies)
    return replies


def strict_json(data):
    """Whether `data` is one JSON text for Python's strict json: UTF-8 decoded strictly (no surrogates, no
    overlongs), no NaN or Infinity, no byte order mark, nothing but whitespace around the value."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False

    def refuse(constant):
        raise ValueError(constant)
    try:
        json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return False
    return True


SEEDS = [
    request(params=[1, -2.5e3, "a\u00e9", None, True, False, {"k": []}]).encode(),
    request("calc.add", id="x", params={"a": 0.5, "b": [1, {"c": "\n\"/\\"}]}).encode(),
    b'[' + request(id=1).encode() + b',' + request(id=None, params={}).encode() + b',7]',
    b'{"jsonrpc":"2.0","method":"rpcd.ping","params":{"s":"\\ud83d\\ude00","n":-0.0e+1},"id":null}',
    b' {"id":12,"method":"rpcd.ping","jsonrpc":"2.0","x":[[],{},[[1]],""]} ',
]
ALPHABET = b'{}[]:,"\\ 0123456789-+.eEtrufalsn\t\n\r\x00\x1f\x7f\xc3\xa9\xed\xa0\xf4\x90\xff/ubx'


def mutated_requests(rng, count):
    """`count` frames: the seeds with one to three random edits each (a byte changed, inserted, deleted, a
    range repeated or two bytes swapped)."""
    for _ in range(count):
        data = bytearray(rng.choice(SEEDS))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            edit = rng.randrange(5)
            if edit == 0:
                data[at] = rng.choice(ALPHABET)
            elif edit == 1:
                data.insert(at, rng.choice(ALPHABET))
            elif edit == 2 and len(data) > 1:
                del data[at]
            elif edit == 3:
                end = min(len(data), at + rng.randint(1, 8))
                data[at:at] = data[at:end]
            elif len(data) > at + 1:
                data[at], data[at + 1] = data[at + 1], data[at]
        yield bytes(data)


if __name__ == "__main__":
    unittest.main()
