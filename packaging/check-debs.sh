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

# hardening-check's options for the files it cannot judge: their reasons.
#   /usr/lib/rpcd/swift/*: the Swift runtime as the toolchain ships it (scripts/bundle-swift-runtime.sh copies
#     it, it is not compiled here): checked like the rest, but --nofortify, as its C++ is built by Swift's own
#     build without _FORTIFY_SOURCE.
hardening_flags() {
    case $1 in
        */usr/lib/rpcd/swift/*) echo --nofortify ;;
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
