"""A raw framed client, written from docs/PROTOCOL.md alone (no rpcd library), that keeps calling while rpcd
restarts, and counts what a client of rpcd must never see: a refused connection, a call of unknown fate.

    restart_client.py ADDRESS SLOTS STOP_FILE [read-only]

Keeps SLOTS calls in flight on one connection (pipelined), alternating `kv.set` (key `restart-unix-SLOT` or
`restart-tcp-SLOT`, the value counting up: state-changing) and `calc.add` (read-only), or only `calc.add` with
`read-only` (what the shipped access rules let a TCP peer call), until STOP_FILE exists; then waits for what is
outstanding and prints one JSON line:

    {"ok": N, "refused": R, "unknown": U, "resent": S, "going_away": G, "connections": C, "errors": [...],
     "acknowledged": {"restart-unix-0": V, ...}, "max_gap_ms": M, "max_call_ms": L, "last_id_mismatches": 0}

Following PROTOCOL.md §4 "Shutdown": on `rpc.goingAway` {"lastId", "accepted": N} the first N messages sent on
the connection were accepted and will be answered before it closes; every message after them did not run. So
the client sends nothing more on it, resends those on a new connection, and waits for the accepted ones'
replies until the end of the stream. A -32006 reply also means "did not run": resent. An accepted call with no
reply when the connection ends, or any call outstanding on a connection that ends without `rpc.goingAway`, is
of unknown fate (`unknown`). `max_gap_ms` is the longest time without any successful reply; `max_call_ms` the
longest from a call's first sending to its answer, resends included.
"""

import json
import os
import select
import socket
import struct
import sys
import time


def connect(address):
    """A non-blocking connection to a Unix socket path or HOST:PORT (IPv4)."""
    unix = address.startswith("/")
    target = address if unix else (address.rsplit(":", 1)[0], int(address.rsplit(":", 1)[1]))
    sock = socket.socket(socket.AF_UNIX if unix else socket.AF_INET, socket.SOCK_STREAM)
    sock.connect(target)
    sock.setblocking(False)
    return sock


class Call:
    def __init__(self, slot, method, params, value):
        self.slot, self.method, self.params, self.value = slot, method, params, value
        self.first_sent = None


def main(address, slots, stop_file, mode="read-write"):
    slots = int(slots)
    tag = "unix" if address.startswith("/") else "tcp"
    report = {"ok": 0, "refused": 0, "unknown": 0, "resent": 0, "going_away": 0, "connections": 0, "errors": [],
              "acknowledged": {}, "max_gap_ms": 0.0, "max_call_ms": 0.0, "last_id_mismatches": 0}
    counter = 0
    next_id = 1
    queue = []            # calls to send, resends first
    busy = set()          # slots with a call queued or outstanding
    sock = None
    received = b""
    sent = []             # (id, call) in the order sent on this connection
    outstanding = {}      # id -> call
    accepted = None       # from rpc.goingAway: messages of this connection that were accepted
    last_ok = time.monotonic()

    def requeue(call):
        report["resent"] += 1
        queue.insert(0, call)

    def connection_ended():
        nonlocal sock, received, sent, outstanding, accepted
        # Without rpc.goingAway nothing says what ran; with it, an accepted call must have had its reply.
        report["unknown"] += len(outstanding)
        for call in outstanding.values():
            busy.discard(call.slot)
            report["errors"].append(f"unknown fate: {call.method} slot {call.slot} (goingAway: {accepted is not None})")
        sock.close()
        sock, received, sent, outstanding, accepted = None, b"", [], {}, None

    while True:
        stopping = os.path.exists(stop_file)
        if stopping and not queue and not outstanding:
            break
        if sock is None:
            try:
                sock = connect(address)
                report["connections"] += 1
            except (ConnectionRefusedError, FileNotFoundError) as error:
                report["refused"] += 1
                report["errors"].append(f"refused: {error}")
                time.sleep(0.01)
                continue
        if accepted is None:
            if not stopping:
                for slot in range(slots):
                    if slot not in busy:
                        busy.add(slot)
                        counter += 1
                        if counter % 2 and mode != "read-only":
                            queue.append(Call(slot, "kv.set", {"key": f"restart-{tag}-{slot}", "value": counter}, counter))
                        else:
                            queue.append(Call(slot, "calc.add", [counter, 1], counter + 1))
            out = b""
            while queue:
                call = queue.pop(0)
                payload = json.dumps({"jsonrpc": "2.0", "method": call.method, "params": call.params, "id": next_id}).encode()
                out += struct.pack(">I", len(payload)) + payload
                if call.first_sent is None:
                    call.first_sent = time.monotonic()
                sent.append((next_id, call))
                outstanding[next_id] = call
                next_id += 1
            if out:
                try:
                    sock.setblocking(True)
                    sock.sendall(out)
                    sock.setblocking(False)
                except OSError:
                    # Ended under us: what was sent is judged by what arrives (the read below sees the end).
                    sock.setblocking(False)
        readable, _, _ = select.select([sock], [], [], 0.2)
        if not readable:
            continue
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:
            continue
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            connection_ended()
            continue
        received += chunk
        while len(received) >= 4:
            length = struct.unpack(">I", received[:4])[0]
            if len(received) < 4 + length:
                break
            message = json.loads(received[4:4 + length])
            received = received[4 + length:]
            if message.get("method") == "rpc.goingAway":
                report["going_away"] += 1
                params = message["params"]
                accepted = params["accepted"]
                expected_last = sent[accepted - 1][0] if accepted > 0 else None
                if params["lastId"] != expected_last:
                    report["last_id_mismatches"] += 1
                for id, call in sent[accepted:]:
                    if outstanding.pop(id, None) is not None:
                        requeue(call)
                continue
            call = outstanding.pop(message.get("id"), None)
            if call is None:
                continue  # a -32006 for a call already resent after rpc.goingAway
            error = message.get("error")
            if error is not None and error["code"] == -32006:
                requeue(call)
                continue
            now = time.monotonic()
            busy.discard(call.slot)
            if error is not None:
                report["errors"].append(f"{call.method}: {error}")
                continue
            report["ok"] += 1
            report["max_gap_ms"] = max(report["max_gap_ms"], (now - last_ok) * 1000)
            report["max_call_ms"] = max(report["max_call_ms"], (now - call.first_sent) * 1000)
            last_ok = now
            if call.method == "kv.set":
                report["acknowledged"][call.params["key"]] = call.value
    if sock is not None:
        sock.close()
    report["max_gap_ms"] = round(report["max_gap_ms"], 1)
    report["max_call_ms"] = round(report["max_call_ms"], 1)
    report["errors"] = report["errors"][:20]
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
