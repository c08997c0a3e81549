#!/usr/bin/env bash
# The checks `make deb` runs on what it built:
#
#   packaging/check-debs.sh [--no-hardening] RPCD.dsc|RPCD.changes...
#
# lintian --pedantic on each (a .dsc: the source package; a .changes: the binary packages it lists): any
# error or warning fails (pedantic and info tags are shown, not failed on; the overrides in debian/*.lintian-
# overrides each say why). Then hardening-check (devscripts) on every ELF file of the binary packages but the
# debug symbols: each must have every protection that hardening-check knows, but for the exceptions below.
# --no-hardening skips it: a debug package (DEB_BUILD=debug) is the test suites' debug build, made without
# dpkg-buildflags.
set -euo pipefail
hardening=1
if [ "${1:-}" = --no-hardening ]; then hardening=""; shift; fi
status=0
for file in "$@"; do
    echo "== lintian --pedantic ${file##*/}"
    lintian --pedantic --info --display-info --fail-on error,warning "$file" || status=1
done

# hardening-check's options, each with its reason:
#   every file: --nocfprotection. Debian 12's dpkg-buildflags has no control-flow protection to ask for (its
#     "branch" feature came with dpkg 1.22), and swiftc emits no CET-marked code, so the linker marks no ELF
#     file with Swift code in it.
#   the module host and the Swift example modules: --nofortify. _FORTIFY_SOURCE works through glibc's headers
#     in C; these files are Swift only (their targets have no C source), and swiftc calls memcpy, read and the
#     like unfortified. (rpcd and rpcctl pass: their C, BoringSSL and the shims, calls the _chk variants.)
#   /usr/lib/rpcd/swift/*: --nofortify --nobindnow --nostackprotector. The Swift runtime as the toolchain
#     ships it, copied by scripts/bundle-swift-runtime.sh, not compiled here: built by Swift's own build without
#     _FORTIFY_SOURCE and -z now, libdispatch also without the stack protector.
hardening_flags() {
    echo --nocfprotection
    case $1 in
        /usr/lib/rpcd/rpcd-module-host | /usr/lib/rpcd/modules/libcalc.so | /usr/lib/rpcd/modules/libecho.so | \
            /usr/lib/rpcd/modules/libkv.so) echo --nofortify ;;
        /usr/lib/rpcd/swift/*) echo --nofortify --nobindnow --nostackprotector ;;
    esac
}
if [ -n "$hardening" ]; then
    for changes in "$@"; do
        case $changes in *.changes) ;; *) continue ;; esac
        directory=$(dirname "$changes")
        for deb in $(sed -n '/^Files:/,/^[^ ]/s/^ .* \([^ ]*\.deb\)$/\1/p' "$changes"); do
            case $deb in *-dbgsym_*) continue ;; esac
            unpacked=$(mktemp -d)
            dpkg-deb -x "$directory/$deb" "$unpacked"
            while IFS= read -r -d '' elf; do
                [ "$(head -c 4 "$elf" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
                path=${elf#"$unpacked"}
                # shellcheck disable=SC2046
                if ! report=$(hardening-check $(hardening_flags "$path") "$elf" 2>&1); then
                    status=1
                fi
                printf '%s\n' "${report//$unpacked/}"
            done < <(find "$unpacked" -type f -print0 | sort -z)
            rm -rf "$unpacked"
        done
    done
fi
exit $status
