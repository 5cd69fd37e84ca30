"""Unpicklers for ember.load: the weights-only allowlist and its public API.

A checkpoint's pickle holds the object's structure; tensor data lives apart (zip
records, or a safetensors table).  Loading with ``weights_only=True`` (the default,
as in PyTorch since 2.6) resolves only allowlisted globals: what PyTorch 2.13
allows by default (the standard containers below, ``_codecs.encode`` that protocol-2
pickles use for bytes, torch's tensor globals, mapped in _torch_checkpoint.py), a
few more plain types, NumPy arrays, dtypes and scalars (which PyTorch asks users to
allowlist; rebuilding them runs no code from the file), plus what the user trusts
through ``add_safe_globals``/``safe_globals``.  Anything else raises
``pickle.UnpicklingError`` naming the global and how to allow it.  Python 2 names
that protocol-2 pickles carry (``__builtin__.set``) are read as Python 3's, as the
standard unpickler does.
"""

import _compat_pickle
import codecs
import collections
import contextlib
import pickle
import threading

import numpy as np

_DEFAULT_SAFE = {
    ("_codecs", "encode"): codecs.encode,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,
    ("collections", "defaultdict"): collections.defaultdict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "bytearray"): bytearray,
    ("builtins", "slice"): slice,
    ("builtins", "complex"): complex,
    ("builtins", "range"): range,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}
# NumPy's array and scalar rebuild functions, under NumPy 2's and NumPy 1's names.
_multiarray = getattr(np, "_core", None) or np.core
for _module in ("numpy._core.multiarray", "numpy.core.multiarray"):
    _DEFAULT_SAFE[(_module, "_reconstruct")] = _multiarray.multiarray._reconstruct
    _DEFAULT_SAFE[(_module, "scalar")] = _multiarray.multiarray.scalar
for _module in ("numpy._core.numeric", "numpy.core.numeric"):  # protocol 5's arrays
    _DEFAULT_SAFE[(_module, "_frombuffer")] = _multiarray.numeric._frombuffer

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


def _python3_name(module, name):
    """The Python 3 name of a global that a protocol-2 pickle names the Python 2 way."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


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
        module, name = _python3_name(module, name)
        found = _allowed(module, name)
        if found is None:
            raise refusal(module, name)
        return found
