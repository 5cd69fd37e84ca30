"""ember.testing: assert_close and make_tensor, as torch.testing.

>>> assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
"""

import collections.abc
import math

import numpy as np

import ember_core as ec

__all__ = ["assert_close", "make_tensor"]

# (rtol, atol) by dtype, as PyTorch; integers and bool compare exactly
_TOLERANCES = {
    ec.float16: (1e-3, 1e-5),
    ec.bfloat16: (1.6e-2, 1e-5),
    ec.float32: (1.3e-6, 1e-5),
    ec.float64: (1e-7, 1e-7),
}


class _Mismatch(AssertionError):
    pass


def _tolerances(dtype, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError(
            "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
            f"{'rtol' if rtol is None else 'atol'}."
        )
    if rtol is not None:
        return rtol, atol
    return _TOLERANCES.get(dtype, (0.0, 0.0))


def _as_array(t):
    t = t.detach()
    if t.dtype is ec.bfloat16:
        t = t.float()
    return np.asarray(t.cpu().numpy())


def _fmt_index(idx):
    return "(" + ", ".join(str(i) for i in idx) + ("," if len(idx) == 1 else "") + ")"


def _compare_tensors(
    actual, expected, rtol, atol, equal_nan, check_dtype, check_device, check_stride, msg, where
):
    if tuple(actual.shape) != tuple(expected.shape):
        raise _Mismatch(
            f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}."
        )
    if check_dtype and actual.dtype is not expected.dtype:
        raise _Mismatch(
            f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}."
        )
    if check_device and actual.device != expected.device:
        raise _Mismatch(
            f"The values for attribute 'device' do not match: {actual.device} != {expected.device}."
        )
    if check_stride and tuple(actual.stride()) != tuple(expected.stride()):
        raise _Mismatch(
            f"The values for attribute 'stride()' do not match: {actual.stride()} != "
            f"{expected.stride()}."
        )
    dtype = (
        actual.dtype
        if actual.dtype is expected.dtype
        else ec.promote_types(actual.dtype, expected.dtype)
    )
    rtol, atol = _tolerances(dtype, rtol, atol)
    a, e = _as_array(actual), _as_array(expected)
    _compare_arrays(a, e, rtol, atol, equal_nan, "Tensor-likes", msg)


def _compare_arrays(a, e, rtol, atol, equal_nan, what, msg):
    if a.dtype == np.bool_ or e.dtype == np.bool_:
        a, e = a.astype(np.int64), e.astype(np.int64)
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan) | (a64 == e64)
    if close.all():
        return
    if msg is not None:
        raise _Mismatch(msg)
    total = close.size
    bad = int((~close).sum())
    # the differences in the inputs' (promoted) floating dtype, as PyTorch reports them
    ft = np.result_type(a.dtype, e.dtype)
    ft = ft if np.issubdtype(ft, np.floating) else np.float64
    af, ef = a.astype(ft), e.astype(ft)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(af - ef).astype(np.float64)
        rel_diff = (np.abs(af - ef) / np.abs(ef)).astype(np.float64)
    abs_diff = np.where(close, 0.0, abs_diff)
    rel_diff = np.where(close, 0.0, rel_diff)
    if a.ndim == 0:
        raise _Mismatch(
            f"Scalars are not close!\n\nExpected {e.item()} but got {a.item()}.\n"
            f"Absolute difference: {abs_diff.item()} (up to {atol} allowed)\n"
            f"Relative difference: {rel_diff.item()} (up to {rtol} allowed)"
        )
    ia = np.unravel_index(
        int(np.nanargmax(np.where(np.isnan(abs_diff), np.inf, abs_diff))), a.shape
    )
    ir = np.unravel_index(
        int(np.nanargmax(np.where(np.isnan(rel_diff), np.inf, rel_diff))), a.shape
    )
    lines = [
        f"{what} are not close!",
        "",
        f"Mismatched elements: {bad} / {total} ({100.0 * bad / total:.1f}%)",
        f"Greatest absolute difference: {abs_diff[ia]} at index {_fmt_index(ia)} (up to {atol} "
        "allowed)",
        f"Greatest relative difference: {rel_diff[ir]} at index {_fmt_index(ir)} (up to {rtol} "
        "allowed)",
    ]
    raise _Mismatch("\n".join(lines))


def _is_number(x):
    return isinstance(x, (bool, int, float, np.number)) and not isinstance(x, np.ndarray)


def _compare(actual, expected, where, **kw):
    if isinstance(actual, ec.Tensor) or isinstance(expected, ec.Tensor):
        if not (isinstance(actual, ec.Tensor) and isinstance(expected, ec.Tensor)):
            raise TypeError(
                f"No comparison pair was able to handle inputs of type {type(actual)} and "
                f"{type(expected)}."
            )
        _compare_tensors(
            actual,
            expected,
            kw["rtol"],
            kw["atol"],
            kw["equal_nan"],
            kw["check_dtype"],
            kw["check_device"],
            kw["check_stride"],
            kw["msg"],
            where,
        )
        return
    if isinstance(actual, np.ndarray) or isinstance(expected, np.ndarray):
        a, e = np.asarray(actual), np.asarray(expected)
        if a.shape != e.shape:
            raise _Mismatch(
                f"The values for attribute 'shape' do not match: {a.shape} != {e.shape}."
            )
        if kw["check_dtype"] and a.dtype != e.dtype:
            raise _Mismatch(
                f"The values for attribute 'dtype' do not match: {a.dtype} != {e.dtype}."
            )
        dt = {np.float16: ec.float16, np.float32: ec.float32, np.float64: ec.float64}.get(
            a.dtype.type
        )
        rtol, atol = _tolerances(dt, kw["rtol"], kw["atol"])
        _compare_arrays(a, e, rtol, atol, kw["equal_nan"], "Tensor-likes", kw["msg"])
        return
    if _is_number(actual) and _is_number(expected):
        if (
            kw["check_dtype"]
            and type(actual) is not type(expected)
            and not (
                isinstance(actual, (int, float))
                and isinstance(expected, (int, float))
                and isinstance(actual, bool) == isinstance(expected, bool)
                and isinstance(actual, float) == isinstance(expected, float)
            )
        ):
            raise _Mismatch(
                f"The values for attribute 'dtype' do not match: {type(actual)} != "
                f"{type(expected)}."
            )
        dtype = ec.float64 if isinstance(actual, float) or isinstance(expected, float) else None
        rtol, atol = _tolerances(dtype, kw["rtol"], kw["atol"])
        both_nan = isinstance(actual, float) and isinstance(expected, float)
        if both_nan and math.isnan(actual) and math.isnan(expected) and kw["equal_nan"]:
            return
        _compare_arrays(
            np.asarray(actual),
            np.asarray(expected),
            rtol,
            atol,
            kw["equal_nan"],
            "Scalars",
            kw["msg"],
        )
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(
        expected, collections.abc.Mapping
    ):
        if set(actual) != set(expected):
            raise _Mismatch(
                f"The keys of the mappings do not match:\n{sorted(map(str, actual))} != "
                f"{sorted(map(str, expected))}"
            )
        for k in expected:
            _nested(actual[k], expected[k], where + [repr(k)], **kw)
        return
    if (
        isinstance(actual, collections.abc.Sequence)
        and isinstance(expected, collections.abc.Sequence)
        and not (isinstance(actual, str) or isinstance(expected, str))
    ):
        if len(actual) != len(expected):
            raise _Mismatch(
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
            )
        for i, (a, e) in enumerate(zip(actual, expected)):
            _nested(a, e, where + [str(i)], **kw)
        return
    if actual == expected:
        return
    raise TypeError(
        f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}."
    )


def _nested(actual, expected, where, **kw):
    try:
        _compare(actual, expected, where, **kw)
    except _Mismatch as exc:
        if where and not getattr(exc, "_located", False):
            located = _Mismatch(
                f"{exc}\n\nThe failure occurred for item {''.join(f'[{w}]' for w in where)}"
            )
            located._located = True
            raise located from None
        raise


def assert_close(
    actual,
    expected,
    *,
    allow_subclasses=True,
    rtol=None,
    atol=None,
    equal_nan=False,
    check_device=True,
    check_dtype=True,
    check_layout=True,
    check_stride=False,
    msg=None,
):
    """Raise AssertionError unless actual and expected are close: tensors (same
    shape, dtype and device unless told otherwise), numbers, NumPy arrays, and
    sequences or mappings of them; tolerances default by dtype as in PyTorch."""
    _nested(
        actual,
        expected,
        [],
        rtol=rtol,
        atol=atol,
        equal_nan=equal_nan,
        check_device=check_device,
        check_dtype=check_dtype,
        check_stride=check_stride,
        msg=msg,
    )


def make_tensor(
    *shape,
    dtype,
    device=None,
    low=None,
    high=None,
    requires_grad=False,
    noncontiguous=False,
    exclude_zero=False,
    memory_format=None,
):
    """A tensor of random values in [low, high) (PyTorch's defaults: [-9, 9) for
    floats, [-9, 10) for integers, random bools)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if dtype is ec.bool:
        t = ec.randint(0, 2, shape).to(ec.bool)
    elif dtype.is_floating_point:
        lo = -9.0 if low is None else low
        hi = 9.0 if high is None else high
        t = ec.rand(shape, dtype=ec.float64).mul_(hi - lo).add_(lo).to(dtype)
        if exclude_zero:
            t = ec.where(
                t == 0,
                ec.full((), ec.finfo(dtype).tiny if hasattr(ec, "finfo") else 1e-6, dtype=dtype),
                t,
            )
    else:
        lo = -9 if low is None else int(math.ceil(low))
        hi = 10 if high is None else int(math.ceil(high))
        if dtype is ec.uint8:
            lo = max(lo, 0)
        t = ec.randint(lo, hi, shape, dtype=dtype)
        if exclude_zero:
            t = ec.where(t == 0, ec.ones((), dtype=dtype), t)
    if noncontiguous and t.numel() > 1:
        t = ec.stack([t, t], -1)[..., 0]
    if requires_grad:
        t.requires_grad_(True)
    return t
