#!/usr/bin/env bash
# Compares the packages of two builds of one source package (make deb-repro):
#
#   packaging/compare-debs.sh DIR_A DIR_B
#
# Every .deb and .ddeb in DIR_A must exist in DIR_B and be the same, byte for byte (cmp); their sha256 sums are
# printed. For one that differs, diffoscope (Debian's diffoscope-minimal) says where, into DIR_B/NAME.diffoscope.txt.
set -euo pipefail
a=$1 b=$2
status=0
shopt -s nullglob
packages=("$a"/*.deb "$a"/*.ddeb)
[ ${#packages[@]} -gt 0 ] || { echo "compare-debs: no packages in $a" >&2; exit 1; }
for package in "${packages[@]}"; do
    name=${package##*/}
    if [ ! -e "$b/$name" ]; then
        echo "compare-debs: $name is missing from $b" >&2; status=1; continue
    fi
    if cmp -s "$package" "$b/$name"; then
        echo "identical  $(sha256sum < "$package" | cut -c1-64)  $(stat -c %s "$package") bytes  $name"
    else
        echo "DIFFERENT  $name" >&2
        status=1
        if command -v diffoscope >/dev/null; then
            diffoscope --text "$b/$name.diffoscope.txt" "$package" "$b/$name" >/dev/null || true
            head -n 60 "$b/$name.diffoscope.txt" >&2
        else
            diff <(dpkg-deb -c "$package") <(dpkg-deb -c "$b/$name") >&2 || true
        fi
    fi
done
exit $status
