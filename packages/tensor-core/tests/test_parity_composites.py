"""PyTorch parity of the composite ops (the shape builders of _ops/shape/rearrange.py;
the pointwise, statistics, calculus, distance, product and index composites),
of reductions over empty dims, and of random_()'s ranges: values, shapes and
dtypes, or the same exception type."""

import warnings

import numpy as np
import pytest

import ember_core as ec

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.parity

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal((4, 3)).astype(np.float32)
P = np.array([0.0, 0.1, 0.5, 0.9, 1.0, -0.2], np.float32)
V = np.array([0.0, -0.0, 1.0, -3.5, 1e-40, 1e30, np.inf, -np.inf, np.nan, 0.75], np.float32)
C1 = rng.standard_normal((2, 3, 5)).astype(np.float32)
C2 = rng.standard_normal((1, 3, 5)).astype(np.float32)
Y1 = rng.standard_normal((2, 5, 4)).astype(np.float32)
Y2 = rng.standard_normal((2, 30, 4)).astype(np.float32)
BB1 = rng.standard_normal((3, 2, 4)).astype(np.float32)
BB2 = rng.standard_normal((3, 4, 5)).astype(np.float32)
SRC = rng.standard_normal((5, 4)).astype(np.float32)


def run(f, m):
    F = ec.from_numpy if m is ec else torch.from_numpy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return f(m, lambda a: F(np.array(a, copy=True)))
        except Exception as e:  # noqa: BLE001 - the exception type is compared
            return e


def compare(got, want):
    if isinstance(want, Exception):
        assert isinstance(got, type(want)), (got, want)
        return
    assert not isinstance(got, Exception), got
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            compare(g, w)
        return
    if not isinstance(want, torch.Tensor):
        assert got == want
        return
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5, equal_nan=True)


CASES = {
    "ravel": lambda m, F: F(A).t().ravel(),
    "hsplit": lambda m, F: m.hsplit(F(A), 2),
    "vsplit": lambda m, F: m.vsplit(F(B), [1, 3]),
    "rot90": lambda m, F: m.rot90(F(A).reshape(3, 2, 2), -3, [2, 0]),
    "diff": lambda m, F: m.diff(F(A), dim=1, prepend=F(A[:, :1]), append=F(A[:, :2])),
    "diff_bool": lambda m, F: m.diff(F(A > 0)),
    "repeat_interleave": lambda m, F: m.repeat_interleave(F(A), m.tensor([1, 0, 3]), dim=0),
    "repeat_interleave_counts": lambda m, F: m.repeat_interleave(m.tensor([2, 0, 1])),
    "diag": lambda m, F: m.diag(F(A[0]), 1),
    "diag_embed": lambda m, F: m.diag_embed(F(A), 1, 0, 2),
    "diagflat": lambda m, F: m.diagflat(F(A), -2),
    "fill_diagonal_wrap": lambda m, F: F(np.zeros((7, 3), np.float32)).fill_diagonal_(
        5.0, wrap=True
    ),
    "kron": lambda m, F: m.kron(F(A), F(B).reshape(2, 2, 3)),
    "block_diag": lambda m, F: m.block_diag(F(A), m.tensor(3.0), m.tensor([1, 2])),
    "cartesian_prod": lambda m, F: m.cartesian_prod(m.tensor([1, 2, 3]), m.tensor([4, 5])),
    "combinations": lambda m, F: m.combinations(m.tensor([1, 2, 3, 4]), 3),
    "tril_indices": lambda m, F: m.tril_indices(4, 3, 1),
    "triu_indices": lambda m, F: m.triu_indices(3, 5, -1),
    "unravel_index": lambda m, F: m.unravel_index(m.tensor([4, 1, 7, -1]), (2, 4)),
    "vander": lambda m, F: m.vander(m.tensor([1, 2, 3]), 4),
    "logit": lambda m, F: m.logit(F(P), 1e-3),
    "heaviside": lambda m, F: m.heaviside(m.tensor([-1.0, 0.0, 2.0]), m.tensor([0.5])),
    "gcd": lambda m, F: m.gcd(m.tensor([12, -18, 0, 7]), m.tensor([8, 12, 0, 0])),
    "lcm": lambda m, F: m.lcm(m.tensor([12], dtype=m.int16), m.tensor([8], dtype=m.int32)),
    "ldexp": lambda m, F: m.ldexp(m.tensor([1, 3]), m.tensor([3, -2])),
    "frexp": lambda m, F: tuple(m.frexp(F(V))),
    "logaddexp2": lambda m, F: m.logaddexp2(F(V), F(V[::-1])),
    "isin": lambda m, F: m.isin(m.tensor([[1, 2], [3, 4]]), m.tensor([2, 3]), invert=True),
    "trapezoid": lambda m, F: m.trapezoid(F(A), F(np.array([0, 1, 3, 7], np.float32))),
    "trapezoid_int": lambda m, F: m.trapezoid(m.tensor([1, 2, 4])),
    "cumulative_trapezoid": lambda m, F: m.cumulative_trapezoid(F(A), dx=0.5, dim=0),
    "cov": lambda m, F: m.cov(
        F(A), fweights=m.tensor([1, 2, 1, 3]), aweights=F(np.ones(4, np.float32))
    ),
    "cov_int": lambda m, F: m.cov(m.tensor([[1, 2, 3], [2, 5, 1]])),
    "corrcoef": lambda m, F: m.corrcoef(F(A)),
    "cross": lambda m, F: m.cross(F(C1), F(C2), dim=1),
    "cdist_small": lambda m, F: m.cdist(F(Y1), F(Y1[:, :3]), p=3.0),
    "cdist_mm": lambda m, F: m.cdist(F(Y1), F(Y2)),
    "cdist_inf": lambda m, F: m.cdist(F(Y1), F(Y2), p=float("inf")),
    "addbmm": lambda m, F: m.addbmm(F(SRC[:2]), F(BB1), F(BB2[..., :4]), beta=0.5),
    "index_reduce": lambda m, F: F(A).index_reduce(
        0, m.tensor([0, 2, 0, 1, 0]), F(SRC), "amax", include_self=False
    ),
    "histogram": lambda m, F: tuple(m.histogram(F(A), 4, range=(-1.0, 1.0), density=True)),
    "is_nonzero": lambda m, F: m.is_nonzero(m.tensor([0.0])),
    "is_nonzero_many": lambda m, F: m.is_nonzero(F(A)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_composite_ops_match_torch(name):
    compare(run(CASES[name], ec), run(CASES[name], torch))


REDUCTIONS = [
    "sum",
    "mean",
    "prod",
    "nansum",
    "nanmean",
    "std",
    "var",
    "logsumexp",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "max",
    "min",
    "median",
    "nanmedian",
    "norm",
    "all",
    "any",
    "count_nonzero",
    "cumsum",
    "cumprod",
    "logcumsumexp",
]


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("dims", [(), (0,), (1,)])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_reductions_over_empty_dims_match_torch(op, dims, dtype):
    def f(m, F):
        x = m.zeros(0, 3, dtype=getattr(m, dtype))
        r = getattr(x, op)(*dims)
        return tuple(r) if isinstance(r, tuple) else r

    compare(run(f, ec), run(f, torch))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float32", "float64"])
@pytest.mark.parametrize("bounds", [(), (5,), (-3, 4)])
def test_random_ranges_match_torch(dtype, bounds):
    def f(m, F):
        t = m.empty(2000, dtype=getattr(m, dtype)).random_(*bounds)
        v = t.to(m.float64)
        return v.min().item() >= (bounds[0] if len(bounds) == 2 else 0), v.max().item()

    got, want = run(f, ec), run(f, torch)
    if isinstance(want, Exception):
        assert isinstance(got, type(want))
        return
    assert got[0] and want[0]
    assert want[1] / 2 <= got[1] <= max(want[1], 1) * 1.05  # the same top of the range
