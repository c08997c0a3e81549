#!/usr/bin/env bash
# Builds the libFuzzer harnesses with AddressSanitizer and runs each for FUZZ_SECONDS (fuzz/README.md), one
# after another, and ends with a table of seconds and executions per harness, for an issue's closing note.
#
#   fuzz/run.sh                 every harness, FUZZ_SECONDS each (default 600: what an issue that touches a
#                               parser or codec needs before it is resolved)
#   fuzz/run.sh json config     only these
#   FUZZ_BUILD=debug            a debug build (faster to build, slower to run)
#
# New inputs go to FUZZ_WORK/corpus/NAME (default .build-fuzz/work, ignored by git); the committed seeds in
# fuzz/corpus/NAME are read, never written. A crash, a sanitizer report or an input slower than FUZZ_TIMEOUT
# seconds stops the run with a non-zero status and leaves the input in FUZZ_WORK/artifacts/NAME/.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH

SECONDS_EACH=${FUZZ_SECONDS:-600}
# release: optimized (preconditions and overflow checks stay; `assert` goes), about ten times the executions
# per second, but a cold build takes minutes; debug builds faster, which suits short runs (make test-fuzz).
BUILD=${FUZZ_BUILD:-release}
TIMEOUT=${FUZZ_TIMEOUT:-10}
WORK=${FUZZ_WORK:-.build-fuzz/work}
SWIFT=${SWIFT:-swift}
# No allocation stacks and a small quarantine: twice the executions per second for allocation-heavy harnesses
# (config), at the cost of less detail in a report. Rerun a crash file with ASAN_OPTIONS= for the full report.
export ASAN_OPTIONS=${ASAN_OPTIONS-malloc_context_size=0:quarantine_size_mb=16}
HARNESSES=("$@")
SUMMARY=()
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(frame json envelope params config modulelink websocket)

for name in "${HARNESSES[@]}"; do
    # The fuzz targets exist only with RPCD_FUZZ=1 (see Package.swift).
    RPCD_FUZZ=1 nice -n 10 "$SWIFT" build -c "$BUILD" --scratch-path .build-fuzz \
        -Xswiftc -sanitize=fuzzer,address --product "fuzz-$name" 2>&1 | { grep -v "Cannot export local symbol" || true; }
    # (gold's warnings about ASan's local symbols are harmless and many.)
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "fuzz-$name did not build" >&2; exit 1; }
done

for name in "${HARNESSES[@]}"; do
    mkdir -p "$WORK/corpus/$name" "$WORK/artifacts/$name"
    echo "== fuzz-$name for ${SECONDS_EACH}s"
    if ! nice -n 10 ".build-fuzz/$BUILD/fuzz-$name" -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT" \
        -print_final_stats=1 -artifact_prefix="$WORK/artifacts/$name/" \
        "$WORK/corpus/$name" "fuzz/corpus/$name" > "$WORK/fuzz-$name.log" 2>&1; then
        tail -n 60 "$WORK/fuzz-$name.log" >&2
        echo "fuzz-$name failed; reproduce with: .build-fuzz/$BUILD/fuzz-$name $WORK/artifacts/$name/<file>" >&2
        exit 1
    fi
    grep -E "^(Done|stat::number_of_executed_units|stat::average_exec_per_sec)" "$WORK/fuzz-$name.log" || true
    # libFuzzer's own count: "Done 1234 runs in 601 second(s)".
    SUMMARY+=("$(sed -n "s/^Done \([0-9]*\) runs in \([0-9]*\) second.*/fuzz-$name: \2 s, \1 executions, no failure/p" \
        "$WORK/fuzz-$name.log")")
done
printf '%s\n' "== $BUILD build, $(date -u '+%Y-%m-%d %H:%M UTC')" "${SUMMARY[@]}"
