#!/usr/bin/env python3
"""Benchmark harness for Benchmarks/run.sh (standard library only).

    harness.py make DIR COUNT FIXTURES     COUNT mixed 4 KiB files (.txt .jpg .png .pdf) made from FIXTURES
    harness.py tiny DIR COUNT              COUNT 1-byte .bin files
    harness.py drop SOURCE INBOX [--wait DIR]... [--timeout S]
                                           renames every file of SOURCE into INBOX (one rename each), then waits
                                           until INBOX holds no visible entry and every --wait DIR is empty;
                                           prints "files seconds files_per_second"
    harness.py count DIR                   visible entries of DIR
"""

import os
import random
import sys
import time

SIZE = 4096
KINDS = [("txt", "notes.txt"), ("jpg", "photo.jpg"), ("png", "image.png"), ("pdf", "document.pdf")]


def make(directory, count, fixtures):
    """Files cycle through the four kinds; each is its fixture padded to 4 KiB with bytes unique to the file."""
    os.makedirs(directory, exist_ok=True)
    templates = {}
    for extension, name in KINDS:
        with open(os.path.join(fixtures, name), "rb") as handle:
            templates[extension] = handle.read()
    generator = random.Random(20240)
    for index in range(count):
        extension, _ = KINDS[index % len(KINDS)]
        template = templates[extension]
        if extension == "txt":
            # Text stays text: the fixture's lines, then numbered lines until the size is reached.
            body = bytearray(template)
            line = 0
            while len(body) < SIZE:
                body += ("file %d line %d: the quick brown fox jumps over the lazy dog\n" % (index, line)).encode()
                line += 1
            body = body[:SIZE - 1] + b"\n"
        else:
            # Binary formats keep their real header; the padding follows the end marker, as trailing data does.
            body = template + generator.randbytes(SIZE - len(template))
        with open(os.path.join(directory, "f%06d.%s" % (index, extension)), "wb") as handle:
            handle.write(body)


def tiny(directory, count):
    """One byte is too short for libmagic to call it text, so the files are .bin (an unknown, dynamic type)."""
    os.makedirs(directory, exist_ok=True)
    for index in range(count):
        with open(os.path.join(directory, "b%06d.bin" % index), "wb") as handle:
            handle.write(b"a")


def visible(directory):
    """True when the directory holds an entry whose name does not start with a dot; stops at the first one."""
    with os.scandir(directory) as entries:
        for entry in entries:
            if not entry.name.startswith("."):
                return True
    return False


def count_visible(directory):
    with os.scandir(directory) as entries:
        return sum(1 for entry in entries if not entry.name.startswith("."))


def drop(source, inbox, waits, timeout):
    names = sorted(name for name in os.listdir(source) if not name.startswith("."))
    start = time.monotonic()
    for name in names:
        os.rename(os.path.join(source, name), os.path.join(inbox, name))
    moved = time.monotonic()
    directories = [inbox] + waits
    last_progress = moved
    last_left = None
    while True:
        busy = [directory for directory in directories if os.path.isdir(directory) and visible(directory)]
        if not busy:
            break
        now = time.monotonic()
        if now - last_progress > 5:
            left = count_visible(inbox)
            if left != last_left:
                last_left = left
                last_progress = now
            elif now - last_progress > timeout:
                sys.stderr.write("harness: no progress for %ds, %d files left in the inbox\n" % (timeout, left))
                return 1
        time.sleep(0.005)
    seconds = time.monotonic() - start
    sys.stderr.write("harness: %d renames took %.3f s\n" % (len(names), moved - start))
    print("%d %.3f %.1f" % (len(names), seconds, len(names) / seconds))
    return 0


def main(arguments):
    if len(arguments) >= 4 and arguments[0] == "make":
        make(arguments[1], int(arguments[2]), arguments[3])
        return 0
    if len(arguments) == 3 and arguments[0] == "tiny":
        tiny(arguments[1], int(arguments[2]))
        return 0
    if len(arguments) == 2 and arguments[0] == "count":
        print(count_visible(arguments[1]))
        return 0
    if len(arguments) >= 3 and arguments[0] == "drop":
        waits = []
        timeout = 120
        rest = arguments[3:]
        while rest:
            if rest[0] == "--wait" and len(rest) > 1:
                waits.append(rest[1])
            elif rest[0] == "--timeout" and len(rest) > 1:
                timeout = int(rest[1])
            else:
                break
            rest = rest[2:]
        return drop(arguments[1], arguments[2], waits, timeout)
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
