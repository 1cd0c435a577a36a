#!/usr/bin/env bash
# The durability barrier both ways (issue 22): one syncfs per batch, or fdatasync of every copy and manifest plus
# fsync of every staging/S, on the local disk (ext4 here) and on powercutfs (a FUSE file system that makes data
# durable only on fsync). A measurement, never a pass/fail test.
#
#     Benchmarks/filesystems.sh [--drops N] [--work DIR]
#
# For each file system and barrier: `sharepipe daemon --oneshot --processor discard` over N 4 KiB drops (wall time,
# drops per second), then the same run under `strace -f -c` for the sync calls per share. On ext4 the fsync rows use
# SHAREPIPE_FS_FALLBACKS=fsync (the probe would choose syncfs there); on FUSE syncfs is never a barrier, so only the
# fsync row is measured.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
DROPS=2000
WORK=$ROOT/.build/bench-filesystems
while (($#)); do
    case $1 in
        --drops) DROPS=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "filesystems.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

swift build -c release --product sharepipe >/dev/null
BIN=$(swift build -c release --show-bin-path)/sharepipe
rm -rf "$WORK"
mkdir -p "$WORK"

mounted=""
cleanup() { [ -z "$mounted" ] || fusermount3 -u -z "$mounted" 2>/dev/null || true; }
trap cleanup EXIT

# run LABEL DIR FALLBACKS: one timed run and one counted run over DROPS fresh drops in DIR.
run() {
    local label=$1 dir=$2 fallbacks=$3
    for pass in timed counted; do
        rm -rf "$dir/inbox" "$dir/state"
        mkdir -p "$dir/inbox"
        head -c $((4096 * DROPS)) /dev/urandom | split -b 4096 -a 5 - "$dir/inbox/drop-"
        sync
        if [ "$pass" = timed ]; then
            local start end
            start=$(date +%s.%N)
            SHAREPIPE_FS_FALLBACKS=$fallbacks "$BIN" daemon --oneshot --processor discard \
                --inbox "$dir/inbox" --state "$dir/state" 2>"$dir/daemon.log"
            end=$(date +%s.%N)
            seconds=$(echo "$end - $start" | bc -l)
        else
            SHAREPIPE_FS_FALLBACKS=$fallbacks strace -f -c -e trace=fsync,fdatasync,syncfs -o "$dir/strace.txt" \
                "$BIN" daemon --oneshot --processor discard --inbox "$dir/inbox" --state "$dir/state" \
                2>"$dir/daemon.log"
        fi
    done
    local syncs
    syncs=$(awk '$NF ~ /^(fsync|fdatasync|syncfs)$/ && $4 ~ /^[0-9]+$/ { s[$NF] = $4 }
        END { printf "fsync %d, fdatasync %d, syncfs %d", s["fsync"], s["fdatasync"], s["syncfs"] }' "$dir/strace.txt")
    local per
    per=$(awk '$NF ~ /^(fsync|fdatasync|syncfs)$/ && $4 ~ /^[0-9]+$/ { n += $4 } END { printf "%.2f", n / '"$DROPS"' }' \
        "$dir/strace.txt")
    printf '%-28s %8.2f s %9.0f drops/s   sync calls/share %s (%s)\n' "$label" "$seconds" \
        "$(echo "$DROPS / $seconds" | bc -l)" "$per" "$syncs"
}

echo "$DROPS drops of 4 KiB, daemon --oneshot --processor discard ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
fstype=$(df --output=fstype "$WORK" | tail -n 1)
mkdir -p "$WORK/local"
run "$fstype, syncfs (probed)" "$WORK/local" ""
run "$fstype, fsync per file" "$WORK/local" fsync

if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null && pkg-config --exists fuse3 2>/dev/null; then
    gcc -O2 -Wall -o "$WORK/powercutfs" "$ROOT/Tests/PowerCutFS/powercutfs.c" $(pkg-config fuse3 --cflags --libs)
    mkdir -p "$WORK/backing" "$WORK/mnt"
    "$WORK/powercutfs" "$WORK/backing" "$WORK/mnt" 2>/dev/null &
    for _ in $(seq 1 100); do mountpoint -q "$WORK/mnt" && break; sleep 0.05; done
    mounted=$WORK/mnt
    run "fuse (powercutfs), fsync" "$WORK/mnt" ""
else
    echo "powercutfs not measured: /dev/fuse, fusermount3 or libfuse3-dev missing"
fi
