"""Reductions and scans on CUDA against the CPU (Note [CUDA reductions] in
csrc/cuda/reduce_launch.c).  The launch plans and the workspace rule are
plain C that needs no GPU and are tested everywhere; the comparisons with the
CPU are marked ``cuda`` and skip without a GPU."""

import numpy as np
import pytest

import ember_core as ec
from ember_core._base.lib import ffi, lib
from ember_core._cuda import kernels as _cuda_kernels

HAVE_CUDA = ec.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")

FLOATS = [ec.float32, ec.float64, ec.float16, ec.bfloat16]
ALL = [ec.bool, ec.uint8, ec.int8, ec.int16, ec.int32, ec.int64, *FLOATS]

# ------------------------------------------------------------ launch plans


def _reduce_layout(shape, strides, dims):
    out_dims = [d for d in range(len(shape)) if d not in dims]
    out_shape = [shape[d] for d in out_dims]
    ostrides, acc = [], 1
    for s in reversed(out_shape):
        ostrides.insert(0, acc)
        acc *= s
    return (
        len(out_dims),
        len(dims),
        out_shape
        + ostrides
        + [strides[d] for d in out_dims]
        + [shape[d] for d in dims]
        + [strides[d] for d in dims],
    )


def _contig(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.insert(0, acc)
        acc *= s
    return st


def reduce_plan(shape, dims, strides=None, dtype=ec.float32, sms=132):
    n_out, n_red, lay = _reduce_layout(shape, strides or _contig(shape), dims)
    plan = ffi.new("int64_t[8]")
    lay = ffi.new("int64_t[]", lay)
    st = lib.ecu_reduce_plan(dtype.code, dtype.code, n_out, n_red, lay, sms, plan)
    assert st == 0
    keys = ("kind", "bx", "by", "gx", "gy", "chunk", "smem", "ws")
    return dict(zip(keys, plan))


def test_full_reduction_splits_in_two_passes():
    p = reduce_plan((1 << 26,), (0,))
    assert p["kind"] == lib.ECU_RED_INNER and p["bx"] == 512 and p["by"] == 1 and p["gx"] == 1
    # enough blocks to fill the GPU, each split a whole number of 16-element runs
    assert 100 < p["gy"] <= 65535 and p["chunk"] % 16 == 0
    assert p["chunk"] * p["gy"] >= 1 << 26 > p["chunk"] * (p["gy"] - 1)
    assert p["ws"] == p["gy"] * lib.ECU_RED_SLOT


def test_row_and_column_reductions_pick_their_kernels():
    rows = reduce_plan((4096, 4096), (1,))
    assert rows["kind"] == lib.ECU_RED_INNER and rows["gy"] == 1 and rows["ws"] == 0
    assert rows["bx"] * rows["by"] <= 512 and rows["gx"] * rows["by"] >= 4096
    cols = reduce_plan((4096, 4096), (0,))
    assert cols["kind"] == lib.ECU_RED_OUTER and cols["bx"] == 32
    assert cols["gx"] * cols["bx"] >= 4096 and cols["bx"] * cols["by"] <= 512
    # the column split, when there is one, leaves every lane a share of rows
    assert cols["chunk"] * cols["gy"] >= 4096
    # a transposed matrix reduced over its rows reads like columns
    t = reduce_plan((4096, 4096), (1,), strides=[1, 4096])
    assert t["kind"] == lib.ECU_RED_OUTER
    # short reduced ranges: one thread per output
    short = reduce_plan((100000, 5), (1,))
    assert short["kind"] == lib.ECU_RED_OUTER and short["by"] == 1 and short["gy"] == 1


@pytest.mark.parametrize(
    "shape,dims",
    [((3,), (0,)), ((127, 129), (0,)), ((127, 129), (1,)), ((16383,), (0,)), ((4, 4095), (0, 1))],
)
def test_no_workspace_below_the_split_minimum(shape, dims):
    # _ops/reduction/reduction.py skips the workspace query below ECU_RED_SPLIT_MIN elements
    assert np.prod(shape) < lib.ECU_RED_SPLIT_MIN
    p = reduce_plan(shape, dims, sms=1000)
    assert p["gy"] == 1 and p["ws"] == 0


def test_plans_respect_grid_and_block_limits():
    for shape, dims in [
        ((1 << 31,), (0,)),
        ((3, 1 << 30), (1,)),
        ((1 << 30, 3), (0,)),
        ((7, 11, 13, 17), (0, 2)),
        ((1 << 20, 64), (1,)),
        ((0, 5), (0,)),
    ]:
        for sms in (1, 108, 132, 1000):
            p = reduce_plan(shape, dims, sms=sms)
            assert 1 <= p["gy"] <= 65535 and 1 <= p["gx"] < 1 << 31
            assert p["bx"] * p["by"] <= 512 and p["bx"] >= 1 and p["by"] >= 1
            assert p["smem"] <= 48 * 1024
            if p["kind"] == lib.ECU_RED_INNER:
                assert p["bx"] % 32 == 0
            assert p["by"] & (p["by"] - 1) == 0  # the outer kernel's tree needs a power of 2


def test_reduced_dims_that_do_not_merge_are_limited():
    # 17 reduced dims that cannot merge (every other stride doubled)
    shape = (2,) * 17
    strides = [2 ** (2 * (17 - k)) for k in range(17)]
    n_out, n_red, lay = _reduce_layout(shape, strides, tuple(range(17)))
    plan = ffi.new("int64_t[8]")
    st = lib.ecu_reduce_plan(8, 8, n_out, n_red, ffi.new("int64_t[]", lay), 132, plan)
    assert st != 0
    assert "at most 16 reduced dims" in ffi.string(lib.ec_last_message()).decode()


def scan_plan(shape, dim, strides=None, sms=132):
    strides = strides or _contig(shape)
    lay = list(shape) + _contig(shape) + list(strides) + _contig(shape)
    plan = ffi.new("int64_t[4]")
    st = lib.ecu_scan_plan(8, 8, len(shape), dim, ffi.new("int64_t[]", lay), sms, plan)
    assert st == 0
    return dict(zip(("kind", "gy", "chunk", "ws"), plan))


def test_scan_plans():
    # one long line: split, two passes, a workspace of one slot per split
    p = scan_plan((1 << 26,), 0)
    assert p["kind"] == lib.ECU_SCAN_LINE and p["gy"] > 1
    assert p["chunk"] % (4 * lib.ECU_SCAN_BLOCK) == 0 and p["ws"] == p["gy"] * lib.ECU_RED_SLOT
    # many rows scanned along their contiguous dim: a block per row, no split
    p = scan_plan((4096, 4096), 1)
    assert p["kind"] == lib.ECU_SCAN_LINE and p["gy"] == 1 and p["ws"] == 0
    # columns, many of them: one thread per line
    assert scan_plan((4096, 4096), 0)["kind"] == lib.ECU_SCAN_SEQ
    # short lines
    assert scan_plan((100000, 8), 1)["kind"] == lib.ECU_SCAN_SEQ
    # below the split minimum nothing splits
    assert scan_plan((16000,), 0, sms=1000)["ws"] == 0


def test_reduction_groups_cover_every_op():
    groups = _cuda_kernels.reduction_groups()
    names = {g.name for g in groups}
    for name in _cuda_kernels.REDUCE.values():
        assert f"RED_{name}_f32" in names
    for name in _cuda_kernels.SCAN.values():
        assert f"SCAN_{name}_f64" in names
    assert "RED_SUM_i8" in names and "RED_VAR_i8" not in names
    g = _cuda_kernels.group(lib.ECU_FAM_REDUCE, lib.EC_R_MAX, ec.bfloat16.code, 0)
    assert dict(g.kernels)[lib.ECU_RED_FINAL] == "ecu_red_final<R_MAX<ecu_dt_bf16> >"
    with pytest.raises(RuntimeError, match="no CUDA reduction"):
        _cuda_kernels.group(lib.ECU_FAM_REDUCE, lib.EC_R_VAR, ec.int32.code, 0)


# ------------------------------------------------------ CUDA against the CPU


def _np(t):
    if t.dtype is ec.bfloat16:
        t = t.float()
    return t.numpy()


def _close(got, want, dtype=None):
    assert got.device.type == "cuda"
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = _np(got.cpu()), _np(want)
    if w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
        return
    dt = dtype or want.dtype
    tol = {ec.float16: 4e-3, ec.bfloat16: 2e-2, ec.float32: 2e-5}.get(dt, 1e-11)
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)


def _make(shape, dtype, layout="contiguous", seed=0):
    rng = np.random.default_rng(seed)
    if dtype is ec.bool:
        a = rng.random(shape) < 0.5
    elif dtype.is_floating_point:
        a = rng.standard_normal(shape)
    else:
        a = rng.integers(-4 if dtype is not ec.uint8 else 0, 5, shape)
    if layout == "transposed" and len(shape) >= 2:
        x = ec.tensor(np.ascontiguousarray(a.swapaxes(-1, -2))).to(dtype).transpose(-1, -2)
    elif layout == "strided":
        big = np.repeat(a, 2, axis=-1) if len(shape) else a
        x = ec.tensor(big).to(dtype)
        x = x[..., ::2] if len(shape) else x
    else:
        x = ec.tensor(a).to(dtype)
    return x


SHAPES = [(), (0,), (7,), (3, 0), (5, 7), (33, 1025), (4, 5, 6), (2, 3, 4, 5)]
LAYOUTS = ["contiguous", "transposed", "strided"]


def _dims_for(shape):
    nd = len(shape)
    out = [None]
    if nd:
        out += [0, -1]
    if nd >= 3:
        out += [(0, 2)]
    return out


def _pair(fn, x):
    return fn(x.cuda()), fn(x)


def _check(op, x, *args, **kwargs):
    """op on CUDA against op on the CPU (values, or (values, indices))."""
    got, want = op(x.cuda(), *args, **kwargs), op(x, *args, **kwargs)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _close(g, w)
    else:
        _close(got, want)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.cuda
@needs_cuda
def test_sum_prod_all_any_count(dtype, shape, layout):
    x = _make(shape, dtype, layout)
    for dim in _dims_for(shape):
        for op in (ec.sum, ec.all, ec.any, ec.count_nonzero):
            _check(op, x, dim)
        if dim is None or isinstance(dim, int):
            _check(ec.prod, x, dim)
        _check(ec.sum, x, dim, keepdim=True)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.cuda
@needs_cuda
def test_float_reductions(dtype, shape, layout):
    x = _make(shape, dtype, layout)
    for dim in _dims_for(shape):
        for op in (ec.mean, ec.nansum, ec.var):
            _check(op, x, dim)
        _check(ec.std, x, dim, correction=0)
        _check(ec.logsumexp, x, dim if dim is not None else tuple(range(len(shape))))
        for p in (2, 1, float("inf"), float("-inf"), 0, 3):
            _check(ec.linalg.vector_norm, x, p, dim)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.cuda
@needs_cuda
def test_max_min_with_indices_break_ties_as_the_cpu(dtype, layout):
    # few distinct values: many ties, the first index must win as on the CPU
    x = _make((37, 65), dtype, layout, seed=3)
    for dim in (0, 1, -1):
        for op in (ec.max, ec.min):
            _check(op, x, dim)
        if dtype is not ec.bool:
            _check(ec.argmax, x, dim)
            _check(ec.argmin, x, dim, keepdim=True)
    if dtype is not ec.bool:
        _check(ec.argmax, x)
    _check(ec.amax, x, (0, 1))
    _check(ec.amin, x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.cuda
@needs_cuda
def test_nan_propagation(dtype):
    a = np.random.default_rng(1).standard_normal((9, 300))
    a[2, 17] = a[2, 40] = np.nan
    a[5, 299] = np.nan
    a[7, :] = -np.inf
    a[8, 3] = np.inf
    x = ec.tensor(a).to(dtype)
    for dim in (0, 1):
        for op in (ec.max, ec.min):
            _check(op, x, dim)
        for op in (ec.argmax, ec.amax, ec.sum, ec.nansum, ec.logsumexp, ec.var):
            _check(op, x, dim)
        for p in (float("inf"), 0):
            _check(ec.linalg.vector_norm, x, p, dim)


@pytest.mark.parametrize(
    "shape,dims",
    [
        ((1 << 22) + 3, None),  # a split full reduction
        ((3000, 1000), (0,)),  # tall columns
        ((70001, 3), (0,)),  # very tall, few columns
        ((5, 300001), (1,)),  # few long rows
        ((64, 33, 129), (0, 2)),  # reduced dims that do not merge
    ],
)
@pytest.mark.parametrize("dtype", [ec.float32, ec.float64, ec.int32, ec.bfloat16])
@pytest.mark.cuda
@needs_cuda
def test_large_reductions_use_many_blocks(shape, dims, dtype):
    x = _make(shape if isinstance(shape, tuple) else (shape,), dtype, seed=5)
    _check(ec.sum, x, dims)
    _check(ec.amax, x, dims)
    if dtype.is_floating_point:
        _check(ec.var, x, dims)
        _check(ec.linalg.vector_norm, x, 2, dims)
        _check(ec.logsumexp, x, dims if dims else 0)
    if dims is not None and len(dims) == 1:
        (gv, gi), (cv, ci) = ec.max(x.cuda(), dims[0]), ec.max(x, dims[0])
        _close(gv, cv)
        _close(gi, ci)


@pytest.mark.cuda
@needs_cuda
def test_integer_sums_wrap_and_dtypes_follow_the_cpu():
    x = ec.tensor([2**62, 2**62, 2**62], dtype=ec.int64)
    _close(*_pair(ec.sum, x))
    _close(*_pair(ec.prod, ec.tensor([3, -7, 2**40, 5], dtype=ec.int64)))
    b = _make((1000,), ec.bool)
    _close(*_pair(ec.sum, b))  # bool sums to int64
    _check(ec.sum, _make((100,), ec.int16), dtype=ec.float64)
    u = _make((50,), ec.uint8)
    _close(*_pair(ec.all, u))  # uint8 gives uint8


@pytest.mark.cuda
@needs_cuda
def test_out_and_keepdim_forms():
    x = _make((6, 7), ec.float32)
    out = ec.empty(6, device="cuda")
    r = ec.sum(x.cuda(), 1, out=out)
    assert r is out
    _close(out, ec.sum(x, 1))
    v, i = ec.empty(7, device="cuda"), ec.empty(7, dtype=ec.int64, device="cuda")
    ec.max(x.cuda(), 0, out=(v, i))
    _close(v, ec.max(x, 0).values)
    _close(i, ec.max(x, 0).indices)


# ------------------------------------------------------------------ scans


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (5, 0), (6, 33), (3, 4, 65), (200, 3)])
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.cuda
@needs_cuda
def test_scans(dtype, shape, layout):
    x = _make(shape, dtype, layout, seed=7)
    dims = [0] if not shape else list(range(len(shape))) + [-1]
    for dim in dims:
        _check(ec.cumsum, x, dim)
        if dtype.is_floating_point:
            small = x * 0.5 if dtype is not ec.bool else x
            _check(ec.cumprod, small, dim)
            _check(ec.logcumsumexp, x, dim)
        else:
            _check(ec.cumprod, x, dim)
        for op in (ec.cummax, ec.cummin):
            _check(op, x, dim)  # ties move the index forward, as on the CPU


@pytest.mark.parametrize("shape,dim", [(((1 << 21) + 5,), 0), ((3, 300007), 1), ((300007, 2), 0)])
@pytest.mark.parametrize("dtype", [ec.float32, ec.int64, ec.float64])
@pytest.mark.cuda
@needs_cuda
def test_long_scans_split_across_blocks(shape, dim, dtype):
    x = _make(shape, dtype, seed=9)
    if dtype.is_floating_point:
        x = x * 1e-3
    _check(ec.cumsum, x, dim)
    for op in (ec.cummax, ec.cummin):
        _check(op, x, dim)
    if dtype.is_floating_point:
        _check(ec.logcumsumexp, x, dim)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.cuda
@needs_cuda
def test_scans_with_nan_and_inf(dtype):
    a = np.random.default_rng(2).standard_normal((4, 2000))
    a[0, 10] = np.nan
    a[1, 5] = np.inf
    a[2, :100] = -np.inf
    a[3, 1999] = np.nan
    x = ec.tensor(a).to(dtype)
    for op in (ec.cummax, ec.cummin):
        (gv, gi), (cv, ci) = op(x.cuda(), 1), op(x, 1)
        _close(gv, cv)
        _close(gi, ci)
    _check(ec.logcumsumexp, x, 1)
    _check(ec.cumsum, x, 1)


@pytest.mark.cuda
@needs_cuda
def test_scan_of_integers_into_floats():
    x = _make((10, 70), ec.int32)
    _check(ec.cumsum, x, 1, dtype=ec.float32)
    _check(ec.cumsum, x, 0, dtype=ec.int8)
