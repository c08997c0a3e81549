#!/usr/bin/env bash
# `make bench`: builds the release products (rpcd, the example modules, rpcd-echo-reference), the HTTP reference
# (bench/hummingbird-reference, a package of its own: rpcd does not depend on Hummingbird) and the C++ JSON-RPC
# reference (make bench-reference), and runs bench/bench.py, which measures rpcd on pinned cores against
# references measured in the same run and prints the table described in bench/README.md.
#
# Environment:
#   BENCH_SECONDS   measured seconds per run (default 5, 1..3600)
#   BENCH_WARMUP    warm-up seconds per run (default 1)
#   BENCH_IDLE      idle connections for the RSS-per-connection measurement (default 10000)
#   BENCH_ONLY      workloads to run (default all): ping c-module swift-sdk echo-1mib isolation metrics tls idle
#                   events http programs (bench/program.py: program handlers and command methods)
#   BENCH_ROUNDS    rounds of rpcd.ping against the C++ reference per shape, and of the isolation, metrics,
#                   WebSocket and HTTP rows against theirs, alternated (default 1; medians are printed)
#   SCRATCH_PATH    SwiftPM scratch path for the release build (default .build-release)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${BENCH_SECONDS:-5}
if ! [[ "$SECONDS_PER_RUN" =~ ^[0-9]+$ ]] || (( SECONDS_PER_RUN < 1 || SECONDS_PER_RUN > 3600 )); then
    echo "bench/run.sh: BENCH_SECONDS must be a whole number from 1 to 3600" >&2
    exit 64
fi
SCRATCH_PATH=${SCRATCH_PATH:-.build-release}
swift build -c release --scratch-path "$SCRATCH_PATH" >&2
only=()
programs=yes
if [[ -n "${BENCH_ONLY:-}" ]]; then
    [[ " $BENCH_ONLY " == *" programs "* ]] || programs=no
    rest=$(echo " $BENCH_ONLY " | sed 's/ programs / /g' | xargs)
    only=(--only ${rest:-none})
fi
hummingbird=()
if [[ -z "${BENCH_ONLY:-}" || " $BENCH_ONLY " == *" http "* ]]; then
    swift build -c release --package-path bench/hummingbird-reference --scratch-path .build-hummingbird >&2
    hummingbird=(--hummingbird .build-hummingbird/release/HummingbirdReference)
fi
reference=()
if [[ -z "${BENCH_ONLY:-}" || " $BENCH_ONLY " == *" ping "* ]]; then
    ${MAKE:-make} --no-print-directory bench-reference >&2
    reference=(--reference .build/jsonrpc-reference/jsonrpc-reference)
fi
if [[ "${only[*]:-}" != "--only none" ]]; then
    python3 bench/bench.py "$SCRATCH_PATH/release" --seconds "$SECONDS_PER_RUN" --warmup "${BENCH_WARMUP:-1}" \
        --idle "${BENCH_IDLE:-10000}" --rounds "${BENCH_ROUNDS:-1}" "${hummingbird[@]}" "${reference[@]}" "${only[@]}"
fi
if [[ $programs == yes ]]; then
    python3 bench/program.py "$SCRATCH_PATH/release" --seconds "$SECONDS_PER_RUN" --warmup "${BENCH_WARMUP:-1}"
fi
