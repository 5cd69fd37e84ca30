"""torch-level functions that are compositions of ember ops or process-wide
settings, so that ``import ember as torch`` finds them: dtype info, closeness
tests, broadcasting helpers, meshgrid, and the determinism / precision /
device switches PyTorch scripts set."""

import warnings

import ember_core as ec
from ember_core import _cuda_blas
from ember_core import array_api as _xp

__all__ = [
    "allclose",
    "are_deterministic_algorithms_enabled",
    "broadcast_shapes",
    "broadcast_tensors",
    "equal",
    "finfo",
    "get_default_device",
    "get_float32_matmul_precision",
    "get_num_interop_threads",
    "iinfo",
    "is_complex",
    "is_deterministic_algorithms_warn_only_enabled",
    "is_storage",
    "isclose",
    "meshgrid",
    "set_default_device",
    "set_float32_matmul_precision",
    "set_num_interop_threads",
    "use_deterministic_algorithms",
]


# -------------------------------------------------------------- dtype info


class finfo:
    """Machine limits of a floating dtype (the default dtype when none is given).

    >>> finfo(float32).eps
    1.1920928955078125e-07
    """

    def __init__(self, type=None):
        dtype = type if type is not None else ec.get_default_dtype()
        if not isinstance(dtype, ec.dtype) or not dtype.is_floating_point:
            raise TypeError(f"finfo(): argument 'type' must be a floating point dtype, not {dtype}")
        info = _xp.finfo(dtype)
        self.dtype = dtype
        self.bits = info.bits
        self.eps = info.eps
        self.max = info.max
        self.min = info.min
        self.smallest_normal = info.smallest_normal
        self.tiny = info.smallest_normal
        # PyTorch: 10 ** -floor(precision in decimal digits)
        import math

        self.resolution = 10.0 ** -int(math.floor(-math.log10(self.eps)))

    def __repr__(self):
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, "
            f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype.name})"
        )


class iinfo:
    """Limits of an integer dtype."""

    def __init__(self, type):
        if not isinstance(type, ec.dtype) or type.is_floating_point or type is ec.bool:
            raise TypeError(f"iinfo(): argument 'type' must be an integer dtype, not {type}")
        info = _xp.iinfo(type)
        self.dtype, self.bits, self.max, self.min = type, info.bits, info.max, info.min

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype.name})"


def is_complex(input):
    """False: ember has no complex dtypes."""
    if not isinstance(input, ec.Tensor):
        raise TypeError(
            f"is_complex(): argument 'input' must be Tensor, not {type(input).__name__}"
        )
    return False


def is_storage(obj):
    return isinstance(obj, ec.UntypedStorage)


# ---------------------------------------------------------------- closeness


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise (exact for integers)."""
    if not isinstance(other, ec.Tensor):
        other = ec.tensor(other, dtype=input.dtype)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    if not input.dtype.is_floating_point:
        return input == other
    close = (input - other).abs() <= atol + rtol * other.abs()
    close = close | (input == other)  # equal infinities
    if equal_nan:
        close = close | (input.isnan() & other.isnan())
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether isclose holds everywhere (after broadcasting)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    """True when both tensors have the same shape and elements."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input == other).all())


# ------------------------------------------------------------- broadcasting


def broadcast_shapes(*shapes):
    """The shape tensors of these shapes broadcast to."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate((1,) * (n - len(s)) + s):
            if d == 1:
                continue
            if out[i] != 1 and out[i] != d:
                raise RuntimeError(
                    f"Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                    f"between {tuple(out)} and {s}"
                )
            out[i] = d
    return ec.Size(out)


def broadcast_tensors(*tensors):
    """Views of the tensors expanded to their common shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids (views) from 1-D tensors; indexing 'ij' (default) or 'xy'."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D"
            )
    flat = [t.reshape(-1) for t in tensors]
    shape = tuple(t.shape[0] for t in flat)
    n = len(flat)
    grids = [
        t.reshape(tuple(-1 if j == i else 1 for j in range(n))).expand(shape)
        for i, t in enumerate(flat)
    ]
    if indexing == "xy" and n >= 2:  # Cartesian indexing: the first two dims swap places
        grids = [g.transpose(0, 1) for g in grids]
    return tuple(grids)


# ------------------------------------------------------- process settings

_deterministic = {"enabled": False, "warn_only": False}
_matmul_precision = ["highest"]
_interop_threads = [1]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record the request.  ember's CPU kernels are deterministic already (fixed
    reduction orders; index puts apply duplicates in order), so nothing changes."""
    if not isinstance(mode, bool):
        raise RuntimeError(
            f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}"
        )
    _deterministic["enabled"], _deterministic["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled():
    return _deterministic["enabled"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


def set_float32_matmul_precision(precision):
    """'highest', 'high' or 'medium'.  On CUDA 'high' and 'medium' let float32
    products use TF32 (``ember.backends.cuda.matmul.allow_tf32``, which this
    sets, as PyTorch does); CPU float32 products always run in full float32."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(
            f"Invalid precision {precision!r}: expected 'highest', 'high' or 'medium'"
        )
    _matmul_precision[0] = precision
    _cuda_blas.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision():
    # allow_tf32 set directly counts too (PyTorch keeps the two in step)
    tf32 = _cuda_blas.matmul.allow_tf32
    if tf32 == (_matmul_precision[0] != "highest"):
        return _matmul_precision[0]
    return "high" if tf32 else "highest"


def set_num_interop_threads(n):
    """ember runs ops one at a time on the calling thread (no inter-op pool); the
    number is kept for get_num_interop_threads."""
    if not isinstance(n, int) or n < 1:
        raise RuntimeError("Number of inter-op threads must be positive")
    _interop_threads[0] = n


def get_num_interop_threads():
    return _interop_threads[0]


def set_default_device(device):
    """Only the CPU exists in this build: 'cpu' or None are accepted."""
    if device is not None and ec.device(device).type != "cpu":
        from ember_core import _cuda

        _cuda.unavailable(f"ember.set_default_device({device!r})")


def get_default_device():
    return ec.device("cpu")
