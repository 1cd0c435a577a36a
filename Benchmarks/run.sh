#!/usr/bin/env bash
# The sharepipe benchmark suite: one run, one table of ratios against peers and the machine's own limits.
# It is a measurement, never a pass/fail test: it exits 0 whether targets are met or not (non-zero only when a
# benchmark could not run). See Benchmarks/README.md for what each row means.
#
#     Benchmarks/run.sh [--quick] [--work DIR] [--scratch-path DIR]
#
#   --quick              smaller sizes (500/2,000-file drops, 20,000-file backlog, 256 MiB and 20 x 25 MiB shares)
#   --work DIR           where the benchmark files go (default ./.build/bench: the disk a deployment would use)
#   --scratch-path DIR   passed to `swift build` (default: SwiftPM's ./.build)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
PEERS=$ROOT/Benchmarks/peers
VENV=$ROOT/Benchmarks/.venv
WORK=$ROOT/.build/bench
QUICK=0
SCRATCH=()

while (($#)); do
    case $1 in
        --quick) QUICK=1; shift ;;
        --work) WORK=$2; shift 2 ;;
        --scratch-path) SCRATCH=(--scratch-path "$2"); shift 2 ;;
        -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
done

if ((QUICK)); then
    BATCHES=(500 2000); BACKLOG=20000; LOADER_MIB=256; DRAIN_SHARES=2000; LATENCY=(--drops 100 --idle-seconds 10)
    MANY_COUNT=20; MANY_MIB=25
else
    BATCHES=(2000 10000); BACKLOG=100000; LOADER_MIB=1024; DRAIN_SHARES=10000; LATENCY=(--drops 500 --idle-seconds 60)
    MANY_COUNT=20; MANY_MIB=100
fi
COPY_BATCH=${BATCHES[0]}

note() { printf '== %s\n' "$*" >&2; }
SCRIPT=run.sh
# shellcheck source=Benchmarks/lib.sh
source "$ROOT/Benchmarks/lib.sh"

# ---------------------------------------------------------------------------------------------------------------
# Tools: install what a fresh Debian/Ubuntu machine lacks (needs root), build sharepipe, create the Python venv.

need_package() { # COMMAND PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        note "installing $2"
        apt-get install -y -q "$2" >/dev/null 2>&1 \
            || { apt-get update -q >/dev/null && apt-get install -y -q "$2" >/dev/null; }
    fi
    command -v "$1" >/dev/null 2>&1 || die "$1 is missing: apt-get install $2"
}
need_package inotifywait inotify-tools
need_package file file
need_package gcc gcc
need_package python3 python3
[ -x /usr/bin/time ] || need_package /usr/bin/time time

note "building sharepipe (swift build -c release)"
swift build -c release "${SCRATCH[@]}" >&2
BIN=$(swift build -c release "${SCRATCH[@]}" --show-bin-path)

if ! [ -x "$VENV/bin/python" ]; then
    note "creating $VENV"
    python3 -m venv "$VENV" || die "python3 -m venv failed (apt-get install python3-venv)"
fi
if ! "$VENV/bin/python" -c 'import watchdog, magic' 2>/dev/null; then
    note "installing watchdog and python-magic from PyPI into $VENV"
    "$VENV/bin/pip" install -q watchdog python-magic >&2
fi

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
# Two runs in one work directory would delete each other's files; the second one stops here instead.
mkdir -p "$(dirname "$WORK")"
exec 9>"$WORK.lock"
flock -n 9 || die "another run.sh is using $WORK (pass --work DIR to run one elsewhere)"
rm -rf "$WORK"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
gcc -O2 -Wall -Wextra -pthread -o "$WORK/durable_copy" "$PEERS/durable_copy.c"

harness() { python3 "$PEERS/harness.py" "$@"; }

# Runs a benchmark owned by another part of the package, indented, into FILE; its failure is reported, not fatal.
run_captured() { # FILE COMMAND...
    local file=$1 status=0
    shift
    "$@" >"$file" 2>&1 || status=$?
    sed 's/^/  /' "$file"
    ((status == 0)) || echo "  $(basename "$1") failed with exit status $status"
}

TICKS=$(getconf CLK_TCK)
# Milliseconds of CPU per file between two cpu_ticks readings.
cpu_per_file() { awk -v a="$1" -v b="$2" -v n="$3" -v t="$TICKS" 'BEGIN { printf "%.2f", (b - a) * 1000 / t / n }'; }

declare -A R # results, by key

# ---------------------------------------------------------------------------------------------------------------
# 1. Mixed 4 KiB files dropped at once, processed and deleted.

# Prepares DIR/source with COUNT files and an empty DIR/inbox, with nothing left for writeback.
prepare_drop() { # DIR COUNT
    rm -rf "$1"
    mkdir -p "$1/inbox"
    harness make "$1/source" "$2" "$ROOT/Fixtures/files"
    sync
}

drop_sharepipe() { # COUNT SETTLE [DAEMON-OPTION...]
    local count=$1 settle=$2 dir=$WORK/drop-sharepipe-$1-settle$2
    local pid result files seconds rate before after published rejected
    shift 2
    prepare_drop "$dir" "$count"
    "$BIN/sharepipe" daemon --inbox "$dir/inbox" --state "$dir/state" --processor discard --settle "$settle" "$@" \
        2>"$dir/daemon.log" &
    pid=$!
    wait_for_line "$dir/daemon.log" "event=daemon.ready"
    sleep 1
    before=$(cpu_ticks "$pid")
    result=$(harness drop "$dir/source" "$dir/inbox" \
        --wait "$dir/state/staging" --wait "$dir/state/incoming" --wait "$dir/state/processing") || true
    after=$(cpu_ticks "$pid")
    kill -TERM "$pid"
    wait "$pid" || die "sharepipe daemon exited with $? (log: $dir/daemon.log)"
    [ -n "$result" ] || die "sharepipe did not drain the inbox (log: $dir/daemon.log)"
    published=$(grep -c "event=inbox.published" "$dir/daemon.log" || true)
    rejected=$(grep -c "event=inbox.rejected" "$dir/daemon.log" || true)
    ((rejected == 0 && published == count)) \
        || echo "  warning: sharepipe published $published, rejected $rejected of $count (log: $dir/daemon.log)"
    read -r files seconds rate <<<"$result"
    printf '  sharepipe --settle %-4s %6d files in %7.2f s = %7.1f files/s, %s ms CPU per file%s\n' \
        "$settle" "$files" "$seconds" "$rate" "$(cpu_per_file "$before" "$after" "$files")" "${*:+ ($*)}"
    R[$count.sharepipe$settle]=$rate
}

drop_peer() { # shell|python COUNT
    local peer=$1 count=$2 dir=$WORK/drop-$1-$2
    local pid result files seconds rate before after cpu=""
    prepare_drop "$dir" "$count"
    if [ "$peer" = shell ]; then
        setsid bash "$PEERS/shell_peer.sh" "$dir/inbox" "$dir/spool" 2>"$dir/peer.log" &
        pid=$!
        wait_for_line "$dir/peer.log" "Watches established"
    else
        setsid "$VENV/bin/python" "$PEERS/python_peer.py" "$dir/inbox" "$dir/spool" 2>"$dir/peer.log" &
        pid=$!
        wait_for_line "$dir/peer.log" "ready"
    fi
    sleep 1
    before=$(cpu_ticks "$pid")
    result=$(harness drop "$dir/source" "$dir/inbox" --wait "$dir/spool") || true
    after=$(cpu_ticks "$pid")
    # setsid made the peer a process group leader: this ends the peer and its pipeline, nothing else.
    kill -TERM -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ -n "$result" ] || die "the $peer peer did not drain the inbox (log: $dir/peer.log)"
    read -r files seconds rate <<<"$result"
    # The shell peer's work happens in short-lived children; only the Python peer's CPU is its own.
    [ "$peer" = python ] && cpu=", $(cpu_per_file "$before" "$after" "$files") ms CPU per file"
    printf '  %-6s peer             %6d files in %7.2f s = %7.1f files/s%s\n' "$peer" "$files" "$seconds" "$rate" "$cpu"
    R[$count.$peer]=$rate
}

echo "1. Mixed 4 KiB files (.txt .jpg .png .pdf) dropped at once, processed (discard) and deleted"
for count in "${BATCHES[@]}"; do
    drop_sharepipe "$count" 50
    drop_sharepipe "$count" 250
    drop_peer shell "$count"
    drop_peer python "$count"
done

# ---------------------------------------------------------------------------------------------------------------
# 2. The durable small-file copy limit of this machine.

echo
echo "2. Durable copy limit: the same $COPY_BATCH files, open/read/write/fsync/rename/fsync(dir)/unlink in C"
for threads in 1 4; do
    dir=$WORK/durable-copy-$threads
    prepare_drop "$dir" "$COPY_BATCH"
    mkdir -p "$dir/spool"
    read -r files seconds rate <<<"$("$WORK/durable_copy" "$dir/source" "$dir/spool" "$threads")"
    printf '  C loop, %d thread(s)    %6d files in %7.2f s = %7.1f files/s\n' "$threads" "$files" "$seconds" "$rate"
    R[copy$threads]=$rate
done

# ---------------------------------------------------------------------------------------------------------------
# 3. A 1 GiB attachment and 20 x 100 MiB attachments through `sharepipe share` vs cp + sync.

echo
echo "3. LoaderBenchmark"
run_captured "$WORK/loader.txt" "$BIN/LoaderBenchmark" --size-mib "$LOADER_MIB" --count "$MANY_COUNT" \
    --each-mib "$MANY_MIB" --dir "$WORK/loader" --binary "$BIN/sharepipe"
# Its output has one block per case, the single attachment first: "cp + sync FILES  N MiB/s", "sharepipe share
# N MiB/s", "share peak RSS  N MiB".
loader_value() { # BLOCK(1|2) PATTERN FIELD
    awk -v block="$1" -v pattern="$2" -v field="$3" '/^[0-9]+ attachment/ { n++ }
        n == block && index($0, pattern) { print $field; exit }' "$WORK/loader.txt"
}
R[loader]=$(loader_value 1 "sharepipe share" 3)
R[cpSync]=$(loader_value 1 "cp + sync FILES" 5)
R[loaderRSS]=$(loader_value 1 "share peak RSS" 4)
R[many]=$(loader_value 2 "sharepipe share" 3)
R[manyCpSync]=$(loader_value 2 "cp + sync FILES" 5)
R[manyRSS]=$(loader_value 2 "share peak RSS" 4)

# ---------------------------------------------------------------------------------------------------------------
# 4. A backlog of 1-byte files, one --oneshot run.

echo
echo "4. Backlog: $BACKLOG 1-byte files already in the inbox, sharepipe daemon --oneshot --processor discard"
dir=$WORK/backlog
rm -rf "$dir"
harness tiny "$dir/inbox" "$BACKLOG"
sync
pass=0
total_wall=0
R[backlogRSS]=0
while :; do
    pass=$((pass + 1))
    status=0
    /usr/bin/time -v -o "$dir/time-$pass.txt" "$BIN/sharepipe" daemon --oneshot --processor discard \
        --inbox "$dir/inbox" --state "$dir/state" 2>"$dir/daemon-$pass.log" || status=$?
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
        for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$dir/time-$pass.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$dir/time-$pass.txt")
    summary=$(grep -o 'event=daemon.oneshot_done.*' "$dir/daemon-$pass.log" || echo "no oneshot_done line")
    left=$(harness count "$dir/inbox")
    printf '  pass %d: exit %d, %s s wall, peak RSS %s MiB, %d files left in the inbox\n' \
        "$pass" "$status" "$wall" "$rss" "$left"
    echo "          ${summary#event=}"
    failed=$(grep -o 'event=daemon.failed.*' "$dir/daemon-$pass.log" || true)
    [ -z "$failed" ] || echo "          warning: ${failed#event=}"
    total_wall=$(awk -v a="$total_wall" -v b="$wall" 'BEGIN { print a + b }')
    R[backlogRSS]=$(awk -v a="${R[backlogRSS]}" -v b="$rss" 'BEGIN { print (b > a ? b : a) }')
    if ((pass == 1)); then
        R[backlogPass1]=$(awk -v n="$((BACKLOG - left))" -v s="$wall" 'BEGIN { printf "%.1f", n / s }')
        R[backlogLeft]=$left
    fi
    ((left > 0 && pass < 5)) || break
done
R[backlog]=$(awk -v n="$((BACKLOG - left))" -v s="$total_wall" 'BEGIN { printf "%.1f", n / s }')
# Taken from the inbox is not processed: a pass that failed can leave shares in the spool.
R[backlogSpool]=0
for stage in staging incoming processing; do
    if [ -d "$dir/state/$stage" ]; then
        R[backlogSpool]=$((R[backlogSpool] + $(harness count "$dir/state/$stage")))
    fi
done
((R[backlogSpool] == 0)) || echo "  warning: ${R[backlogSpool]} shares are still in the spool after the last pass"
if ((R[backlogLeft] > 0)); then
    echo "  back-pressure: pass 1 left ${R[backlogLeft]} files (ERR_SPOOL_FULL: --oneshot ingests everything before"
    echo "  it consumes, and the loader refuses new shares at maxPendingShares = 50,000); $pass passes in all"
fi
printf '  %d files in %.2f s over %d pass(es) = %.1f files/s\n' "$((BACKLOG - left))" "$total_wall" "$pass" \
    "${R[backlog]}"

# ---------------------------------------------------------------------------------------------------------------
# 5. Benchmarks owned by other parts, when the package has them.

has_product() { grep -q "name: \"$1\"" "$ROOT/Package.swift" && [ -x "$BIN/$1" ]; }

echo
echo "5. DrainBenchmark"
if has_product DrainBenchmark; then
    run_captured "$WORK/drain.txt" "$BIN/DrainBenchmark" --shares "$DRAIN_SHARES" --dir "$WORK/drain"
    R[drain]=$(awk '/^drain \(discard\)/ { for (i = 1; i <= NF; i++) if ($i == "shares/s,") print $(i - 1) }' \
        "$WORK/drain.txt")
    R[drainRaw]=$(awk '/^raw syscalls/ { for (i = 1; i <= NF; i++) if ($i == "shares/s") print $(i - 1) }' \
        "$WORK/drain.txt")
else
    echo "  skipped: no DrainBenchmark product in Package.swift yet"
fi

echo
echo "6. LatencyBenchmark"
if has_product LatencyBenchmark; then
    run_captured "$WORK/latency.txt" "$BIN/LatencyBenchmark" --binary "$BIN/sharepipe" "${LATENCY[@]}" \
        --dir "$WORK/latency"
    # "  p50 262.3 ms  = settle + 12.3 ms  (target ...": the percentile and its excess over the settle time.
    for p in p50 p99; do
        R[latency.$p]=$(awk -v p="$p" '$1 == p { print $2 }' "$WORK/latency.txt")
        R[latency.$p.over]=$(awk -v p="$p" \
            '$1 == p { for (i = 1; i < NF; i++) if ($i == "+") { print $(i + 1); exit } }' "$WORK/latency.txt")
    done
    R[latency.settle]=$(awk '/--settle/ { for (i = 1; i < NF; i++) if ($i == "--settle") print $(i + 1) }' \
        "$WORK/latency.txt")
    R[latency.idle]=$(awk '/CPU time .* by utime\+stime/ { for (i = 1; i < NF; i++) if ($i == "=") print $(i + 1) }' \
        "$WORK/latency.txt")
else
    echo "  skipped: no LatencyBenchmark product in Package.swift yet"
fi

# ---------------------------------------------------------------------------------------------------------------
# 7. Issue 10's drop row: 2,000 mixed 4 KiB files, every contender once per round, rounds interleaved, so a burst of
# other work on the machine hits them alike. Section 1's functions measure each drop; their result is moved here.

ROUND_FILES=2000
ROUNDS=3
declare -A RR # rate of each contender in each round: RR[contender.round]

# Runs COMMAND (a section-1 drop that leaves its rate in R[KEY]) and files the rate as RR[NAME.ROUND], leaving
# section 1's own R[KEY] as it was.
round_drop() { # NAME ROUND KEY COMMAND...
    local name=$1 round=$2 key=$3 had=0 saved=""
    shift 3
    [ -n "${R[$key]+set}" ] && { had=1; saved=${R[$key]}; }
    "$@"
    RR[$name.$round]=${R[$key]}
    if ((had)); then R[$key]=$saved; else unset "R[$key]"; fi
}

# The C group-commit loop on the same files (peers/group_commit.c): 8 threads with batches of 256 files, and 64
# threads with batches of 32 (more work in flight, more barriers); the better one counts.
round_group_commit() { # ROUND
    local dir=$WORK/rounds-group-commit threads batch files seconds rate best=0
    for threads in 8 64; do
        batch=$((threads == 8 ? 256 : 32))
        prepare_drop "$dir" "$ROUND_FILES"
        read -r files seconds rate <<<"$("$WORK/group_commit" "$dir/source" "$dir/state" "$threads" "$batch")"
        printf '  C group commit %2dx%-3d %6d files in %7.2f s = %7.1f files/s\n' \
            "$threads" "$batch" "$files" "$seconds" "$rate"
        best=$(awk -v a="$best" -v b="$rate" 'BEGIN { print (b > a ? b : a) }')
    done
    RR[groupcommit.$1]=$best
}

# A over B with two decimals, or "-" when either is missing.
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-";
    else printf "%.2f", a / b }'; }
# The median of the rounds of one contender.
rounds_median() { # NAME
    local round
    for ((round = 1; round <= ROUNDS; round++)); do echo "${RR[$1.$round]:-}"; done | sort -g \
        | awk 'NF { v[++n] = $1 } END { if (n) print (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }'
}

# Issue 33: a webhook receiver on 127.0.0.1 for the --notify contender (every event POSTed to it).
python3 "$PEERS/webhook_receiver.py" "$WORK/webhook.port" "$WORK/webhook.count" &
WEBHOOK_PID=$!
wait_for_line "$WORK/webhook.port" "[0-9]"
WEBHOOK_URL="http://127.0.0.1:$(cat "$WORK/webhook.port")/hook"

echo
echo "7. $ROUND_FILES mixed 4 KiB files, $ROUNDS interleaved rounds:" \
    "sharepipe (settle 50, 250, settle 50 with --duplicates reject), shell, Python, C group commit"
gcc -O2 -Wall -Wextra -pthread -o "$WORK/group_commit" "$PEERS/group_commit.c"
# The contenders of one round. Each round starts one further down the list (round 1 at the first, round 2 at the
# second, ...), so no contender always runs first or last: the disk's writeback and the ledger's growth from the
# drops before it then fall on every contender alike.
contender_sharepipe50() { round_drop sharepipe50 "$1" "$ROUND_FILES.sharepipe50" drop_sharepipe "$ROUND_FILES" 50; }
contender_shell() { round_drop shell "$1" "$ROUND_FILES.shell" drop_peer shell "$ROUND_FILES"; }
contender_python() { round_drop python "$1" "$ROUND_FILES.python" drop_peer python "$ROUND_FILES"; }
contender_groupcommit() { round_group_commit "$1"; }
contender_sharepipe250() { round_drop sharepipe250 "$1" "$ROUND_FILES.sharepipe250" drop_sharepipe "$ROUND_FILES" 250; }
# Issue 21: the same drop with the duplicate check on (every drop is new, so each one is looked up and recorded).
contender_sharepipe50reject() {
    round_drop sharepipe50reject "$1" "$ROUND_FILES.sharepipe50" drop_sharepipe "$ROUND_FILES" 50 --duplicates reject
}
# Issue 33: the same drop with one --notify receiver (published and processed events, 2 per file), timed as a
# pair with a drop without it, one right after the other, the order alternating from round to round. The row's
# ratio is the median of the pairs' ratios: this disk's speed drifts by more over one round of seven contenders
# than a receiver costs, and two drops side by side share the drift.
contender_notifypair() {
    local first=notifyon second=notifyoff
    (($1 % 2 == 0)) && { first=notifyoff; second=notifyon; }
    "pair_$first" "$1"
    "pair_$second" "$1"
    RR[notifyratio.$1]=$(ratio "${RR[sharepipe50notify.$1]}" "${RR[notifybase.$1]}")
    echo "  pair $1: --notify over none ${RR[notifyratio.$1]}x"
}
pair_notifyon() {
    round_drop sharepipe50notify "$1" "$ROUND_FILES.sharepipe50" drop_sharepipe "$ROUND_FILES" 50 \
        --notify "$WEBHOOK_URL"
}
pair_notifyoff() { round_drop notifybase "$1" "$ROUND_FILES.sharepipe50" drop_sharepipe "$ROUND_FILES" 50; }
CONTENDERS=(sharepipe50 shell python groupcommit sharepipe250 sharepipe50reject notifypair)
for ((round = 1; round <= ROUNDS; round++)); do
    echo " round $round"
    for ((slot = 0; slot < ${#CONTENDERS[@]}; slot++)); do
        "contender_${CONTENDERS[(slot + round - 1) % ${#CONTENDERS[@]}]}" "$round"
    done
done
kill "$WEBHOOK_PID" 2>/dev/null || true
for name in sharepipe50 shell python groupcommit sharepipe250 sharepipe50reject sharepipe50notify notifybase \
    notifyratio; do
    R[rounds.$name]=$(rounds_median "$name")
done
echo " per round, sharepipe --settle 50 over: shell, Python, C group commit"
for ((round = 1; round <= ROUNDS; round++)); do
    awk -v r="$round" -v s="${RR[sharepipe50.$round]}" -v sh="${RR[shell.$round]}" -v py="${RR[python.$round]}" \
        -v gc="${RR[groupcommit.$round]}" \
        'BEGIN { printf "  round %d: %.2fx  %.2fx  %.0f%%\n", r, s / sh, s / py, 100 * s / gc }'
done

# ---------------------------------------------------------------------------------------------------------------
# 8. System calls per share: strace -f -c over one --oneshot run on 500 mixed 4 KiB drops.

SYSCALL_FILES=500
need_package strace strace
echo
echo "8. System calls per share: strace -f -c, sharepipe daemon --oneshot --processor discard, $SYSCALL_FILES drops"
dir=$WORK/syscalls
rm -rf "$dir"
mkdir -p "$dir"
harness make "$dir/inbox" "$SYSCALL_FILES" "$ROOT/Fixtures/files"
sync
status=0
strace -f -c -o "$dir/strace.txt" "$BIN/sharepipe" daemon --oneshot --processor discard \
    --inbox "$dir/inbox" --state "$dir/state" 2>"$dir/daemon.log" || status=$?
processed=$(grep -o 'event=daemon.oneshot_done.*' "$dir/daemon.log" | grep -o 'processed=[0-9]*' | cut -d= -f2)
((status == 0 && ${processed:-0} == SYSCALL_FILES)) \
    || echo "  warning: exit $status, processed ${processed:-none} of $SYSCALL_FILES (log: $dir/daemon.log)"
# strace's summary: "% time  seconds  usecs/call  calls  [errors]  syscall"; the calls are the 4th column.
calls() { awk -v names="$*" 'BEGIN { split(names, n, " "); for (i in n) want[n[i]] = 1 }
    want[$NF] && $4 ~ /^[0-9]+$/ { sum += $4 } END { print sum + 0 }' "$dir/strace.txt"; }
per_share() { awk -v c="$(calls "$@")" -v n="${processed:-0}" \
    'BEGIN { if (n > 0) printf "%.2f", c / n; else print "-" }'; }
R[sys.barriers]=$(per_share fsync fdatasync syncfs)
R[sys.openat]=$(per_share openat)
R[sys.pwrite64]=$(per_share pwrite64)
printf '  per share (%s shares):' "${processed:-0}"
for name in fsync fdatasync syncfs openat pwrite64 fcntl unlinkat mkdirat renameat renameat2 flock futex; do
    printf ' %s %s' "$name" "$(per_share "$name")"
done
printf ', all calls %s\n' "$(per_share total)"

# ---------------------------------------------------------------------------------------------------------------
# 9. What one durability barrier costs for a batch: syncfs vs fsyncs (peers/barrier_cost.c), for the record.

echo
echo "9. Barrier for a batch of staged shares (dir + 4 KiB copy + manifest each): syncfs vs fsyncs"
gcc -O2 -Wall -Wextra -pthread -o "$WORK/barrier_cost" "$PEERS/barrier_cost.c"
"$WORK/barrier_cost" "$WORK/barrier" "$( ((QUICK)) && echo 3 || echo 7)" | sed 's/^/  /'

# ---------------------------------------------------------------------------------------------------------------
# 10. HTTP ingest (issue 19): Benchmarks/http.sh prints its measurements, then "HTTP KEY VALUE" lines.

echo
echo "10. HTTP ingest"
"$ROOT/Benchmarks/http.sh" "$BIN" "$WORK" "$VENV" $( ((QUICK)) && echo --quick ) >"$WORK/http.txt" 2>&1 \
    || echo "  warning: Benchmarks/http.sh failed (log: $WORK/http.txt)"
grep -v '^HTTP ' "$WORK/http.txt" | sed 's/^/  /'
while read -r _ key value; do R[http.$key]=$value; done < <(grep '^HTTP ' "$WORK/http.txt")

# ---------------------------------------------------------------------------------------------------------------
# The table.

row() { # METRIC SHAREPIPE BASELINE RATIO TARGET MET
    printf '| %-48s | %-14s | %-14s | %-8s | %-10s | %-4s |\n' "$@"
}
meets() { awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN { if (v == "-" || v == "") print "?";
    else if ((op == ">=" && v + 0 >= t + 0) || (op == "<=" && v + 0 <= t + 0)) print "yes"; else print "no" }'; }
drop_rows() { # COUNT SETTLE
    local sp=${R[$1.sharepipe$2]:-} peer target r
    for peer in shell python; do
        target=$([ "$peer" = shell ] && echo 10 || echo 3)
        r=$(ratio "$sp" "${R[$1.$peer]:-}")
        row "$1 files, settle $2 ms, vs $peer (files/s)" "$sp" "${R[$1.$peer]:-}" "${r}x" ">= ${target}x" \
            "$(meets "$r" "$target" ">=")"
    done
}

best_copy=$(awk -v a="${R[copy1]}" -v b="${R[copy4]}" 'BEGIN { print (a > b ? a : b) }')
copy_share=$(awk -v a="${R[$COPY_BATCH.sharepipe50]:-0}" -v b="$best_copy" 'BEGIN { printf "%.0f", 100 * a / b }')

echo
echo "Summary ($(date -u '+%Y-%m-%d %H:%M UTC'))"
echo "  machine: $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), kernel $(uname -r)"
echo "  work dir: $WORK on $(df -T "$WORK" | awk 'NR == 2 { print $2 " (" $1 ")" }')"
echo "  load average: $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo
row metric sharepipe baseline ratio target met?
row "------------------------------------------------" "--------------" "--------------" "--------" "----------" "----"
for count in "${BATCHES[@]}"; do
    drop_rows "$count" 50
    drop_rows "$count" 250
done
row "$COPY_BATCH files vs durable C copy (files/s)" "${R[$COPY_BATCH.sharepipe50]:-}" "$best_copy" "${copy_share}%" \
    ">= 70%" "$(meets "$copy_share" 70 ">=")"
loader_ratio=$(ratio "${R[loader]}" "${R[cpSync]}")
row "share of $LOADER_MIB MiB vs cp + sync (MiB/s)" "${R[loader]}" "${R[cpSync]}" "${loader_ratio}x" ">= 0.95x" \
    "$(meets "$loader_ratio" 0.95 ">=")"
row "share of $LOADER_MIB MiB, peak RSS (MiB)" "${R[loaderRSS]}" "-" "-" "<= 40 MiB" \
    "$(meets "${R[loaderRSS]}" 40 "<=")"
many_ratio=$(ratio "${R[many]}" "${R[manyCpSync]}")
row "share of $MANY_COUNT x $MANY_MIB MiB vs cp + sync (MiB/s)" "${R[many]}" "${R[manyCpSync]}" "${many_ratio}x" \
    ">= 0.95x" "$(meets "$many_ratio" 0.95 ">=")"
row "share of $MANY_COUNT x $MANY_MIB MiB, peak RSS (MiB)" "${R[manyRSS]}" "-" "-" "<= 48 MiB" \
    "$(meets "${R[manyRSS]}" 48 "<=")"
row "$BACKLOG-file backlog, $pass pass(es) (files/s)" "${R[backlog]}" "-" "-" "-" "-"
row "$BACKLOG-file backlog, peak RSS (MiB)" "${R[backlogRSS]}" "-" "-" "<= 64 MiB" \
    "$(meets "${R[backlogRSS]}" 64 "<=")"
if [ -n "${R[drain]:-}" ]; then
    drain_share=$(awk -v a="${R[drain]}" -v b="${R[drainRaw]}" 'BEGIN { printf "%.0f", 100 * a / b }')
    row "drain $DRAIN_SHARES shares vs raw syscalls (shares/s)" "${R[drain]}" "${R[drainRaw]}" "${drain_share}%" \
        ">= 50%" "$(meets "$drain_share" 50 ">=")"
fi
if [ -n "${R[latency.p50]:-}" ]; then
    for p in p50 p99; do
        limit=$([ "$p" = p50 ] && echo 10 || echo 50)
        row "drop-to-processed latency $p (ms)" "${R[latency.$p]}" "settle ${R[latency.settle]:-?}" \
            "+${R[latency.$p.over]}" "<= +$limit ms" "$(meets "${R[latency.$p.over]}" "$limit" "<=")"
    done
    row "idle daemon CPU (% of one core)" "${R[latency.idle]:-}" "-" "-" "-" "-"
else
    row "drop-to-processed latency" "not measured" "-" "-" "-" "-"
fi

# The rows of sections 7 and 8.
rounds_rows() { # SETTLE
    local sp=${R[rounds.sharepipe$1]:-} peer target r
    for peer in shell python; do
        target=$([ "$peer" = shell ] && echo 10 || echo 2)
        r=$(ratio "$sp" "${R[rounds.$peer]:-}")
        row "$ROUND_FILES x$ROUNDS rounds, settle $1, vs $peer (files/s)" "$sp" "${R[rounds.$peer]:-}" "${r}x" \
            ">= ${target}x" "$(meets "$r" "$target" ">=")"
    done
}
rounds_rows 50
rounds_rows 250
gc_share=$(awk -v a="${R[rounds.sharepipe50]:-0}" -v b="${R[rounds.groupcommit]:-0}" \
    'BEGIN { if (b > 0) printf "%.0f", 100 * a / b; else print "-" }')
row "$ROUND_FILES x$ROUNDS rounds vs C group commit (files/s)" "${R[rounds.sharepipe50]:-}" \
    "${R[rounds.groupcommit]:-}" "${gc_share}%" ">= 75%" "$(meets "$gc_share" 75 ">=")"
dup_ratio=$(ratio "${R[rounds.sharepipe50reject]:-}" "${R[rounds.sharepipe50]:-}")
row "$ROUND_FILES x$ROUNDS rounds, --duplicates reject vs accept" "${R[rounds.sharepipe50reject]:-}" \
    "${R[rounds.sharepipe50]:-}" "${dup_ratio}x" ">= 0.95x" "$(meets "$dup_ratio" 0.95 ">=")"
notify_ratio=${R[rounds.notifyratio]:-}
row "$ROUND_FILES x$ROUNDS rounds, one --notify receiver vs none (adjacent pairs, median ratio)" \
    "${R[rounds.sharepipe50notify]:-}" "${R[rounds.notifybase]:-}" "${notify_ratio}x" ">= 0.9x" \
    "$(meets "$notify_ratio" 0.9 ">=")"
row "$BACKLOG-file backlog, shares left in the spool" "${R[backlogSpool]}" "-" "-" "0" \
    "$(meets "${R[backlogSpool]}" 0 "<=")"
row "syscalls/share: fsync+fdatasync+syncfs" "${R[sys.barriers]}" "-" "-" "<= 1.5" \
    "$(meets "${R[sys.barriers]}" 1.5 "<=")"
row "syscalls/share: openat" "${R[sys.openat]}" "-" "-" "<= 8" "$(meets "${R[sys.openat]}" 8 "<=")"
row "syscalls/share: pwrite64" "${R[sys.pwrite64]}" "-" "-" "<= 12" "$(meets "${R[sys.pwrite64]}" 12 "<=")"
# issue 19: HTTP ingest rows (section 10).
r=$(ratio "${R[http.small8]:-}" "${R[http.peer8]:-}")
row "4 KiB HTTP (wrk), 8 conns, vs aiohttp + fsync (/s)" "${R[http.small8]:-}" "${R[http.peer8]:-}" "${r}x" ">= 2x" \
    "$(meets "$r" 2 ">=")"
r=$(ratio "${R[http.small64]:-}" "${R[http.peer64]:-}")
row "4 KiB HTTP (wrk), 64 conns, vs aiohttp + fsync (/s)" "${R[http.small64]:-}" "${R[http.peer64]:-}" "${r}x" \
    ">= 2x" "$(meets "$r" 2 ">=")"
r=$(ratio "${R[http.small64]:-}" "${R[http.inbox]:-}")
row "4 KiB HTTP (wrk), 64 conns, vs inbox drain (/s)" "${R[http.small64]:-}" "${R[http.inbox]:-}" "${r}x" ">= 0.8x" \
    "$(meets "$r" 0.8 ">=")"
row "4 KiB HTTP (wrk), answers not 201 (8; 64 conns)" "${R[http.bad8]:-}; ${R[http.bad64]:-}" "-" "-" "0" \
    "$([ "${R[http.bad8]:-x}" = 0 ] && [ "${R[http.bad64]:-x}" = 0 ] && echo yes || echo no)"
r=$(ratio "${R[http.big]:-}" "${R[http.cpSync]:-}")
row "1 GiB single-body upload vs cp + sync (MiB/s)" "${R[http.big]:-}" "${R[http.cpSync]:-}" "${r}x" ">= 0.8x" \
    "$(meets "$r" 0.8 ">=")"
row "16 concurrent uploads, peak RSS (MiB)" "${R[http.manyRSS]:-}" "-" "-" "<= 64 MiB" \
    "$(meets "${R[http.manyRSS]:-}" 64 "<=")"
row "16 concurrent uploads, SHA-256 right" "${R[http.manyRight]:-}/${R[http.many]:-}" "-" "-" "all" \
    "$([ "${R[http.manyRight]:-0}" = "${R[http.many]:-x}" ] && echo yes || echo no)"
row "slow flood: uploads failed (of N)" "${R[http.slowFailed]:-}/${R[http.slowUploads]:-}" "-" "-" "0" \
    "$(meets "${R[http.slowFailed]:-1}" 0 "<=")"
row "slow flood: upload p99 (s)" "${R[http.slowP99]:-}" "-" "-" "< 1 s" "$(meets "${R[http.slowP99]:-9}" 0.999 "<=")"
row "slow flood: daemon peak RSS (MiB)" "${R[http.slowRSS]:-}" "-" "-" "<= 128 MiB" \
    "$(meets "${R[http.slowRSS]:-}" 128 "<=")"
row "idle keep-alive connections held" "${R[http.idleHeld]:-}" "-" "-" ">= 10000" \
    "$(meets "${R[http.idleHeld]:-0}" 10000 ">=")"
row "idle connections: daemon RSS (MiB)" "${R[http.idleRSS]:-}" "-" "-" "<= 256 MiB" \
    "$(meets "${R[http.idleRSS]:-}" 256 "<=")"
row "idle connections: uploads failed (of N)" "${R[http.idleFailed]:-}/${R[http.idleUploads]:-}" "-" "-" "0" \
    "$(meets "${R[http.idleFailed]:-1}" 0 "<=")"
# issue 30: resumable uploads (IETF draft, section f of http.sh).
r=$(ratio "${R[http.resumable]:-}" "${R[http.resumableCpSync]:-}")
row "1 GiB resumable upload vs cp + sync (MiB/s)" "${R[http.resumable]:-}" "${R[http.resumableCpSync]:-}" "${r}x" \
    ">= 0.8x" "$(meets "$r" 0.8 ">=")"
row "1 GiB resumable, cut twice: bytes sent past 1 GiB" "${R[http.resumableExtraBytes]:-}" "-" "-" "<= 16 MiB" \
    "$(meets "${R[http.resumableExtraBytes]:-99999999999}" 16777216 "<=")"
