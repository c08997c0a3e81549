#!/usr/bin/env bash
# Copies the Swift runtime libraries that the given ELF files need, and the libraries those need in turn,
# from the toolchain into a private directory, and points every file's RUNPATH there: what a machine without
# Swift needs to run rpcd, rpcctl and the Swift modules (make install SWIFT_RUNTIME=private; the package).
#
#   scripts/bundle-swift-runtime.sh DESTDIR RUNTIME_DIR FILE...
#
# RUNTIME_DIR and FILE are the installed paths (/usr/lib/rpcd/swift, /usr/bin/rpcd), found under DESTDIR.
# Only libraries from the toolchain's runtime directory are copied; system libraries stay the system's, for
# dpkg-shlibdeps to turn into dependencies. One copy of the runtime serves the daemon and every module it
# loads: two in one process would break casts. Refuses to bundle ICU (rpcd imports FoundationEssentials only).
# The copies are stripped (they carry no debug information to keep).
set -euo pipefail
destdir=$1 runtime_dir=$2
shift 2
swift=$(command -v swift || echo /opt/swift/usr/bin/swift)
toolchain_lib=$(cd "$(dirname "$(readlink -f "$swift")")/../lib/swift/linux" && pwd)
command -v patchelf >/dev/null || { echo "bundle-swift-runtime: patchelf is missing (apt install patchelf)" >&2; exit 1; }

install -d "$destdir$runtime_dir"
# The toolchain's libraries that ELF file $1 loads, resolved the way the dynamic linker would.
toolchain_needs() {
    LD_LIBRARY_PATH=$toolchain_lib ldd "$1" | awk -v lib="$toolchain_lib/" 'index($3, lib) == 1 { print $3 }'
}
queue=()
for file in "$@"; do queue+=("$destdir$file"); done
declare -A copied=()
while ((${#queue[@]})); do
    file=${queue[0]}
    queue=("${queue[@]:1}")
    for library in $(toolchain_needs "$file"); do
        name=$(basename "$library")
        [ -n "${copied[$name]:-}" ] && continue
        case $name in *ICU*|*icu*|libFoundation.so|libFoundationInternationalization.so)
            echo "bundle-swift-runtime: $file needs $name: import FoundationEssentials, not Foundation" >&2; exit 1;;
        esac
        install -m 0644 "$library" "$destdir$runtime_dir/$name"
        # The toolchain's copies keep their symbol tables (no debug information): a package ships them without.
        strip --strip-unneeded --remove-section=.comment --remove-section=.note "$destdir$runtime_dir/$name"
        copied[$name]=1
        queue+=("$destdir$runtime_dir/$name")
    done
done
for file in "$@"; do patchelf --set-rpath "$runtime_dir" "$destdir$file"; done
for name in "${!copied[@]}"; do patchelf --set-rpath '$ORIGIN' "$destdir$runtime_dir/$name"; done
echo "bundled the Swift runtime in $runtime_dir: $(printf '%s\n' "${!copied[@]}" | sort | tr '\n' ' ')"
