"""softmax and log_softmax on CUDA (csrc/cuda/softmax.cuh) against the CPU,
forward and backward, rows and columns, with the CPU's special values; and
the compile groups (no GPU needed)."""

import numpy as np
import pytest

import ember_core as ec
from ember_core._base.lib import lib
from ember_core._cuda import kernels as _cuda_kernels

HAVE_CUDA = ec.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")


def test_softmax_groups():
    g = _cuda_kernels.group(lib.ECU_FAM_SOFTMAX, 1, ec.float64.code, 0)
    assert dict(g.kernels) == {
        lib.ECU_SM_ROWS: "ecu_softmax_rows<double, true>",
        lib.ECU_SM_COLS: "ecu_softmax_cols<double, true>",
    }
    with pytest.raises(RuntimeError, match="no CUDA softmax"):
        _cuda_kernels.group(lib.ECU_FAM_SOFTMAX, 0, ec.float16.code, 0)


def _close(got, want):
    assert got.device.type == "cuda" and got.dtype == want.dtype and got.shape == want.shape
    g, w = got.cpu().float().numpy(), want.float().numpy()
    tol = {ec.float64: 1e-12, ec.float32: 3e-6}.get(want.dtype, 2e-2)
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)


SHAPES = [
    ((), 0),
    ((5,), 0),
    ((3, 0), 1),
    ((0, 4), 1),
    ((7, 33), 1),
    ((4, 4096), 1),
    ((3, 5000), -1),
    ((2, 1023), 1),
    ((6, 7, 9), 1),
    ((3, 300, 2), 1),
    ((40, 3), 0),
    ((2, 3, 65), 0),
]


@pytest.mark.parametrize("shape,dim", SHAPES)
@pytest.mark.parametrize("dtype", [ec.float32, ec.float64, ec.float16, ec.bfloat16])
@pytest.mark.cuda
@needs_cuda
def test_softmax_forward_and_backward(dtype, shape, dim):
    rng = np.random.default_rng(0)
    x = ec.tensor(rng.standard_normal(shape) * 3).to(dtype)
    g = ec.tensor(rng.standard_normal(shape)).to(dtype)
    for op, back in (
        (ec.softmax, ec._softmax_backward_data),
        (ec.log_softmax, ec._log_softmax_backward_data),
    ):
        y_gpu, y_cpu = op(x.cuda(), dim), op(x, dim)
        _close(y_gpu, y_cpu)
        _close(back(g.cuda(), y_gpu, dim, dtype), back(g, y_cpu, dim, dtype))


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.cuda
@needs_cuda
def test_softmax_special_values_follow_the_cpu(dim):
    a = np.random.default_rng(1).standard_normal((6, 300))
    a[0, 5] = np.nan
    a[1, :] = -np.inf
    a[2, 7] = np.inf
    a[3, :150] = -np.inf
    a[4, 9] = 1e30
    x = ec.tensor(a).float()
    for op in (ec.softmax, ec.log_softmax):
        _close(op(x.cuda(), dim), op(x, dim))


@pytest.mark.cuda
@needs_cuda
def test_softmax_of_a_non_contiguous_input():
    x = ec.randn(64, 48).t()
    for dim in (0, 1):
        _close(ec.softmax(x.cuda(), dim), ec.softmax(x, dim))
        _close(ec.log_softmax(x.cuda()[:, ::3], dim), ec.log_softmax(x[:, ::3], dim))
