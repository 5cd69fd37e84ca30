"""arange, linspace and tril/triu on CUDA (csrc/cuda/sequence.cuh): the same
values as the CPU, bit for bit (both compute start + i * step in double with
no fused multiply-add)."""

import numpy as np
import pytest

import ember_core as ec

HAVE_CUDA = ec.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")

ALL = [
    ec.bool,
    ec.uint8,
    ec.int8,
    ec.int16,
    ec.int32,
    ec.int64,
    ec.float16,
    ec.bfloat16,
    ec.float32,
    ec.float64,
]


def _same(a, b):
    assert b.device.type == "cuda" and a.dtype == b.dtype and a.shape == b.shape
    b = b.cpu()
    if a.dtype in (ec.float16, ec.bfloat16):
        a, b = a.view(ec.int16), b.view(ec.int16)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.cuda
@needs_cuda
def test_arange_and_linspace_are_bit_identical(dtype):
    args = [(10,), (0,), (-3, 1000, 7), (0.1, 7.3, 0.37), (5, -5, -1), (1 << 20,)]
    for a in args:
        if dtype is ec.bool and len(a) > 1 and a[0] != 0:
            continue
        _same(ec.arange(*a, dtype=dtype), ec.arange(*a, dtype=dtype, device="cuda"))
    if dtype.is_floating_point or dtype is ec.int64:
        for start, end, steps in ((0, 1, 11), (-2.5, 7.1, 1000), (3, 3, 1), (1, 0, 0), (0, 1, 2)):
            _same(
                ec.linspace(start, end, steps, dtype=dtype),
                ec.linspace(start, end, steps, dtype=dtype, device="cuda"),
            )


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.cuda
@needs_cuda
def test_triangles(dtype):
    x = ec.tensor(np.random.default_rng(0).integers(1, 9, (3, 37, 41))).to(dtype)
    for diag in (-40, -3, 0, 2, 50):
        for fn in (ec.tril, ec.triu):
            _same(fn(x, diag), fn(x.cuda(), diag))
            _same(fn(x.transpose(1, 2), diag), fn(x.cuda().transpose(1, 2), diag))
    _same(ec.tril(x[0]), ec.tril(x[0].cuda()))
    y = x.cuda().clone()
    y.triu_(1)
    _same(ec.triu(x, 1), y)
    _same(ec.tril(ec.ones(0, 4, dtype=dtype)), ec.tril(ec.ones(0, 4, dtype=dtype, device="cuda")))
