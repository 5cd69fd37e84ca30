"""ember._dynamo: the torch._dynamo names scripts use around torch.compile, mapped to
ember.compiler (``reset``, ``disable``, ``is_compiling``, ``allow_in_graph``) and a
``config`` whose settings ember reads (``cache_size_limit``) or accepts."""

from ember import _compile
from ember.compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset

__all__ = [
    "allow_in_graph",
    "assume_constant_result",
    "config",
    "disable",
    "is_compiling",
    "mark_dynamic",
    "mark_static",
    "reset",
]


class _Config:
    """torch._dynamo.config: ``cache_size_limit`` is the number of graphs a compiled
    function keeps (ember.compile's CACHE_SIZE); other settings are kept as given."""

    def __init__(self):
        object.__setattr__(self, "_settings", {"suppress_errors": False, "verbose": False})

    @property
    def cache_size_limit(self):
        return _compile.CACHE_SIZE

    @cache_size_limit.setter
    def cache_size_limit(self, n):
        if int(n) < 1:
            raise ValueError(f"cache_size_limit must be at least 1, got {n}")
        _compile.CACHE_SIZE = int(n)

    def __getattr__(self, name):
        try:
            return self._settings[name]
        except KeyError:
            raise AttributeError(f"ember._dynamo.config has no setting {name!r}") from None

    def __setattr__(self, name, value):
        if name == "cache_size_limit":
            object.__setattr__(self, name, value)  # the property's setter
        else:
            self._settings[name] = value


config = _Config()


def mark_dynamic(t, index, **kwargs):
    """Accepted: ember records one graph per input shape (up to cache_size_limit), so
    a dim that changes records again rather than generalising."""


def mark_static(t, index=None):
    """Accepted: ember's graphs are for the shapes they were recorded with."""
