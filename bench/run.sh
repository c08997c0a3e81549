#!/usr/bin/env bash
# Benchmarks rpcd against the raw SwiftNIO frame echo server (rpcd-echo-reference) with `rpcctl bench rpcd.ping`,
# at 50 connections x depth 1 and x depth 16, and prints calls/s, p99 latency and the rpcd/reference ratio.
# Bounded: every bench run stops by itself (and is killed if it overruns); both servers are stopped on exit.
#
# Environment:
#   BENCH_SECONDS      measured seconds per run (default 10, 1..3600)
#   BENCH_WARMUP       warm-up seconds per run (default 1)
#   BENCH_CONNECTIONS  connections per run (default 50)
#   BENCH_DEPTHS       in-flight depths to run (default "1 16")
#   SCRATCH_PATH       SwiftPM scratch path holding release/ (default .build); missing products are built there
#
# Results: bench-results/<timestamp>-<server>-c<connections>-d<depth>.json (rpcctl bench --json) and
# bench-results/<timestamp>-summary.json. See bench/README.md.
set -euo pipefail

cd "$(dirname "$0")/.."
SCRATCH_PATH=${SCRATCH_PATH:-.build}
BIN="$SCRATCH_PATH/release"
RUN_SECONDS=${BENCH_SECONDS:-10}
WARMUP=${BENCH_WARMUP:-1}
CONNECTIONS=${BENCH_CONNECTIONS:-50}
DEPTHS=${BENCH_DEPTHS:-"1 16"}
OUT=bench-results

if ! [[ "$RUN_SECONDS" =~ ^[0-9]+$ ]] || (( RUN_SECONDS < 1 || RUN_SECONDS > 3600 )); then
    echo "bench/run.sh: BENCH_SECONDS must be a whole number from 1 to 3600" >&2
    exit 64
fi
if ! [[ "$WARMUP" =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! [[ "$CONNECTIONS" =~ ^[0-9]+$ ]]; then
    echo "bench/run.sh: BENCH_WARMUP must be a number of seconds and BENCH_CONNECTIONS a whole number" >&2
    exit 64
fi

for product in rpcd rpcctl rpcd-echo-reference; do
    if [[ ! -x "$BIN/$product" ]]; then
        echo "building $product (release) in $SCRATCH_PATH ..." >&2
        swift build -c release --scratch-path "$SCRATCH_PATH" --product "$product" >&2
    fi
done

mkdir -p "$OUT"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
CORES=$(nproc)

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

SERVER_PIDS=()
cleanup() {
    for pid in "${SERVER_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${SERVER_PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

RPCD_ADDRESS_UNDER_TEST="127.0.0.1:$(free_port)"
ECHO_ADDRESS="127.0.0.1:$(free_port)"

"$BIN/rpcd" --listen "$RPCD_ADDRESS_UNDER_TEST" 2>"$OUT/$STAMP-rpcd.log" &
SERVER_PIDS+=($!)
"$BIN/rpcd-echo-reference" --listen "$ECHO_ADDRESS" >"$OUT/$STAMP-reference.log" 2>&1 &
SERVER_PIDS+=($!)

# Wait (at most 10 s) until both answer.
for _ in $(seq 100); do
    if "$BIN/rpcctl" ping --address "$RPCD_ADDRESS_UNDER_TEST" --timeout 1 >/dev/null 2>&1 \
        && grep -q "listening on" "$OUT/$STAMP-reference.log"; then
        break
    fi
    sleep 0.1
done
"$BIN/rpcctl" ping --address "$RPCD_ADDRESS_UNDER_TEST" --timeout 1 >&2 || {
    echo "bench/run.sh: rpcd did not come up; see $OUT/$STAMP-rpcd.log" >&2
    exit 1
}
grep -q "listening on" "$OUT/$STAMP-reference.log" || {
    echo "bench/run.sh: rpcd-echo-reference did not come up; see $OUT/$STAMP-reference.log" >&2
    exit 1
}

echo "cores: $CORES; rpcd on $RPCD_ADDRESS_UNDER_TEST, reference on $ECHO_ADDRESS;" \
    "$CONNECTIONS connections, ${RUN_SECONDS} s per run after ${WARMUP} s warm-up" >&2

FAILED=0
RESULT_FILES=()
for depth in $DEPTHS; do
    for server in rpcd reference; do
        if [[ $server == rpcd ]]; then address=$RPCD_ADDRESS_UNDER_TEST; else address=$ECHO_ADDRESS; fi
        file="$OUT/$STAMP-$server-c$CONNECTIONS-d$depth.json"
        echo "  $server: $CONNECTIONS x depth $depth ..." >&2
        # The bench stops by itself after warm-up + duration (+ at most 5 s draining); the timeout is a backstop.
        if ! timeout --kill-after=5 "$(( RUN_SECONDS + ${WARMUP%.*} + 60 ))" \
            "$BIN/rpcctl" bench rpcd.ping --address "$address" --connections "$CONNECTIONS" --depth "$depth" \
            --duration "$RUN_SECONDS" --warmup "$WARMUP" --json >"$file"; then
            echo "bench/run.sh: the $server run at depth $depth failed (see above)" >&2
            FAILED=1
        fi
        RESULT_FILES+=("$server:$depth:$file")
    done
done

python3 - "$OUT/$STAMP-summary.json" "$CORES" "$RUN_SECONDS" "$CONNECTIONS" "${RESULT_FILES[@]}" <<'PY'
import json, sys

summary_path, cores, seconds, connections = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
results = {}
for entry in sys.argv[5:]:
    server, depth, path = entry.split(":", 2)
    try:
        with open(path) as f:
            results[(server, int(depth))] = json.load(f)
    except (OSError, ValueError):
        results[(server, int(depth))] = None

rows = []
print(f"\nrpcctl bench rpcd.ping, {connections} connections, {seconds} s per run, {cores} cores (client and servers share them)")
print(f"{'depth':>5}  {'rpcd calls/s':>13}  {'rpcd p99 ms':>11}  {'ref calls/s':>12}  {'ref p99 ms':>10}  {'rpcd/ref':>8}")
for depth in sorted({d for (_, d) in results}):
    rpcd, ref = results.get(("rpcd", depth)), results.get(("reference", depth))
    def cell(r, key, fmt):
        if r is None: return "failed"
        value = r[key] if key != "p99" else r["latency_ms"]["p99"]
        return format(value, fmt)
    ratio = None
    if rpcd and ref and ref["calls_per_second"] > 0:
        ratio = rpcd["calls_per_second"] / ref["calls_per_second"]
    print(f"{depth:>5}  {cell(rpcd, 'calls_per_second', ',.0f'):>13}  {cell(rpcd, 'p99', '.3f'):>11}  "
          f"{cell(ref, 'calls_per_second', ',.0f'):>12}  {cell(ref, 'p99', '.3f'):>10}  "
          f"{(format(ratio, '.2f') if ratio is not None else '-'):>8}")
    rows.append({"depth": depth, "connections": connections, "rpcd": rpcd, "reference": ref,
                 "ratio_calls_per_second": round(ratio, 3) if ratio is not None else None})

with open(summary_path, "w") as f:
    json.dump({"cores": cores, "seconds": seconds, "connections": connections, "method": "rpcd.ping",
               "runs": rows}, f, indent=2)
    f.write("\n")
print(f"\nresults: {summary_path}")
PY

exit "$FAILED"
