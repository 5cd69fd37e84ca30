"""ember on CUDA against PyTorch on CUDA (same GPU, same inputs): marked `cuda`
and `parity`; run by `make gpu-check`.  Skipped without torch, or without a GPU.

Elementwise math (libdevice on both sides), reductions, softmax, matmul with
TF32 off, sorting, indexing, and a few nn kernels, in float32, bfloat16,
float16, float64 and integer dtypes.
"""

import zlib

import numpy as np
import pytest
from cuda_helpers import REDUCTION_TOL, SPECIAL_TOL, TOL, has_module, values

import ember_core as ec

pytestmark = [pytest.mark.cuda, pytest.mark.parity]

MATMUL_TOL = {
    ec.float16: (1e-2, 1e-2),
    ec.bfloat16: (5e-2, 5e-2),
    ec.float32: (1e-4, 1e-4),
    ec.float64: (1e-10, 1e-10),
}


def _torch():
    if not has_module("torch"):
        pytest.skip("torch is not installed")
    import torch

    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _tdtype(torch, dtype):
    return getattr(torch, str(dtype).split(".")[-1])


def _to_np(t):
    t = t.detach().cpu()
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return np.array(t.numpy(), copy=True)


def _F(lib):
    return lib.nn.functional if hasattr(lib, "nn") and hasattr(lib.nn, "functional") else lib


def _compare(got, want, tol, what):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, tol, f"{what}[{i}]")
        return
    g, w = _to_np(got), _to_np(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} vs torch {w.shape}"
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (
        f"{what}: dtype {got.dtype} vs torch {want.dtype}"
    )
    if np.issubdtype(w.dtype, np.floating):
        key = {4: ec.float32, 8: ec.float64}.get(w.dtype.itemsize, ec.float16)
        if str(want.dtype).endswith("bfloat16"):
            key = ec.bfloat16
        rtol, atol = tol[key]
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


def _run(torch, fn, arrays, dtypes, tol, what):
    e_args = [ec.tensor(a, dtype=d, device="cuda") for a, d in zip(arrays, dtypes)]
    t_args = [
        torch.tensor(
            np.asarray(a, dtype=np.float64) if d is ec.bfloat16 else a,
            dtype=_tdtype(torch, d),
            device="cuda",
        )
        for a, d in zip(arrays, dtypes)
    ]
    want = fn(torch, *t_args)
    got = fn(ec, *e_args)
    _compare(got, want, tol, what)


UNARY = [
    "exp",
    "expm1",
    "log",
    "log1p",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "sqrt",
    "rsqrt",
    "erf",
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "atan",
    "asinh",
    "floor",
    "round",
    "sign",
    "reciprocal",
    "abs",
    "neg",
]
POSITIVE = {"log", "log1p", "sqrt", "rsqrt", "lgamma", "digamma"}
SPECIAL = {"erfinv", "lgamma", "digamma"}


@pytest.mark.parametrize("dtype", [ec.float32, ec.bfloat16, ec.float16, ec.float64], ids=str)
@pytest.mark.parametrize("op", UNARY)
def test_unary_against_torch(op, dtype):
    torch = _torch()
    rng = _rng(op, dtype)
    lo, hi = (0.1, 5.0) if op in POSITIVE else ((-0.95, 0.95) if op == "erfinv" else (-3, 3))
    a = values(((1 << 16) + 5,), dtype, rng, lo, hi)
    tol = SPECIAL_TOL if op in SPECIAL else TOL
    _run(torch, lambda L, x: getattr(L, op)(x), [a], [dtype], tol, f"{op} {dtype}")


BINARY = [
    "add",
    "sub",
    "mul",
    "div",
    "maximum",
    "minimum",
    "atan2",
    "hypot",
    "pow",
    "remainder",
    "fmod",
    "logaddexp",
    "copysign",
]


@pytest.mark.parametrize("dtype", [ec.float32, ec.bfloat16, ec.int64, ec.int32], ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_binary_against_torch(op, dtype):
    torch = _torch()
    if not dtype.is_floating_point and op in ("atan2", "hypot", "logaddexp", "copysign"):
        pytest.skip(f"{op} is defined for floats only in PyTorch")
    rng = _rng(op, dtype)
    a = values((513, 257), dtype, rng, 0.1 if op == "pow" else -5, 5)
    b = values(
        (257,),
        dtype,
        rng,
        0 if op == "pow" else -5,
        3 if op == "pow" else 5,
        nonzero=op in ("div", "remainder", "fmod"),
    )
    _run(
        torch,
        lambda L, x, y: getattr(L, op)(x, y),
        [a, b],
        [dtype, dtype],
        TOL,
        f"{op} {dtype} broadcast",
    )


@pytest.mark.parametrize("dtype", [ec.float32, ec.bfloat16, ec.float16, ec.int64], ids=str)
def test_reductions_against_torch(dtype):
    torch = _torch()
    rng = _rng("red", dtype)
    a = values((1031, 1029), dtype, rng, -3, 3)
    cases = [
        ("sum", lambda L, x: (x.sum(), x.sum(0), x.sum(1))),
        ("amax amin", lambda L, x: (x.amax(0), x.amin(1))),
        ("max dim", lambda L, x: tuple(x.max(1))),
        ("argmax", lambda L, x: (x.argmax(), x.argmax(0))),
        ("cumsum", lambda L, x: x.cumsum(1)),
    ]
    if dtype.is_floating_point:
        cases += [
            ("mean var std", lambda L, x: (x.mean(1), x.var(0), x.std())),
            ("norm", lambda L, x: (x.norm(), L.linalg.vector_norm(x, 3, 1))),
            ("logsumexp", lambda L, x: x.logsumexp(1)),
            ("softmax", lambda L, x: (L.softmax(x, 1), L.log_softmax(x, 0))),
        ]
    for label, fn in cases:
        _run(torch, fn, [a], [dtype], REDUCTION_TOL, f"{label} {dtype}")


@pytest.mark.parametrize("dtype", [ec.float32, ec.bfloat16, ec.float16, ec.float64], ids=str)
def test_matmul_against_torch(dtype):
    torch = _torch()
    rng = _rng("mm", dtype)
    a = values((3, 129, 257), dtype, rng, -1, 1)
    b = values((3, 257, 65), dtype, rng, -1, 1)
    _run(
        torch,
        lambda L, x, y: (x @ y, L.bmm(x, y), x[0] @ y[0].T.T),
        [a, b],
        [dtype, dtype],
        MATMUL_TOL,
        f"matmul {dtype}",
    )


@pytest.mark.parametrize("dtype", [ec.float32, ec.int64, ec.bfloat16], ids=str)
def test_sorting_and_indexing_against_torch(dtype):
    torch = _torch()
    rng = _rng("sortidx", dtype)
    a = values((64, 1000), dtype, rng, -1000, 1000, distinct=dtype.is_floating_point)
    idx = rng.integers(0, 1000, (64, 50))
    cases = [
        ("sort stable", lambda L, x, i: tuple(L.sort(x, 1, stable=True))),
        ("topk values", lambda L, x, i: L.topk(x, 10, 1)[0]),
        ("kthvalue values", lambda L, x, i: L.kthvalue(x, 7, 1)[0]),
        ("gather", lambda L, x, i: L.gather(x, 1, i)),
        ("index_select", lambda L, x, i: L.index_select(x, 1, i[0])),
        ("masked_select", lambda L, x, i: L.masked_select(x, x > 0)),
        ("nonzero", lambda L, x, i: L.nonzero(x > 0)),
        ("unique", lambda L, x, i: tuple(L.unique(x[:4], return_counts=True))),
        (
            "scatter_add",
            lambda L, x, i: L.zeros(64, 1000, dtype=x.dtype, device=x.device).scatter_add(
                1, i, x[:, :50]
            ),
        ),
    ]
    for label, fn in cases:
        _run(torch, fn, [a, idx], [dtype, ec.int64], REDUCTION_TOL, f"{label} {dtype}")


@pytest.mark.parametrize("dtype", [ec.float32, ec.bfloat16], ids=str)
def test_nn_kernels_against_torch(dtype):
    torch = _torch()
    rng = _rng("nn", dtype)
    x = values((4, 8, 16, 16), dtype, rng, -1, 1)
    w = values((16, 8, 3, 3), dtype, rng, -0.3, 0.3)
    tol = {ec.float32: (1e-4, 1e-4), ec.bfloat16: (5e-2, 5e-2)}
    _run(
        torch,
        lambda L, x, w: _F(L).conv2d(x, w, padding=1),
        [x, w],
        [dtype, dtype],
        tol,
        f"conv2d {dtype}",
    )
    _run(torch, lambda L, x: _F(L).layer_norm(x, (16,)), [x], [dtype], tol, "layer_norm")
    _run(torch, lambda L, x: _F(L).max_pool2d(x, 2), [x], [dtype], tol, "max_pool2d")
    _run(
        torch,
        lambda L, x: _F(L).interpolate(x, scale_factor=2, mode="bilinear"),
        [x],
        [dtype],
        tol,
        "interpolate",
    )
    logits = values((64, 10), dtype, rng, -3, 3)
    target = rng.integers(0, 10, 64)
    _run(
        torch,
        lambda L, a, t: _F(L).cross_entropy(a, t),
        [logits, target],
        [dtype, ec.int64],
        tol,
        "cross_entropy",
    )


def test_device_properties_against_torch():
    torch = _torch()
    p, tp = ec.cuda.get_device_properties(0), torch.cuda.get_device_properties(0)
    assert (p.name, p.total_memory, p.multi_processor_count, p.major, p.minor) == (
        tp.name,
        tp.total_memory,
        tp.multi_processor_count,
        tp.major,
        tp.minor,
    )
    assert ec.cuda.device_count() == torch.cuda.device_count()
    assert ec.cuda.is_bf16_supported() == torch.cuda.is_bf16_supported()
