"""A small JSON-RPC client the system tests run inside the namespace (its sockets are only there).

    ns_client.py loop ADDRESS METHOD PARAMS_JSON SECONDS MAX_CALLS
        calls METHOD over one connection, one after the other, until SECONDS or MAX_CALLS; prints
        {"ok": N, "errors": [...], "p99_ms": P, "max_ms": M} and stops at the first failure.
    ns_client.py inflight ADDRESS COUNT MILLISECONDS
        sends COUNT echo.sleep calls at once on one connection, prints "sent", then waits for every reply;
        prints {"answered": N, "results": [...], "notifications": [...], "error": null or "..."} (the
        notifications' methods: rpc.goingAway when rpcd stops meanwhile).
    ns_client.py event ADDRESS EVENT SECONDS
        subscribes to EVENT (over any transport the address names, ws:// included), prints "subscribed", then
        prints the first event's params as JSON, or {"error": "..."} after SECONDS.
    ns_client.py restart ADDRESS STOP_FILE
        calls through restarts with the package's AsyncClient, as an application would (no handling of its
        own: the client resends what rpcd did not run): 4 tasks alternate kv.set (key restart-lib-N, not
        idempotent) and calc.add (idempotent=True) while a subscription to kv.changed runs, until STOP_FILE
        exists; prints {"ok": N, "failed": F, "errors": [...], "acknowledged": {key: value}, "resubscribed": R,
        "events_after_last": E, "max_gap_ms": M}.
"""

import asyncio

import json
import socket
import os
import sys
import time

# The rpcd package (python/rpcd) lies beside this file where the system tests stage it, in python/ in a checkout.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "python")]
from rpcd._wire import DEFAULT_MAX_MESSAGE, FramedCodec  # noqa: E402
from rpcd.client import AsyncClient, Client, Event, Resubscribed  # noqa: E402


def loop(address, method, params, seconds, max_calls):
    ok, errors, latencies = 0, [], []
    deadline = time.monotonic() + float(seconds)
    try:
        with Client(address, timeout=10) as client:
            while time.monotonic() < deadline and ok < int(max_calls):
                started = time.monotonic()
                client.call(method, json.loads(params))
                latencies.append(time.monotonic() - started)
                ok += 1
    except Exception as error:  # noqa: BLE001 - every failure is reported to the test
        errors.append(f"{type(error).__name__}: {error}")
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000 if latencies else None
    maximum = latencies[-1] * 1000 if latencies else None
    print(json.dumps({"ok": ok, "errors": errors, "p99_ms": p99, "max_ms": maximum}), flush=True)


def inflight(address, count, milliseconds):
    """Raw frames on a Unix socket (the rpcd package's framing, not its Client: that one acts on rpc.goingAway
    itself, resending what did not run), so that this reports what the server sent."""
    results, notifications, error = [], [], None
    codec = FramedCodec(DEFAULT_MAX_MESSAGE)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(30)
            connection.connect(address)
            ids = list(range(1, int(count) + 1))
            for id in ids:
                body = {"jsonrpc": "2.0", "method": "echo.sleep", "params": [int(milliseconds)], "id": id}
                connection.sendall(codec.encode(json.dumps(body).encode()))
            print("sent", flush=True)
            while len(results) < len(ids):
                data = connection.recv(65536)
                if not data:
                    raise ConnectionError("closed")
                for payload in codec.feed(data):
                    message = json.loads(payload)
                    if "id" in message:
                        results.append(message)
                    else:
                        notifications.append(message["method"])
    except Exception as failure:  # noqa: BLE001
        error = f"{type(failure).__name__}: {failure}"
    print(json.dumps({"answered": len(results), "results": results, "notifications": notifications, "error": error}), flush=True)


def event(address, name, seconds):
    try:
        with Client(address, timeout=float(seconds)) as client:
            subscription = client.subscribe(name)
            print("subscribed", flush=True)
            while True:
                method, params = client.next_notification()
                if method == "rpc.event" and params.get("subscription") == subscription:
                    print(json.dumps(params), flush=True)
                    return
    except Exception as failure:  # noqa: BLE001
        print(json.dumps({"error": f"{type(failure).__name__}: {failure}"}), flush=True)


def restart(address, stop_file):
    report = {"ok": 0, "failed": 0, "errors": [], "acknowledged": {}, "resubscribed": 0, "events_after_last": 0,
              "max_gap_ms": 0.0}
    last_ok = time.monotonic()

    def succeeded():
        nonlocal last_ok
        now = time.monotonic()
        report["ok"] += 1
        report["max_gap_ms"] = max(report["max_gap_ms"], round((now - last_ok) * 1000, 1))
        last_ok = now

    async def caller(client, n):
        i = 0
        while not os.path.exists(stop_file):
            i += 1
            try:
                if i % 2:
                    await client.call("kv.set", {"key": f"restart-lib-{n}", "value": i})
                    report["acknowledged"][f"restart-lib-{n}"] = i
                elif await client.call("calc.add", [i, 1], idempotent=True) != i + 1:
                    raise AssertionError("calc.add: wrong sum")
                succeeded()
            except Exception as error:  # noqa: BLE001 (every failure is counted and named)
                report["failed"] += 1
                report["errors"].append(f"{type(error).__name__}: {error}"[:200])

    async def watch(client):
        async for item in await client.subscribe("kv.changed"):
            if isinstance(item, Resubscribed):
                report["resubscribed"] += 1
                report["events_after_last"] = 0
            elif isinstance(item, Event):
                report["events_after_last"] += 1

    async def main():
        async with AsyncClient(address, timeout=30) as client:
            watcher = asyncio.ensure_future(watch(client))
            await asyncio.gather(*(caller(client, n) for n in range(4)))
            await asyncio.sleep(0.2)  # the last sets' events
            watcher.cancel()

    asyncio.run(main())
    report["errors"] = report["errors"][:20]
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    {"loop": loop, "inflight": inflight, "event": event, "restart": restart}[sys.argv[1]](*sys.argv[2:])
