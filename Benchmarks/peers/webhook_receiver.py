"""A webhook receiver for the benchmark (issue 33): answers every POST with 204 and counts them.

    webhook_receiver.py PORT-FILE COUNT-FILE

Binds an ephemeral port on 127.0.0.1, writes it to PORT-FILE, and rewrites COUNT-FILE with the number of requests
received every second.
"""
import http.server
import os
import sys
import threading
import time

port_file, count_file = sys.argv[1], sys.argv[2]
count = 0
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global count
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(204)
        self.end_headers()
        with lock:
            count += 1

    def log_message(self, *arguments):
        pass


def report():
    while True:
        time.sleep(1)
        with lock:
            seen = count
        with open(count_file + ".tmp", "w") as out:
            out.write(str(seen))
        os.rename(count_file + ".tmp", count_file)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=report, daemon=True).start()
with open(port_file + ".tmp", "w") as out:
    out.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
