#!/usr/bin/env bash
# Builds a source package with no network, as a Debian build daemon does:
#
#   packaging/build-offline.sh RPCD.dsc DIR
#
# unpacks RPCD.dsc (dpkg-source -x: the orig, orig-vendor and debian tarballs) into DIR/rpcd afresh and runs
# `dpkg-buildpackage -b -us -uc` there in a network namespace of its own (unshare -n) with only loopback up
# (for the tests dh_auto_test runs; DEB_BUILD_OPTIONS=nocheck skips them), a HOME that does not exist, and
# git's system and global configuration ignored (on the project's machines that configuration points
# github.com at a local mirror, which would otherwise answer a fetch even without a network). Fails if the
# build fails or if SwiftPM's log shows it fetching, cloning or resolving anything. The packages and the log
# (DIR/build.log) are left in DIR. Needs root (unshare -n).
set -euo pipefail
dsc=$(readlink -f "$1") dir=$2
rm -rf "$dir"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
dpkg-source -x "$dsc" "$dir/rpcd"
swift=$(command -v swift || echo /opt/swift/usr/bin/swift)
cd "$dir/rpcd"
started=$(date +%s)
status=0
env -i PATH="$(dirname "$swift"):/usr/sbin:/usr/bin:/sbin:/bin" HOME=/nonexistent LANG=C.UTF-8 \
    GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-}" \
    unshare --net sh -c 'ip link set lo up && exec dpkg-buildpackage -b -us -uc' > "$dir/build.log" 2>&1 || status=$?
tail -n 15 "$dir/build.log"
if [ "$status" -ne 0 ]; then
    echo "build-offline: dpkg-buildpackage failed ($status) with no network: $dir/build.log" >&2
    exit 1
fi
if grep -nE '^(Fetching|Fetched|Cloning|Updating|Creating working copy|Computing version)' "$dir/build.log"; then
    echo "build-offline: SwiftPM reached for a repository during the build ($dir/build.log)" >&2
    exit 1
fi
echo "build-offline: built with no network in $(( $(date +%s) - started )) s: $(cd "$dir" && ls ./*.deb | tr '\n' ' ')"
