"""Autocast (CPU and CUDA): the thread-local state, PyTorch's per-op cast
policies, and the dispatch handler that applies them.

Note [Autocast]
Inside an autocast region each op on PyTorch's CPU lists runs in a chosen
precision: "lower_precision_fp" ops (matmuls, convolutions) cast their
floating-point tensor arguments to the region's dtype (bfloat16 by default),
"fp32" ops (losses, linalg, reductions that lose precision) cast them to
float32, and "promote" ops (cat, stack, index_copy) cast them to the widest
of float32 / the region's dtype among them.  Every other op runs on what it is
given.  Only float32/float16/bfloat16 tensors on a device whose region is
enabled are cast, to that device's dtype (float64 stays): a 'cuda' region
(float16 by default) casts CUDA tensors, a 'cpu' region CPU tensors, as
PyTorch's separate AutocastCPU/AutocastCUDA keys do.  Both use the policy of
the op's declaration; PyTorch's CUDA lists differ from its CPU lists in a few
ops, which ember does not distinguish yet.
The casts are ordinary ``_to_copy`` calls made before the op, so autograd
records them and gradients reach float32 parameters as float32.  While a listed
op runs, nested op calls are not cast again (PyTorch excludes its autocast key
the same way).

Cost when off: the handler is registered with the op table only while some
thread has autocast enabled, so outside regions dispatch is untouched; composite
ops on the lists (which the handler cannot see) are generated with one extra
check of the ``_ac`` flag of the op table's namespace, set alongside.

Casts of float32 leaf tensors that require grad (the model's weights) to the
lower precision are cached for the region when ``cache_enabled``, and the cache
is cleared when the outermost region exits, as PyTorch does.

Each op's policy is a fact of its declaration (``defop(..., autocast=...)``,
Note [Op table]), copied from PyTorch's AutocastCPU lists
(aten/src/ATen/autocast_mode.cpp): composite ember ops carry the policy of the
aten op of the same name; the non-composite ops they are built from carry it
where PyTorch lists the corresponding aten op.  A policy may depend on the
arguments (``_pad_mode``: only the reflect/replicate modes are on the fp32
list); it is then a function of the op's canonical arguments.
"""

import threading

from ember_core._base import dispatch as _dispatch
from ember_core._tensor import copy as _copy
from ember_core._tensor import dtype as _dtype

LOWER = "lower_precision_fp"
FP32 = "fp32"
PROMOTE = "promote"

_LOWER_DTYPES = {
    "cpu": (_dtype.bfloat16, _dtype.float16),
    "cuda": (_dtype.float16, _dtype.bfloat16),
}
_DEFAULT_DTYPE = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}


class _State(threading.local):
    """Per-thread autocast state (PyTorch keeps it thread-local too)."""

    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = dict(_DEFAULT_DTYPE)
        self.cache_enabled = True
        self.nesting = 0
        self.excluded = False  # inside a listed op: nested op calls run as called
        self.cache = {}  # id(float32 leaf) -> (leaf, its lower-precision copy)


_state = _State()

# The handler is registered while any thread has autocast on for some device.
_lock = threading.Lock()
_threads_on = 0


def _check_device(device_type, fn):
    if device_type not in _DEFAULT_DTYPE:
        raise RuntimeError(f"{fn}: unsupported autocast device_type '{device_type}'")


def is_autocast_enabled(device_type="cuda"):
    _check_device(device_type, "is_autocast_enabled")
    return _state.enabled[device_type]


def set_autocast_enabled(device_type, enabled):
    """Turn autocast on or off for this thread (what a region does on entry/exit)."""
    global _threads_on
    _check_device(device_type, "set_autocast_enabled")
    enabled = bool(enabled)
    st = _state
    was = st.enabled[device_type]
    st.enabled[device_type] = enabled
    if was == enabled:
        return
    with _lock:
        _threads_on += 1 if enabled else -1
        if enabled and _threads_on == 1:
            _dispatch.register_handler(_handler)
            _dispatch._ns["_ac"] = True
        elif not enabled and _threads_on == 0:
            _dispatch._ns["_ac"] = False
            _dispatch.remove_handler(_handler)


def get_autocast_dtype(device_type):
    _check_device(device_type, "get_autocast_dtype")
    return _state.dtype[device_type]


def set_autocast_dtype(device_type, dtype):
    # Any dtype is stored (as PyTorch does); autocast() itself checks what it
    # supports and disables a region with an unsupported one.
    _check_device(device_type, "set_autocast_dtype")
    if not isinstance(dtype, _dtype.dtype):
        raise TypeError(f"set_autocast_dtype: expected an ember dtype, got {type(dtype).__name__}")
    _state.dtype[device_type] = dtype


def supported_dtypes(device_type):
    """The lower-precision dtypes an autocast region on ``device_type`` accepts."""
    return _LOWER_DTYPES[device_type]


def is_autocast_cache_enabled():
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled):
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache():
    _state.cache.clear()


def autocast_increment_nesting():
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting():
    _state.nesting -= 1
    return _state.nesting


# ------------------------------------------------------------------- casting


def _region(a, st):
    """The device type whose enabled region casts ``a`` (PyTorch's
    is_autocast_eligible: a floating-point tensor other than float64), or None."""
    d = getattr(a, "_dtype", None)
    if d is None or not d.is_floating_point or d is _dtype.float64:
        return None
    kind = a._storage._device.type
    return kind if st.enabled.get(kind) else None


def _cast(t, target, st):
    kind = _region(t, st)
    if kind is None:
        return t
    if target is None:  # the lower precision of the tensor's own region
        target = st.dtype[kind]
    if t._dtype is target:
        return t

    device = t._storage._device
    if (
        st.cache_enabled
        and target is st.dtype[kind]
        and t._dtype is _dtype.float32
        and t._rg
        and t.grad_fn is None
        and t._base is None
    ):
        hit = st.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1]._dtype is target:
            return hit[1]
        cast = _copy._to_op(t, target, device)
        st.cache[id(t)] = (t, cast)
        return cast
    return _copy._to_op(t, target, device)


def _promote_target(args, current, st):
    # PyTorch's prioritize(): float32 wins over the lower dtype, float64 is
    # ignored, and another low-precision dtype is an error.
    for a in args:
        if isinstance(a, (list, tuple)):
            current = _promote_target(a, current, st)
        elif (kind := _region(a, st)) is not None:
            d = a._dtype
            if current is None:
                current = st.dtype[kind]
            if current is _dtype.float32 or d is _dtype.float32:
                current = _dtype.float32
            elif d is not current:
                raise RuntimeError(
                    f"autocast: promote op got a {d} tensor in a {current} autocast region "
                    "(Unexpected floating ScalarType in at::autocast::prioritize)"
                )
    return current


def _cast_all(args, target, st):
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.append(type(a)(_cast_all(a, target, st)))
        elif hasattr(a, "_dtype"):
            out.append(_cast(a, target, st))
        else:
            out.append(a)
    return tuple(out)


def _policy(op, args):
    p = op.autocast
    return p(args) if callable(p) else p


def cast_args(policy, args, st=None):
    """``args`` with their eligible tensors cast as ``policy`` says."""
    st = st or _state
    if policy == LOWER:
        target = None  # each tensor to its region's dtype
    elif policy == FP32:
        target = _dtype.float32
    else:
        target = _promote_target(args, None, st)
        if target is None:
            return tuple(args)
    return _cast_all(args, target, st)


def _on(st):
    return st.enabled["cpu"] or st.enabled["cuda"]


def _handler(op, args, kwargs, call):
    st = _state
    if st.excluded or not _on(st):
        return call(args, kwargs)
    policy = _policy(op, args)
    if policy is None:
        return call(args, kwargs)
    args = cast_args(policy, args, st)
    st.excluded = True
    try:
        return call(args, kwargs)
    finally:
        st.excluded = False


def call_composite(op, args):
    """Run a listed composite op under autocast (generated wrappers call this
    when the ``_ac`` flag is up)."""
    st = _state
    if st.excluded or not _on(st):
        return op.impl(*args)
    policy = _policy(op, args)
    if policy is None:
        return op.impl(*args)
    args = cast_args(policy, args, st)
    st.excluded = True
    try:
        return op.impl(*args)
    finally:
        st.excluded = False


_dispatch._ns["_autocast_call"] = call_composite
