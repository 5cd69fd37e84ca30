"""Unpicklers for ember.load: the weights-only allowlist and its public API.

ember.save writes tensors and plain values in a safe (JSON + raw bytes) layout;
only objects that layout cannot hold (an argparse.Namespace, a whole model) are
pickled, with their tensors kept out of the pickle.  Loading such a pickle with
``weights_only=True`` (the default, as in PyTorch since 2.6) resolves only
allowlisted globals: the standard containers below plus what the user trusts
through ``add_safe_globals``/``safe_globals``.  Anything else raises
``pickle.UnpicklingError`` naming the global and how to allow it.
"""

import collections
import contextlib
import pickle
import threading

_DEFAULT_SAFE = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,
    ("collections", "defaultdict"): collections.defaultdict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "bytearray"): bytearray,
    ("builtins", "slice"): slice,
    ("builtins", "complex"): complex,
    ("builtins", "range"): range,
}

_user_safe = []  # [(object, "module.qualname")] in the order added
_user_entries = []  # the same, as the user gave them
_local = threading.local()  # .stack: lists pushed by the safe_globals context manager


def _qualified(entry):
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str):
            raise TypeError(
                f"add_safe_globals: a tuple entry must be (object, 'module.name'), got {entry!r}"
            )
        return entry
    module = getattr(entry, "__module__", None)
    name = getattr(entry, "__qualname__", None) or getattr(entry, "__name__", None)
    if module is None or name is None:
        raise TypeError(
            f"add_safe_globals: {entry!r} is neither a class nor a function; pass "
            "(object, 'module.name') for other objects"
        )
    return entry, f"{module}.{name}"


def add_safe_globals(safe_globals):
    """Allow these classes/functions in ``ember.load(..., weights_only=True)``."""
    for entry in safe_globals:
        _user_safe.append(_qualified(entry))
        _user_entries.append(entry)


def get_safe_globals():
    """The user-added safe globals (as given to add_safe_globals)."""
    return list(_user_entries)


def clear_safe_globals():
    _user_safe.clear()
    _user_entries.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """Allow these globals in weights-only loads inside the ``with`` block only."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append([_qualified(g) for g in safe_globals])
    try:
        yield
    finally:
        stack.pop()


def _allowed(module, name):
    found = _DEFAULT_SAFE.get((module, name))
    if found is not None:
        return found
    full = f"{module}.{name}"
    for group in [_user_safe, *getattr(_local, "stack", [])]:
        for obj, qualified in group:
            if qualified == full:
                return obj
    return None


def refusal(module, name):
    """The UnpicklingError for a global that a weights-only load may not resolve."""
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint.\n"
        "\t(1) Re-running `ember.load` with `weights_only` set to `False` will likely succeed, "
        "but it can result in arbitrary code execution. Do it only if you got the file from "
        "a trusted source.\n"
        "\t(2) Alternatively, to load with `weights_only=True` allowlist the global below.\n"
        f"\tWeightsUnpickler error: Unsupported global: GLOBAL {module}.{name} was not an "
        "allowed global by default. Please use "
        f"`ember.serialization.add_safe_globals([{name}])` or the "
        f"`ember.serialization.safe_globals([{name}])` context manager to allowlist this "
        "global if you trust this class/function."
    )


class Unpickler(pickle.Unpickler):
    """Resolves persistent ids with ``persistent`` and, when ``weights_only``, only
    allowlisted globals."""

    def __init__(self, file, persistent, weights_only):
        super().__init__(file)
        self._persistent = persistent
        self._weights_only = weights_only

    def persistent_load(self, pid):
        return self._persistent(pid)

    def find_class(self, module, name):
        if not self._weights_only:
            return super().find_class(module, name)
        found = _allowed(module, name)
        if found is None:
            raise refusal(module, name)
        return found
