"""CPU autocast state and policies (ember_core._base.autocast), driven through the
state functions directly (the region object lives in the umbrella)."""

import threading
from contextlib import contextmanager

import numpy as np
import pytest
from conftest import round_bf16, to_np

import ember_core as ec
from ember_core._base import autocast as _autocast
from ember_core._base import dispatch as _dispatch


@contextmanager
def region(dtype=ec.bfloat16, cache=True):
    prev_dtype = _autocast.get_autocast_dtype("cpu")
    _autocast.set_autocast_dtype("cpu", dtype)
    _autocast.set_autocast_enabled("cpu", True)
    _autocast.autocast_increment_nesting()
    _autocast.set_autocast_cache_enabled(cache)
    try:
        yield
    finally:
        if _autocast.autocast_decrement_nesting() == 0:
            _autocast.clear_autocast_cache()
        _autocast.set_autocast_enabled("cpu", False)
        _autocast.set_autocast_dtype("cpu", prev_dtype)
        _autocast.set_autocast_cache_enabled(True)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_handler_and_flag_only_while_enabled():
    assert _autocast._handler not in _dispatch.handlers()
    assert _dispatch._ns["_ac"] is False
    with region():
        assert _autocast._handler in _dispatch.handlers()
        assert _dispatch._ns["_ac"] is True
        assert _autocast.is_autocast_enabled("cpu")
    assert _autocast._handler not in _dispatch.handlers()
    assert _dispatch._ns["_ac"] is False
    assert not _autocast.is_autocast_enabled("cpu")


def test_lower_precision_ops_compute_on_bfloat16_rounded_inputs():
    a, b = _rand(5, 7), _rand(7, 3, seed=1)
    bias = _rand(3, seed=2)
    with region():
        mm = ec.mm(ec.tensor(a), ec.tensor(b))
        addmm = ec.addmm(ec.tensor(bias), ec.tensor(a), ec.tensor(b))
        mat = ec.tensor(a) @ ec.tensor(b)
    ref = round_bf16(a).astype(np.float64) @ round_bf16(b).astype(np.float64)
    for out in (mm, mat):
        assert out.dtype is ec.bfloat16
        np.testing.assert_allclose(to_np(out), ref, rtol=1e-2, atol=1e-2)
    assert addmm.dtype is ec.bfloat16
    np.testing.assert_allclose(to_np(addmm), ref + round_bf16(bias), rtol=1e-2, atol=2e-2)


def test_float16_region():
    a = _rand(4, 4)
    with region(ec.float16):
        out = ec.mm(ec.tensor(a), ec.tensor(a))
    assert out.dtype is ec.float16
    ref = a.astype(np.float16).astype(np.float64) @ a.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(to_np(out).astype(np.float64), ref, rtol=1e-2, atol=1e-2)


def test_fp32_ops_upcast_and_composites_are_seen():
    x = ec.tensor(_rand(6)).bfloat16()
    y = ec.tensor(_rand(6, seed=1)).bfloat16()
    with region():
        mse = ec.mse_loss(x, y)  # a composite: its generated wrapper checks the flag
        prod = ec.prod(x)
        # elementwise ops are on no list: they keep their input dtype
        added = x + y
    assert mse.dtype is ec.float32 and prod.dtype is ec.float32
    assert added.dtype is ec.bfloat16
    xf, yf = to_np(x).astype(np.float64), to_np(y).astype(np.float64)
    np.testing.assert_allclose(mse.item(), np.mean((xf - yf) ** 2), rtol=1e-5)
    np.testing.assert_allclose(prod.item(), np.prod(xf), rtol=1e-5)


def test_promote_ops_take_the_widest_type_and_float64_is_never_cast():
    lo = ec.tensor(_rand(2, 3)).bfloat16()
    hi = ec.tensor(_rand(2, 3, seed=1))
    dbl = ec.tensor(_rand(2, 3, seed=2)).double()
    with region():
        assert ec.cat([lo, hi]).dtype is ec.float32
        assert ec.stack([lo, lo]).dtype is ec.bfloat16
        assert ec.cat([lo, dbl]).dtype is ec.float64  # double is ignored, then promoted
        assert ec.mm(dbl, dbl.t()).dtype is ec.float64
        ints = ec.arange(6).reshape(2, 3)
        assert ec.cat([ints, ints]).dtype is ec.int64
    np.testing.assert_array_equal(to_np(ec.cat([lo.float(), hi])[:2]), to_np(lo))


def test_nested_op_calls_are_not_cast_again():
    # cdist is on the float32 list and is built from matmuls, which are on the
    # lower-precision list: inside it they must stay float32.
    a, b = _rand(6, 8), _rand(5, 8, seed=1)
    with region():
        out = ec.cdist(ec.tensor(a), ec.tensor(b))
    assert out.dtype is ec.float32
    ref = np.sqrt(((a[:, None, :].astype(np.float64) - b[None]) ** 2).sum(-1))
    np.testing.assert_allclose(to_np(out), ref, rtol=1e-5, atol=1e-5)


def test_casts_happen_once_before_the_op():
    seen = []

    def spy(op, args, kwargs, call):
        seen.append((op.name, [getattr(a, "dtype", None) for a in args[:2]]))
        return call(args, kwargs)

    x = ec.tensor(_rand(1, 2, 5, 5))
    w = ec.tensor(_rand(3, 2, 3, 3, seed=1))
    with region():
        ec.register_handler(spy)  # runs before autocast's handler
        try:
            out = ec.conv2d(x, w)
        finally:
            ec.remove_handler(spy)
    assert out.dtype is ec.bfloat16
    assert [name for name, _ in seen] == ["_to_copy", "_to_copy", "convolution"]
    assert seen[-1][1] == [ec.bfloat16, ec.bfloat16]


def test_weight_casts_are_cached_within_a_region():
    w = ec.tensor(_rand(3, 3)).requires_grad_()
    x = ec.tensor(_rand(3, 3, seed=1))  # no grad: never cached
    with region():
        ec.mm(w, x)
        ec.mm(x, w)
        assert list(_autocast._state.cache) == [id(w)]
        cached = _autocast._state.cache[id(w)][1]
        assert cached.dtype is ec.bfloat16
        np.testing.assert_array_equal(to_np(cached.detach()), round_bf16(to_np(w.detach())))
    assert _autocast._state.cache == {}
    with region(cache=False):
        ec.mm(w, x)
        assert _autocast._state.cache == {}


def test_state_is_per_thread():
    seen = {}

    def other():
        seen["enabled"] = _autocast.is_autocast_enabled("cpu")
        a = ec.tensor(_rand(2, 2))
        seen["dtype"] = ec.mm(a, a).dtype

    with region():
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert ec.mm(ec.ones(2, 2), ec.ones(2, 2)).dtype is ec.bfloat16
    assert seen == {"enabled": False, "dtype": ec.float32}


def test_state_functions():
    assert _autocast.get_autocast_dtype("cpu") is ec.bfloat16
    assert _autocast.get_autocast_dtype("cuda") is ec.float16
    assert _autocast.is_autocast_cache_enabled()
    try:
        _autocast.set_autocast_dtype("cpu", ec.float16)
        assert _autocast.get_autocast_dtype("cpu") is ec.float16
    finally:
        _autocast.set_autocast_dtype("cpu", ec.bfloat16)
    with pytest.raises(RuntimeError, match="tpu"):
        _autocast.is_autocast_enabled("tpu")
    with pytest.raises(TypeError, match="set_autocast_dtype"):
        _autocast.set_autocast_dtype("cpu", "bfloat16")
