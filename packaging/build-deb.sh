#!/usr/bin/env bash
# Builds the Debian package of sharepipe with dpkg-deb: a release binary that needs no Swift toolchain (the Swift
# runtime is linked in statically), the systemd unit, sysusers.d and tmpfiles.d entries, the example config as a
# conffile, the man page and the bash, zsh and fish completions. The man page and the completions come from the
# binary itself ("sharepipe manpage", "sharepipe completions SHELL"), so they always match its --help.
#
# Depends: is computed from the binary's NEEDED libraries (each mapped to the Debian package that ships it), plus
# systemd for systemd-sysusers and systemd-tmpfiles in postinst.
#
# Usage: packaging/build-deb.sh [OUTPUT-DIR]        (default: .build/deb; prints the .deb's path last)
# Environment: SHAREPIPE_RELEASE_SCRATCH, the release build directory (default: .build/release-static).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/.build/deb}"
scratch="${SHAREPIPE_RELEASE_SCRATCH:-$root/.build/release-static}"
here="$root/packaging"

for tool in dpkg-deb dpkg objdump gzip; do
    command -v "$tool" >/dev/null 2>&1 || { echo "build-deb.sh: $tool not found" >&2; exit 1; }
done

(cd "$root" && swift build -c release --product sharepipe --static-swift-stdlib --scratch-path "$scratch" >&2)
binary="$scratch/release/sharepipe"
version="$("$binary" --version | awk '{ print $2 }')"
arch="$(dpkg --print-architecture)"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
pkg="$stage/sharepipe_${version}_${arch}"
mkdir -p "$pkg/DEBIAN"

install -D -m 0755 "$binary" "$pkg/usr/bin/sharepipe"
# Symbols are for debugging; the package ships the code only.
strip --strip-unneeded "$pkg/usr/bin/sharepipe"
# The unit in systemd/ is for a manual install into /usr/local; the package puts the binary in /usr/bin.
sed 's|/usr/local/bin/sharepipe|/usr/bin/sharepipe|g' "$root/systemd/sharepipe.service" \
    | install -D -m 0644 /dev/stdin "$pkg/usr/lib/systemd/system/sharepipe.service"
install -D -m 0644 "$root/systemd/sharepipe.sysusers.conf" "$pkg/usr/lib/sysusers.d/sharepipe.conf"
install -D -m 0644 "$root/systemd/sharepipe.tmpfiles.conf" "$pkg/usr/lib/tmpfiles.d/sharepipe.conf"
install -D -m 0644 "$root/systemd/sharepipe.json" "$pkg/etc/sharepipe/sharepipe.json"
install -D -m 0644 "$here/copyright" "$pkg/usr/share/doc/sharepipe/copyright"

mkdir -p "$pkg/usr/share/man/man1"
"$binary" manpage | gzip -9n >"$pkg/usr/share/man/man1/sharepipe.1.gz"
for shell in bash zsh fish; do
    case "$shell" in
        bash) path="usr/share/bash-completion/completions/sharepipe" ;;
        zsh) path="usr/share/zsh/vendor-completions/_sharepipe" ;;
        fish) path="usr/share/fish/vendor_completions.d/sharepipe.fish" ;;
    esac
    "$binary" completions "$shell" | install -D -m 0644 /dev/stdin "$pkg/$path"
done

# Depends: the package of every shared library the binary loads.
depends=()
while read -r library; do
    # awk reads to the end (no early exit), so ldconfig never dies of SIGPIPE under pipefail.
    path="$(ldconfig -p | awk -v lib="$library" '$1 == lib && $NF ~ /^\// && !found { print $NF; found = 1 }')"
    [ -n "$path" ] || { echo "build-deb.sh: cannot find $library" >&2; exit 1; }
    owner="$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path")"
    depends+=("${owner%%:*}")
done < <(objdump -p "$pkg/usr/bin/sharepipe" | awk '$1 == "NEEDED" { print $2 }')
depends+=(systemd)
depends_line="$(printf '%s\n' "${depends[@]}" | sort -u | paste -sd, - | sed 's/,/, /g')"

installed_size="$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/$depends_line/" \
    -e "s/@INSTALLED_SIZE@/$installed_size/" "$here/control.in" >"$pkg/DEBIAN/control"
echo "/etc/sharepipe/sharepipe.json" >"$pkg/DEBIAN/conffiles"
for script in postinst prerm postrm; do
    install -m 0755 "$here/$script" "$pkg/DEBIAN/$script"
done

mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$out" >&2
echo "$out/sharepipe_${version}_${arch}.deb"
