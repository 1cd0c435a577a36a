#!/usr/bin/env bash
# The several-hosts row: DROPS files dropped at once into the inbox of N running daemons (discard processor), timed
# from the first rename into the inbox until the inbox and the spool are empty; with a PostgreSQL ledger, the
# server's committed transactions per share as well (each ledger statement outside BEGIN is one: round trips).
# A measurement, not a test. Needs a release build and, for PostgreSQL, psql and a URL it may create a schema in.
#
#     Benchmarks/several-hosts.sh BINARY sqlite|postgresql://… DAEMONS DROPS
#
# Example: Benchmarks/several-hosts.sh .build/release/sharepipe "$SHAREPIPE_TEST_PG" 3 2000
set -euo pipefail

[ $# -eq 4 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
binary=$1 ledger=$2 daemons=$3 drops=$4
work=$(mktemp -d /tmp/sharepipe-hosts.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/inbox" "$work/outside"
for i in $(seq 1 "$drops"); do printf 'drop %d\n' "$i" >"$work/outside/f$i.txt"; done

url=$ledger
if [ "$ledger" != sqlite ]; then
    schema="bench_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
    psql -q "$ledger" -c "CREATE SCHEMA $schema"
    url="$ledger$([[ $ledger == *\?* ]] && echo '&' || echo '?')options=-c%20search_path%3D$schema"
fi
transactions() {
    if [ "$ledger" = sqlite ]; then echo 0; return; fi
    psql -qtA "$ledger" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
}
empty() { [ -z "$(ls -A "$1" | grep -v '^\.' || true)" ]; }

for i in $(seq 1 "$daemons"); do
    "$binary" daemon --inbox "$work/inbox" --state "$work/state" --ledger "$url" --processor discard --settle 100 \
        2>"$work/log$i" &
    pids+=($!)
done
for i in $(seq 1 "$daemons"); do
    until grep -q 'event=daemon.ready' "$work/log$i"; do sleep 0.05; done
done

before=$(transactions)
start=$(date +%s.%N)
find "$work/outside" -type f -exec mv -t "$work/inbox" {} +
sleep 0.2
until empty "$work/inbox" && empty "$work/state/staging" && empty "$work/state/incoming" \
    && empty "$work/state/processing"; do
    sleep 0.05
done
end=$(date +%s.%N)
after=$(transactions)

kind=$([ "$ledger" = sqlite ] && echo sqlite || echo postgresql)
awk -v kind="$kind" -v n="$daemons" -v d="$drops" -v s="$start" -v e="$end" -v x="$((after - before))" 'BEGIN {
    t = e - s
    printf "ledger=%s daemons=%d drops=%d seconds=%.2f files_per_s=%.0f", kind, n, d, t, d / t
    if (kind == "postgresql") printf " round_trips_per_share=%.2f", x / d
    printf "\n"
}'
