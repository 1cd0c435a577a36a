# Helpers the benchmark scripts share; sourced, after the script sets SCRIPT (its name in messages).

die() { printf '%s: %s\n' "${SCRIPT:-benchmark}" "$*" >&2; exit 1; }

now() { date +%s.%N; }

# CPU time (user + system) a process has used so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

wait_for_line() { # FILE PATTERN: up to 30 s
    local i
    for ((i = 0; i < 300; i++)); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    die "timed out waiting for '$2' in $1"
}
