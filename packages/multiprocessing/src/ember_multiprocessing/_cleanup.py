"""The cleanup process of the file_system strategy: reads names (and "-name" for
names already unlinked) from stdin; when stdin closes — its parent exited, by
any means — unlinks every name still listed."""

import os
import signal
import sys


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    names = set()
    for raw in sys.stdin.buffer:
        line = raw.decode(errors="replace").strip()
        if not line:
            continue
        if line.startswith("-"):
            names.discard(line[1:])
        else:
            names.add(line)
    for name in names:
        if "/" in name or not name.startswith("ember_"):
            continue
        try:
            os.unlink(os.path.join("/dev/shm", name))
        except OSError:
            pass


if __name__ == "__main__":
    main()
