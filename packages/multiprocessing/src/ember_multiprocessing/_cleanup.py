"""The cleanup process of the file_system strategy (Note [Cleanup process] in
_file_system.py): reads "+name" / "-name" lines from stdin; at end-of-file (every
process that could write has exited, by any means) unlinks every name still
listed."""

import contextlib
import os
import signal
import sys

SHM_DIR = "/dev/shm"
PREFIX = "ember_"


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    names = set()
    for raw in sys.stdin.buffer:
        line = raw.decode(errors="replace").strip()
        if len(line) < 2:
            continue
        name = line[1:]
        if "/" in name or not name.startswith(PREFIX):
            continue  # only ever our own files
        if line[0] == "+":
            names.add(name)
        elif line[0] == "-":
            names.discard(name)
    for name in names:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(SHM_DIR, name))


if __name__ == "__main__":
    main()
