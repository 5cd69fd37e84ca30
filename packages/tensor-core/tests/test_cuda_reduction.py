"""Reductions, scans and softmax on CUDA against the CPU.

Each op runs over every dtype and: 0-d, empty (whole and along a dim), 3-d over
no dim / each dim / two dims / keepdim, transposed and stepped inputs, 2^20+3
elements (many blocks), 1031x1029 over each dim (the strided and the contiguous
reduction), plus ``out=`` where the op has it.  Summation order differs between
devices, so floats compare at REDUCTION_TOL.  Ties: max/min/argmax/argmin
return the first index on both devices (PyTorch's rule) and are compared
exactly; median/mode/kthvalue indices are not unique, so only values are.
"""

import zlib

import numpy as np
import pytest
from cuda_helpers import (
    ALL_DTYPES,
    LARGE,
    REDUCTION_TOL,
    Failures,
    check_op,
    tensor,
    values,
)

import ember_core as ec

SELFTEST_OK = True
pytestmark = pytest.mark.cuda


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


class Red:
    """kind: full (dim optional, keepdim), dim (dim required, keepdim),
    scan (dim required, no keepdim), nokeep (dim optional, no keepdim)."""

    def __init__(
        self,
        op,
        kind="full",
        kwargs=None,
        label=None,
        domain=(-3, 3),
        values_only=False,
        distinct=False,
        out=True,
        fn=None,
    ):
        self.op = op
        self.kind = kind
        self.kwargs = kwargs or {}
        self.id = label or op
        self.domain = domain
        self.values_only = values_only
        self.distinct = distinct
        self.out = out
        self.f = fn or getattr(ec, op)

    def call(self, x, dim, keepdim, **extra):
        kw = dict(self.kwargs, **extra)
        if dim is not None:
            kw["dim"] = dim
        if keepdim and self.kind in ("full", "dim"):
            kw["keepdim"] = True
        return self.f(x, **kw)


CASES = [
    Red("sum"),
    Red("sum", kwargs={"dtype": ec.float64}, label="sum-dtype-f64"),
    Red("mean"),
    Red("prod", domain=(0.5, 1.5)),
    Red("nansum", out=False),
    Red("nanmean"),
    Red("amax"),
    Red("amin"),
    Red("max"),
    Red("min"),
    Red("argmax"),
    Red("argmin"),
    Red("all"),
    Red("any"),
    Red("count_nonzero", kind="nokeep"),
    Red("var"),
    Red("var", kwargs={"correction": 0}, label="var-correction0"),
    Red("std"),
    Red("var_mean", out=False),
    Red("std_mean", out=False),
    Red("aminmax", out=False),
    Red("norm"),
    Red("norm", kwargs={"p": 1}, label="norm-1"),
    Red("norm", kwargs={"p": float("inf")}, label="norm-inf"),
    Red("vector_norm", kwargs={"ord": 3}, label="vector_norm-3", out=False),
    Red("logsumexp", kind="dim"),
    Red("median", values_only=True),
    Red("nanmedian", values_only=True),
    Red("mode", kind="dim", values_only=True, out=False),
    Red("cumsum", kind="scan"),
    Red("cumprod", kind="scan", domain=(0.5, 1.5)),
    Red("cummax", kind="scan", out=False),
    Red("cummin", kind="scan", out=False),
    Red("logcumsumexp", kind="scan", out=False),
    Red("softmax", kind="scan", out=False),
    Red("log_softmax", kind="scan", out=False),
    Red("softmax", kind="scan", kwargs={"dtype": ec.float32}, label="softmax-dtype-f32", out=False),
]

# (label, shape, layout, dims): dims are (dim, keepdim) pairs; dim None = all
VARIANTS = [
    ("0-d", (), "contiguous", [(None, False), (0, False)]),
    ("empty", (0,), "contiguous", [(None, False), (0, False)]),
    ("empty-dim", (3, 0, 4), "contiguous", [(1, False), (0, False)]),
    (
        "3-d",
        (3, 4, 5),
        "contiguous",
        [
            (None, False),
            (0, False),
            (1, False),
            (-1, False),
            ((0, 2), False),
            (1, True),
            ((0, 2), True),
        ],
    ),
    ("transposed", (3, 4, 5), "transposed", [(None, False), (1, False), (2, True)]),
    ("stepped", (3, 4, 5), "stepped", [(None, False), (2, False)]),
    ("large", (LARGE,), "contiguous", [(None, False), (0, False)]),
    ("large-2d", (1031, 1029), "contiguous", [(0, False), (1, False), (None, False)]),
    ("large-2d-transposed", (1031, 1029), "transposed", [(0, False), (1, False)]),
]


def _dims_for(case, dims):
    out = []
    for dim, keep in dims:
        if case.kind in ("dim", "scan") and (dim is None or isinstance(dim, tuple)):
            continue
        if case.op in ("max", "min", "median", "nanmedian") and isinstance(dim, tuple):
            continue  # one dim only
        if case.op in ("argmax", "argmin", "all", "any", "prod") and isinstance(dim, tuple):
            continue
        out.append((dim, keep))
    return out


def _post(case):
    if not case.values_only:
        return None

    def values_of(r):
        return r[0] if isinstance(r, tuple) else r

    return values_of


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_reduction(case, dtype):
    fails = Failures(f"{case.id} on CUDA ({dtype})")
    post = _post(case)
    for label, shape, layout, dims in VARIANTS:
        distinct = case.values_only or case.op in ("mode",)
        vals = values(
            shape,
            dtype,
            _rng(case.id, dtype, label),
            *case.domain,
            distinct=distinct and dtype.is_floating_point,
        )
        for dim, keep in _dims_for(case, dims):

            def make(dev, vals=vals, layout=layout):
                return (tensor(vals, dtype, dev, layout),), {}

            def fn(x, dim=dim, keep=keep):
                return case.call(x, dim, keep)

            where = f"{case.id}({dtype}) {label} dim={dim} keepdim={keep}"
            fails.run(
                where,
                lambda fn=fn, make=make, where=where: check_op(
                    fn, make, op_name=case.op, tol=REDUCTION_TOL, where=where, post=post
                ),
            )
    if dtype.is_floating_point:
        special = np.array([np.nan, 1.0, -np.inf, 2.0, np.inf, -0.0, 0.0, 3.0])
        for dim in (None, 0) if case.kind in ("full", "nokeep") else (0,):

            def make_s(dev):
                return (tensor(special.reshape(2, 4), dtype, dev),), {}

            where = f"{case.id}({dtype}) special dim={dim}"
            fails.run(
                where,
                lambda dim=dim, make_s=make_s, where=where: check_op(
                    lambda x: case.call(x, dim, False),
                    make_s,
                    op_name=case.op,
                    tol=REDUCTION_TOL,
                    where=where,
                    post=post,
                ),
            )
    if case.out and not case.values_only:
        vals = values((6, 7), dtype, _rng(case.id, dtype, "out"), *case.domain)
        try:
            probe = case.call(tensor(vals, dtype, "cpu"), 1, False)
        except Exception:  # noqa: BLE001 - dtype refused: covered above
            probe = None
        if probe is not None:

            def with_out(x):
                if isinstance(probe, tuple):
                    out = tuple(ec.empty(0, dtype=p.dtype, device=x.device) for p in probe)
                else:
                    out = ec.empty(0, dtype=probe.dtype, device=x.device)
                r = case.call(x, 1, False, out=out)
                if isinstance(out, tuple):
                    assert all(a is b for a, b in zip(r, out)), "out= must return out"
                else:
                    assert r is out, "out= must return out"
                return out

            def make_o(dev):
                return (tensor(vals, dtype, dev, "transposed"),), {}

            fails.run(
                "out=",
                lambda: check_op(
                    with_out,
                    make_o,
                    op_name=case.op,
                    tol=REDUCTION_TOL,
                    where=f"{case.id}({dtype}) out=",
                ),
            )
    fails.check()


@pytest.mark.parametrize("dtype", [ec.float32, ec.float16, ec.bfloat16, ec.float64], ids=str)
def test_softmax_rows_of_a_wide_matrix(dtype):
    """Rows longer than one block (softmax's multi-pass path), and many rows."""
    rng = _rng("softmax-wide", dtype)
    for shape in [(3, 50_000), (4096, 129), (1, 1), (0, 5)]:
        vals = values(shape, dtype, rng, -20, 20)
        for op in (ec.softmax, ec.log_softmax):

            def make(dev, vals=vals):
                return (tensor(vals, dtype, dev),), {}

            check_op(
                lambda x, op=op: op(x, -1),
                make,
                op_name=op.__name__,
                tol=REDUCTION_TOL,
                where=f"{op.__name__} {shape} {dtype}",
            )


@pytest.mark.parametrize("dtype", [ec.int32, ec.int64, ec.float32, ec.float64], ids=str)
def test_cumsum_long_scan(dtype):
    """A scan across many blocks (the carry between blocks)."""
    vals = values((LARGE,), dtype, _rng("cumsum-long", dtype), -3, 3)

    def make(dev):
        return (tensor(vals, dtype, dev),), {}

    tol = {ec.float32: (1e-4, 1e-2), ec.float64: (1e-10, 1e-8)}
    check_op(lambda x: ec.cumsum(x, 0), make, op_name="cumsum", tol=tol)
