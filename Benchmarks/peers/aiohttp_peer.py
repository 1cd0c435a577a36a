#!/usr/bin/env python3
"""The HTTP baseline of Benchmarks/http.sh: an aiohttp receiver that streams each POST body into a file of its
own in SPOOL, fsyncs it and the directory, and answers 201 with a small JSON body.

    aiohttp_peer.py SPOOL PORT
"""

import os
import sys
import uuid

from aiohttp import web


async def receive(request):
    spool = request.app["spool"]
    path = os.path.join(spool, uuid.uuid4().hex)
    size = 0
    with open(path, "wb") as handle:
        async for chunk in request.content.iter_chunked(1 << 16):
            handle.write(chunk)
            size += len(chunk)
        handle.flush()
        os.fsync(handle.fileno())
    directory = os.open(spool, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return web.json_response({"file": os.path.basename(path), "bytes": size}, status=201)


def main(spool, port):
    app = web.Application(client_max_size=1 << 40)
    app["spool"] = spool
    app.router.add_post("/v1/shares", receive)
    print("ready", file=sys.stderr, flush=True)
    web.run_app(app, host="127.0.0.1", port=int(port), print=None, access_log=None)


if __name__ == "__main__":
    main(*sys.argv[1:])
