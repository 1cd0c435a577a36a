#!/usr/bin/env bash
# HTTP ingest benchmarks (issue 19), run by Benchmarks/run.sh (section 10) or alone:
#
#     Benchmarks/http.sh BIN WORK VENV [--quick]
#
# BIN holds a release `sharepipe`, WORK is scratch space, VENV a Python venv (aiohttp is installed into it).
#   a. 2,000 4 KiB uploads over 8 keep-alive connections (curl), until every receipt is back and the spool is
#      drained, vs the inbox drain of the same files by the same daemon, vs an aiohttp receiver that writes and
#      fsyncs each upload;
#   b. one 1 GiB single-body upload over loopback vs cp + sync of the same file;
#   c. 16 concurrent 256 MiB uploads: the daemon's peak RSS, every receipt's SHA-256 checked.
# The last lines are `HTTP KEY VALUE` pairs that run.sh turns into table rows.
set -euo pipefail

BIN=$1 WORK=$2 VENV=$3
QUICK=0
[ "${4:-}" = "--quick" ] && QUICK=1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS=$ROOT/Benchmarks/peers
FILES=2000 CONNECTIONS=8 BIG_MIB=1024 MANY=16 MANY_MIB=256
((QUICK)) && { BIG_MIB=256; MANY_MIB=64; }
mkdir -p "$WORK"
"$VENV/bin/python" -c 'import aiohttp' 2>/dev/null || "$VENV/bin/pip" install -q aiohttp >&2

# Whatever this script started is stopped when it ends, even on failure.
CHILDREN=()
trap 'for child in "${CHILDREN[@]}"; do kill -TERM "$child" 2>/dev/null || true; done' EXIT
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.1f", n / s }'; }
wait_for_line() { # FILE PATTERN
    for _ in $(seq 1 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
    echo "http.sh: timed out waiting for $2 in $1" >&2; return 1
}
empty() { [ -z "$(ls -A "$1" 2>/dev/null)" ]; }
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
# Writes CONNECTIONS curl config files, each uploading its share of SOURCE over one connection.
curl_configs() { # SOURCE URL DIR
    local index=0 file cfg
    rm -f "$3"/conn-*.cfg
    for file in "$1"/*; do
        cfg="$3/conn-$((index % CONNECTIONS)).cfg"
        # `next` separates transfers; one after the last would start an empty one.
        [ -s "$cfg" ] && echo next >>"$cfg"
        printf 'url = "%s"\ndata-binary = "@%s"\nheader = "Content-Disposition: attachment; filename=%s"\n' \
            "$2" "$file" "${file##*/}" >>"$cfg"
        printf 'output = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' >>"$cfg"
        index=$((index + 1))
    done
}
# Runs the CONNECTIONS curls at once and waits for all; fails when any upload was not answered 2xx.
upload_all() { # DIR
    local pids=() cfg
    for cfg in "$1"/conn-*.cfg; do
        curl -sS -K "$cfg" >"$cfg.codes" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    [ "$(cat "$1"/conn-*.cfg.codes | grep -c '^20')" -eq "$FILES" ] || { echo "http.sh: failed uploads" >&2; return 1; }
}

echo "a. $FILES 4 KiB uploads over $CONNECTIONS keep-alive connections (processed: discard)"
dir=$WORK/http-small
rm -rf "$dir"; mkdir -p "$dir/inbox"
python3 "$PEERS/harness.py" make "$dir/source" "$FILES" "$ROOT/Fixtures/files"
cp -a "$dir/source" "$dir/source-inbox"
sync
start_daemon "$dir"
curl_configs "$dir/source" "http://$ADDRESS/v1/shares" "$dir"
start=$(now)
upload_all "$dir"
while ! { empty "$dir/state/incoming" && empty "$dir/state/processing"; }; do sleep 0.01; done
http_seconds=$(elapsed "$start" "$(now)")
http_rate=$(rate "$FILES" "$http_seconds")
# The same daemon drains the same files dropped into its inbox (one rename each). An inbox file is removed once its
# share is published, so an empty inbox, incoming and processing mean every share is done (staging keeps the HTTP
# server's receive directory).
inbox_result=$(python3 "$PEERS/harness.py" drop "$dir/source-inbox" "$dir/inbox" \
    --wait "$dir/state/incoming" --wait "$dir/state/processing")
read -r _ inbox_seconds inbox_rate <<<"$inbox_result"
stop_daemon
printf '  sharepipe HTTP   %6d uploads in %7.2f s = %7.1f uploads/s\n' "$FILES" "$http_seconds" "$http_rate"
printf '  sharepipe inbox  %6d files   in %7.2f s = %7.1f files/s\n' "$FILES" "$inbox_seconds" "$inbox_rate"

port=$((30000 + RANDOM % 20000))
mkdir -p "$dir/aiohttp"
"$VENV/bin/python" "$PEERS/aiohttp_peer.py" "$dir/aiohttp" "$port" >/dev/null 2>"$dir/aiohttp.log" &
peer=$!
CHILDREN+=("$peer")
wait_for_line "$dir/aiohttp.log" "ready"
until curl -s -o /dev/null "http://127.0.0.1:$port/"; do sleep 0.05; done
curl_configs "$dir/source" "http://127.0.0.1:$port/v1/shares" "$dir"
start=$(now)
upload_all "$dir"
peer_seconds=$(elapsed "$start" "$(now)")
peer_rate=$(rate "$FILES" "$peer_seconds")
kill -TERM "$peer"; wait "$peer" 2>/dev/null || true
printf '  aiohttp + fsync  %6d uploads in %7.2f s = %7.1f uploads/s\n' "$FILES" "$peer_seconds" "$peer_rate"

echo "b. one $BIG_MIB MiB single-body upload vs cp + sync"
dir=$WORK/http-big
rm -rf "$dir"; mkdir -p "$dir/inbox" "$dir/copy"
head -c $((BIG_MIB << 20)) /dev/urandom >"$dir/big.bin"
sync
start=$(now)
cp "$dir/big.bin" "$dir/copy/big.bin" && sync
cp_seconds=$(elapsed "$start" "$(now)")
rm -f "$dir/copy/big.bin"; sync
start_daemon "$dir"
start=$(now)
code=$(curl -sS -T "$dir/big.bin" -X POST -H 'Content-Type: application/octet-stream' -o "$dir/receipt.json" \
    -w '%{http_code}' "http://$ADDRESS/v1/shares")
big_seconds=$(elapsed "$start" "$(now)")
stop_daemon
[ "$code" = 201 ] || echo "  warning: the upload was answered $code"
cp_rate=$(rate "$BIG_MIB" "$cp_seconds")
big_rate=$(rate "$BIG_MIB" "$big_seconds")
printf '  cp + sync        %6d MiB in %7.2f s = %7.1f MiB/s\n' "$BIG_MIB" "$cp_seconds" "$cp_rate"
printf '  sharepipe HTTP   %6d MiB in %7.2f s = %7.1f MiB/s (201 = published and durable)\n' "$BIG_MIB" \
    "$big_seconds" "$big_rate"

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

echo "HTTP small $http_rate"
echo "HTTP inbox $inbox_rate"
echo "HTTP aiohttp $peer_rate"
echo "HTTP big $big_rate"
echo "HTTP cpSync $cp_rate"
echo "HTTP manyRSS $peak"
echo "HTTP manyRight $right"
echo "HTTP many $MANY"
