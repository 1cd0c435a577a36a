"""A minimal drop-folder daemon in Python, as people write them: watchdog reports created and moved-in files,
python-magic sniffs their type, shutil.copy puts a copy into the spool, then the source and the copy are removed
(the "discard" processor). Prints "ready" on stderr once the watch is established; stops on SIGTERM.

    python_peer.py INBOX SPOOL
"""

import os
import shutil
import signal
import sys
import threading

import magic
from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer


class DropHandler(FileSystemEventHandler):
    def __init__(self, spool):
        self.spool = spool
        self.sniffer = magic.Magic(mime=True)

    def handle(self, path):
        if os.path.basename(path).startswith(".") or not os.path.isfile(path):
            return
        try:
            mime = self.sniffer.from_file(path)
            kind = mime.split("/")[0] if mime.startswith(("text/", "image/")) else "other"
            copy = os.path.join(self.spool, kind + "-" + os.path.basename(path))
            shutil.copy(path, copy)
            os.remove(path)
            os.remove(copy)
        except FileNotFoundError:
            pass

    def on_created(self, event):
        if not event.is_directory:
            self.handle(event.src_path)

    def on_moved(self, event):
        if not event.is_directory:
            self.handle(event.dest_path)


def main():
    inbox, spool = sys.argv[1], sys.argv[2]
    os.makedirs(spool, exist_ok=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    observer = Observer()
    observer.schedule(DropHandler(spool), inbox, recursive=False)
    observer.start()
    sys.stderr.write("ready\n")
    sys.stderr.flush()
    stop.wait()
    observer.stop()
    observer.join()


if __name__ == "__main__":
    main()
