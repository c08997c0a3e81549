#!/usr/bin/env bash
# What `make test` runs once `make deps` has installed what it needs: every suite, in lanes side by side, each
# step a make target of its own and timed. CI's machine has two cores, so the lanes are split by what they
# wait on rather than run all at once:
#
#   swift    the debug build with its tests, then the suites that use it: the Swift tests, the Python
#            interop and example tests (the Swift client example builds in .build too, reusing its products:
#            only its own target compiles; the Swift module example against the SDK package alone, in
#            seconds), the web console in headless Chromium, the soak, the memory bound under attack. Its output is shown
#            as it runs.
#   system   once that build is done: the systemd and Avahi system tests. They mostly wait on daemons in
#            namespaces of their own (their own /run, network and ports: nothing shared with the swift lane).
#   package  from the start, at low priority (nice), so that the tests above keep the processors they ask
#            for: the fuzzers (a sanitized build of their own, 10 s each); once the debug build is done, the
#            two packages made from it (DEB_BUILD=debug: no release build, which took most of the run's time
#            on a two-core machine), then the package test. Beside them, from the start, the Debian root the
#            package test boots (debootstrap: network and disk bound).
#
# The other lanes' output goes to .build/test-logs/LANE.log and is printed once every lane has ended; each
# step's to .build/test-logs/TARGET.out too. The status is non-zero when any step failed; the last lines give
# each failed step's error lines, then each step's time.
set -uo pipefail
cd "$(dirname "$0")/.."

LOGS=.build/test-logs
rm -rf "$LOGS"
mkdir -p "$LOGS"
MAKE=${MAKE:-make}
started=$SECONDS

# step TARGET [NICE]: runs `make TARGET`, records its time and status in $LOGS/times.
step() {
    local target=$1 start=$SECONDS status
    echo "== make $target"
    if [ "${2:-}" = nice ]; then
        nice -n 10 "$MAKE" --no-print-directory "$target" 2>&1 | tee "$LOGS/$target.out"
    else
        "$MAKE" --no-print-directory "$target" 2>&1 | tee "$LOGS/$target.out"
    fi
    status=${PIPESTATUS[0]}
    [ $status -eq 0 ] || echo "$target" >> "$LOGS/failed"
    printf '%-20s %5d s  %s\n' "$target" $((SECONDS - start)) "$([ $status -eq 0 ] && echo ok || echo "FAILED ($status)")" \
        >> "$LOGS/times"
    return $status
}

# lane NAME COMMAND...: runs COMMAND in the background with its output in $LOGS/NAME.log.
declare -A lanes
lane() {
    local name=$1
    shift
    echo "== lane $name started (log: $LOGS/$name.log)"
    "$@" > "$LOGS/$name.log" 2>&1 &
    lanes[$name]=$!
}

package_lane() {
    step test-package-root > "$LOGS/root.log" 2>&1 &
    local root=$! built=1 rooted
    step test-fuzz nice
    local fuzzed=$?
    # The packages hold the debug build: wait for the swift lane to say how it ended (bounded by that build).
    until [ -e "$LOGS/build.status" ]; do sleep 2; done
    if [ $fuzzed -eq 0 ] && [ "$(cat "$LOGS/build.status")" = ok ]; then
        step test-package-debs nice
        built=$?
    fi
    wait $root
    rooted=$?
    echo "== the root lane (make test-package-root): output"
    cat "$LOGS/root.log"
    [ $built -eq 0 ] && [ $rooted -eq 0 ] && step test-package-run
}
system_lane() {
    local failed=0
    step test-system || failed=1
    step test-avahi || failed=1
    return $failed
}

lane package package_lane

failed=0
if step build-tests; then
    echo ok > "$LOGS/build.status"
    lane system system_lane
    step test-swift || failed=1
    step test-python || failed=1
    step test-metrics || failed=1
    step test-browser || failed=1
    step test-soak || failed=1
    step test-bound || failed=1
else
    echo failed > "$LOGS/build.status"
    failed=1
fi

for name in system package; do
    [ -n "${lanes[$name]:-}" ] || continue
    wait "${lanes[$name]}" || failed=1
    echo
    echo "== lane $name: output"
    cat "$LOGS/$name.log"
done

# A failure's own lines, here at the end: a long run's output may be cut before them.
if [ -e "$LOGS/failed" ]; then
    echo
    echo "== what failed: each failed step's error lines"
    while read -r target; do
        echo "-- $target"
        grep -E 'error:|^(FAIL|ERROR):|^AssertionError|Error [0-9]+$' "$LOGS/$target.out" | head -n 30
    done < "$LOGS/failed"
fi

echo
echo "== make test: each step's time (lanes overlap), then the whole"
cat "$LOGS/times"
printf '%-20s %5d s  %s\n' "test" $((SECONDS - started)) "$([ $failed -eq 0 ] && echo ok || echo FAILED)"
exit $failed
