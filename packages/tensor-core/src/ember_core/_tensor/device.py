"""Devices: where a tensor's memory lives and which kernels run on it; the
default device and the deterministic-algorithms switch.

Note [Kernel interface per device]
Every device carries the namespace of kernels that run on its memory: ``_k``
for calls that keep the GIL (short ones) and ``_kn`` for long ones.  On the CPU
they are ``ember_core._C.lib`` and its GIL-releasing twin; on CUDA devices an
``ember_core._cuda.runtime.CudaKernels`` object whose attributes are the same entry
points (``ec_unary``, ``ec_copy``, ...) running on the GPU.  An op's Python code
decides shapes, dtypes and output allocation once for every device and calls
``x._storage._device._k.ec_<kernel>(...)``: a backend adds kernels without
touching callers, and a kernel a backend lacks raises NotImplementedError naming
the op and the device.
"""

import threading

from ember_core._base.lib import lib, nogil


class device:
    """``device('cpu')``, ``device('cuda:0')`` or ``device('cuda', 0)``.

    >>> device('cpu')
    device(type='cpu')
    """

    __slots__ = ("type", "index", "_k", "_kn")

    def __new__(cls, type_or_str, index=None):
        if isinstance(type_or_str, device):
            return type_or_str
        text = str(type_or_str)
        kind, sep, idx = text.partition(":")
        if sep:
            if index is not None:
                raise ValueError(f"device(): index given twice in {text!r} and {index}")
            try:
                index = int(idx)
            except ValueError:
                raise RuntimeError(f"Invalid device string: {text!r}") from None
        if kind not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {text}"
            )
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        if kind == "cpu" and index not in (None, 0):
            raise RuntimeError(f"CPU device index must be 0, got {index}")
        key = (kind, index)
        cached = _cache.get(key)
        if cached is not None:
            return cached
        self = object.__new__(cls)
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "index", index)
        k, kn = _kernels_for(kind, index)
        object.__setattr__(self, "_k", k)
        object.__setattr__(self, "_kn", kn)
        _cache[key] = self
        return self

    def __setattr__(self, name, value):
        raise AttributeError("device is immutable")

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))

    # ``with ember.device('meta'):`` -- factory functions called without a device
    # inside the block make their tensors here (Note [Default device]).
    def __enter__(self):
        _check_default(self, "ember.device(...).__enter__")
        stack = _default_stack()
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _default_stack().pop()
        return False


def _kernels_for(kind, index):
    if kind == "cpu":
        return lib, nogil
    if kind == "meta":
        return META_KERNELS, META_KERNELS
    from ember_core._cuda import runtime as _cuda

    k = _cuda.CudaKernels(index)
    return k, k


class _MetaKernels:
    """The kernel namespace of the meta device (Note [Meta tensors]): every kernel
    succeeds without touching memory, since meta tensors have none.  The queries
    that describe the kernel set rather than compute (which kernels exist, thread
    counts, the last error message) answer as the CPU's."""

    _QUERIES = frozenset(
        {
            "ec_binary_has_kernel",
            "ec_unary_has_kernel",
            "ec_last_message",
            "ec_get_num_threads",
            "ec_has_openmp",
        }
    )

    def __getattr__(self, name):
        if name in self._QUERIES:
            return getattr(lib, name)
        if not name.startswith("ec_"):
            raise AttributeError(name)
        return _meta_kernel


def _meta_kernel(*args):
    return 0  # EC_OK


META_KERNELS = _MetaKernels()


_cache = {}
CPU = device("cpu")


def to_device(value):
    if value is None:
        return None
    if isinstance(value, device):
        return value
    if isinstance(value, int):
        return device("cuda", value)
    return device(str(value))


def require_cpu(dev, op):
    """For ops that run on the CPU only: a clear error for any other device."""
    if dev.type != "cpu":
        raise NotImplementedError(
            f"{op}: not implemented for device '{dev}' (ember runs it on the CPU only); "
            "move the tensors to the CPU with .cpu()"
        )


# ------------------------------------------------------------ default device
# Note [Default device]
# Factory functions (empty, zeros, rand, arange, tensor, ..., and so nn layers'
# parameters) called without a device use the default device: the innermost
# ``with ember.device(...)`` block of this thread, else what set_default_device
# set for this thread, else the CPU -- as PyTorch's, both are per thread.  Ops
# on tensors keep their inputs' device.

_local = threading.local()


def _default_stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def default_device():
    """The device a factory function called without one uses (Note [Default device])."""
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    return getattr(_local, "default", CPU)


def _check_default(dev, what):
    if dev.type == "cuda":
        from ember_core._cuda import runtime as _cuda

        _cuda.require(dev, what)


def set_default_device(device_):
    """Factory functions called without a device make their tensors on ``device_``
    from now on, in this thread (None: the CPU again).

    >>> ember.set_default_device('meta')  # build a model without memory
    """
    dev = CPU if device_ is None else to_device(device_)
    _check_default(dev, f"ember.set_default_device({device_!r})")
    _local.default = dev


def get_default_device():
    """The device factory functions use when given none (a CUDA default reads as the
    current CUDA device, as in PyTorch)."""
    dev = default_device()
    if dev.type == "cuda" and dev.index is None:
        from ember_core._cuda import runtime as _cuda

        return device("cuda", _cuda.current_device())
    return dev


# ------------------------------------------------------ deterministic algorithms
# PyTorch's switch between a device's fast and its deterministic kernels.  Every
# ember kernel is deterministic already (fixed reduction orders; index puts apply
# duplicates in order), so the request is recorded and changes nothing.

_deterministic = {"enabled": False, "warn_only": False}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode, *, warn_only=False):
    if not isinstance(mode, bool):
        raise RuntimeError(
            f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}"
        )
    _deterministic["enabled"], _deterministic["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled():
    return _deterministic["enabled"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """The same switch as a level: 0 ('default') off, 1 ('warn') warn only, 2 ('error')."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(
                "invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                f"but got {debug_mode}"
            )
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(
            f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}"
        )
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _deterministic["enabled"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2
