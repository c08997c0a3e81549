#!/usr/bin/env python3
"""Pipelined calls per second through the rpcd Python package's asyncio client (python/rpcd/client.py):
one AsyncClient, one connection, WINDOW tasks each making CALLS/WINDOW calls of METHOD one after the other, so
that WINDOW calls are always in flight (rpcd's MaxCallsPerConnection= is 128 by default: more only wait in its
socket). Prints one JSON line.

    python3 bench/python_client.py ADDRESS [--calls N] [--window W] [--method rpcd.ping] [--runs R]

In `make bench` through bench/program.py (one run of 50,000 calls): issue 37's "Python client >= 20 000 calls/s
pipelined".
"""

import argparse
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from rpcd.client import AsyncClient  # noqa: E402


async def run(address, calls, window, method):
    async with AsyncClient(address) as client:
        await client.call(method)  # connected and warm
        per_worker = calls // window

        async def worker():
            for _ in range(per_worker):
                await client.call(method)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(window)))
        calls = per_worker * window
        return calls / (time.perf_counter() - started)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("--calls", type=int, default=100000)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--method", default="rpcd.ping")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rates = [asyncio.run(run(args.address, args.calls, args.window, args.method)) for _ in range(args.runs)]
    print(json.dumps({"address": args.address, "method": args.method, "calls": args.calls, "window": args.window,
                      "calls_per_second": [round(rate) for rate in rates], "best": round(max(rates))}))


if __name__ == "__main__":
    main()
