#!/usr/bin/env python3
"""What a program handler costs against a module (issue 37's performance rows), one rpcd, same run.

    bench/program.py BIN_DIR [--seconds S] [--warmup S]

rpcd (pinned to CPU 0, one event loop) serves the shipped handlers plus two program handlers: `hostprog`, the
work of sysinfo.hostname as a C program against docs/HANDLER-PROTOCOL.md (bench/hostname-program.c), and
`notes`, the Python example (examples/python-handler/notes.py, the `rpcd` package of python/). The load client
is bench/loadgen.c on CPU 1. Rows: sysinfo.hostname (the isolated C module) and hostprog.hostname at 50 x 16
and 50 x 1 with their ratio, notes.search (the Python SDK, an async method) at 50 x 16, cmd.true (a command
method running /bin/true) at 16 x 1 with its p99, the Python client (AsyncClient, 128 calls in flight on one
connection, bench/python_client.py) calling rpcd.ping, and the time from
SIGKILL of the C program to its service answering again (three kills 10 s apart, median and max). A measurement, not a
test; bounded; loopback only.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import CLIENT_CPU, ROOT, Server, free_port, load, pinned  # noqa: E402


def handlers(workdir):
    directory = os.path.join(workdir, "handlers.d")
    shutil.copytree(os.path.join(ROOT, "config", "handlers.d"), directory)
    programs = os.path.join(workdir, "programs")
    os.makedirs(programs)
    os.chmod(workdir, 0o755)
    hostprog = os.path.join(programs, "hostname-program")
    subprocess.run(["cc", "-O2", "-o", hostprog, os.path.join(ROOT, "bench", "hostname-program.c")], check=True)
    shutil.copytree(os.path.join(ROOT, "python", "rpcd"), os.path.join(programs, "rpcd"))
    shutil.copy(os.path.join(ROOT, "examples", "python-handler", "notes.py"), programs)
    wrapper = os.path.join(programs, "notes")
    with open(wrapper, "w") as file:
        file.write(f"#!/bin/sh\nPYTHONPATH={programs} exec /usr/bin/python3 {programs}/notes.py\n")
    for path in (hostprog, wrapper):
        os.chmod(path, 0o755)
    with open(os.path.join(directory, "hostprog.conf"), "w") as file:
        file.write(f"[Handler]\nExec={hostprog}\n")
    with open(os.path.join(directory, "notes.conf"), "w") as file:
        file.write(f"[Handler]\nExec={wrapper}\n[Config]\nMaxNotes=1000\n")
    with open(os.path.join(directory, "cmd.conf"), "w") as file:
        file.write("[Command]\nMethod=true\nExec=/bin/true\nReadOnly=yes\n")
    return directory


def call(port, method, timeout=2):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    body = json.dumps({"jsonrpc": "2.0", "method": method, "id": 1}).encode()
    s.sendall(len(body).to_bytes(4, "big") + body)
    head = s.recv(4)
    length = int.from_bytes(head, "big")
    data = b""
    while len(data) < length:
        data += s.recv(length - len(data))
    s.close()
    return json.loads(data)


def program_pid(rpcd_pid, needle):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                command = file.read()
        except OSError:
            continue
        if needle.encode() in command and int(pid) != rpcd_pid:
            return int(pid)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bin_dir")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        loadgen = os.path.join(workdir, "loadgen")
        subprocess.run(["cc", "-O2", "-o", loadgen, os.path.join(ROOT, "bench", "loadgen.c"), "-lssl", "-lcrypto"], check=True)
        port = free_port()
        config = os.path.join(workdir, "rpcd.conf")
        with open(config, "w") as file:
            file.write(f"[Server]\nListen=127.0.0.1:{port}\nThreads=1\n")
        rpcd = Server("rpcd", [os.path.join(args.bin_dir, "rpcd"), "--config", config, "--handlers-dir", handlers(workdir),
                               "--module-dir", args.bin_dir], port, workdir, "Started")
        results = {}
        try:
            for connections, depth in ((50, 16), (50, 1)):
                for method in ("sysinfo.hostname", "hostprog.hostname"):
                    result = load(loadgen, port, method, "[]", connections, depth, args.seconds, args.warmup)
                    results[f"{method} {connections}x{depth}"] = round(result["calls_per_second"])
                results[f"ratio {connections}x{depth}"] = round(
                    results[f"hostprog.hostname {connections}x{depth}"] / results[f"sysinfo.hostname {connections}x{depth}"], 2)
            result = load(loadgen, port, "notes.search", "{}", 50, 16, args.seconds, args.warmup)
            results["notes.search (Python SDK) 50x16"] = round(result["calls_per_second"])
            # The Python package's client, pipelined (128 calls in flight on one connection), on the client's core.
            client = subprocess.run(
                pinned(CLIENT_CPU, [sys.executable, os.path.join(ROOT, "bench", "python_client.py"), f"127.0.0.1:{port}",
                                    "--calls", "50000", "--runs", "1"]),
                capture_output=True, text=True, check=True, timeout=120)
            results["Python client (AsyncClient) rpcd.ping, 128 in flight"] = json.loads(client.stdout)["best"]
            # A command method: one process per call, 16 at once (its handler's MaxConcurrency= default).
            result = load(loadgen, port, "cmd.true", "[]", 16, 1, args.seconds, args.warmup)
            results["cmd.true (command /bin/true) 16x1"] = round(result["calls_per_second"])
            results["cmd.true 16x1 p99 ms, errors"] = [round(result["p99_us"] / 1000, 1), result["errors"]]
            gaps = []
            for _ in range(3):
                pid = program_pid(rpcd.process.pid, "hostname-program")
                killed = time.monotonic()
                os.kill(pid, signal.SIGKILL)
                while True:
                    try:
                        if "result" in call(port, "hostprog.hostname"):
                            break
                    except OSError:
                        pass
                    time.sleep(0.002)
                gaps.append((time.monotonic() - killed) * 1000)
                time.sleep(10.5)  # out of the restart backoff's window: each crash is a first
            gaps.sort()
            results["crash to answering again, ms (median, max)"] = [round(gaps[1], 1), round(gaps[-1], 1)]
        finally:
            rpcd.stop()
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
