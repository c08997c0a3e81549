#!/usr/bin/env bash
# Makes rpcd's Debian source package, format 3.0 (quilt), with the Swift dependencies as a component of it,
# so that it builds with no network (packaging/README.md, "The source package"):
#
#   packaging/source-package.sh WORK [DEBIAN_VERSION]
#
# In WORK/src: rpcd_U.orig.tar.gz (this tree as it is, without packaging and build folders),
# rpcd_U.orig-vendor.tar.gz (the resolved checkouts of every Swift package Package.swift names, directly
# or not, with the Package.resolved and the SwiftPM workspace state that pin them), rpcd_V.debian.tar.xz,
# rpcd_V.dsc, and the unpacked tree rpcd/ with debian/ and vendor/, ready for dpkg-buildpackage.
# DEBIAN_VERSION (e.g. 0.1.0-1+test1) gives debian/changelog a newer entry first (dated a minute after the
# last one: a fixed date, so that a rebuild is as reproducible as the release it rebuilds).
#
# The dependencies are resolved here, once per Package.swift (cached in WORK/vendor), from wherever git
# reaches their URLs: making the source package is the one step that needs them, as for Debian's Go and Rust
# packages with a vendor component. The tree is brought up to date with rsync rather than made anew, so that
# unchanged files keep their inodes and an incremental build stays incremental. Every tarball is made with a
# fixed order, owner and time (the changelog's), so that the same tree gives the same source package.
set -euo pipefail
work=$1 version=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
upstream=$(sed -n 's/.*static let version = "\(.*\)"/\1/p' "$root/Sources/RPCProtocol/RPCDaemonVersion.swift")
src=$work/src tree=$work/src/rpcd vendor=$work/vendor
epoch=$(dpkg-parsechangelog -l "$root/packaging/debian/changelog" -S Timestamp)
tar_reproducibly() { # DIRECTORY NAME OUTPUT [tar options]: DIRECTORY/NAME as a gzip'ed tar, byte for byte the same each time
    local directory=$1 name=$2 output=$3
    shift 3
    tar -C "$directory" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --format=gnu "$@" \
        -c "$name" | gzip -9n > "$output.tmp"
    mv "$output.tmp" "$output"
}
mkdir -p "$src" "$tree"

# The vendor component: what `swift package resolve` fetches for Package.swift, without the git metadata.
if ! cmp -s "$root/Package.swift" "$vendor/Package.swift" || [ ! -e "$vendor/vendor.tar.gz" ]; then
    rm -rf "$vendor"
    mkdir -p "$vendor/resolve" "$vendor/tree/vendor/checkouts"
    cp "$root/Package.swift" "$vendor/resolve/"
    swiftpm=(--scratch-path "$vendor/scratch" --cache-path "$vendor/swiftpm/cache"
             --config-path "$vendor/swiftpm/config" --security-path "$vendor/swiftpm/security")
    (cd "$vendor/resolve" && swift package "${swiftpm[@]}" --disable-dependency-cache resolve)
    for checkout in "$vendor/scratch/checkouts"/*; do
        mkdir "$vendor/tree/vendor/checkouts/${checkout##*/}"
        tar -C "$checkout" --exclude=./.git -c . | tar -C "$vendor/tree/vendor/checkouts/${checkout##*/}" -x
    done
    cp "$vendor/resolve/Package.resolved" "$vendor/scratch/workspace-state.json" "$vendor/tree/vendor/"
    cat > "$vendor/tree/vendor/README" <<EOF
The Swift packages rpcd's Package.swift depends on, directly or not, as \`swift package resolve\` checked
them out when this source package was made (packaging/source-package.sh), without their git metadata.
Package.resolved and workspace-state.json pin them; debian/rules puts checkouts/ and workspace-state.json
into the build's scratch folder, and \`swift build --disable-automatic-resolution\` builds from them with no
network. Their licences are in debian/copyright.
EOF
    tar_reproducibly "$vendor/tree" vendor "$vendor/vendor.tar.gz"
    cp "$root/Package.swift" "$vendor/Package.swift"
fi

# The upstream tree: this checkout's files, build folders, packaging output and the vendor folder left out
# at any depth (the examples have .build folders of their own).
rsync -a --delete --exclude='.build*' --exclude=.swiftpm --exclude=__pycache__ --exclude=/.git \
    --exclude=/dist --exclude=/bench-results --exclude=/debian --exclude=/vendor --exclude=/Package.resolved \
    "$root/" "$tree/"
rm -f "$tree/Package.resolved"
rsync -a --delete "$vendor/tree/vendor/" "$tree/vendor/"
rm -rf "$tree/debian" && cp -r "$root/packaging/debian" "$tree/debian"
if [ -n "$version" ]; then
    { printf 'rpcd (%s) bookworm; urgency=medium\n\n  * Rebuilt as %s.\n\n -- %s  %s\n\n' "$version" "$version" \
        "$(sed -n 's/^Maintainer: //p' "$root/packaging/debian/control")" "$(date -R -d "@$((epoch + 60))")"
      cat "$root/packaging/debian/changelog"; } > "$tree/debian/changelog"
fi
tar_reproducibly "$src" rpcd "$src/rpcd_$upstream.orig.tar.gz" --exclude=rpcd/debian --exclude=rpcd/vendor
cp "$vendor/vendor.tar.gz" "$src/rpcd_$upstream.orig-vendor.tar.gz"
full=$(dpkg-parsechangelog -l "$tree/debian/changelog" -S Version)
rm -f "$src/rpcd_$full.dsc" "$src/rpcd_$full.debian.tar.xz"
(cd "$src" && dpkg-source -b rpcd)
echo "$src/rpcd_$full.dsc"
