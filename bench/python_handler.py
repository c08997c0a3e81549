#!/usr/bin/env python3
"""Calls per second through the rpcd.handler SDK alone, over pipes as rpcd will drive it
(docs/HANDLER-PROTOCOL.md): a handler program with one async method and one plain method, WINDOW calls always
in flight (issue 37's 50 x 16 is 800), each answered before another is sent in its place. No rpcd: this is
the SDK's share of a program handler's cost. Prints one JSON line.

    python3 bench/python_handler.py [--calls N] [--window W] [--method ping|aping] [--runs R]
"""

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
PROGRAM = textwrap.dedent("""
    from rpcd.handler import Service
    bench = Service("bench", "1.0.0")

    @bench.method(read_only=True)
    def ping() -> str:
        return "pong"

    @bench.method(read_only=True)
    async def aping() -> str:
        return "pong"

    bench.run()
""")


def run(calls, window, method):
    program = subprocess.Popen([sys.executable, "-c", PROGRAM], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               env=dict(os.environ, PYTHONPATH=PACKAGE))
    start = {"jsonrpc": "2.0", "id": 0, "method": "rpcd.start", "params": {"protocol": 1, "handler": "bench",
                                                                           "config": {}, "maxLineSize": 4194304}}
    program.stdin.write(json.dumps(start).encode() + b"\n")
    program.stdin.flush()
    program.stdout.readline()
    line = ('{"jsonrpc":"2.0","id":%d,"method":"bench.' + method + '","params":{},"caller":{"local":true}}\n')
    started = time.perf_counter()
    sent = answered = 0
    first = min(window, calls)
    program.stdin.write("".join(line % (i + 1) for i in range(first)).encode())
    program.stdin.flush()
    sent = first
    pending = b""
    fd = program.stdout.fileno()
    while answered < calls:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise RuntimeError("the handler program closed its output")
        pending += chunk
        lines = pending.split(b"\n")
        pending = lines.pop()
        answered += len(lines)
        more = min(len(lines), calls - sent)
        if more:
            program.stdin.write("".join(line % (sent + i + 1) for i in range(more)).encode())
            program.stdin.flush()
            sent += more
    elapsed = time.perf_counter() - started
    program.stdin.close()
    program.wait(10)
    program.stdout.close()
    return calls / elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=100000)
    parser.add_argument("--window", type=int, default=800)
    parser.add_argument("--method", default="aping", choices=["ping", "aping"])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rates = [run(args.calls, args.window, args.method) for _ in range(args.runs)]
    print(json.dumps({"method": args.method, "calls": args.calls, "window": args.window,
                      "calls_per_second": [round(rate) for rate in rates], "best": round(max(rates))}))


if __name__ == "__main__":
    main()
