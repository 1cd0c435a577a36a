#!/usr/bin/env bash
# A minimal drop-folder script, as people write them: inotifywait reports each finished file, `file` sniffs its
# type, `cp` puts a copy into the spool, then the source and the copy are removed (the "discard" processor).
#
#     shell_peer.sh INBOX SPOOL
set -uo pipefail
inbox=$1
spool=$2
mkdir -p "$spool"
inotifywait -m -e close_write,moved_to --format '%f' "$inbox" | while IFS= read -r name; do
    path=$inbox/$name
    [ -f "$path" ] || continue
    mime=$(file -b --mime-type "$path") || continue
    case $mime in
        text/*) kind=text ;;
        image/*) kind=image ;;
        application/pdf) kind=pdf ;;
        *) kind=other ;;
    esac
    cp "$path" "$spool/$kind-$name" && rm -f "$path" "$spool/$kind-$name"
done
