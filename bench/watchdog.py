#!/usr/bin/env python3
"""How close rpcd's watchdog pings come to WatchdogSec= on a loaded machine (docs/OPERATIONS.md, "The watchdog").

    python3 bench/watchdog.py BIN_DIR [--seconds 60] [--watchdog-sec 10]

Runs BIN_DIR/rpcd as systemd would for the watchdog (NOTIFY_SOCKET on a datagram socket of this script's,
WATCHDOG_USEC, WATCHDOG_PID) with the example modules, on loopback and a Unix socket in a temporary
directory, and records when each WATCHDOG=1 arrives while `rpcctl bench` keeps calls in flight (calc.add over
TCP, as many connections as it takes to keep both cores busy) for the whole run. rpcd pings every WatchdogSec/3
when its liveness probe round answered: a gap of 2/3 WatchdogSec means one round was missed (answered late),
and systemd kills at a gap of WatchdogSec. Prints the gaps' distribution and the largest gap as a share of WatchdogSec. Bounded: it
stops after --seconds and kills what it started. Loopback only. Not a test: wall time on a shared machine.
"""

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin_dir")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--watchdog-sec", type=float, default=10)
    parser.add_argument("--port", type=int, default=17391)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    bin_dir = os.path.abspath(args.bin_dir)

    with tempfile.TemporaryDirectory(prefix="rpcd-watchdog-") as work:
        notify_path = os.path.join(work, "notify")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.settimeout(0.5)
        unix = os.path.join(work, "rpcd.sock")
        config = os.path.join(work, "rpcd.conf")
        with open(config, "w") as file:
            file.write(f"[Server]\nListen={unix}\nListen=127.0.0.1:{args.port}\n")
        environment = dict(os.environ, NOTIFY_SOCKET=notify_path,
                           WATCHDOG_USEC=str(int(args.watchdog_sec * 1_000_000)))
        daemon = subprocess.Popen(
            [os.path.join(bin_dir, "rpcd"), "--config", config, "--handlers-dir", os.path.join(root, "config/handlers.d"),
             "--module-dir", bin_dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=environment)
        load = None
        try:
            deadline = time.monotonic() + 30
            ready = False
            while not ready and time.monotonic() < deadline:
                try:
                    ready = b"READY=1" in notify.recv(4096)
                except socket.timeout:
                    if daemon.poll() is not None:
                        sys.exit(f"rpcd exited with {daemon.returncode} before READY=1")
            if not ready:
                sys.exit("rpcd did not say READY=1 within 30 s")
            load = subprocess.Popen(
                [os.path.join(bin_dir, "rpcctl"), "bench", "calc.add", "--params", "[1,2]", "--address",
                 f"127.0.0.1:{args.port}", "--connections", str(args.connections), "--depth", "4",
                 "--duration", str(args.seconds), "--warmup", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True)
            pings = []
            end = time.monotonic() + args.seconds
            while time.monotonic() < end:
                try:
                    message = notify.recv(4096)
                except socket.timeout:
                    continue
                if b"WATCHDOG=1" in message:
                    pings.append(time.monotonic())
            bench_output = load.communicate(timeout=60)[0]
            load = None
        finally:
            for process in (load, daemon):
                if process is not None and process.poll() is None:
                    process.send_signal(signal.SIGTERM)
                    try:
                        process.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
    gaps = [later - earlier for earlier, later in zip(pings, pings[1:])]
    if not gaps:
        sys.exit("fewer than two watchdog pings")
    with open("/proc/loadavg") as file:
        loadavg = file.read().split()[0]
    largest = max(gaps)
    print(f"WatchdogSec={args.watchdog_sec:g}s, {len(pings)} pings in {args.seconds:g} s under calc.add load "
          f"({args.connections} connections), load average {loadavg} on {os.cpu_count()} cores")
    print(f"gaps (s): median {statistics.median(gaps):.3f}, largest {largest:.3f} "
          f"({100 * largest / args.watchdog_sec:.0f}% of WatchdogSec), "
          f"missed rounds (gap > WatchdogSec/2): {sum(gap > 0.5 * args.watchdog_sec for gap in gaps)}")
    for line in bench_output.splitlines():
        if "calls/s" in line or "p99" in line:
            print("load:", line.strip())


if __name__ == "__main__":
    main()
