"""softmax / log_softmax (and their backward ops) against NumPy references."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember_core as ec


def np_softmax(x, dim):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def np_log_softmax(x, dim):
    x = x.astype(np.float64)
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


rng = np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(7,), (4, 9), (3, 5, 6), (2, 3, 70, 2), (1, 1000)])
@pytest.mark.parametrize("log", [False, True])
def test_values_every_dim(shape, log):
    x = (rng.standard_normal(shape) * 5).astype(np.float32)
    for dim in range(-len(shape), len(shape)):
        fn, ref = (ec.log_softmax, np_log_softmax) if log else (ec.softmax, np_softmax)
        got = fn(ec.from_numpy(x), dim)
        assert got.dtype is ec.float32 and got.shape == shape
        np.testing.assert_allclose(got.numpy(), ref(x, dim), rtol=1e-5, atol=1e-6)


def test_float64_is_exact_to_double_precision():
    x = rng.standard_normal((5, 33))
    np.testing.assert_allclose(
        ec.softmax(ec.from_numpy(x), 1).numpy(), np_softmax(x, 1), rtol=1e-13
    )
    np.testing.assert_allclose(
        ec.log_softmax(ec.from_numpy(x), 0).numpy(), np_log_softmax(x, 0), rtol=1e-13
    )


def test_large_logits_are_stable():
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    np.testing.assert_allclose(ec.softmax(ec.from_numpy(x), 1).numpy(), np_softmax(x, 1), rtol=1e-6)
    np.testing.assert_allclose(
        ec.log_softmax(ec.from_numpy(x), 1).numpy(), np_log_softmax(x, 1), rtol=1e-6
    )


def test_infinities_and_nan():
    x = ec.tensor([[0.0, -np.inf], [-np.inf, -np.inf], [np.nan, 1.0], [np.inf, 0.0]])
    y = ec.softmax(x, 1).numpy()
    np.testing.assert_array_equal(y[0], [1.0, 0.0])
    assert np.isnan(y[1]).all() and np.isnan(y[2]).all() and np.isnan(y[3, 0])
    assert ec.log_softmax(x, 1).numpy()[0, 1] == -np.inf


def test_dtype_argument_casts_first():
    x = ec.tensor([[1.0, 2.0, 3.0]])
    y = ec.softmax(x, 1, dtype=ec.float64)
    assert y.dtype is ec.float64
    np.testing.assert_allclose(y.numpy(), np_softmax(np.array([[1.0, 2.0, 3.0]]), 1), rtol=1e-13)
    z = ec.log_softmax(ec.tensor([1, 2, 3]), 0, dtype=ec.float32)
    assert z.dtype is ec.float32


@pytest.mark.parametrize("dtype", [ec.float16, ec.bfloat16])
def test_half_precision_computes_in_float32(dtype):
    x = rng.standard_normal((4, 10)).astype(np.float32)
    y = ec.softmax(ec.from_numpy(x).to(dtype), 1)
    assert y.dtype is dtype
    ref = np_softmax(ec.from_numpy(x).to(dtype).float().numpy(), 1)
    np.testing.assert_allclose(y.float().numpy(), ref, rtol=1e-2, atol=1e-3)


def test_non_contiguous_input():
    x = rng.standard_normal((6, 8)).astype(np.float32)
    t = ec.from_numpy(x).T  # (8, 6) with strides (1, 8)
    np.testing.assert_allclose(ec.softmax(t, 1).numpy(), np_softmax(x.T, 1), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        t.log_softmax(0).numpy(), np_log_softmax(x.T, 0), rtol=1e-5, atol=1e-6
    )


def test_methods_scalars_and_empty():
    assert ec.tensor(3.0).softmax(0).item() == 1.0
    assert ec.tensor(3.0).log_softmax(-1).item() == 0.0
    assert ec.softmax(ec.empty(0, 4), 1).shape == (0, 4)
    assert ec.softmax(ec.empty(3, 0), 1).shape == (3, 0)


def test_bad_inputs():
    with pytest.raises(IndexError, match="softmax"):
        ec.softmax(ec.ones(2, 3), 2)
    with pytest.raises(NotImplementedError, match="Long"):
        ec.softmax(ec.tensor([1, 2]), 0)
    with pytest.raises(TypeError):
        ec.softmax([1.0, 2.0], 0)
    with pytest.raises(RuntimeError, match=r"\[2, 3\].*\[3, 2\]"):
        ec._softmax_backward_data(ec.ones(2, 3), ec.ones(3, 2), 1, ec.float32)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_backward_ops_match_formulas(log, dim):
    x = rng.standard_normal((3, 4, 5))
    g = rng.standard_normal((3, 4, 5))
    if log:
        y = np_log_softmax(x, dim)
        ref = g - np.exp(y) * g.sum(axis=dim, keepdims=True)
        got = ec._log_softmax_backward_data(ec.from_numpy(g), ec.from_numpy(y), dim, ec.float64)
    else:
        y = np_softmax(x, dim)
        ref = y * (g - (g * y).sum(axis=dim, keepdims=True))
        got = ec._softmax_backward_data(ec.from_numpy(g), ec.from_numpy(y), dim, ec.float64)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-14)


def test_backward_op_casts_to_input_dtype():
    y = ec.softmax(ec.ones(2, 3, dtype=ec.float64), 1)
    g = ec._softmax_backward_data(ec.ones(2, 3, dtype=ec.float64), y, 1, ec.float32)
    assert g.dtype is ec.float32


@settings(deadline=None, max_examples=30)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    data=st.data(),
)
def test_fuzz_shapes_and_dims(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32) * 3
    np.testing.assert_allclose(
        ec.softmax(ec.from_numpy(x), dim).numpy(), np_softmax(x, dim), rtol=1e-5, atol=1e-7
    )


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parity
def test_parity_with_torch(log, dtype):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((16, 37, 3)).astype(dtype) * 4
    for dim in range(3):
        ours = (ec.log_softmax if log else ec.softmax)(ec.from_numpy(x), dim).numpy()
        theirs = (torch.log_softmax if log else torch.softmax)(torch.from_numpy(x), dim).numpy()
        np.testing.assert_allclose(
            ours, theirs, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6
        )
