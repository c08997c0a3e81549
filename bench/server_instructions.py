#!/usr/bin/env python3
"""Instructions per call through the whole server, counted by callgrind: what one rpcd.ping, calc.add (Swift
SDK) or sysinfo.hostname (C) costs rpcd from the bytes read to the reply written, pipelined as bench.py's
50 x 16 load sends them.

    bench/server_instructions.py BIN_DIR [--seconds N]

rpcd runs under valgrind with instrumentation off until it has started; it is switched on
(`callgrind_control -i on`) for a load of bench/loadgen.c, off again after it, and the instructions counted are
divided by the calls rpcd answered meanwhile (`rpcd.info`'s `calls.total` before and after, less the one
`rpcd.info` call itself). Modules run in rpcd's process (`Isolation=none`), so a module call's instructions
are all counted. Also printed: the share of those instructions spent in the per-peer accounting
(`PeerAccount.charge`/`release`/`forceCharge`, inclusive), the price of the fair shares per call.

Valgrind 3.19 cannot read this toolchain's debug information, so rpcd and the modules run from copies with it
stripped (as bench/micro.sh does). Bounded: each load stops by itself; rpcd is stopped on exit. Loopback only.
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

WORKLOADS = [("rpcd.ping", "[]"), ("calc.add", "[1, 2]"), ("sysinfo.hostname", "[]")]
ACCOUNTING = re.compile(r"11PeerAccountC(6charge|7release|11forceCharge)")


def stripped_copies(bin_dir, directory):
    """rpcd, the module host and the modules, with their debug information stripped, in `directory`."""
    os.makedirs(directory, exist_ok=True)
    for path in [os.path.join(bin_dir, "rpcd"), os.path.join(bin_dir, "rpcd-module-host")] + glob.glob(os.path.join(bin_dir, "lib*.so")):
        if os.path.exists(path):
            target = os.path.join(directory, os.path.basename(path))
            shutil.copy(path, target)
            subprocess.run(["strip", "--strip-debug", target], check=True)
    return directory


def total_calls(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(bench.frame({"jsonrpc": "2.0", "method": "rpcd.info", "id": 1}))
        return bench.read_frame(s)["result"]["calls"]["total"]


def measure(bin_dir, workdir, loadgen, method, params, seconds):
    port = bench.free_port()
    config = os.path.join(workdir, f"rpcd-{port}.conf")
    with open(config, "w") as file:
        file.write(f"[Server]\nListen=127.0.0.1:{port}\nThreads=1\nMaxConnections=100000\nMaxConnectionsPerPeer=100000\n"
                   "IdleTimeout=0\n")
    out = os.path.join(workdir, f"callgrind-{port}.out")
    log_path = os.path.join(workdir, f"rpcd-{port}.log")
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
             os.path.join(bin_dir, "rpcd"), "--config", config, "--handlers-dir", bench.in_process_handlers(workdir),
             "--module-dir", bin_dir], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while "Started" not in open(log_path).read():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"rpcd did not start under valgrind; see {log_path}")
            time.sleep(0.2)
        before = total_calls(port)
        subprocess.run(["callgrind_control", "-i", "on", str(process.pid)], check=True, capture_output=True)
        result = bench.load(loadgen, port, method, params, 50, 16, seconds, 0)
        subprocess.run(["callgrind_control", "-i", "off", str(process.pid)], check=True, capture_output=True)
        calls = total_calls(port) - before - 1
        if result.get("errors"):
            raise RuntimeError(f"{method}: {result['errors']} error replies")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=300)
    with open(out) as file:
        totals = next(int(line.split()[1]) for line in file if line.startswith(("totals:", "summary:")))
    annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                               capture_output=True, text=True, check=True).stdout
    accounting = 0
    for line in annotated.splitlines():
        match = re.match(r"\s*([\d,]+)\s.*\s(\S+)$", line)
        if match and ACCOUNTING.search(match.group(2)):
            accounting += int(match.group(1).replace(",", ""))
    return calls, totals, accounting


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bin_dir")
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    for tool in ("valgrind", "callgrind_control", "callgrind_annotate", "strip"):
        if not shutil.which(tool):
            sys.exit(f"bench/server_instructions.py: {tool} is missing (apt-get install valgrind binutils)")
    workdir = tempfile.mkdtemp(prefix="rpcd-instructions-")
    try:
        loadgen = os.path.join(workdir, "loadgen")
        subprocess.run(["cc", "-O2", "-o", loadgen, os.path.join(bench.ROOT, "bench", "loadgen.c"), "-lssl", "-lcrypto"], check=True)
        bin_dir = stripped_copies(args.bin_dir, os.path.join(workdir, "bin"))
        print(f"{'call (50 x 16, whole server)':<30} {'calls':>8} {'instructions/call':>18} {'accounting/call':>16}")
        record = {}
        for method, params in WORKLOADS:
            calls, instructions, accounting = measure(bin_dir, workdir, loadgen, method, params, args.seconds)
            record[method] = {"calls": calls, "instructions_per_call": round(instructions / calls),
                              "accounting_per_call": round(accounting / calls)}
            print(f"{method:<30} {calls:>8,} {instructions / calls:>18,.0f} {accounting / calls:>10,.0f} "
                  f"({accounting / instructions:.1%})")
        print(json.dumps(record))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
