"""ember.version (torch.version): the version of this build and what it was
built with.  ``__version__`` compares with strings and tuples as PyTorch's
``TorchVersion`` does (``ember.__version__ >= (0, 1)``)."""

from importlib import metadata as _metadata

__all__ = ["TorchVersion", "__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]


def _parts(text):
    """'2.13.0+cpu' -> (2, 13, 0): the leading numeric release segment."""
    out = []
    for piece in str(text).split("+")[0].split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
        if len(digits) != len(piece):
            break
    return tuple(out)


class TorchVersion(str):
    """A version string that compares by release numbers with strings, tuples
    and lists, like torch.torch_version.TorchVersion."""

    def _cmp(self, other):
        if isinstance(other, (tuple, list)):
            other = tuple(int(x) for x in other)
        elif isinstance(other, str):
            other = _parts(other)
        else:
            raise TypeError(f"cannot compare TorchVersion with {type(other).__name__}")
        mine = _parts(self)
        width = max(len(mine), len(other))
        mine = mine + (0,) * (width - len(mine))
        other = other + (0,) * (width - len(other))
        return (mine > other) - (mine < other)

    def __lt__(self, other):
        return self._cmp(other) < 0

    def __le__(self, other):
        return self._cmp(other) <= 0

    def __gt__(self, other):
        return self._cmp(other) > 0

    def __ge__(self, other):
        return self._cmp(other) >= 0

    def __eq__(self, other):
        if isinstance(other, str):
            return str.__eq__(self, other)
        if isinstance(other, (tuple, list)):
            return self._cmp(other) == 0
        return NotImplemented

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = str.__hash__


# the installed distribution's version (Note [One version], VERSION)
__version__ = TorchVersion(_metadata.version("ember"))
# No CUDA/ROCm/XPU toolkit is compiled into this build (ember.cuda.is_available() says
# whether one is usable at run time).
cuda = None
hip = None
rocm = None
xpu = None
git_version = "unknown"
debug = False
