#!/usr/bin/env bash
# HTTP ingest benchmarks (issue 19), run by Benchmarks/run.sh (section 10) or alone:
#
#     Benchmarks/http.sh BIN WORK VENV [--quick]
#
# BIN holds a release `sharepipe`, WORK is scratch space, VENV a Python venv (aiohttp is installed into it).
#   a. 4 KiB uploads by wrk at 8 and 64 connections, sharepipe and an aiohttp receiver that writes and fsyncs each
#      upload interleaved; the inbox drain of 2,000 such files by the same daemon;
#   b. one 1 GiB single-body upload over loopback vs cp + sync of the same file (BIG_ROUNDS interleaved pairs, the
#      medians compared: one pair moves by half with the disk's writeback);
#   c. 16 concurrent 256 MiB uploads: the daemon's peak RSS, every receipt's SHA-256 checked;
#   d. 1,000 slow-header + 1,000 slow-body connections (slowhttptest, from 127.0.0.1) while 8 clients upload 4 KiB
#      bodies (from 127.0.0.2): failed uploads, p99, the daemon's peak RSS;
#   e. 10,000 idle keep-alive connections (from 127.0.1.x): the daemon's RSS, and uploads still served;
#   f. one 1 GiB resumable upload (IETF draft, interop 8) uninterrupted vs cp + sync (BIG_ROUNDS interleaved pairs,
#      the medians compared), and interrupted twice (the
#      connection closed mid-body, resumed where HEAD says): the bytes sent in all.
# `--resumable` runs section f alone.
# The last lines are `HTTP KEY VALUE` pairs that run.sh turns into table rows.
set -euo pipefail

BIN=$1 WORK=$2 VENV=$3
QUICK=0 ONLY_RESUMABLE=0
[ "${4:-}" = "--quick" ] && QUICK=1
[ "${4:-}" = "--resumable" ] && ONLY_RESUMABLE=1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS=$ROOT/Benchmarks/peers
FILES=2000 BIG_MIB=1024 BIG_ROUNDS=3 MANY=16 MANY_MIB=256 WRK_SECONDS=10 SLOW=1000 SLOW_SECONDS=30 IDLE=10000
((QUICK)) && { BIG_MIB=256; MANY_MIB=64; WRK_SECONDS=4; SLOW=200; SLOW_SECONDS=25; }
# 10,000 connections need as many descriptors in the daemon and in the client holding them.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
mkdir -p "$WORK"
"$VENV/bin/python" -c 'import aiohttp' 2>/dev/null || "$VENV/bin/pip" install -q aiohttp >&2

# Whatever this script started is stopped when it ends, even on failure.
CHILDREN=()
trap 'for child in "${CHILDREN[@]}"; do kill -TERM "$child" 2>/dev/null || true; done' EXIT
SCRIPT=http.sh
# shellcheck source=Benchmarks/lib.sh
source "$ROOT/Benchmarks/lib.sh"
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.1f", n / s }'; }
empty() { [ -z "$(ls -A "$1" 2>/dev/null)" ]; }
median() { sort -g | awk '{ v[++n] = $1 } END { print (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }'; }
# Waits until the daemon of DIR processed (and so removed) every share, then syncs: on a file system mounted with
# `discard` a removed 1 GiB file is trimmed as it goes, and the next timed copy must not share the disk with that
# (cp_sync_seconds removes its own copy the same way, untimed).
settle_spool() { # DIR
    while ! { empty "$1/state/incoming" && empty "$1/state/processing"; }; do sleep 0.05; done
    sync
}
# Seconds for cp + sync of FILE into DIR (removed and synced again after).
cp_sync_seconds() { # FILE DIR
    local start seconds
    start=$(now)
    cp "$1" "$2/copy.bin" && sync
    seconds=$(elapsed "$start" "$(now)")
    rm -f "$2/copy.bin"; sync
    echo "$seconds"
}
# Starts the daemon on an ephemeral port; sets PID and ADDRESS.
start_daemon() { # DIR EXTRA...
    local dir=$1; shift
    "$BIN/sharepipe" daemon --inbox "$dir/inbox" --state "$dir/state" --processor discard --settle 50 \
        --listen 127.0.0.1:0 "$@" >/dev/null 2>"$dir/daemon.log" &
    PID=$!
    CHILDREN+=("$PID")
    wait_for_line "$dir/daemon.log" "event=http.listening"
    wait_for_line "$dir/daemon.log" "event=daemon.ready"
    ADDRESS=$(grep -o 'event=http.listening listener=[^ ]*' "$dir/daemon.log" | head -n 1 | cut -d= -f3)
}
stop_daemon() { kill -TERM "$PID"; wait "$PID" || true; }
resumable() { # section f
    echo "f. one $BIG_MIB MiB resumable upload (interop 8): uninterrupted vs cp + sync, then interrupted twice"
    local dir=$WORK/http-resumable client=$ROOT/Fixtures/clients/resumable_client.py
    rm -rf "$dir"; mkdir -p "$dir/inbox" "$dir/copy"
    head -c $((BIG_MIB << 20)) /dev/urandom >"$dir/big.bin"
    sync
    start_daemon "$dir"
    local round whole twice cp_rates=() rates=()
    for ((round = 1; round <= BIG_ROUNDS; round++)); do
        cp_rates+=("$(rate "$BIG_MIB" "$(cp_sync_seconds "$dir/big.bin" "$dir/copy")")")
        whole=$("$VENV/bin/python" "$client" bench "http://$ADDRESS" "$dir/big.bin" 8 0 "$dir/state-0")
        settle_spool "$dir"
        rates+=("$(python3 -c 'import json, sys; r = json.loads(sys.argv[1])
print("%.1f" % (r["size"] / 1048576 / r["seconds"]))' "$whole")")
        printf '  round %d: cp + sync %7.1f MiB/s, resumable HTTP %7.1f MiB/s (%s)\n' "$round" \
            "${cp_rates[-1]}" "${rates[-1]}" "$whole"
    done
    twice=$("$VENV/bin/python" "$client" bench "http://$ADDRESS" "$dir/big.bin" 8 2 "$dir/state-2")
    stop_daemon
    resumable_cp=$(printf '%s\n' "${cp_rates[@]}" | median)
    resumable_rate=$(printf '%s\n' "${rates[@]}" | median)
    resumable_sent=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["sent"])' "$twice")
    resumable_extra=$(( resumable_sent - (BIG_MIB << 20) ))
    printf '  cp + sync        %6d MiB = %7.1f MiB/s (median of %d)\n' "$BIG_MIB" "$resumable_cp" "$BIG_ROUNDS"
    printf '  resumable HTTP   %6d MiB = %7.1f MiB/s (median of %d)\n' "$BIG_MIB" "$resumable_rate" "$BIG_ROUNDS"
    printf '  interrupted twice: %d bytes sent, %d more than the file (%s)\n' "$resumable_sent" \
        "$resumable_extra" "$twice"
}
if ((ONLY_RESUMABLE)); then
    resumable
    echo "HTTP resumable $resumable_rate"
    echo "HTTP resumableCpSync $resumable_cp"
    echo "HTTP resumableExtraBytes $resumable_extra"
    exit 0
fi
echo "a. 4 KiB uploads with wrk for ${WRK_SECONDS}s at 8 and 64 connections, sharepipe and aiohttp + fsync" \
    "interleaved (processed: discard); the inbox drain of $FILES such files"
dir=$WORK/http-small
rm -rf "$dir"; mkdir -p "$dir/inbox" "$dir/aiohttp"
python3 "$PEERS/harness.py" make "$dir/source-inbox" "$FILES" "$ROOT/Fixtures/files"
head -c 4096 /dev/urandom | base64 -w0 | head -c 4096 >"$dir/body.txt"
cat >"$dir/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/plain"
local f = io.open("$dir/body.txt", "rb")
wrk.body = f:read("*a")
f:close()
LUA
sync
start_daemon "$dir"
port=$((30000 + RANDOM % 20000))
"$VENV/bin/python" "$PEERS/aiohttp_peer.py" "$dir/aiohttp" "$port" >/dev/null 2>"$dir/aiohttp.log" &
peer=$!
CHILDREN+=("$peer")
wait_for_line "$dir/aiohttp.log" "ready"
until curl -s -o /dev/null "http://127.0.0.1:$port/"; do sleep 0.05; done
# One wrk run: prints "RATE P50_MS NON2XX".
wrk_run() { # CONNECTIONS URL
    local out
    out=$(wrk -t2 -c"$1" -d"${WRK_SECONDS}s" --latency -s "$dir/post.lua" "$2")
    awk '/Requests\/sec:/ { rate = $2 }
        /^ +50%/ { p = $2; if (p ~ /us$/) { sub(/us$/, "", p); p /= 1000 } else if (p ~ /ms$/) { sub(/ms$/, "", p) }
                   else if (p ~ /s$/) { sub(/s$/, "", p); p *= 1000 }; p50 = p }
        /Non-2xx or 3xx responses:/ { bad = $5 }
        END { printf "%s %.1f %d\n", rate, p50, bad }' <<<"$out"
}
for connections in 8 64; do
    read -r sp_rate sp_p50 sp_bad <<<"$(wrk_run "$connections" "http://$ADDRESS/v1/shares")"
    read -r peer_rate peer_p50 peer_bad <<<"$(wrk_run "$connections" "http://127.0.0.1:$port/v1/shares")"
    printf '  %2d conns: sharepipe %8.1f uploads/s (p50 %6.1f ms, %d not 201)' \
        "$connections" "$sp_rate" "$sp_p50" "$sp_bad"
    printf ' | aiohttp + fsync %8.1f/s (p50 %6.1f ms)\n' "$peer_rate" "$peer_p50"
    eval "small_$connections=$sp_rate peer_$connections=$peer_rate bad_$connections=$sp_bad"
done
kill -TERM "$peer"; wait "$peer" 2>/dev/null || true
while ! { empty "$dir/state/incoming" && empty "$dir/state/processing"; }; do sleep 0.01; done
# The same daemon drains the same number of 4 KiB-class files dropped into its inbox (one rename each).
inbox_result=$(python3 "$PEERS/harness.py" drop "$dir/source-inbox" "$dir/inbox" \
    --wait "$dir/state/incoming" --wait "$dir/state/processing")
read -r _ inbox_seconds inbox_rate <<<"$inbox_result"
stop_daemon
printf '  sharepipe inbox  %6d files in %7.2f s = %7.1f files/s\n' "$FILES" "$inbox_seconds" "$inbox_rate"

echo "b. one $BIG_MIB MiB single-body upload vs cp + sync"
dir=$WORK/http-big
rm -rf "$dir"; mkdir -p "$dir/inbox" "$dir/copy"
head -c $((BIG_MIB << 20)) /dev/urandom >"$dir/big.bin"
sync
start_daemon "$dir"
cp_rates=() big_rates=()
for ((round = 1; round <= BIG_ROUNDS; round++)); do
    cp_rates+=("$(rate "$BIG_MIB" "$(cp_sync_seconds "$dir/big.bin" "$dir/copy")")")
    start=$(now)
    code=$(curl -sS -T "$dir/big.bin" -X POST -H 'Content-Type: application/octet-stream' -o "$dir/receipt.json" \
        -w '%{http_code}' "http://$ADDRESS/v1/shares")
    big_rates+=("$(rate "$BIG_MIB" "$(elapsed "$start" "$(now)")")")
    [ "$code" = 201 ] || echo "  warning: the upload was answered $code"
    settle_spool "$dir"
    printf '  round %d: cp + sync %7.1f MiB/s, sharepipe HTTP %7.1f MiB/s\n' "$round" "${cp_rates[-1]}" \
        "${big_rates[-1]}"
done
stop_daemon
cp_rate=$(printf '%s\n' "${cp_rates[@]}" | median)
big_rate=$(printf '%s\n' "${big_rates[@]}" | median)
printf '  cp + sync        %6d MiB, median of %d = %7.1f MiB/s\n' "$BIG_MIB" "$BIG_ROUNDS" "$cp_rate"
printf '  sharepipe HTTP   %6d MiB, median of %d = %7.1f MiB/s (201 = published and durable)\n' "$BIG_MIB" \
    "$BIG_ROUNDS" "$big_rate"

echo "c. $MANY concurrent $MANY_MIB MiB uploads"
dir=$WORK/http-many
rm -rf "$dir"; mkdir -p "$dir/inbox"
head -c $((MANY_MIB << 20)) /dev/urandom >"$dir/part.bin"
expected=$(sha256sum "$dir/part.bin" | cut -c1-64)
sync
start_daemon "$dir"
pids=()
for index in $(seq 1 "$MANY"); do
    curl -sS -T "$dir/part.bin" -X POST -o "$dir/receipt-$index.json" "http://$ADDRESS/v1/shares" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
peak=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$PID/status")
stop_daemon
right=$(grep -l "\"sha256\" : \"$expected\"" "$dir"/receipt-*.json | wc -l)
printf '  peak RSS %s MiB, %d of %d copies with the right SHA-256\n' "$peak" "$right" "$MANY"
rm -rf "$WORK/http-big" "$WORK/http-many"

echo "d. $SLOW slow-header + $SLOW slow-body connections (slowhttptest) while 8 clients upload 4 KiB for" \
    "$((SLOW_SECONDS - 5))s (--max-connections-per-client 4096: the flood comes from one address)"
dir=$WORK/http-slow
rm -rf "$dir"; mkdir -p "$dir/inbox"
start_daemon "$dir" --max-connections-per-client 4096
slowhttptest -H -c "$SLOW" -r 200 -i 5 -l "$SLOW_SECONDS" -u "http://$ADDRESS/v1/shares" -t POST -p 3 \
    >"$dir/slow-heads.log" 2>&1 &
heads=$!
slowhttptest -B -c "$SLOW" -r 200 -i 5 -s 1000000 -l "$SLOW_SECONDS" -u "http://$ADDRESS/v1/shares" -p 3 \
    >"$dir/slow-bodies.log" 2>&1 &
bodies=$!
CHILDREN+=("$heads" "$bodies")
sleep 5
slow_result=$("$VENV/bin/python" "$PEERS/http_clients.py" upload "http://$ADDRESS/v1/shares" 127.0.0.2 8 \
    "$((SLOW_SECONDS - 5))")
wait "$heads" "$bodies" 2>/dev/null || true
slow_rss=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$PID/status")
cuts=$(grep -o 'event=http.deadline_cut connections=[0-9]*' "$dir/daemon.log" |
    awk -F= '{ n += $3 } END { print n + 0 }')
stop_daemon
read -r _ slow_uploads _ slow_failed _ slow_p50 _ slow_p99 <<<"$slow_result"
printf '  %d uploads, %d failed, p50 %.3f s, p99 %.3f s; daemon peak RSS %s MiB; %d connections cut by a deadline\n' \
    "$slow_uploads" "$slow_failed" "$slow_p50" "$slow_p99" "$slow_rss" "$cuts"

echo "e. $IDLE idle keep-alive connections held, then 8 clients upload 4 KiB for 5 s"
dir=$WORK/http-idle
rm -rf "$dir"; mkdir -p "$dir/inbox"
start_daemon "$dir" --max-connections $((IDLE + 100))
base_rss=$(awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$PID/status")
host=${ADDRESS%:*} port=${ADDRESS##*:}
"$VENV/bin/python" "$PEERS/http_clients.py" hold "$host" "$port" "$IDLE" 127.0.1.1 "$dir/held" "$dir/release" \
    >"$dir/hold.out" 2>"$dir/hold.log" &
holder=$!
CHILDREN+=("$holder")
for _ in $(seq 1 1200); do [ -s "$dir/held" ] && break; sleep 0.1; done
held=$(awk '{ print $2 }' "$dir/held" 2>/dev/null || echo 0)
idle_rss=$(awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$PID/status")
idle_result=$("$VENV/bin/python" "$PEERS/http_clients.py" upload "http://$ADDRESS/v1/shares" 127.0.0.2 8 5)
touch "$dir/release"
wait "$holder" || true
still=$(awk '{ print $2 }' "$dir/hold.out" 2>/dev/null || echo 0)
stop_daemon
read -r _ idle_uploads _ idle_failed _ _ _ idle_p99 <<<"$idle_result"
printf '  %d held (%d still open after the uploads); daemon RSS %s MiB (%s MiB before);' \
    "$held" "$still" "$idle_rss" "$base_rss"
printf ' %d uploads, %d failed, p99 %.3f s\n' "$idle_uploads" "$idle_failed" "$idle_p99"
rm -rf "$WORK/http-slow" "$WORK/http-idle"

resumable
echo "HTTP small8 $small_8"
echo "HTTP peer8 $peer_8"
echo "HTTP bad8 $bad_8"
echo "HTTP small64 $small_64"
echo "HTTP peer64 $peer_64"
echo "HTTP bad64 $bad_64"
echo "HTTP inbox $inbox_rate"
echo "HTTP big $big_rate"
echo "HTTP cpSync $cp_rate"
echo "HTTP manyRSS $peak"
echo "HTTP manyRight $right"
echo "HTTP many $MANY"
echo "HTTP slowFailed $slow_failed"
echo "HTTP slowUploads $slow_uploads"
echo "HTTP slowP99 $slow_p99"
echo "HTTP slowRSS $slow_rss"
echo "HTTP idleHeld $held"
echo "HTTP idleRSS $idle_rss"
echo "HTTP idleUploads $idle_uploads"
echo "HTTP idleFailed $idle_failed"
echo "HTTP resumable $resumable_rate"
echo "HTTP resumableCpSync $resumable_cp"
echo "HTTP resumableExtraBytes $resumable_extra"
