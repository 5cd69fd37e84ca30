"""Creation ops against NumPy: tensor/as_tensor dtype inference, filled
tensors, *_like, arange/linspace/logspace/eye."""

import numpy as np
import pytest
from conftest import ALL_DTYPES, to_np

import ember_core as ec


@pytest.mark.parametrize(
    "data, dtype",
    [
        (1, ec.int64),
        (2.5, ec.float32),
        (True, ec.bool),
        ([1, 2], ec.int64),
        ([1, 2.0], ec.float32),
        ([[True, False]], ec.bool),
        ([], ec.float32),
        ([[1], [2]], ec.int64),
        ([True, 2], ec.int64),
        (np.array([1, 2], np.int16), ec.int16),
        (np.array([1.0], np.float64), ec.float64),
        (np.float16(1.5), ec.float16),
        (np.array(3, np.uint8), ec.uint8),
    ],
    ids=str,
)
def test_tensor_infers_dtype_like_pytorch(data, dtype):
    t = ec.tensor(data)
    assert t.dtype is dtype
    np.testing.assert_array_equal(to_np(t), np.asarray(data))


def test_tensor_copies_and_converts():
    a = np.arange(4.0)
    t = ec.tensor(a)
    a[0] = 9
    assert t[0].item() == 0
    assert ec.tensor([1, 2], dtype=ec.float16).dtype is ec.float16
    assert ec.tensor(np.array([1, 2], np.uint16)).tolist() == [1, 2]
    assert ec.tensor([ec.tensor(1.0), ec.tensor(2.0)]).tolist() == [1.0, 2.0]
    u = ec.tensor(t)
    assert u.untyped_storage() is not t.untyped_storage()
    assert ec.tensor(np.arange(6.0)[::2]).tolist() == [0.0, 2.0, 4.0]
    assert ec.tensor(np.arange(6).reshape(2, 3).T).tolist() == [[0, 3], [1, 4], [2, 5]]
    with pytest.raises((TypeError, ValueError)):
        ec.tensor([[1, 2], [3]])
    assert ec.tensor(1j).dtype is ec.complex64
    assert ec.tensor(np.array([1, 2], np.uint16)).dtype is ec.uint16
    for big in (2**64, [2**63], [1, 2**70]):
        with pytest.raises(ValueError, match="Overflow"):
            ec.tensor(big)


def test_as_tensor_shares_numpy_memory_when_it_can():
    a = np.arange(3.0)
    t = ec.as_tensor(a)
    a[1] = 7
    assert t[1].item() == 7
    assert ec.as_tensor(t) is t
    assert ec.as_tensor(a, dtype=ec.float32).dtype is ec.float32
    assert ec.as_tensor([1, 2]).dtype is ec.int64


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_filled_tensors(dtype):
    assert (
        to_np(ec.zeros(2, 3, dtype=dtype)).tolist()
        == np.zeros((2, 3)).astype(bool if dtype is ec.bool else float).tolist()
    )
    np.testing.assert_array_equal(to_np(ec.ones((2,), dtype=dtype)), np.ones(2))
    np.testing.assert_array_equal(to_np(ec.full((2, 2), 1, dtype=dtype)), np.ones((2, 2)))
    e = ec.empty(4, 0, dtype=dtype)
    assert e.shape == (4, 0) and e.dtype is dtype
    like = ec.zeros_like(ec.empty(3, dtype=dtype))
    assert like.dtype is dtype and not to_np(like).any()
    assert ec.ones_like(like, dtype=ec.float64).dtype is ec.float64
    assert to_np(ec.full_like(like, 1)).all()


def test_full_infers_dtype_from_the_value_and_checks_range():
    assert ec.full((2,), 3).dtype is ec.int64
    assert ec.full((2,), 3.0).dtype is ec.float32
    assert ec.full((2,), True).dtype is ec.bool
    assert ec.full((), 2.5).shape == ()
    with pytest.raises(RuntimeError, match="overflow"):
        ec.full((1,), 300, dtype=ec.uint8)
    with pytest.raises(RuntimeError, match="overflow"):
        ec.full((1,), float("nan"), dtype=ec.int32)


def test_size_arguments():
    assert ec.zeros(2, 3).shape == ec.zeros((2, 3)).shape == ec.zeros([2, 3]).shape == (2, 3)
    assert ec.ones(ec.Size([4])).shape == (4,)
    assert ec.zeros(()).shape == ()
    assert ec.empty(ec.tensor(3)).shape == (3,)
    with pytest.raises(TypeError, match="size"):
        ec.zeros(2.5)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ec.ones(-1)


def test_new_methods_default_to_the_tensors_dtype():
    t = ec.zeros(2, dtype=ec.int16)
    assert t.new_zeros(3).dtype is ec.int16
    assert t.new_ones((2, 2)).shape == (2, 2)
    assert t.new_full((2,), 5).tolist() == [5, 5]
    assert t.new_empty(1).dtype is ec.int16
    assert t.new_tensor([1.5]).dtype is ec.int16


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((5,), {}),
        ((2, 10, 3), {}),
        ((0, 1, 0.1), {}),
        ((-3, 3, 0.5), {}),
        ((10, 0, -3), {}),
        ((1, 1), {}),
        ((0, 5), {"dtype": ec.float64}),
        ((0.5, 4), {}),
        ((0, 10, 3), {"dtype": ec.int16}),
    ],
    ids=str,
)
def test_arange_matches_numpy(args, kwargs):
    t = ec.arange(*args, **kwargs)
    a = np.arange(*args)
    assert t.shape == a.shape
    np.testing.assert_allclose(to_np(t), a, rtol=1e-6)
    if not kwargs and all(isinstance(x, int) for x in args):
        assert t.dtype is ec.int64
    elif not kwargs:
        assert t.dtype is ec.float32


def test_arange_errors_and_out():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ec.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="inconsistent"):
        ec.arange(5, 0, 1)
    out = ec.empty(0, dtype=ec.int64)
    assert ec.arange(4, out=out) is out and out.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "start, end, steps", [(0, 1, 5), (-2, 2, 1), (3, -3, 7), (0, 1, 0), (1, 1, 3), (0, 10, 101)]
)
def test_linspace_logspace(start, end, steps):
    np.testing.assert_allclose(
        ec.linspace(start, end, steps).numpy(),
        np.linspace(start, end, steps, dtype=np.float32),
        rtol=1e-6,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        ec.linspace(start, end, steps, dtype=ec.float64).numpy(),
        np.linspace(start, end, steps),
        rtol=1e-14,
        atol=1e-14,
    )
    np.testing.assert_allclose(
        ec.logspace(start, end, steps).numpy(), np.logspace(start, end, steps), rtol=1e-5
    )
    np.testing.assert_allclose(
        ec.logspace(start, end, steps, base=2.0).numpy(),
        np.logspace(start, end, steps, base=2.0),
        rtol=1e-5,
    )
    if steps > 1:
        assert ec.linspace(start, end, steps)[-1].item() == end
    with pytest.raises(RuntimeError):
        ec.linspace(0, 1, -1)


def test_eye():
    np.testing.assert_array_equal(ec.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(ec.eye(2, 4, dtype=ec.int32).numpy(), np.eye(2, 4))
    assert ec.eye(0).shape == (0, 0)
    with pytest.raises(RuntimeError):
        ec.eye(-1)


def test_fill_and_zero():
    t = ec.empty(2, 3)
    t.fill_(2.5)
    assert (t == 2.5).all().item()
    t.zero_()
    assert not t.any().item()
    t[:, 1].fill_(ec.tensor(4.0))
    np.testing.assert_array_equal(t.numpy(), [[0, 4, 0], [0, 4, 0]])
    with pytest.raises(RuntimeError, match="0-dimension"):
        t.fill_(ec.ones(2))


def test_requires_grad_flag_on_creation():
    assert ec.zeros(2, requires_grad=True).requires_grad
    assert ec.tensor([1.0], requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        ec.zeros(2, dtype=ec.int64, requires_grad=True)


def test_empty_strided_and_scalar_tensor():
    t = ec.empty_strided((2, 3), (1, 2))
    assert t.stride() == (1, 2) and t.shape == (2, 3)
    s = ec.scalar_tensor(3)
    assert s.dtype is ec.float32 and s.item() == 3.0
