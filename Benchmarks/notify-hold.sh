#!/usr/bin/env bash
# Issue 33, session 11: section 7's drop (COUNT mixed 4 KiB files into a running `daemon --processor discard
# --settle 50`, timed by peers/harness.py until the inbox and the stages are empty) without --notify, with one
# --notify receiver (peers/webhook_receiver.py) and the default --notify-hold, and with --notify-hold 0 (delivery
# at once, as before session 11). ROUNDS interleaved rounds, the order rotated each round; prints each drop, the
# medians and the ratios, how long after the drain the last event was delivered, and the daemon's CPU.
#
#   Benchmarks/notify-hold.sh [ROUNDS [COUNT]]      (release build: swift build -c release --product sharepipe)
set -euo pipefail

ROUNDS=${1:-5}
COUNT=${2:-2000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-$ROOT/.build/release}
PEERS=$ROOT/Benchmarks/peers
WORK=${WORK:-$ROOT/.build/bench-notify-hold}
TICKS=$(getconf CLK_TCK)

SCRIPT=notify-hold.sh
# shellcheck source=Benchmarks/lib.sh
source "$ROOT/Benchmarks/lib.sh"
[ -x "$BIN/sharepipe" ] || die "no $BIN/sharepipe (swift build -c release --product sharepipe)"
harness() { python3 "$PEERS/harness.py" "$@"; }
seconds_of() { awk -v t="$1" -v k="$TICKS" 'BEGIN { printf "%.2f", t / k }'; }

# The receiver's count (rewritten every second).
received() { cat "$WORK/webhook.count" 2>/dev/null || echo 0; }

mkdir -p "$WORK"
exec 9>"$WORK.lock"
flock -n 9 || die "another notify-hold.sh is using $WORK"
rm -rf "${WORK:?}"/*
python3 "$PEERS/webhook_receiver.py" "$WORK/webhook.port" "$WORK/webhook.count" &
RECEIVER=$!
trap 'kill "$RECEIVER" 2>/dev/null || true' EXIT
wait_for_line "$WORK/webhook.port" "[0-9]"
URL="http://127.0.0.1:$(cat "$WORK/webhook.port")/hook"

declare -A RATE DELAY CPU
# One drop: CONTENDER is none, hold (the default hold) or nohold (--notify-hold 0).
drop() { # CONTENDER ROUND
    local contender=$1 round=$2 dir=$WORK/$1 pid result files seconds rate before after ended total start_count
    local delivered first last
    local options=()
    case $contender in
        hold) options=(--notify "$URL") ;;
        nohold) options=(--notify "$URL" --notify-hold 0) ;;
    esac
    rm -rf "$dir"
    mkdir -p "$dir/inbox"
    harness make "$dir/source" "$COUNT" "$ROOT/Fixtures/files"
    sync
    start_count=$(received)
    "$BIN/sharepipe" daemon --inbox "$dir/inbox" --state "$dir/state" --processor discard --settle 50 \
        "${options[@]}" 2>"$dir/daemon.log" &
    pid=$!
    wait_for_line "$dir/daemon.log" "event=daemon.ready"
    sleep 1
    before=$(cpu_ticks "$pid")
    result=$(harness drop "$dir/source" "$dir/inbox" \
        --wait "$dir/state/staging" --wait "$dir/state/incoming" --wait "$dir/state/processing")
    ended=$(now)
    after=$(cpu_ticks "$pid")
    read -r files seconds rate <<<"$result"
    local note=""
    if [ "$contender" != none ]; then
        # Every event (published and processed) acknowledged; the receiver's count lags up to a second.
        local i
        for ((i = 0; i < 600; i++)); do
            (($(received) - start_count >= 2 * COUNT)) && break
            sleep 0.1
        done
    fi
    total=$(cpu_ticks "$pid")
    kill -TERM "$pid"
    wait "$pid" || die "the daemon exited with $? (log: $dir/daemon.log)"
    if [ "$contender" != none ]; then
        # delivered_at is marked right after each receiver's answer (every 8 rows at most): ms since the epoch.
        read -r delivered first last < <(python3 - "$dir/state/ledger.sqlite" "$ended" "$seconds" <<'EOF'
import sqlite3, sys
database, ended, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
count, first, last = sqlite3.connect(database).execute(
    "SELECT COUNT(*), MIN(delivered_at), MAX(delivered_at) FROM outbox WHERE state = 'delivered'").fetchone()
started = ended - seconds
print(count, "%.2f" % (first / 1000 - started), "%.2f" % (last / 1000 - ended))
EOF
        )
        DELAY[$contender.$round]=$last
        note=", $delivered events: first $first s after the drop began, last $last s after the drain"
    fi
    RATE[$contender.$round]=$rate
    CPU[$contender.$round]=$(seconds_of $((after - before)))
    printf '  %-6s %5d files in %6.2f s = %7.1f files/s, daemon CPU %s s in the drain, %s s to the end%s\n' \
        "$contender" "$files" "$seconds" "$rate" "${CPU[$contender.$round]}" "$(seconds_of $((total - before)))" \
        "$note"
}

median() {
    sort -g | awk 'NF { v[++n] = $1 } END { if (n) print (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }'
}
column() { # TABLE CONTENDER
    local -n table=$1
    local round
    for ((round = 1; round <= ROUNDS; round++)); do echo "${table[$2.$round]:-}"; done
}

echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
CONTENDERS=(none hold nohold)
for ((round = 1; round <= ROUNDS; round++)); do
    echo "round $round"
    for ((k = 0; k < ${#CONTENDERS[@]}; k++)); do
        drop "${CONTENDERS[(k + round - 1) % ${#CONTENDERS[@]}]}" "$round"
    done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
for contender in "${CONTENDERS[@]}"; do
    printf '%-6s median %7.1f files/s (%s), daemon CPU in the drain median %s s' "$contender" \
        "$(column RATE "$contender" | median)" "$(column RATE "$contender" | paste -sd' ')" \
        "$(column CPU "$contender" | median)"
    [ "$contender" = none ] || printf ', last event median %s s after the drain' "$(column DELAY "$contender" | median)"
    echo
done
for contender in hold nohold; do
    ratios=$(for ((round = 1; round <= ROUNDS; round++)); do
        awk -v a="${RATE[$contender.$round]}" -v b="${RATE[none.$round]}" 'BEGIN { printf "%.2f\n", a / b }'
    done)
    printf '%-6s / none: per round %s, median of the rounds %s, ratio of the medians %.2f\n' "$contender" \
        "$(paste -sd' ' <<<"$ratios")" "$(median <<<"$ratios")" \
        "$(awk -v a="$(column RATE "$contender" | median)" -v b="$(column RATE none | median)" 'BEGIN { print a / b }')"
done
