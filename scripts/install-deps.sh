#!/usr/bin/env bash
# Installs what building, running and testing rpcd needs on Debian 12, beyond the Swift toolchain.
# Idempotent: apt is only asked when something is missing. Run as root (or with sudo available).
set -euo pipefail

packages=(
    python3        # the interop client in examples/python and its tests
    pkg-config     # SwiftPM finds system libraries through it
    procps         # pgrep/ps, used by the test and bench scripts
    make           # the README's commands
    gcc            # cc, for the C example module built by the tests (examples/modules/hello-c)
    libsystemd-dev # sd_notify, sd_listen_fds, sd_journal_sendv (the CSystemd target)
    systemd        # the system tests boot a real systemd in namespaces; systemd-analyze verify/security
    util-linux     # unshare and nsenter for the system tests
    iproute2       # ip: the system tests bring up loopback in their network namespace
)

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v swift >/dev/null 2>&1 && [ ! -x /opt/swift/usr/bin/swift ]; then
    echo "error: the Swift toolchain (6.1 or later) is not installed; see https://www.swift.org/install/linux/" >&2
    exit 1
fi
