"""The matmul family on CUDA (cuBLAS, Note [cuBLAS] in csrc/cuda/blas_launch.c).

Without a GPU: Note [GEMM plan] -- how ec_matmul's strided operands become one
column-major cuBLAS GEMM -- is checked by running each plan the way cuBLAS
would (a NumPy model of cublasGemmStridedBatchedEx over raw buffers) on random
layouts, and the Python side's dense copies run end to end on the CPU with a
launcher that refuses any layout the plan says cuBLAS cannot address.

With a GPU (tests marked ``cuda``): every matmul-family op against the CPU
result over the float dtypes, transposed / padded / stepped / reversed /
broadcast operands, batch layouts, alpha and beta, ``out=`` (row-major,
column-major and neither), empty and zero-size dims, the TF32 switch, integer
dtypes refused as PyTorch's CUDA does, streams and threads.
"""

import os
import threading

import numpy as np
import pytest
from conftest import as_dtype_np, to_np

import ember_core as ec
from ember_core import linalg as LA
from ember_core._base import lib as _lib
from ember_core._base.lib import ffi, lib
from ember_core._cuda import blas as _cuda_blas
from ember_core._ops.linalg import products as _linalg

INT32_MAX = 2**31 - 1


@pytest.fixture(autouse=True)
def _cuda_or_skip(request):
    """Tests marked ``cuda`` skip without a usable GPU (unless EMBER_EXPECT_CUDA=1
    says one is expected: then they fail) and on the CUDA emulator, whose cuBLAS
    runs them but where 4 cases still need matrix_power on CUDA (README,
    "Testing CUDA code without a GPU")."""
    if request.node.get_closest_marker("cuda") is None:
        return
    if os.environ.get("EMBER_CUDA_EMULATE") == "1":
        pytest.skip("on the CUDA emulator (4 cases need matrix_power on CUDA)")
    if not os.environ.get("EMBER_EXPECT_CUDA") and not ec.cuda.is_available():
        from ember_core._cuda import runtime as _cuda

        pytest.skip(f"CUDA is not available: {_cuda._why_unavailable()}")


# ============================================================ GEMM plan (CPU)


def plan_of(batch, m, n, k, a_st, b_st, c_st):
    p = ffi.new("ecu_gemm_plan*")
    st = lib.ecu_gemm_plan_make(batch, m, n, k, *a_st, *b_st, *c_st, p)
    assert st == 0, _lib.last_message()
    assert lib.ecu_gemm_copies(batch, m, n, k, *a_st, *b_st, *c_st) == p.copy
    return p


def cublas_gemm(p, batch, alpha, beta, bufs, offs):
    """What cublasGemmStridedBatchedEx does with the plan's arguments, on flat
    NumPy buffers: column-major op(A) (m x k) times op(B) (k x n) into C (m x n)
    with leading dimensions; cuBLAS's A and B are ember's B and A when swapped.
    Checks cuBLAS's argument rules on the way."""
    (ba, oa), (bb, ob) = (
        ((bufs[1], offs[1]), (bufs[0], offs[0]))
        if p.swap
        else (
            (bufs[0], offs[0]),
            (bufs[1], offs[1]),
        )
    )
    bc, oc = bufs[2], offs[2]
    m, n, k = p.m, p.n, p.k
    assert 0 < p.lda <= INT32_MAX and 0 < p.ldb <= INT32_MAX and 0 < p.ldc <= INT32_MAX
    assert p.lda >= max(1, k if p.transa else m), "lda below cuBLAS's minimum"
    assert p.ldb >= max(1, n if p.transb else k), "ldb below cuBLAS's minimum"
    assert p.ldc >= max(1, m), "ldc below cuBLAS's minimum"
    r_m, r_n, r_k = np.arange(m)[:, None], np.arange(n)[None, :], np.arange(k)
    for i in range(batch):
        base_a, base_b, base_c = oa + i * p.stride_a, ob + i * p.stride_b, oc + i * p.stride_c
        # op(A)[r, c]: stored column-major, transposed when transa
        ia = r_m + r_k[None, :] * p.lda if not p.transa else r_k[None, :] + r_m * p.lda
        ib = r_k[:, None] + r_n * p.ldb if not p.transb else r_n + r_k[:, None] * p.ldb
        ic = r_m + r_n * p.ldc
        opa, opb = ba[base_a + ia], bb[base_b + ib]
        assert len(set((base_c + ic).ravel().tolist())) == m * n, "C elements overlap"
        prod = alpha * (opa @ opb)
        bc[base_c + ic] = prod if beta == 0 else prod + beta * bc[base_c + ic]


def _operand(rng, batch, rows, cols, kind, bkind):
    """(strides (batch, row, col), offset, buffer size) of a random layout."""
    pad = int(rng.integers(0, 3))
    rs, cs = {
        "row": (cols + pad, 1),
        "col": (1, rows + pad),
        "step": (2 * cols, 2),
        "bcast_r": (0, 1),
        "bcast_c": (cols, 0),
        "neg_c": (cols, -1),
        "neg_r": (-cols, 1),
        "odd1": (int(rng.integers(-5, 99)), int(rng.integers(-5, 99))),
    }[kind]
    if kind == "odd1":  # size-1 dims carry arbitrary strides
        rs = rs if rows == 1 else cols
        cs = cs if cols == 1 else 1
    span = sum(abs(s) * (d - 1) for s, d in ((rs, rows), (cs, cols)) if d > 0) + 1
    bs = {"dense": span + int(rng.integers(0, 4)), "zero": 0, "neg": -span}[bkind]
    strides = (bs, rs, cs)
    dims = (batch, rows, cols)
    low = sum(min(0, s) * (d - 1) for s, d in zip(strides, dims) if d > 0)
    high = sum(max(0, s) * (d - 1) for s, d in zip(strides, dims) if d > 0)
    return strides, -low, high - low + 1


def _gather(buf, off, st, dims):
    b, r, c = np.ix_(*(np.arange(d) for d in dims))
    return buf[off + b * st[0] + r * st[1] + c * st[2]]


def _dense(buf, off, st, dims):
    """The Python side's copy (ember_core._ops.linalg.products._dense_operand) as flat buffers."""
    vals = _gather(buf, off, st, dims)
    if st[0] == 0 or dims[0] == 1:
        return vals[0].ravel().copy(), 0, (0, dims[2], 1)
    return vals.ravel().copy(), 0, (dims[1] * dims[2], dims[2], 1)


KINDS = ["row", "col", "step", "bcast_r", "bcast_c", "neg_c", "neg_r", "odd1"]


@pytest.mark.parametrize("seed", range(40))
def test_gemm_plan_computes_the_product_for_random_layouts(seed):
    rng = np.random.default_rng(seed)
    for _ in range(25):
        batch = int(rng.choice([1, 1, 2, 3]))
        m, n, k = (int(rng.choice([1, 1, 2, 3, 5])) for _ in range(3))
        ka, kb = (str(rng.choice(KINDS)) for _ in range(2))
        kc = str(rng.choice([x for x in KINDS if not x.startswith("bcast")]))  # no overlaps
        ba, bb = (str(rng.choice(["dense", "zero", "neg"])) for _ in range(2))
        bc = str(rng.choice(["dense", "dense", "neg", "zero"])) if batch > 1 else "dense"
        a_st, oa, na = _operand(rng, batch, m, k, ka, ba)
        b_st, ob, nb = _operand(rng, batch, k, n, kb, bb)
        c_st, oc, nc = _operand(rng, batch, m, n, kc, bc)
        bufs = [rng.uniform(-1, 1, na), rng.uniform(-1, 1, nb), rng.uniform(-1, 1, nc)]
        alpha, beta = float(rng.choice([1.0, -0.5])), float(rng.choice([0.0, 1.0, 0.25]))
        A = _gather(bufs[0], oa, a_st, (batch, m, k))
        B = _gather(bufs[1], ob, b_st, (batch, k, n))
        C0 = _gather(bufs[2], oc, c_st, (batch, m, n))
        # what ec_matmul means: the products in batch order, each C = alpha AB + beta C
        want = C0.copy()
        for i in range(batch):
            j = 0 if c_st[0] == 0 else i
            want[j] = alpha * A[i] @ B[i] + beta * want[j]
            if c_st[0] == 0:
                want[:] = want[j]
        what = f"{batch}x{m}x{n}x{k} A {ka}/{ba} {a_st} B {kb}/{bb} {b_st} C {kc}/{bc} {c_st}"
        p = plan_of(batch, m, n, k, a_st, b_st, c_st)
        copies = p.copy
        target = None
        if copies & lib.ECU_GEMM_COPY_A:
            bufs[0], oa, a_st = _dense(bufs[0], oa, a_st, (batch, m, k))
        if copies & lib.ECU_GEMM_COPY_B:
            bufs[1], ob, b_st = _dense(bufs[1], ob, b_st, (batch, k, n))
        if copies & lib.ECU_GEMM_COPY_C:
            target = (bufs[2], oc, c_st)
            bufs[2], oc, c_st = _dense(bufs[2], oc, c_st, (batch, m, n))
        p = plan_of(batch, m, n, k, a_st, b_st, c_st)
        assert p.copy == 0, f"still needs copies {p.copy} after copying: {what}"
        assert p.loop == (batch > 1 and c_st[0] == 0), what
        if p.loop:
            for i in range(batch):
                cublas_gemm(p, 1, alpha, beta, bufs, (oa + i * a_st[0], ob + i * b_st[0], oc))
        else:
            cublas_gemm(p, batch, alpha, beta, bufs, (oa, ob, oc))
        got = _gather(bufs[2], oc, c_st, (batch, m, n))
        if target is not None:  # the copy back into the caller's C
            got_c = _gather(bufs[2], oc, c_st, (batch, m, n))
            buf, off, st = target
            b_, r_, c_ = np.ix_(*(np.arange(d) for d in (batch, m, n)))
            buf[off + b_ * st[0] + r_ * st[1] + c_ * st[2]] = got_c
            got = _gather(buf, off, st, (batch, m, n))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=what)


def test_gemm_plan_row_major_operands_compute_c_transposed():
    # C = A B, all row-major: cuBLAS computes C^T = B^T A^T with no transposes
    p = plan_of(1, 3, 5, 4, (0, 4, 1), (0, 5, 1), (0, 5, 1))
    assert (p.copy, p.swap, p.transa, p.transb) == (0, 1, 0, 0)
    assert (p.m, p.n, p.k, p.lda, p.ldb, p.ldc) == (5, 3, 4, 5, 4, 5)


def test_gemm_plan_transposed_operands_become_cublas_transposes():
    # A = X.t() for a row-major X (4 x 3): A has strides (1, 3), column-major
    p = plan_of(1, 3, 5, 4, (0, 1, 3), (0, 5, 1), (0, 5, 1))
    assert (p.copy, p.swap, p.transa, p.transb, p.ldb) == (0, 1, 0, 1, 3)
    # a linear layer, x @ W.t() with W (n x k) row-major: B has strides (1, k)
    p = plan_of(1, 8, 16, 32, (0, 32, 1), (0, 1, 32), (0, 16, 1))
    assert (p.copy, p.swap, p.transa, p.transb, p.lda, p.ldb) == (0, 1, 1, 0, 32, 32)


def test_gemm_plan_column_major_output_computes_c():
    # C = out.t() of a row-major (n x m) out: column-major, cuBLAS computes C itself
    p = plan_of(1, 3, 5, 4, (0, 4, 1), (0, 5, 1), (0, 1, 3))
    assert (p.copy, p.swap, p.transa, p.transb) == (0, 0, 1, 1)
    assert (p.m, p.n, p.lda, p.ldb, p.ldc) == (3, 5, 4, 5, 3)


def test_gemm_plan_padded_rows_keep_their_leading_dimension():
    # a[:, :4] of a (3 x 10) row-major tensor: row stride 10
    p = plan_of(1, 3, 5, 4, (0, 10, 1), (0, 5, 1), (0, 5, 1))
    assert (p.copy, p.ldb) == (0, 10)


def test_gemm_plan_batch_strides_pass_through():
    # bmm of contiguous (7, 3, 4) @ (7, 4, 5); A broadcast over the batch (stride 0)
    p = plan_of(7, 3, 5, 4, (12, 4, 1), (20, 5, 1), (15, 5, 1))
    assert (p.copy, p.stride_a, p.stride_b, p.stride_c, p.loop) == (0, 20, 12, 15, 0)
    p = plan_of(7, 3, 5, 4, (0, 4, 1), (20, 5, 1), (15, 5, 1))
    assert (p.copy, p.stride_b) == (0, 0)


@pytest.mark.parametrize(
    "a_st, b_st, c_st, copies",
    [
        ((0, 8, 2), (0, 5, 1), (0, 5, 1), 1),  # A stepped in both dims
        ((0, 0, 1), (0, 5, 1), (0, 5, 1), 1),  # A's rows broadcast (stride 0)
        ((0, 4, 1), (0, 5, 0), (0, 5, 1), 2),  # B's columns broadcast
        ((0, 4, 1), (0, 5, -1), (0, 5, 1), 2),  # B reversed
        ((0, 4, 1), (0, 5, 1), (0, 10, 2), 4),  # C stepped
        ((0, 2**31, 1), (0, 5, 1), (0, 5, 1), 1),  # a leading dimension beyond int32
        ((0, 8, 2), (0, 10, 2), (0, 10, 2), 7),
    ],
)
def test_gemm_plan_asks_for_copies_only_where_cublas_cannot_address(a_st, b_st, c_st, copies):
    assert plan_of(1, 3, 5, 4, a_st, b_st, c_st).copy == copies


def test_gemm_plan_negative_batch_stride_is_copied_and_zero_c_stride_loops():
    assert plan_of(2, 3, 5, 4, (-12, 4, 1), (20, 5, 1), (15, 5, 1)).copy == 1
    p = plan_of(2, 3, 5, 4, (12, 4, 1), (20, 5, 1), (0, 5, 1))
    assert (p.copy, p.loop) == (0, 1)


def test_gemm_plan_empty_products_and_limits():
    for dims in [(0, 3, 5, 4), (2, 0, 5, 4), (2, 3, 0, 4), (2, 3, 5, 0)]:
        assert plan_of(*dims, (0, 0, 0), (0, 0, 0), (0, 0, 0)).copy == 0
    p = ffi.new("ecu_gemm_plan*")
    assert lib.ecu_gemm_plan_make(1, 2**31, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, p) != 0
    assert "2^31" in _lib.last_message()
    assert lib.ecu_gemm_plan_make(1, -1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, p) != 0


class _FakeCudaKernels:
    """Stands in for a CUDA device's kernel namespace on the CPU: refuses any
    layout Note [GEMM plan] says cuBLAS cannot address, then runs the CPU's
    ec_matmul on it."""

    def __init__(self):
        self.calls = []

    def ec_matmul(self, dtype, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs, b_cs,
                  beta, c, c_bs, c_rs, c_cs):  # fmt: skip
        copies = lib.ecu_gemm_copies(
            batch, m, n, k, a_bs, a_rs, a_cs, b_bs, b_rs, b_cs, c_bs, c_rs, c_cs
        )
        assert copies == 0, f"the launcher got a layout cuBLAS cannot address ({copies})"
        self.calls.append((batch, m, n, k, (a_bs, a_rs, a_cs), (b_bs, b_rs, b_cs)))
        return lib.ec_matmul(dtype, batch, m, n, k, alpha, a, a_bs, a_rs, a_cs, b, b_bs, b_rs,
                             b_cs, beta, c, c_bs, c_rs, c_cs)  # fmt: skip


class _FakeDevice:
    type = "cuda"

    def __init__(self):
        self._k = _FakeCudaKernels()


def _strided(values, layout):
    """A CPU float64 tensor of ``values`` (r x c, or b x r x c) in a layout."""
    values = np.asarray(values, dtype=np.float64)
    if layout == "row":
        return ec.tensor(values)
    if layout == "col":
        return ec.tensor(np.ascontiguousarray(np.swapaxes(values, -1, -2))).transpose(-1, -2)
    big = np.zeros(values.shape[:-2] + (2 * values.shape[-2], 2 * values.shape[-1]))
    big[..., ::2, ::2] = values
    if layout == "step":
        return ec.tensor(big)[..., ::2, ::2]
    raise ValueError(layout)


@pytest.mark.parametrize("la", ["row", "col", "step"])
@pytest.mark.parametrize("lb", ["row", "col", "step"])
@pytest.mark.parametrize("lc", ["row", "col", "step"])
def test_dense_copies_of_the_python_side_end_to_end_on_cpu(monkeypatch, la, lb, lc):
    """_linalg._gemm_cuda with a stand-in device: operands cuBLAS cannot address
    are copied, C is computed in a copy and written back, beta reads C."""
    monkeypatch.setattr(_cuda_blas, "loaded", True)
    rng = np.random.default_rng(7)
    batch, m, n, k = 3, 4, 5, 6
    A, B, C0 = (rng.uniform(-1, 1, s) for s in [(batch, m, k), (batch, k, n), (batch, m, n)])
    a, b, c = _strided(A, la), _strided(B, lb), _strided(C0, lc)
    dev = _FakeDevice()
    for alpha, beta in [(1.0, 0.0), (2.0, 0.5)]:
        c = _strided(C0, lc)
        _linalg._gemm_cuda(
            "test", dev, a, b, c, batch, m, n, k,
            (a.stride(0), a.stride(1), a.stride(2)),
            (b.stride(0), b.stride(1), b.stride(2)),
            (c.stride(0), c.stride(1), c.stride(2)),
            alpha, beta,
        )  # fmt: skip
        want = alpha * A @ B + beta * C0
        np.testing.assert_allclose(c.numpy(), want, rtol=1e-12, atol=1e-12)
    assert len(dev._k.calls) == 2


def test_dense_copy_of_an_operand_broadcast_over_the_batch_stays_one_matrix(monkeypatch):
    monkeypatch.setattr(_cuda_blas, "loaded", True)
    rng = np.random.default_rng(3)
    A, B = rng.uniform(-1, 1, (4, 6)), rng.uniform(-1, 1, (5, 6, 3))
    a = _strided(A, "step")  # needs a copy, and is broadcast over the batch
    b = ec.tensor(B)
    c = ec.empty(5, 4, 3, dtype=ec.float64)
    dev = _FakeDevice()
    _linalg._gemm_cuda(
        "test", dev, a, b, c, 5, 4, 3, 6,
        (0, a.stride(0), a.stride(1)), (18, 3, 1), (12, 3, 1), 1.0, 0.0,
    )  # fmt: skip
    np.testing.assert_allclose(c.numpy(), A @ B, rtol=1e-12)
    assert dev._k.calls[0][4][0] == 0  # the copy kept batch stride 0: one matrix, not five


def test_integer_products_are_refused_before_cublas_as_pytorch_does(monkeypatch):
    monkeypatch.setattr(_cuda_blas, "loaded", False)  # the dtype check comes first
    a = ec.ones(2, 2, dtype=ec.int64)
    dev = _FakeDevice()
    with pytest.raises(NotImplementedError, match="\"addmm_cuda\" not implemented for 'Long'"):
        _linalg._gemm_cuda("mm", dev, a, a, a, 1, 2, 2, 2, (0, 2, 1), (0, 2, 1), (0, 2, 1), 1, 0)
    with pytest.raises(NotImplementedError, match="\"bmm_cuda\" not implemented for 'Int'"):
        i = ec.ones(2, 2, 2, dtype=ec.int32)
        _linalg._gemm_cuda("bmm", dev, i, i, i, 2, 2, 2, 2, (4, 2, 1), (4, 2, 1), (4, 2, 1), 1, 0)
    assert not dev._k.calls


# ---------------------------------------------------- switches and workspace


def test_matmul_switches_have_pytorchs_defaults_and_reach_c():
    sw = _cuda_blas.matmul
    saved = lib.ecu_blas_get_flags()
    try:
        lib.ecu_blas_set_flags(lib.ECU_BLAS_ALLOW_FP16_REDUCED | lib.ECU_BLAS_ALLOW_BF16_REDUCED)
        assert sw.allow_tf32 is False
        assert sw.allow_fp16_reduced_precision_reduction is True
        assert sw.allow_bf16_reduced_precision_reduction is True
        sw.allow_tf32 = True
        assert lib.ecu_blas_get_flags() & lib.ECU_BLAS_ALLOW_TF32
        sw.allow_bf16_reduced_precision_reduction = False
        assert not lib.ecu_blas_get_flags() & lib.ECU_BLAS_ALLOW_BF16_REDUCED
        assert sw.allow_fp16_reduced_precision_reduction is True
        sw.allow_tf32 = 0
        assert sw.allow_tf32 is False
        with pytest.raises(AttributeError):
            sw.allow_tf33 = True  # a typo must not pass silently
        assert "allow_tf32=False" in repr(sw)
    finally:
        lib.ecu_blas_set_flags(saved)


def test_workspace_size_follows_cublas_workspace_config(monkeypatch):
    parse = _cuda_blas.parse_workspace_config
    assert parse(":4096:8") == 4096 * 1024 * 8
    assert parse(":4096:2:16:8") == 4096 * 1024 * 2 + 16 * 1024 * 8
    assert parse(":0:0") == 0
    assert parse("4096:8") is None and parse(":4096") is None and parse("big") is None
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    assert _cuda_blas.workspace_size(9) == 32 * 1024 * 1024  # Hopper, as PyTorch
    assert _cuda_blas.workspace_size(8) == 4096 * 1024 * 2 + 16 * 1024 * 8
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    assert _cuda_blas.workspace_size(9) == 16 * 1024 * 8


def test_cublas_load_reports_a_missing_library_clearly():
    if lib.ecu_blas_loaded():
        pytest.skip("cuBLAS is loaded in this process already")
    st = lib.ecu_blas_load(b"/nonexistent/libcublas.so.13")
    assert st != 0
    msg = _lib.last_message()
    assert "cuBLAS" in msg and "/nonexistent/libcublas.so.13" in msg and "nvidia-cublas" in msg
    assert not lib.ecu_blas_loaded()


# ================================================================ on a GPU

FLOATS = [ec.float16, ec.bfloat16, ec.float32, ec.float64]
# results against the CPU's, relative to the result's magnitude: the CPU sums in
# another order (fp16/bf16 in float32 on both, rounded once)
TOL = {ec.float16: 1e-2, ec.bfloat16: 4e-2, ec.float32: 2e-5, ec.float64: 1e-12}

LAYOUTS = ["contiguous", "transposed", "padded", "colpadded", "stepped", "reversed"]


def on(values, dtype, layout, device):
    """A tensor holding ``values`` (>= 2-d for the matrix layouts) laid out as
    ``layout`` on ``device``; the same call on 'cpu' and 'cuda' gives the same
    strides."""
    values = as_dtype_np(np.asarray(values, dtype=np.float64), dtype)
    if dtype is ec.bfloat16:
        values = values.astype(np.float32)
    t = lambda v: ec.tensor(np.ascontiguousarray(v), dtype=dtype, device=device)  # noqa: E731
    nd = values.ndim
    if layout == "contiguous" or nd == 0:
        return t(values)
    if layout == "transposed":  # every dim reversed: column-major matrices
        return t(values.transpose(tuple(reversed(range(nd))))).permute(*reversed(range(nd)))
    if layout == "padded":  # row-major with a row stride beyond the row length
        big = np.zeros(values.shape[:-1] + (values.shape[-1] + 3,), values.dtype)
        big[..., : values.shape[-1]] = values
        return t(big)[..., : values.shape[-1]]
    if layout == "colpadded":  # column-major with padding
        sw = np.swapaxes(values, -1, -2)
        big = np.zeros(sw.shape[:-1] + (sw.shape[-1] + 2,), values.dtype)
        big[..., : sw.shape[-1]] = sw
        return t(big)[..., : sw.shape[-1]].transpose(-1, -2)
    if layout == "stepped":  # every other element: no unit stride (a copy)
        big = np.zeros(tuple(2 * s for s in values.shape), values.dtype)
        big[tuple(slice(None, None, 2) for _ in values.shape)] = values
        return t(big)[tuple(slice(None, None, 2) for _ in values.shape)]
    if layout == "reversed":  # negative strides
        base = t(values[tuple(slice(None, None, -1) for _ in values.shape)])
        st = base.stride()
        off = sum((s - 1) * x for s, x in zip(base.shape, st) if s > 0)
        return base.as_strided(base.shape, tuple(-x for x in st), off)
    raise ValueError(layout)


def _np(t):
    return to_np(t.cpu()).astype(np.float64)


def compare(got, want, dtype, what, scale_extra=0.0):
    """A CUDA result against the CPU's: same shape and dtype, on CUDA, close."""
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want):
            compare(g, w, dtype, what)
        return
    assert got.is_cuda, f"{what}: the result is on {got.device}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {got.shape} != {want.shape}"
    g, w = _np(got), _np(want)
    scale = max(1.0, float(np.abs(w).max()) if w.size else 1.0, scale_extra)
    tol = TOL[dtype]
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, err_msg=what)


def both(fn, specs, dtype, what):
    """Run ``fn`` on CPU tensors and on CUDA tensors of the same values and
    layouts (specs: (values, layout) pairs) and compare."""
    cpu = [on(v, dtype, lay, "cpu") for v, lay in specs]
    gpu = [on(v, dtype, lay, "cuda") for v, lay in specs]
    for c, g in zip(cpu, gpu):
        assert c.stride() == g.stride()
    compare(fn(*gpu), fn(*cpu), dtype, what)


def _u(rng, *shape):
    return rng.uniform(-1, 1, shape)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_mm_over_sizes_and_layouts(dtype):
    rng = np.random.default_rng(11)
    sizes = [(1, 1, 1), (3, 4, 5), (64, 64, 64), (130, 257, 65), (1, 300, 7), (7, 300, 1)]
    for m, k, n in sizes:
        A, B = _u(rng, m, k), _u(rng, k, n)
        for la in LAYOUTS:
            for lb in ["contiguous", "transposed", "stepped"] if la != "contiguous" else LAYOUTS:
                both(ec.mm, [(A, la), (B, lb)], dtype, f"mm {m}x{k}x{n} {la}/{lb} {dtype}")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_matmul_batching_broadcasting_and_vectors(dtype):
    rng = np.random.default_rng(12)
    cases = [
        ((33,), (33,)),
        ((5, 33), (33,)),
        ((33,), (33, 6)),
        ((33,), (4, 33, 6)),
        ((4, 5, 33), (33,)),
        ((2, 1, 5, 7), (3, 7, 4)),
        ((6, 5, 7), (7, 4)),
        ((5, 7), (6, 7, 4)),
        ((2, 3, 4, 5), (2, 3, 5, 6)),
    ]
    for sa, sb in cases:
        A, B = _u(rng, *sa), _u(rng, *sb)
        for lay in ["contiguous", "transposed", "stepped", "reversed"]:
            la = lay if len(sa) > 1 else "contiguous"
            lb = lay if len(sb) > 1 else "contiguous"
            both(ec.matmul, [(A, la), (B, lb)], dtype, f"matmul {sa}@{sb} {lay} {dtype}")
    # batch dims expanded (stride 0) and permuted (batch stride not outermost)
    A, B = _u(rng, 1, 5, 7), _u(rng, 4, 7, 3)
    both(lambda a, b: a.expand(4, 5, 7) @ b, [(A, "contiguous"), (B, "contiguous")], dtype,
         "expanded batch")  # fmt: skip
    A, B = _u(rng, 5, 4, 7), _u(rng, 4, 7, 3)
    both(lambda a, b: a.permute(1, 0, 2) @ b, [(A, "contiguous"), (B, "contiguous")], dtype,
         "permuted batch")  # fmt: skip


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_bmm_and_batch_layouts(dtype):
    rng = np.random.default_rng(13)
    A, B = _u(rng, 7, 33, 17), _u(rng, 7, 17, 9)
    for la in ["contiguous", "transposed", "padded", "colpadded", "stepped", "reversed"]:
        for lb in ["contiguous", "transposed"]:
            both(ec.bmm, [(A, la), (B, lb)], dtype, f"bmm {la}/{lb}")
    A8, B8 = _u(rng, 8, 6, 5), _u(rng, 8, 5, 4)
    both(lambda a, b: ec.bmm(a[::2], b[::2]), [(A8, "contiguous"), (B8, "contiguous")], dtype,
         "stepped batch")  # fmt: skip
    both(lambda a, b: ec.bmm(a, b.transpose(1, 2)), [(A, "contiguous"), (_u(rng, 7, 9, 17),
         "contiguous")], dtype, "bmm b.transpose")  # fmt: skip
    z = ec.bmm(ec.empty(0, 3, 4, dtype=dtype, device="cuda"),
               ec.empty(0, 4, 5, dtype=dtype, device="cuda"))  # fmt: skip
    assert tuple(z.shape) == (0, 3, 5) and z.is_cuda


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_addmm_baddbmm_alpha_beta_and_bias_broadcast(dtype):
    rng = np.random.default_rng(14)
    M, A, B = _u(rng, 5, 6), _u(rng, 5, 7), _u(rng, 7, 6)
    for alpha, beta in [(1, 1), (2, 0.5), (-1.5, 0), (0, 2), (1, -1)]:
        for lay in ["contiguous", "transposed", "stepped"]:
            both(lambda c, a, b, al=alpha, be=beta: ec.addmm(c, a, b, beta=be, alpha=al),
                 [(M, lay), (A, lay), (B, "transposed")], dtype,
                 f"addmm alpha={alpha} beta={beta} {lay}")  # fmt: skip
    for bias in [_u(rng, 6), _u(rng, 1, 6), _u(rng, 5, 1)]:
        both(lambda c, a, b: ec.addmm(c, a, b), [(bias, "contiguous"), (A, "contiguous"),
             (B, "contiguous")], dtype, f"addmm bias {bias.shape}")  # fmt: skip
    # linear: x @ W.t() + b (ember_nn.functional.linear's GEMM)
    X, W, b = _u(rng, 9, 32), _u(rng, 16, 32), _u(rng, 16)
    both(lambda b_, x, w: ec.addmm(b_, x, w.t()), [(b, "contiguous"), (X, "contiguous"),
         (W, "contiguous")], dtype, "linear")  # fmt: skip
    Mb, Ab, Bb = _u(rng, 3, 5, 6), _u(rng, 3, 5, 7), _u(rng, 3, 7, 6)
    for alpha, beta in [(1, 1), (0.5, 2), (1, 0)]:
        both(lambda c, a, b, al=alpha, be=beta: ec.baddbmm(c, a, b, beta=be, alpha=al),
             [(Mb, "contiguous"), (Ab, "transposed"), (Bb, "stepped")], dtype,
             f"baddbmm alpha={alpha} beta={beta}")  # fmt: skip
    both(lambda c, a, b: ec.addbmm(c, a, b, beta=0.5), [(M, "contiguous"), (Ab, "contiguous"),
         (Bb, "contiguous")], dtype, "addbmm")  # fmt: skip


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [ec.float32, ec.float16], ids=str)
def test_beta_zero_ignores_nan_in_the_input(dtype):
    m = ec.full((4, 3), float("nan"), dtype=dtype, device="cuda")
    a = ec.ones(4, 5, dtype=dtype, device="cuda")
    b = ec.ones(5, 3, dtype=dtype, device="cuda")
    r = ec.addmm(m, a, b, beta=0)
    assert _np(r).tolist() == [[5.0] * 3] * 4
    out = ec.full((4, 3), float("nan"), dtype=dtype, device="cuda")
    ec.matmul(a, b, out=out)
    assert _np(out).tolist() == [[5.0] * 3] * 4


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_in_place_and_out_forms_in_every_output_layout(dtype):
    rng = np.random.default_rng(15)
    M, A, B = _u(rng, 5, 6), _u(rng, 5, 7), _u(rng, 7, 6)

    def inplace(c, a, b):
        c.addmm_(a, b, beta=0.5, alpha=2)
        return c

    def with_out(c, a, b):
        ec.addmm(c, a, b, beta=0.5, out=c)
        return c

    for lay in ["contiguous", "transposed", "stepped", "padded"]:
        both(inplace, [(M, lay), (A, "contiguous"), (B, "contiguous")], dtype, f"addmm_ {lay}")
    # out= written in place: row-major (cuBLAS computes C^T), column-major (C itself)
    for lay in ["contiguous", "transposed", "padded", "colpadded"]:
        both(with_out, [(M, lay), (A, "transposed"), (B, "contiguous")], dtype, f"out=c {lay}")
    # out= of another shape is resized; out= of a batch
    both(lambda a, b: ec.matmul(a, b, out=ec.empty(0, dtype=dtype, device=a.device)),
         [(A, "contiguous"), (B, "contiguous")], dtype, "matmul out= resized")  # fmt: skip
    Mb, Ab, Bb = _u(rng, 3, 5, 6), _u(rng, 3, 5, 7), _u(rng, 3, 7, 6)

    def bmm_out(c, a, b):
        ec.bmm(a, b, out=c)
        return c

    both(bmm_out, [(Mb, "transposed"), (Ab, "contiguous"), (Bb, "contiguous")], dtype,
         "bmm out= column-major")  # fmt: skip

    def baddbmm_(c, a, b):
        c.baddbmm_(a, b, alpha=0.5)
        return c

    both(baddbmm_, [(Mb, "stepped"), (Ab, "contiguous"), (Bb, "contiguous")], dtype,
         "baddbmm_ stepped")  # fmt: skip

    def baddbmm_reversed_batch_out(c, a, b):
        # an out= whose batch stride is negative: cuBLAS computes into a dense copy
        st = c.stride()
        rev = c.as_strided(c.shape, (-st[0], st[1], st[2]), (c.shape[0] - 1) * st[0])
        ec.baddbmm(rev, a, b, beta=0.5, out=rev)
        return rev

    both(baddbmm_reversed_batch_out, [(Mb, "contiguous"), (Ab, "contiguous"),
         (Bb, "transposed")], dtype, "baddbmm out= reversed batch")  # fmt: skip


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_empty_and_zero_size_dims(dtype):
    dev = "cuda"
    for m, k, n in [(0, 4, 5), (3, 0, 5), (3, 4, 0), (0, 0, 0)]:
        r = ec.mm(ec.ones(m, k, dtype=dtype, device=dev), ec.ones(k, n, dtype=dtype, device=dev))
        assert tuple(r.shape) == (m, n) and r.is_cuda
        assert _np(r).tolist() == np.zeros((m, n)).tolist()  # k == 0: a sum of nothing
    # k == 0 with beta: beta * input (no product); beta 0 ignores NaN
    inp = ec.full((3, 5), 2.0, dtype=dtype, device=dev)
    e1, e2 = ec.ones(3, 0, dtype=dtype, device=dev), ec.ones(0, 5, dtype=dtype, device=dev)
    assert _np(ec.addmm(inp, e1, e2, beta=1.5)).tolist() == [[3.0] * 5] * 3
    nan = ec.full((3, 5), float("nan"), dtype=dtype, device=dev)
    assert _np(ec.addmm(nan, e1, e2, beta=0)).tolist() == [[0.0] * 5] * 3
    r = ec.baddbmm(ec.full((2, 3, 5), 1.0, dtype=dtype, device=dev),
                   ec.ones(2, 3, 0, dtype=dtype, device=dev),
                   ec.ones(2, 0, 5, dtype=dtype, device=dev), beta=-2)  # fmt: skip
    assert _np(r).tolist() == [[[-2.0] * 5] * 3] * 2
    assert _np(ec.dot(ec.ones(0, dtype=dtype, device=dev),
                      ec.ones(0, dtype=dtype, device=dev))) == 0  # fmt: skip


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_vector_products_einsum_and_composites(dtype):
    rng = np.random.default_rng(16)
    V, W, M = _u(rng, 1000), _u(rng, 1000), _u(rng, 9, 7)
    v7, v9 = _u(rng, 7), _u(rng, 9)
    cases = [
        ("dot", ec.dot, [(V, "contiguous"), (W, "contiguous")]),
        ("dot stepped", lambda a, b: ec.dot(a[::3], b[::3]), [(V, "contiguous"),
                                                               (W, "contiguous")]),
        ("vdot", ec.vdot, [(V[:100], "contiguous"), (W[:100], "contiguous")]),
        ("mv", ec.mv, [(M, "transposed"), (v7, "contiguous")]),
        ("mv stepped", ec.mv, [(M, "stepped"), (v7, "contiguous")]),
        ("addmv", lambda c, a, v: ec.addmv(c, a, v, alpha=2), [(v9, "contiguous"),
                                                                (M, "contiguous"),
                                                                (v7, "contiguous")]),
        ("outer", ec.outer, [(v9, "contiguous"), (v7, "contiguous")]),
        ("addr", lambda c, u, v: ec.addr(c, u, v), [(M, "contiguous"), (v9, "contiguous"),
                                                     (v7, "contiguous")]),
        ("inner", ec.inner, [(_u(rng, 3, 8), "contiguous"), (_u(rng, 4, 8), "transposed")]),
        ("kron", ec.kron, [(_u(rng, 2, 3), "contiguous"), (_u(rng, 4, 2), "contiguous")]),
        ("einsum bij,bjk->bik", lambda a, b: ec.einsum("bij,bjk->bik", a, b),
         [(_u(rng, 3, 4, 5), "contiguous"), (_u(rng, 3, 5, 6), "transposed")]),
        ("einsum ij,kj->ik", lambda a, b: ec.einsum("ij,kj->ik", a, b),
         [(_u(rng, 4, 5), "transposed"), (_u(rng, 3, 5), "contiguous")]),
        ("einsum bhqd,bhkd->bhqk", lambda a, b: ec.einsum("bhqd,bhkd->bhqk", a, b),
         [(_u(rng, 2, 3, 5, 8), "contiguous"), (_u(rng, 2, 3, 6, 8), "contiguous")]),
        ("einsum i,i->", lambda a, b: ec.einsum("i,i->", a, b), [(v7, "contiguous"),
                                                                   (v7, "contiguous")]),
        ("tensordot", lambda a, b: ec.tensordot(a, b, dims=([1, 2], [0, 1])),
         [(_u(rng, 3, 4, 5), "contiguous"), (_u(rng, 4, 5, 2), "contiguous")]),
        ("matrix_power 3", lambda a: ec.matrix_power(a, 3), [(_u(rng, 2, 5, 5) / 2,
                                                              "contiguous")]),
        ("multi_dot", lambda a, b, c: LA.multi_dot([a, b, c]),
         [(_u(rng, 4, 5), "contiguous"), (_u(rng, 5, 6), "transposed"),
          (_u(rng, 6, 3), "contiguous")]),
    ]  # fmt: skip
    for what, fn, specs in cases:
        both(fn, specs, dtype, f"{what} {dtype}")


@pytest.mark.cuda
def test_tf32_switch_changes_float32_products_within_tf32_precision():
    rng = np.random.default_rng(17)
    a, b = _u(rng, 1024, 1024).astype(np.float32), _u(rng, 1024, 1024).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    ga, gb = ec.tensor(a, device="cuda"), ec.tensor(b, device="cuda")
    sw = _cuda_blas.matmul
    old = sw.allow_tf32
    try:
        sw.allow_tf32 = False
        full = (ga @ gb).cpu().numpy()
        bfull = ec.bmm(ga[None], gb[None].expand(1, 1024, 1024)).cpu().numpy()[0]
        sw.allow_tf32 = True
        tf32 = (ga @ gb).cpu().numpy()
        sw.allow_tf32 = False
        again = (ga @ gb).cpu().numpy()
    finally:
        sw.allow_tf32 = old
    err_full = np.abs(full - ref).max()
    err_tf32 = np.abs(tf32 - ref).max()
    assert err_full < 1e-3, f"float32 with TF32 off: max error {err_full}"
    assert np.abs(bfull - ref).max() < 1e-3
    assert np.array_equal(full, again), "turning TF32 off again must restore the same result"
    # TF32 keeps 10 mantissa bits of each input: ~1e-2 here, 10x float32's error at least
    assert err_tf32 < 0.1, f"TF32 product: max error {err_tf32}"
    assert err_tf32 > 10 * err_full, (
        f"allow_tf32=True did not change the product's precision ({err_tf32} vs {err_full}): "
        "the switch does not reach cuBLAS"
    )


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [ec.float16, ec.bfloat16], ids=str)
def test_reduced_precision_reduction_switches(dtype):
    rng = np.random.default_rng(18)
    a, b = _u(rng, 64, 4096), _u(rng, 4096, 64)
    name = "allow_fp16" if dtype is ec.float16 else "allow_bf16"
    name += "_reduced_precision_reduction"
    sw = _cuda_blas.matmul
    old = getattr(sw, name)
    ca, cb = on(a, dtype, "contiguous", "cpu"), on(b, dtype, "contiguous", "cpu")
    want = ec.mm(ca, cb)
    try:
        for value in (False, True):
            setattr(sw, name, value)
            got = ec.mm(ca.cuda(), cb.cuda())
            compare(got, want, dtype, f"{name}={value}", scale_extra=8.0)
    finally:
        setattr(sw, name, old)


@pytest.mark.cuda
def test_large_products_against_float64():
    rng = np.random.default_rng(19)
    a, b = _u(rng, 64, 512, 512).astype(np.float32), _u(rng, 64, 512, 512).astype(np.float32)
    got = ec.bmm(ec.tensor(a, device="cuda"), ec.tensor(b, device="cuda")).cpu().numpy()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(got - ref).max() < 1e-3
    x = _u(rng, 1000, 1000).astype(np.float32)
    got = (ec.tensor(x, device="cuda") @ ec.tensor(x, device="cuda").t()).cpu().numpy()
    ref = x.astype(np.float64) @ x.astype(np.float64).T
    assert np.abs(got - ref).max() < 1e-3


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [ec.int64, ec.int32, ec.int16, ec.int8, ec.uint8, ec.bool])
def test_integer_and_bool_products_raise_as_pytorch(dtype):
    a = ec.ones(3, 3, dtype=dtype, device="cuda")
    name = {ec.int64: "Long", ec.int32: "Int", ec.int16: "Short", ec.int8: "Char",
            ec.uint8: "Byte", ec.bool: "Bool"}[dtype]  # fmt: skip
    with pytest.raises(NotImplementedError, match=f"\"addmm_cuda\" not implemented for '{name}'"):
        ec.mm(a, a)
    if dtype is not ec.bool:
        with pytest.raises(NotImplementedError, match=f"not implemented for '{name}'"):
            ec.bmm(a.expand(2, 3, 3), a.expand(2, 3, 3))
    with pytest.raises(RuntimeError, match="device"):
        ec.mm(ec.ones(3, 3, device="cuda"), ec.ones(3, 3))


@pytest.mark.cuda
def test_products_on_side_streams_and_threads():
    rng = np.random.default_rng(20)
    a, b = _u(rng, 256, 256).astype(np.float32), _u(rng, 256, 256).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    ga, gb = ec.tensor(a, device="cuda"), ec.tensor(b, device="cuda")
    ec.cuda.synchronize()
    s1, s2 = ec.cuda.Stream(), ec.cuda.Stream()
    outs = []
    for s in (s1, s2, s1):
        with ec.cuda.stream(s):
            r = ga @ gb
            for _ in range(3):
                r = ec.addmm(r, ga, gb, beta=0.0)  # same result, queued on s
            outs.append((s, r))
    for s, r in outs:
        s.synchronize()
        assert np.abs(r.cpu().numpy() - ref).max() < 1e-3
    errors = []

    def work():
        try:
            with ec.cuda.stream(ec.cuda.Stream()):
                r = ec.matmul(ga, gb)
                ec.cuda.current_stream().synchronize()
                if np.abs(r.cpu().numpy() - ref).max() >= 1e-3:
                    errors.append("wrong product on a thread")
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.cuda
def test_repeated_products_do_not_grow_memory():
    a = ec.tensor(np.random.default_rng(21).uniform(-1, 1, (128, 128)), device="cuda")
    ec.mm(a, a)  # the first product allocates this stream's cuBLAS workspace
    ec.cuda.synchronize()
    before = ec.cuda.memory_allocated()
    for _ in range(50):
        r = ec.mm(a, a.t())
        r = ec.bmm(a.expand(4, 128, 128), a[None].expand(4, 128, 128))
    del r
    ec.cuda.synchronize()
    assert ec.cuda.memory_allocated() == before


LINALG_ON_CPU_ONLY = [
    ("cholesky", lambda a: LA.cholesky(a)),
    ("inv", lambda a: LA.inv(a)),
    ("solve", lambda a: LA.solve(a, a)),
    ("lu_factor", lambda a: LA.lu_factor(a)),
    ("det", lambda a: LA.det(a)),
    ("slogdet", lambda a: LA.slogdet(a)),
    ("qr", lambda a: LA.qr(a)),
    ("eigh", lambda a: LA.eigh(a)),
    ("svd", lambda a: LA.svd(a)),
    ("svdvals", lambda a: LA.svdvals(a)),
    ("lstsq", lambda a: LA.lstsq(a, a)),
    ("solve_triangular", lambda a: LA.solve_triangular(a, a, upper=True)),
    ("pinv", lambda a: LA.pinv(a)),
    ("matrix_rank", lambda a: LA.matrix_rank(a)),
    ("geqrf", lambda a: ec.geqrf(a)),
]


@pytest.mark.cuda
@pytest.mark.parametrize("name, fn", LINALG_ON_CPU_ONLY, ids=[n for n, _ in LINALG_ON_CPU_ONLY])
def test_linalg_decompositions_say_they_run_on_the_cpu_only(name, fn):
    a = (ec.eye(4) * 4 + ec.ones(4, 4)).cuda()
    with pytest.raises(NotImplementedError, match="cuda"):
        fn(a)
