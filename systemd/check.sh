#!/usr/bin/env bash
# Checks the systemd files in this folder without installing anything on the host:
#   1. `systemd-analyze verify` of sharepipe.service in a throwaway root (with a stand-in binary),
#   2. sharepipe.sysusers.conf and sharepipe.tmpfiles.conf applied to that root,
#   3. `systemd-analyze security --offline=true` exposure of the unit, at most $MAX_EXPOSURE.
# Prints the exposure and every finding; exits 1 on any problem. Needs systemd-analyze,
# systemd-sysusers and systemd-tmpfiles (Debian package `systemd`); getfacl (`acl`) is optional.
#
# Usage: systemd/check.sh [-v]     (-v prints the whole security table)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
unit="$here/sharepipe.service"
max_exposure="${MAX_EXPOSURE:-1.5}"
verbose=0
[ "${1:-}" = "-v" ] && verbose=1

for tool in systemd-analyze systemd-sysusers systemd-tmpfiles; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "check.sh: $tool not found (apt-get install systemd)" >&2
        exit 1
    fi
done

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# --- 1. verify ----------------------------------------------------------------------------------
# verify checks that ExecStart= and ExecReload= point at executables and that every unit named in
# dependencies exists, so the throwaway root gets the host's units, a stand-in daemon and kill.
mkdir -p "$root/etc/systemd/system" "$root/usr/lib/systemd" "$root/usr/local/bin" "$root/usr/bin"
cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/"
ln -s usr/bin "$root/bin"
printf '#!/bin/sh\nexit 0\n' >"$root/usr/local/bin/sharepipe"
chmod 0755 "$root/usr/local/bin/sharepipe"
cp "$(type -P kill)" "$root/usr/bin/kill"
cp "$unit" "$root/etc/systemd/system/sharepipe.service"

# verify exits 0 even on unknown keys or bad values, so any output at all counts as a finding.
if ! verify_out="$(systemd-analyze verify --root="$root" --man=no sharepipe.service 2>&1)"; then
    fail "systemd-analyze verify exited non-zero"
fi
if [ -n "$verify_out" ]; then
    fail "systemd-analyze verify reported:"
    printf '    %s\n' "${verify_out//"$root"/}"
else
    echo "ok: systemd-analyze verify sharepipe.service is clean"
fi

# --- 2. sysusers and tmpfiles -------------------------------------------------------------------
mkdir -p "$root/etc" "$root/usr/lib/sysusers.d" "$root/usr/lib/tmpfiles.d"
cp "$here/sharepipe.sysusers.conf" "$root/usr/lib/sysusers.d/sharepipe.conf"
sysusers_out="$(systemd-sysusers --root="$root" 2>&1)" || fail "systemd-sysusers exited non-zero"
if ! uid="$(awk -F: '$1 == "sharepipe" { print $3 }' "$root/etc/passwd")" || [ -z "$uid" ]; then
    fail "sysusers did not create the user sharepipe: $sysusers_out"
    uid=""
fi
grep -q '^sharepipe-drop:' "$root/etc/group" || fail "sysusers did not create the group sharepipe-drop"

if [ -n "$uid" ]; then
    # ACL entries are resolved with the host's user database, which has no sharepipe user here:
    # name it by the uid that sysusers just gave it in the throwaway root.
    sed "s/u:sharepipe:/u:$uid:/g" "$here/sharepipe.tmpfiles.conf" >"$root/usr/lib/tmpfiles.d/sharepipe.conf"
    if ! tmpfiles_out="$(systemd-tmpfiles --root="$root" --create 2>&1)" || [ -n "$tmpfiles_out" ]; then
        fail "systemd-tmpfiles --create reported:"
        printf '    %s\n' "${tmpfiles_out//"$root"/}"
    fi
    inbox="$root/srv/sharepipe/inbox"
    # Numbers, not names: the names exist only in the throwaway root's passwd and group.
    drop_gid="$(awk -F: '$1 == "sharepipe-drop" { print $3 }' "$root/etc/group")"
    inbox_stat="$(stat -c '%a %u %g' "$inbox" 2>/dev/null || echo missing)"
    [ "$inbox_stat" = "1730 $uid $drop_gid" ] || fail "inbox is '$inbox_stat', expected '1730 $uid $drop_gid'"
    if command -v getfacl >/dev/null 2>&1; then
        getfacl -n "$inbox" 2>/dev/null | grep -qx "default:user:$uid:rwx" \
            || fail "inbox has no default ACL entry for the sharepipe user"
    else
        echo "note: getfacl not installed, inbox ACL not inspected"
    fi
    processed="$(stat -c '%a %u' "$root/srv/sharepipe/processed" 2>/dev/null || echo missing)"
    [ "$processed" = "750 $uid" ] || fail "processed is '$processed', expected '750 $uid'"
    [ "$failures" -eq 0 ] && echo "ok: sysusers creates sharepipe and sharepipe-drop; tmpfiles creates inbox and output"
fi

# --- 3. security exposure -----------------------------------------------------------------------
security_out="$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1)" \
    || fail "systemd-analyze security exited non-zero"
if [ "$verbose" -eq 1 ]; then
    printf '%s\n' "$security_out"
else
    printf '%s\n' "$security_out" | grep '✗' || true
fi
exposure="$(printf '%s\n' "$security_out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')"
if [ -z "$exposure" ]; then
    fail "no exposure level in the output of systemd-analyze security"
else
    echo "exposure: $exposure (limit $max_exposure)"
    awk -v e="$exposure" -v m="$max_exposure" 'BEGIN { exit !(e <= m) }' \
        || fail "exposure $exposure is above $max_exposure"
fi

if [ "$failures" -gt 0 ]; then
    echo "check.sh: $failures problem(s)"
    exit 1
fi
echo "check.sh: all checks passed"
