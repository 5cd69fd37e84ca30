"""Gradients of clamp, relu and threshold at NaN inputs and NaN bounds, as
PyTorch 2.13: clamp passes the gradient only where min <= x <= max (so not at a
NaN x nor through a NaN bound); relu/threshold pass it where x > threshold is
not known false (x <= threshold is false for NaN)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember_autograd  # noqa: F401 - registers the gradients
import ember_core as ec

NAN = math.nan
X = [NAN, -2.0, 0.0, 3.0]


def _leaf(values):
    return ec.tensor(values, requires_grad=True)


def test_clamp_gradient_stops_at_nan_inputs_and_nan_bounds():
    x = _leaf(X)
    ec.clamp(x, -1.0, 1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0]
    x = _leaf(X)
    ec.clamp(x, max=NAN).sum().backward()
    assert x.grad.tolist() == [0.0] * 4
    x, lo, hi = _leaf(X), _leaf([NAN, -1.0, NAN, -1.0]), _leaf([1.0, 1.0, 1.0, NAN])
    ec.clamp(x, lo, hi).sum().backward()
    assert x.grad.tolist() == [0.0] * 4
    assert lo.grad.tolist() == [0.0, 1.0, 0.0, 0.0]
    assert hi.grad.tolist() == [0.0] * 4


def test_relu_and_threshold_pass_the_gradient_of_a_nan_input():
    x = _leaf(X)
    ec.relu(x).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0]
    x = _leaf(X)
    ec.threshold(x, 0.5, 7.0).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0]


@pytest.mark.parity
@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from([NAN, -math.inf, -2.0, -0.0, 0.5, 1.0, 3.0]), min_size=1, max_size=6),
    st.none() | st.sampled_from([NAN, -1.0, 0.5]),
    st.none() | st.sampled_from([NAN, 1.0, -0.5]),
    st.booleans(),
)
def test_clamp_gradients_match_pytorch(xs, lo, hi, tensor_bounds):
    torch = pytest.importorskip("torch")
    if lo is None and hi is None:
        return
    grads = []
    for T in (ec, torch):
        x = T.tensor(xs, requires_grad=True)
        if tensor_bounds:
            b = [None if v is None else T.full((len(xs),), v, requires_grad=True) for v in (lo, hi)]
        else:
            b = [lo, hi]
        T.clamp(x, *b).sum().backward()
        grads.append([x.grad.tolist()] + [v.grad.tolist() for v in b if hasattr(v, "grad")])
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    for g_ember, g_torch in zip(grads[0][1:], grads[1][1:]):
        np.testing.assert_array_equal(g_ember, g_torch)
