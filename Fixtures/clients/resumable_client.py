"""A test client for resumable uploads (draft-ietf-httpbis-resumable-upload) that speaks each interop version byte
for byte over a raw socket, as URLSession does: it reads the interim 104 that common client libraries drop.

    resumable_client.py start  URL FILE VERSION CUT STATE [CAFILE]   POST, read the 104, send CUT bytes, close
    resumable_client.py resume URL FILE VERSION PARTS STATE [CAFILE] HEAD, a PATCH at a wrong offset (409),
                                                                     then the rest in PARTS PATCHes
    resumable_client.py cancel URL FILE VERSION - STATE [CAFILE]     DELETE, then HEAD
    resumable_client.py whole  URL FILE VERSION - STATE [CAFILE]     POST the whole file (no cut)
    resumable_client.py bench  URL FILE VERSION CUTS STATE           POST, interrupted CUTS times (the connection
                                                                     closed mid-body), resumed each time; prints
                                                                     the bytes sent in all and the seconds

URL is the base (http://127.0.0.1:PORT or https://localhost:PORT). Each phase prints one JSON object; STATE keeps
the upload's Location between phases. Any protocol violation exits 1 with the reason.
"""

import json
import os
import socket
import ssl
import sys
import time
from urllib.parse import urlsplit


def fail(message):
    print(json.dumps({"error": message}))
    sys.exit(1)


class Connection:
    def __init__(self, base, cafile):
        parts = urlsplit(base)
        self.host = parts.hostname
        self.port = parts.port
        raw = socket.create_connection((self.host, self.port), timeout=120)
        if parts.scheme == "https":
            context = ssl.create_default_context(cafile=cafile)
            raw = context.wrap_socket(raw, server_hostname=self.host)
        self.sock = raw
        self.buffer = b""

    def send(self, data):
        self.sock.sendall(data)

    def request(self, method, path, headers, body=b""):
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in headers]
        self.send(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    def read_head(self):
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                fail("the connection closed before a response head")
            self.buffer += chunk
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        version, status, reason = (lines[0].split(" ", 2) + [""])[:3]
        if version != "HTTP/1.1":
            fail(f"status line {lines[0]!r}")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(status), reason, headers, lines[0]

    def read_response(self, head_request=False):
        """The final response; interim ones (100, 104) are returned too, in order."""
        interims = []
        while True:
            status, reason, headers, line = self.read_head()
            if 100 <= status < 200:
                interims.append((status, reason, headers, line))
                continue
            length = 0 if head_request or status in (204, 304) else int(headers.get("content-length", "0"))
            while len(self.buffer) < length:
                chunk = self.sock.recv(65536)
                if not chunk:
                    fail("the connection closed in a response body")
                self.buffer += chunk
            body, self.buffer = self.buffer[:length], self.buffer[length:]
            return interims, status, headers, body

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def completeness_header(version, complete):
    if version == 3:
        return ("Upload-Incomplete", "?0" if complete else "?1")
    return ("Upload-Complete", "?1" if complete else "?0")


def says_complete(version, headers):
    if version == 3:
        value = headers.get("upload-incomplete")
        return None if value is None else value == "?0"
    value = headers.get("upload-complete")
    return None if value is None else value == "?1"


def creation_headers(version, size):
    headers = [("Upload-Draft-Interop-Version", str(version)), completeness_header(version, True),
               ("Content-Length", str(size)), ("Content-Type", "application/octet-stream"),
               ("Content-Disposition", "attachment; filename=\"video.bin\"")]
    if version >= 6:
        headers.append(("Upload-Length", str(size)))
    return headers


def read_interim(conn, version):
    status, reason, headers, line = conn.read_head()
    if line != "HTTP/1.1 104 Upload Resumption Supported":
        fail(f"expected the interim 104 first, got {line!r} {headers}")
    if headers.get("upload-draft-interop-version") != str(version):
        fail(f"the 104 names interop version {headers.get('upload-draft-interop-version')!r}")
    location = headers.get("location", "")
    path = urlsplit(location).path
    if not path.startswith("/v1/uploads/"):
        fail(f"the 104's Location {location!r} is not under /v1/uploads/")
    if version >= 6 and "max-size=" not in headers.get("upload-limit", ""):
        fail(f"the 104 has no Upload-Limit max-size: {headers}")
    return path


def head_offset(base, cafile, version, path):
    conn = Connection(base, cafile)
    conn.request("HEAD", path, [("Upload-Draft-Interop-Version", str(version))])
    _, status, headers, _ = conn.read_response(head_request=True)
    conn.close()
    return status, headers


def patch(base, cafile, version, path, offset, data, complete):
    conn = Connection(base, cafile)
    headers = [("Upload-Draft-Interop-Version", str(version)), ("Upload-Offset", str(offset)),
               completeness_header(version, complete), ("Content-Length", str(len(data)))]
    if version >= 6:
        headers.append(("Content-Type", "application/partial-upload"))
    conn.request("PATCH", path, headers)
    conn.send(data)
    interims, status, response_headers, body = conn.read_response()
    conn.close()
    return status, response_headers, body


def send_file(conn, handle, start, end):
    """Sends bytes [start, end) of the file in 1 MiB pieces, read into one reused buffer (a new buffer per piece
    costs the client fresh memory each time); returns how many were handed to the socket."""
    handle.seek(start)
    buffer = memoryview(bytearray(1 << 20))
    sent = start
    while sent < end:
        count = handle.readinto(buffer[:min(1 << 20, end - sent)])
        if not count:
            break
        conn.send(buffer[:count])
        sent += count
    return sent - start


def bench(base, path, version, cuts):
    """An upload interrupted `cuts` times at even fractions of the file, each time resumed where HEAD says."""
    size = os.path.getsize(path)
    started = time.monotonic()
    sent_total = 0
    with open(path, "rb") as handle:
        conn = Connection(base, None)
        conn.request("POST", "/v1/shares", creation_headers(version, size))
        location = read_interim(conn, version)
        offset = 0
        for index in range(cuts + 1):
            end = size if index == cuts else size * (index + 1) // (cuts + 1)
            if index > 0:
                status, headers = head_offset(base, None, version, location)
                offset = int(headers["upload-offset"])
                conn = Connection(base, None)
                headers = [("Upload-Draft-Interop-Version", str(version)), ("Upload-Offset", str(offset)),
                           completeness_header(version, True), ("Content-Length", str(size - offset))]
                if version >= 6:
                    headers.append(("Content-Type", "application/partial-upload"))
                conn.request("PATCH", location, headers)
            sent_total += send_file(conn, handle, offset, end)
            if index < cuts:
                conn.close()
        _, status, _, _ = conn.read_response()
        conn.close()
    print(json.dumps({"status": status, "size": size, "sent": sent_total,
                      "seconds": round(time.monotonic() - started, 3)}))


def main():
    phase, base, path_of_file, version, argument, state_file = sys.argv[1:7]
    cafile = sys.argv[7] if len(sys.argv) > 7 else None
    version = int(version)
    if phase == "bench":
        bench(base, path_of_file, version, int(argument))
        return
    data = open(path_of_file, "rb").read()
    if phase in ("start", "whole"):
        conn = Connection(base, cafile)
        conn.request("POST", "/v1/shares", creation_headers(version, len(data)))
        # As URLSession does: the head first, then the body once the 104 (or nothing) came back.
        path = read_interim(conn, version)
        with open(state_file, "w") as state:
            state.write(path)
        if phase == "start":
            cut = int(argument)
            sent = 0
            while sent < cut:
                step = min(1 << 20, cut - sent)
                conn.send(data[sent:sent + step])
                sent += step
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            conn.close()
            print(json.dumps({"location": path, "sent": sent}))
            return
        conn.send(data)
        _, status, headers, body = conn.read_response()
        conn.close()
        print(json.dumps({"location": path, "status": status, "complete": says_complete(version, headers),
                          "reprDigest": headers.get("repr-digest"), "body": json.loads(body or b"null")}))
        return
    path = open(state_file).read()
    if phase == "cancel":
        conn = Connection(base, cafile)
        conn.request("DELETE", path, [("Upload-Draft-Interop-Version", str(version))])
        _, deleted, _, _ = conn.read_response()
        conn.close()
        status, _ = head_offset(base, cafile, version, path)
        print(json.dumps({"deleted": deleted, "after": status}))
        return
    status, headers = head_offset(base, cafile, version, path)
    if status != 204:
        fail(f"HEAD answered {status} {headers}")
    if headers.get("cache-control") != "no-store":
        fail(f"HEAD without Cache-Control: no-store: {headers}")
    if says_complete(version, headers) is not False:
        fail(f"HEAD does not say the upload is incomplete in version {version}: {headers}")
    offset = int(headers["upload-offset"])
    if version >= 6 and headers.get("upload-length") != str(len(data)):
        fail(f"HEAD's Upload-Length is {headers.get('upload-length')!r}")
    wrong, wrong_headers, _ = patch(base, cafile, version, path, offset + 1, data[offset + 1:offset + 2], False)
    after_status, after = head_offset(base, cafile, version, path)
    result = {"resumedAt": offset, "wrongOffset": wrong, "wrongOffsetSays": wrong_headers.get("upload-offset"),
              "offsetAfterWrong": int(after.get("upload-offset", "-1"))}
    parts = int(argument)
    cuts = [offset + (len(data) - offset) * index // parts for index in range(parts)] + [len(data)]
    for index in range(parts):
        start, end = cuts[index], cuts[index + 1]
        last = index == parts - 1
        status, headers, body = patch(base, cafile, version, path, start, data[start:end], last)
        if not last:
            if status != 204 or headers.get("upload-offset") != str(end) or says_complete(version, headers):
                fail(f"an intermediate PATCH answered {status} {headers}")
            continue
        result.update({"status": status, "complete": says_complete(version, headers),
                       "body": json.loads(body or b"null")})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
