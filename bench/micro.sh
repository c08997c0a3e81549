#!/usr/bin/env bash
# `make bench-micro`: instructions and heap allocations per operation for the hot paths of one call
# (bench/micro/main.swift), counted by valgrind, so that a change shows in repeatable numbers rather than in
# wall time on a shared machine.
#
# Each benchmark runs twice under callgrind (0 and N iterations) and twice under memcheck (0 and M); the
# difference divided by the iterations is the cost of one operation, start-up excluded. Valgrind 3.19 gives
# up on this toolchain's debug information, so it runs a copy of the binary with that stripped.
#
# ping16 is a read of 16 pipelined rpcd.ping frames through rpcd's own connection pipeline (bench/micro/
# PingPipeline.swift), counted per call: the whole server path of one call in user space, without the socket.
# (rpcd itself cannot run under Debian 12's valgrind 3.19: it crashes in libdispatch at start.) add16 is the
# same for calc.add's path through rpcd, to a stand-in answering as a module does (the module's own share is
# `interface`). websocket-ping16 is ping16-metrics over a connection upgraded to WebSocket (masked text frames).
# ping1 is ping16 with one call per read, as at 1 x 1 and 50 x 1: what a read burst costs beside its calls (on an
# EmbeddedChannel, whose writes and flushes are not a socket's). socket-ping1 is one call per round trip through
# the same pipeline on a real NIO socket channel and event loop (bench/micro/SocketPing.swift, a Unix socket
# pair; the calling thread's write and reads are counted too, the kernel's work is not): the user-space cost of
# a call at 1 x 1, NIO's wake-up, read, pending writes and flush included. socket-ping1-noidle is the same
# without IdleTimeout= (as bench.py runs rpcd): what IdleTimeoutHandler's place in every event's path costs.
#
# isolated16 is add16 to the real thing, as rpcd serves calc.add by default (Isolation=process): the supervisor,
# the link, and a real rpcd-module-host process running the shipped calc module (bench/micro/
# IsolatedPipeline.swift), started as rpcd starts it without root (no cgroup walls; the host's own sandbox
# applies). Its instructions are those of BOTH processes: callgrind follows the host (--trace-children=yes, one
# out file per process) and the counts are summed; the columns after the table give each process's share. It
# counts user-space instructions only: the system calls and wake-ups of the two (strace -c -f) are in
# bench/README.md. Its allocations are rpcd's side only (memcheck does not follow the host). Repeatable to
# about 1 % on rpcd's side (2 % at worst: how the two processes' reads interleave under callgrind varies) and
# 0.3 % on the host's. isolated-echo-1mib is one echo.echo of 1 MiB of params the same way (the shipped echo
# module): the large payload's copies, both ways; inprocess-echo-1mib the same with Isolation=none, its reference.
# Run by hand (`rpcd-microbench isolated-echo-1mib 500`, pinned to one CPU as bench.py pins rpcd and its hosts),
# these print the CPU time of each process per iteration besides the wall time.
#
# Environment: MICRO_ITERATIONS (callgrind, default 20000), MICRO_ALLOC_ITERATIONS (memcheck, default 2000),
# SCRATCH_PATH (default .build-release), MICRO_ONLY (names separated by spaces: only these).
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH_PATH=${SCRATCH_PATH:-.build-release}
command -v valgrind > /dev/null || { echo "bench/micro.sh: valgrind is missing (apt-get install valgrind)" >&2; exit 69; }
swift build -c release --scratch-path "$SCRATCH_PATH" --product rpcd-microbench >&2
if [[ -z "${MICRO_ONLY:-}" || "$MICRO_ONLY" == *isolated* ]]; then
    for product in rpcd-module-host calc echo; do
        swift build -c release --scratch-path "$SCRATCH_PATH" --product "$product" >&2
    done
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$SCRATCH_PATH/release/rpcd-microbench" "$work/microbench"
strip --strip-debug "$work/microbench"
for file in rpcd-module-host libcalc.so libecho.so; do  # the isolated benchmarks' host and modules, beside them
    if [[ -e "$SCRATCH_PATH/release/$file" ]]; then cp "$SCRATCH_PATH/release/$file" "$work/" && strip --strip-debug "$work/$file"; fi
done

instructions() {  # NAME ITERATIONS -> total instructions, of every process the benchmark started
    rm -f "$work"/cg.*
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/cg.%p" "$work/microbench" "$1" "$2" > /dev/null 2>&1
    # One line per process, the benchmark's first (lowest pid): "pid total".
    for out in "$work"/cg.*; do awk -v p="${out##*.}" '/^totals:/ { print p, $2 }' "$out"; done | sort -n > "$work/counts"
    awk '{ sum += $2 } END { printf "%.0f\n", sum }' "$work/counts"
}
allocations() {  # NAME ITERATIONS -> "allocs bytes"
    valgrind --tool=memcheck "$work/microbench" "$1" "$2" 2>&1 >/dev/null |
        sed -n 's/.*total heap usage: \([0-9,]*\) allocs, [0-9,]* frees, \([0-9,]*\) bytes allocated.*/\1 \2/p' | tr -d ,
}

printf '%-16s %14s %14s %16s\n' benchmark "instructions" "allocations" "bytes allocated"
# NAME:CALLS[:FEWER]: the benchmark runs CALLS calls per operation, and the counts are per call; FEWER divides
# the iterations (isolated16 costs some 50,000 instructions a call, under callgrind's slowdown twice, and
# isolated-echo-1mib millions).
for spec in envelope envelope-batch reply binding interface ping1 socket-ping1 socket-ping1-noidle ping16:16 ping16-metrics:16 add16:16 websocket-ping16:16 isolated16:16:10 isolated-echo-1mib:1:1000 inprocess-echo-1mib:1:1000; do
    name=${spec%%:*}
    [[ -n "${MICRO_ONLY:-}" && " $MICRO_ONLY " != *" $name "* ]] && continue
    IFS=: read -r _ per fewer <<< "$spec"
    per=${per:-1}
    # At least one: a count of fewer iterations than FEWER would divide by zero.
    N=$(( ${MICRO_ITERATIONS:-20000} / ${fewer:-1} )); (( N > 0 )) || N=1
    M=$(( ${MICRO_ALLOC_ITERATIONS:-2000} / ${fewer:-1} )); (( M > 0 )) || M=1
    base=$(instructions "$name" 0)
    base_rpcd=$(awk 'NR == 1 { print $2 }' "$work/counts")
    full=$(instructions "$name" "$N")
    full_rpcd=$(awk 'NR == 1 { print $2 }' "$work/counts")
    split=""
    [[ $(wc -l < "$work/counts") -gt 1 ]] &&
        split=$(printf '   (rpcd %d, host %d)' "$(( (full_rpcd - base_rpcd) / N / per ))" \
            "$(( ((full - full_rpcd) - (base - base_rpcd)) / N / per ))")
    read -r base_allocs base_bytes <<< "$(allocations "$name" 0)"
    read -r allocs bytes <<< "$(allocations "$name" "$M")"
    printf '%-16s %14.0f %14.2f %16.0f\n' "$name" "$(( (full - base) / N / per ))" \
        "$(awk -v a="$allocs" -v b="$base_allocs" -v m="$M" -v p="$per" 'BEGIN { print (a - b) / m / p }')" \
        "$(( (bytes - base_bytes) / M / per ))"
    if [[ -n "$split" ]]; then echo "$split"; fi
done

