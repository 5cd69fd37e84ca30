"""ember.amp.custom_fwd / custom_bwd with ember's CPU autocast."""

import warnings

import numpy as np
import pytest

import ember


def _fn(cast_inputs):
    seen = {}

    class Sq(ember.autograd.Function):
        @staticmethod
        @ember.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, x, w):
            seen["fwd"] = (x.dtype, ember.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x, w)
            return x @ w

        @staticmethod
        @ember.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd"] = ember.is_autocast_enabled("cpu")
            x, w = ctx.saved_tensors
            return g @ w.T, x.T @ g

    return Sq, seen


def test_cast_inputs_runs_forward_in_that_dtype_without_autocast():
    Sq, seen = _fn(ember.float32)
    x = ember.tensor([[1.0, 2.0]], requires_grad=True)
    w = ember.tensor([[0.5], [0.25]], requires_grad=True)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        out = Sq.apply(x.to(ember.bfloat16), w)
    assert seen["fwd"] == (ember.float32, False) and out.dtype == ember.float32
    out.sum().backward()
    assert seen["bwd"] is False
    np.testing.assert_allclose(w.grad.numpy(), [[1.0], [2.0]])


def test_without_cast_inputs_backward_sees_forwards_autocast_state():
    Sq, seen = _fn(None)
    x = ember.tensor([[1.0, 2.0]], requires_grad=True)
    w = ember.tensor([[0.5], [0.25]], requires_grad=True)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        out = Sq.apply(x, w)
    assert seen["fwd"] == (ember.float32, True) and out.dtype == ember.bfloat16
    out.float().sum().backward()
    assert seen["bwd"] is True


def test_device_type_checks_and_legacy_cuda_spelling():
    with pytest.raises(ValueError, match="device_type"):
        ember.amp.custom_fwd(lambda ctx: None, device_type=1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dec = ember.cuda.amp.custom_fwd(cast_inputs=ember.float32)
        bwd = ember.cuda.amp.custom_bwd(lambda ctx, g: g)
    assert any(issubclass(x.category, FutureWarning) for x in w)

    class Ctx:
        pass

    ctx = Ctx()
    assert dec(lambda ctx, x: x * 2)(ctx, ember.ones(1)).item() == 2.0  # cuda autocast off
    assert ctx._fwd_used_autocast is False
    assert bwd(ctx, ember.ones(1)).item() == 1.0
