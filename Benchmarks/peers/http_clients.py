#!/usr/bin/env python3
"""Clients of Benchmarks/http.sh that wrk and slowhttptest do not cover.

    http_clients.py upload URL SOURCE CLIENTS SECONDS
        CLIENTS keep-alive clients bound to the SOURCE address each upload 4 KiB bodies one after another for
        SECONDS; prints "uploads N failed F p50 S p99 S" (seconds).
    http_clients.py hold HOST PORT COUNT FIRST_SOURCE READY_FILE RELEASE_FILE
        Opens COUNT keep-alive connections (200 per source address, from 127.0.X.Y counting up from FIRST_SOURCE),
        sends one GET /healthz on each and reads the answer, writes "held N" to READY_FILE, and keeps them open
        until RELEASE_FILE exists; then prints how many were still open.
"""

import asyncio
import base64
import ipaddress
import os
import sys
import threading
import time

import aiohttp


def upload(url, source, clients, seconds):
    body = base64.b64encode(os.urandom(3072))
    latencies = []
    failed = [0]
    outcomes = {}
    lock = threading.Lock()
    deadline = time.monotonic() + float(seconds)

    async def client():
        connector = aiohttp.TCPConnector(local_addr=(source, 0), limit=1)
        timeout = aiohttp.ClientTimeout(total=60)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            while time.monotonic() < deadline:
                started = time.monotonic()
                try:
                    async with session.post(url, data=body, headers={"Content-Type": "text/plain"}) as response:
                        await response.read()
                        outcome = response.status
                except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                    outcome = type(error).__name__
                with lock:
                    if outcome == 201:
                        latencies.append(time.monotonic() - started)
                    else:
                        failed[0] += 1
                        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    async def run():
        await asyncio.gather(*(client() for _ in range(int(clients))))

    asyncio.run(run())
    latencies.sort()

    def quantile(q):
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else float("nan")

    if outcomes:
        print("failures: %s" % outcomes, file=sys.stderr)
    print("uploads %d failed %d p50 %.3f p99 %.3f" % (len(latencies), failed[0], quantile(0.5), quantile(0.99)))


def hold(host, port, count, first_source, ready_file, release_file):
    count = int(count)
    first = ipaddress.IPv4Address(first_source)
    request = ("GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n" % host).encode()

    async def one(index, writers):
        source = str(first + index // 200)
        for _ in range(5):
            try:
                reader, writer = await asyncio.open_connection(host, int(port), local_addr=(source, 0))
                writer.write(request)
                await writer.drain()
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                writers.append((reader, writer))
                return
            except (OSError, asyncio.IncompleteReadError):
                await asyncio.sleep(0.2)

    async def run():
        writers = []
        semaphore = asyncio.Semaphore(500)

        async def limited(index):
            async with semaphore:
                await one(index, writers)

        await asyncio.gather(*(limited(index) for index in range(count)))
        with open(ready_file, "w") as handle:
            handle.write("held %d\n" % len(writers))
        while not os.path.exists(release_file):
            await asyncio.sleep(0.2)
        still = 0
        for reader, writer in writers:
            still += 0 if reader.at_eof() else 1
            writer.close()
        print("open %d" % still)

    asyncio.run(run())


if __name__ == "__main__":
    {"upload": upload, "hold": hold}[sys.argv[1]](*sys.argv[2:])
