"""PyTorch parity of small compatibility gaps found by running real scripts: NumPy
scalars as operands, sizes, dims and indices; from_numpy on negative strides and
read-only arrays; printing (repr) across dtypes, magnitudes and print options;
legacy ``Tensor.type``; index_select bounds."""

import warnings

import numpy as np
import pytest

import ember_core as ec

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.parity


def _run(f, m):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return f(m)
        except Exception as e:  # noqa: BLE001 - the exception type is compared
            return e


def _same(got, want):
    if isinstance(want, Exception):
        assert isinstance(got, type(want)), (got, want)
        return
    assert not isinstance(got, Exception), got
    if isinstance(want, torch.Tensor):
        assert isinstance(got, ec.Tensor), got
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy().astype(np.float64))
    else:
        assert tuple(got) == tuple(want) if isinstance(want, torch.Size) else got == want


# ------------------------------------------------------------ NumPy scalars

_f = np.float32(2.0)
NP_SCALAR_CASES = {
    "t*f32": lambda m: m.ones(2) * np.float32(2.0),
    "f64+t": lambda m: np.float64(3) + m.ones(2),
    "t/i64": lambda m: m.ones(2) / np.int64(2),
    "ti*f32": lambda m: m.ones(2, dtype=m.int64) * np.float32(2.0),
    "f32*ti": lambda m: np.float32(2.0) * m.ones(2, dtype=m.int64),
    "ti+i32": lambda m: m.ones(2, dtype=m.int64) + np.int32(2),
    "i32+ti": lambda m: np.int32(2) + m.ones(2, dtype=m.int64),
    "tb*i8": lambda m: m.ones(2, dtype=m.bool) * np.int8(2),
    "t16*f64": lambda m: m.ones(2, dtype=m.float16) * np.float64(2),
    "t*f16": lambda m: m.ones(2) * np.float16(2),
    "i64//ti": lambda m: np.int64(3) // m.ones(2, dtype=m.int64),
    "i64-ti": lambda m: np.int64(3) - m.ones(2, dtype=m.int64),
    "i64%ti": lambda m: np.int64(3) % m.full((2,), 2, dtype=m.int64),
    "f32**ti": lambda m: np.float32(2) ** m.ones(2, dtype=m.int64),
    "ti**i64": lambda m: m.full((2,), 3, dtype=m.int64) ** np.int64(2),
    "t>f64": lambda m: m.arange(3.0) > np.float64(0.5),
    "f32<t": lambda m: np.float32(0.5) < m.arange(3.0),
    "ti==i64": lambda m: m.arange(3) == np.int64(1),
    "t*bool_": lambda m: m.ones(2, dtype=m.int64) * np.bool_(True),
    "bool_*t": lambda m: np.bool_(True) * m.ones(2),
    "iadd f32": lambda m: m.ones(2).__iadd__(np.float32(2)),
    "add_ int with f32": lambda m: m.ones(2, dtype=m.int64).add_(np.float32(2.5)),
    "clamp": lambda m: m.arange(4).clamp(np.float32(0.5), np.float64(2.5)),
    "clamp min": lambda m: m.arange(4).clamp(min=np.int32(2)),
    "where": lambda m: m.where(m.arange(3) > 0, m.arange(3), np.float32(0.5)),
    "masked_fill": lambda m: m.ones(3).masked_fill(m.arange(3) > 0, np.float32(3)),
    "fmod": lambda m: m.fmod(m.arange(4.0), np.float32(1.5)),
    "div floor": lambda m: m.div(m.arange(4.0), np.float32(1.5), rounding_mode="floor"),
    "lerp": lambda m: m.lerp(m.ones(2), m.full((2,), 3.0), np.float32(0.5)),
    "0-d * f32": lambda m: m.tensor(2.0) * np.float32(1.5),
    "item": lambda m: (m.arange(3.0).sum() * np.float32(2)).item(),
    "tensor(f32)": lambda m: m.tensor(np.float32(2)),
    "tensor(f64)": lambda m: m.tensor(np.float64(2)),
    "tensor(i32)": lambda m: m.tensor(np.int32(2)),
    "tensor(bool_)": lambda m: m.tensor(np.bool_(True)),
    "tensor([f32, 2.5])": lambda m: m.tensor([np.float32(1), 2.5]),
    "tensor([f64])": lambda m: m.tensor([np.float64(2)]),
    "tensor([i32])": lambda m: m.tensor([np.int32(2)]),
    "tensor([i32, i8])": lambda m: m.tensor([np.int32(2), np.int8(1)]),
    "tensor([u8, i8])": lambda m: m.tensor([np.uint8(2), np.int8(1)]),
    "tensor([f16, i64])": lambda m: m.tensor([np.float16(2), np.int64(1)]),
    "tensor([True, i32])": lambda m: m.tensor([True, np.int32(1)]),
    "tensor([[f64], [2.0]])": lambda m: m.tensor([[np.float64(2)], [2.0]]),
    "tensor([arr i32, arr i32])": lambda m: m.tensor([np.arange(2, dtype=np.int32)] * 2),
    "full f32": lambda m: m.full((2,), np.float32(2)),
    "full i64": lambda m: m.full((2,), np.int64(2)),
    "full i32": lambda m: m.full((2,), np.int32(2)),
    "full bool_": lambda m: m.full((2,), np.bool_(True)),
    "arange f32": lambda m: m.arange(np.float32(3)),
    "arange i32": lambda m: m.arange(np.int32(3)),
    "linspace": lambda m: m.linspace(np.float64(0), np.float64(1), np.int64(3)),
    "zeros(i64, i32)": lambda m: m.zeros(np.int64(2), np.int32(3)),
    "randn(i64).shape": lambda m: m.randn(np.int64(2)).shape,
    "ones(i64)": lambda m: m.ones(np.int64(2)),
    "sum(i64)": lambda m: m.arange(6.0).reshape(2, 3).sum(np.int64(0)),
    "sum(dim=i32)": lambda m: m.arange(6.0).reshape(2, 3).sum(dim=np.int32(1)),
    "t[i64]": lambda m: m.arange(6.0).reshape(2, 3)[np.int64(1)],
    "t[i32, i64]": lambda m: m.arange(6.0).reshape(2, 3)[np.int32(1), np.int64(2)],
    "t[i64:i32]": lambda m: m.arange(5)[np.int64(1) : np.int32(3)],
    "reshape(i64)": lambda m: m.arange(6).reshape(np.int64(3), np.int64(2)),
    "narrow": lambda m: m.arange(6).reshape(2, 3).narrow(np.int64(1), np.int64(0), np.int64(2)),
    "setitem f64": lambda m: (lambda x: (x.__setitem__(np.int64(0), np.float64(1.5)), x)[1])(m.zeros(2)),
}


@pytest.mark.parametrize("name", sorted(NP_SCALAR_CASES))
def test_numpy_scalars(name):
    f = NP_SCALAR_CASES[name]
    _same(_run(f, ec), _run(f, torch))


# ------------------------------------------------------------ from_numpy

_A = np.arange(12.0).reshape(3, 4)
FROM_NUMPY_CASES = {
    "negative stride": lambda m: m.from_numpy(_A[:, ::-1]),
    "negative stride 1-d": lambda m: m.from_numpy(_A[0, ::-2]),
    "positive strides": lambda m: m.from_numpy(_A[::2, 1:]),
    "transposed": lambda m: m.from_numpy(_A.T),
    "not an array": lambda m: m.from_numpy([1.0, 2.0]),
}


@pytest.mark.parametrize("name", sorted(FROM_NUMPY_CASES))
def test_from_numpy(name):
    f = FROM_NUMPY_CASES[name]
    _same(_run(f, ec), _run(f, torch))


def test_from_numpy_read_only_warns_as_torch():
    a = np.arange(3.0)
    a.flags.writeable = False
    # torch warns once per process (TORCH_WARN_ONCE), so only ember is checked here;
    # torch's message also starts "The given NumPy array is not writable"
    with pytest.warns(UserWarning, match="^The given NumPy array is not writable"):
        ec.from_numpy(a)
