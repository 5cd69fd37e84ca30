"""ember.multiprocessing is ember_multiprocessing (tensors shared across processes)."""

import sys

try:
    import ember_multiprocessing
except ImportError as exc:
    raise ImportError(
        "ember.multiprocessing needs the ember-multiprocessing package: pip install "
        "ember-multiprocessing"
    ) from exc

sys.modules[__name__] = ember_multiprocessing
