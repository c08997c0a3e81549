#!/usr/bin/env bash
# Installs what building, running and testing rpcd needs on Debian 12, beyond the Swift toolchain.
# Idempotent: apt is only asked when something is missing. Run as root (or with sudo available).
set -euo pipefail

packages=(
    python3        # the rpcd Python package (python/) and the interop tests
    python3-pip    # installs the PyPI libraries of the HTTP interop tests (below)
    pkg-config     # SwiftPM finds system libraries through it
    procps         # pgrep/ps, used by the test and bench scripts
    make           # the README's commands
    gcc            # cc, for the C example module built by the tests (examples/modules/hello-c)
    libsystemd-dev # sd_notify, sd_listen_fds, sd_journal_sendv (the CSystemd target)
    systemd        # the system tests boot a real systemd in namespaces; systemd-analyze verify/security
    util-linux     # unshare and nsenter for the system tests
    iproute2       # ip: the system tests bring up loopback in their network namespace
    valgrind       # make bench-micro counts instructions and allocations with it
    libssl-dev     # make bench: the C load client speaks TLS through OpenSSL
    g++            # make bench-reference: the C++ JSON-RPC reference (bench/jsonrpc-reference.cpp)
    libsimdjson-dev # its JSON parser (simdjson 3.0.1 on Debian 12)
    # make deb (packaging/debian) and its test on a Debian 12 root made with debootstrap (packaging/README.md).
    debhelper
    dpkg-dev
    dh-python      # python3-rpcd, built by pybuild from python/pyproject.toml (setuptools)
    pybuild-plugin-pyproject
    python3-all
    python3-setuptools
    patchelf       # points the packaged binaries at their private Swift runtime
    lintian
    debootstrap
    rsync          # make deb brings its copy of the tree up to date (unchanged files keep the build warm)
    devscripts     # make deb: hardening-check on every ELF file of the packages (packaging/check-debs.sh)
    diffoscope-minimal # make deb-repro: shows where two builds' packages differ (packaging/compare-debs.sh)
    prometheus     # make test-metrics: promtool checks the exposition and the alerting rules; the system test scrapes rpcd
    tmux           # make test-metrics drives rpcctl top in a real terminal
    openssl        # the TLS tests make their own CA and certificates with it (docs/SECURITY.md has the commands)
    curl           # the HTTP listeners' interop tests (examples/http) call rpcd with it
    wrk            # make bench: the HTTP load client (bench/README.md)
    # Avahi service discovery (docs/DISCOVERY.md): the library rpcd links, and for the system tests a
    # daemon, its bus, the browse tools and the network-namespace tools they run in.
    libavahi-client-dev
    avahi-daemon
    avahi-utils
    dbus
    # Wide-area DNS-SD (docs/DISCOVERY.md): ldns signs rpcd's DNS UPDATEs with TSIG and answers rpcctl's
    # unicast browsing (the CLDNS target); the wide-area test runs a real BIND 9 named in a namespace and
    # checks its zone with dig. bind9 is a service: policy-rc.d below keeps it from starting here.
    libldns-dev
    bind9
    bind9-dnsutils
    # make test-browser: the web console in a real browser (Chromium and its WebDriver, driven by selenium).
    chromium
    chromium-driver
)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    # avahi-daemon and dbus are services: their maintainer scripts must not start them on this host (the
    # tests run their own copies inside network namespaces only). invoke-rc.d asks policy-rc.d, and exit
    # status 101 means "action forbidden". Put one in place for the install unless one already exists.
    # An avahi-daemon that already runs here is the user's and is left alone: rpcd advertises through it, and
    # the Avahi tests, which never use it, refuse to run beside it rather than stop it.
    policy=/usr/sbin/policy-rc.d
    created_policy=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\n# Temporary, from rpcd scripts/install-deps.sh: start no services.\nexit 101\n' | $sudo tee "$policy" >/dev/null
        $sudo chmod 755 "$policy"
        created_policy=1
    fi
    restore_policy() { if [ -n "$created_policy" ]; then $sudo rm -f "$policy"; fi; }
    trap restore_policy EXIT
    echo "installing: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
    restore_policy
    created_policy=""
    trap - EXIT
fi

# Python libraries the HTTP interop tests (examples/http) call rpcd with: clients nobody here wrote; and
# selenium, which drives Chromium in the web console's browser test (Tests/BrowserTests, make test-browser).
python_packages=(requests websockets jsonrpcclient selenium)
missing_python=()
for package in "${python_packages[@]}"; do
    python3 -c "import $package" 2>/dev/null || missing_python+=("$package")
done
if ((${#missing_python[@]})); then
    echo "installing from PyPI: ${missing_python[*]}"
    # For every user, not root's own site-packages: `make check` runs as any user. Debian's own python3 is
    # externally managed (PEP 668): there pip needs --break-system-packages, and installs under /usr/local,
    # beside Debian's packages rather than over them.
    $sudo python3 -m pip install --quiet "${missing_python[@]}" \
        || $sudo python3 -m pip install --quiet --break-system-packages "${missing_python[@]}"
fi

if ! command -v swift >/dev/null 2>&1 && [ ! -x /opt/swift/usr/bin/swift ]; then
    echo "error: the Swift toolchain (6.1 or later) is not installed; see https://www.swift.org/install/linux/" >&2
    exit 1
fi
