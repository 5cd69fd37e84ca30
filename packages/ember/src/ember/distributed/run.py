"""``python -m ember.distributed.run --nproc-per-node N script.py``: torchrun for
ember (ember_distributed.run)."""

import sys

from ember_distributed.run import main, parse_args

__all__ = ["main", "parse_args"]

if __name__ == "__main__":
    sys.exit(main())
