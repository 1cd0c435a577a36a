#!/usr/bin/env bash
# Installs a sharepipe .deb on this machine, checks the installed files, and removes it again:
#   1. apt-get installs the package (and any missing Depends:);
#   2. the binary loads nothing from a Swift toolchain and runs with an empty environment;
#   3. systemd-analyze verify and systemd-analyze security --offline=true on the installed unit;
#   4. the installed "sharepipe doctor" passes as the sharepipe user, with the packaged config;
#   5. a "--oneshot" daemon run as the sharepipe user stores a JPEG dropped into the packaged inbox;
#   6. the man page and completions are where man and the shells look;
#   7. the package is purged, and what the check itself created (user, groups, directories) is removed.
# Needs root, apt-get and systemd-analyze. Refuses to run when sharepipe is already installed, or when the sharepipe
# user or /srv/sharepipe already exist: the clean-up must not touch anything it did not create.
#
# Usage: packaging/check-installed.sh PACKAGE.deb      (MAX_EXPOSURE, default 1.5, as systemd/check.sh)
set -euo pipefail

deb="$(readlink -f "${1:?usage: check-installed.sh PACKAGE.deb}")"
root="$(cd "$(dirname "$0")/.." && pwd)"
max_exposure="${MAX_EXPOSURE:-1.5}"
unit=/usr/lib/systemd/system/sharepipe.service
config=/etc/sharepipe/sharepipe.json
state=/var/lib/sharepipe

[ "$(id -u)" -eq 0 ] || { echo "check-installed.sh: needs root" >&2; exit 1; }
if dpkg -s sharepipe >/dev/null 2>&1; then
    echo "check-installed.sh: sharepipe is already installed; refusing to replace it" >&2
    exit 1
fi
if getent passwd sharepipe >/dev/null || getent group sharepipe-drop >/dev/null || [ -e /srv/sharepipe ] \
    || [ -e "$state" ]; then
    echo "check-installed.sh: the sharepipe user, /srv/sharepipe or $state exists; refusing to touch it" >&2
    exit 1
fi

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
cleanup() {
    if dpkg -s sharepipe >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -q sharepipe >/dev/null 2>&1 || dpkg --purge sharepipe || true
    fi
    rm -rf /srv/sharepipe "$state" /etc/sharepipe
    userdel sharepipe 2>/dev/null || true
    groupdel sharepipe 2>/dev/null || true
    groupdel sharepipe-drop 2>/dev/null || true
}
trap cleanup EXIT

# --- 1. install ---------------------------------------------------------------------------------
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$deb" >/dev/null
dpkg -s sharepipe | grep -q '^Status: install ok installed' || fail "dpkg does not list sharepipe as installed"
echo "ok: installed $(dpkg-query -W -f '${Package} ${Version} (Depends: ${Depends})' sharepipe)"

# --- 2. no toolchain ----------------------------------------------------------------------------
toolchain="$(dirname "$(dirname "$(readlink -f "$(command -v swift || echo /nonexistent/bin/swift)")")")"
# SwiftPM always writes RUNPATH $ORIGIN; any other entry would point into a build machine's directories.
runpath="$(objdump -p /usr/bin/sharepipe | awk '$1 == "RPATH" || $1 == "RUNPATH" { print $2 }')"
if [ -n "$runpath" ] && [ "$runpath" != '$ORIGIN' ]; then
    fail "the installed binary searches libraries in $runpath"
fi
libraries="$(ldd /usr/bin/sharepipe)"
if grep -q 'not found' <<<"$libraries" || grep -q 'libswift\|libFoundation\|libdispatch' <<<"$libraries" \
    || grep -qF "$toolchain" <<<"$libraries"; then
    fail "the installed binary needs libraries from a Swift toolchain:"
    printf '    %s\n' "$libraries"
fi
version="$(env -i /usr/bin/sharepipe --version)" || fail "the installed binary does not run with an empty environment"
echo "ok: $version runs without a Swift toolchain ($(wc -l <<<"$libraries") shared libraries, all from Debian)"

# --- 3. the installed unit ----------------------------------------------------------------------
# verify exits 0 even on unknown keys or bad values, so any output at all counts as a finding.
verify_out="$(systemd-analyze verify --man=no "$unit" 2>&1)" || fail "systemd-analyze verify exited non-zero"
if [ -n "$verify_out" ]; then
    fail "systemd-analyze verify $unit reported:"
    printf '    %s\n' "$verify_out"
else
    echo "ok: systemd-analyze verify $unit is clean"
fi
security_out="$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1)" \
    || fail "systemd-analyze security exited non-zero"
exposure="$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$security_out")"
if [ -z "$exposure" ]; then
    fail "no exposure level in the output of systemd-analyze security: $security_out"
elif awk -v e="$exposure" -v m="$max_exposure" 'BEGIN { exit !(e <= m) }'; then
    echo "ok: exposure $exposure (limit $max_exposure)"
else
    fail "exposure $exposure is above $max_exposure"
fi

# --- 4. doctor, as the service runs it ----------------------------------------------------------
# systemd creates StateDirectory= when it starts the unit; without systemd running, create it the same way.
install -d -o sharepipe -g sharepipe -m 0700 "$state"
as_service=(runuser -u sharepipe -- env -i STATE_DIRECTORY="$state" PATH=/usr/bin:/bin)
if doctor_out="$("${as_service[@]}" sharepipe doctor --config "$config" 2>&1)"; then
    echo "ok: sharepipe doctor passes as the sharepipe user"
else
    fail "sharepipe doctor failed:"
    printf '    %s\n' "$doctor_out"
fi

# --- 5. a oneshot drop --------------------------------------------------------------------------
photo="$root/Fixtures/files/photo.jpg"
install -m 0644 "$photo" /srv/sharepipe/inbox/photo.jpg
if drop_out="$("${as_service[@]}" sharepipe daemon --config "$config" --oneshot 2>&1)"; then
    if cmp -s "$photo" /srv/sharepipe/processed/image/photo.jpg && [ ! -e /srv/sharepipe/inbox/photo.jpg ]; then
        echo "ok: a --oneshot daemon stored the dropped JPEG in /srv/sharepipe/processed/image"
    else
        fail "the dropped JPEG is not in /srv/sharepipe/processed/image: $(find /srv/sharepipe | tr '\n' ' ')"
    fi
else
    fail "sharepipe daemon --oneshot failed:"
    printf '    %s\n' "$drop_out"
fi

# --- 6. man page and completions ----------------------------------------------------------------
if command -v man >/dev/null 2>&1; then
    man_err="$(MANWIDTH=100 man --warnings sharepipe 2>&1 >/dev/null)" || fail "man sharepipe failed: $man_err"
    [ -z "$man_err" ] || fail "man sharepipe warned: $man_err"
fi
for file in /usr/share/man/man1/sharepipe.1.gz /usr/share/bash-completion/completions/sharepipe \
    /usr/share/zsh/vendor-completions/_sharepipe /usr/share/fish/vendor_completions.d/sharepipe.fish; do
    [ -s "$file" ] || fail "$file is missing"
done
bash -n /usr/share/bash-completion/completions/sharepipe || fail "the bash completion does not parse"
[ "$failures" -eq 0 ] && echo "ok: man page and bash, zsh and fish completions installed"

# --- 7. remove ----------------------------------------------------------------------------------
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q sharepipe >/dev/null
if dpkg -s sharepipe >/dev/null 2>&1 || [ -e /usr/bin/sharepipe ] || [ -e "$unit" ] || [ -e "$config" ]; then
    fail "purging left the package or its files behind"
else
    echo "ok: purged; /usr/bin/sharepipe, the unit and the config are gone"
fi

if [ "$failures" -gt 0 ]; then
    echo "check-installed.sh: $failures problem(s)"
    exit 1
fi
echo "check-installed.sh: all checks passed"
