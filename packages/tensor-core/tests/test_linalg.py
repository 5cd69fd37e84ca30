"""Matrix products against NumPy: matmul's batching and broadcasting rules,
transposed and strided operands (handed to BLAS as transposes), every dtype,
the addmm family with beta/alpha, and einsum."""

import numpy as np
import pytest
from conftest import LAYOUTS, NUMERIC_DTYPES, assert_close, make, random_values

import ember_core as ec


def _tol(dtype):
    return {ec.float16: 1e-2, ec.bfloat16: 3e-2, ec.float32: 1e-5, ec.float64: 1e-12}.get(dtype)


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((3, 4), (4, 5)),
        ((4,), (4,)),
        ((4,), (4, 5)),
        ((3, 4), (4,)),
        ((2, 3, 4), (4, 5)),
        ((3, 4), (2, 4, 5)),
        ((2, 1, 3, 4), (5, 4, 2)),
        ((2, 3, 4), (2, 4, 5)),
        ((4,), (2, 4, 5)),
        ((2, 3, 4), (4,)),
        ((0, 4), (4, 5)),
        ((3, 0), (0, 5)),
        ((1, 4), (4, 1)),
        ((1, 1), (1, 1)),
    ],
    ids=str,
)
@pytest.mark.parametrize("dtype", [ec.float32, ec.float64, ec.int64, ec.float16], ids=str)
def test_matmul_shapes(sa, sb, dtype, rng):
    a = random_values(sa, dtype, rng, -3, 3)
    b = random_values(sb, dtype, rng, -3, 3)
    r = ec.matmul(make(a, dtype), make(b, dtype))
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert r.dtype is dtype and r.shape == ref.shape
    assert_close(r, ref, rtol=_tol(dtype), atol=_tol(dtype) or 0)


@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_matmul_with_transposed_and_strided_operands(la, lb, rng):
    a = random_values((2, 6, 5), ec.float32, rng)
    b = random_values((2, 5, 7), ec.float32, rng)
    r = make(a, ec.float32, la) @ make(b, ec.float32, lb)
    np.testing.assert_allclose(r.numpy(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64], ids=str)
def test_many_small_products_spread_over_threads(dtype, rng):
    x = random_values((64, 24, 32), dtype, rng)
    y = random_values((64, 32, 16), dtype, rng)
    c = random_values((24, 16), dtype, rng)
    for nt in (1, 2):
        n0 = ec.get_num_threads()
        ec.set_num_threads(nt)
        try:
            r = ec.bmm(ec.tensor(x), ec.tensor(y))
            rb = ec.baddbmm(ec.tensor(c), ec.tensor(x), ec.tensor(y), alpha=0.5, beta=2)
            rt = ec.tensor(x).transpose(1, 2).mT @ ec.tensor(y)  # strided batches
        finally:
            ec.set_num_threads(n0)
        tol = 1e-4 if dtype is ec.float32 else 1e-12
        np.testing.assert_allclose(r.numpy(), x.astype(np.float64) @ y, rtol=tol, atol=tol)
        np.testing.assert_allclose(
            rb.numpy(), 2 * c + 0.5 * x.astype(np.float64) @ y, rtol=tol, atol=tol
        )
        np.testing.assert_allclose(rt.numpy(), x.astype(np.float64) @ y, rtol=tol, atol=tol)


def test_matmul_of_expanded_and_permuted_batches(rng):
    a = random_values((4, 3), ec.float64, rng)
    b = random_values((5, 3, 2), ec.float64, rng)
    ta = ec.tensor(a).expand(5, 4, 3)  # batch stride 0
    np.testing.assert_allclose((ta @ ec.tensor(b)).numpy(), a @ b)
    tb = ec.tensor(np.ascontiguousarray(b.transpose(1, 0, 2))).permute(
        1, 0, 2
    )  # batch not outermost
    np.testing.assert_allclose((ta @ tb).numpy(), a @ b)
    # a matrix whose rows overlap (stride 0 inside a matrix): copied for BLAS
    row = ec.tensor(a[0]).expand(4, 3)
    np.testing.assert_allclose(
        (row @ ec.tensor(b[0])).numpy(), np.broadcast_to(a[0], (4, 3)) @ b[0]
    )


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES, ids=str)
def test_mm_bmm_mv_dot_outer(dtype, rng):
    a = random_values((3, 4), dtype, rng, -3, 3)
    b = random_values((4, 2), dtype, rng, -3, 3)
    v = random_values((4,), dtype, rng, -3, 3)
    w = random_values((3,), dtype, rng, -3, 3)
    x = random_values((2, 3, 4), dtype, rng, -3, 3)
    y = random_values((2, 4, 2), dtype, rng, -3, 3)
    f = lambda z: z.astype(np.float64)  # noqa: E731
    tol, atol = _tol(dtype), _tol(dtype) or 0
    assert_close(
        ec.mm(ec.tensor(a, dtype=dtype), ec.tensor(b, dtype=dtype)),
        f(a) @ f(b),
        rtol=tol,
        atol=atol,
    )
    assert_close(
        ec.bmm(ec.tensor(x, dtype=dtype), ec.tensor(y, dtype=dtype)),
        f(x) @ f(y),
        rtol=tol,
        atol=atol,
    )
    assert_close(
        ec.mv(ec.tensor(a, dtype=dtype), ec.tensor(v, dtype=dtype)),
        f(a) @ f(v),
        rtol=tol,
        atol=atol,
    )
    assert_close(
        ec.dot(ec.tensor(v, dtype=dtype), ec.tensor(v, dtype=dtype)),
        f(v) @ f(v),
        rtol=tol,
        atol=atol,
    )
    assert_close(
        ec.outer(ec.tensor(w, dtype=dtype), ec.tensor(v, dtype=dtype)),
        np.outer(f(w), f(v)),
        rtol=tol,
        atol=atol,
    )


def test_addmm_family_with_beta_and_alpha(rng):
    c = random_values((3, 2), ec.float64, rng)
    a = random_values((3, 4), ec.float64, rng)
    b = random_values((4, 2), ec.float64, rng)
    x = random_values((5, 3, 4), ec.float64, rng)
    y = random_values((5, 4, 2), ec.float64, rng)
    tc, ta, tb, tx, ty = (ec.tensor(v) for v in (c, a, b, x, y))
    np.testing.assert_allclose(ec.addmm(tc, ta, tb).numpy(), c + a @ b)
    np.testing.assert_allclose(ec.addmm(tc, ta, tb, beta=0.5, alpha=2).numpy(), 0.5 * c + 2 * a @ b)
    np.testing.assert_allclose(ec.addmm(tc[0], ta, tb).numpy(), c[0] + a @ b)  # broadcast input
    nan_c = ec.full((3, 2), float("nan"), dtype=ec.float64)
    np.testing.assert_allclose(
        ec.addmm(nan_c, ta, tb, beta=0).numpy(), a @ b
    )  # beta=0 ignores input
    np.testing.assert_allclose(ec.baddbmm(tc, tx, ty, alpha=3).numpy(), c + 3 * x @ y)
    np.testing.assert_allclose(ec.addmv(tc[:, 0], ta, tb[:, 0]).numpy(), c[:, 0] + a @ b[:, 0])
    v4 = np.arange(4.0)
    np.testing.assert_allclose(
        ec.addr(ta, tc[:, 0], ec.tensor(v4), beta=2).numpy(), 2 * a + np.outer(c[:, 0], v4)
    )
    t = tc.clone()
    t.addmm_(ta, tb)
    np.testing.assert_allclose(t.numpy(), c + a @ b)
    bb = ec.tensor(np.broadcast_to(c, (5, 3, 2)).copy())
    bb.baddbmm_(tx, ty)
    np.testing.assert_allclose(bb.numpy(), c + x @ y)
    out = ec.empty(3, 2, dtype=ec.float64)
    ec.addmm(tc, ta, tb, out=out)
    np.testing.assert_allclose(out.numpy(), c + a @ b)


def test_out_of_matmul_resizes_and_bumps_version(rng):
    a = ec.tensor(random_values((3, 4), ec.float32, rng))
    b = ec.tensor(random_values((4, 2), ec.float32, rng))
    out = ec.empty(0)
    v = out._version
    assert ec.matmul(a, b, out=out) is out
    assert out.shape == (3, 2) and out._version > v
    np.testing.assert_allclose(out.numpy(), a.numpy() @ b.numpy(), rtol=1e-6)


def test_matmul_errors():
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(3x4 and 5x2\)"):
        ec.ones(3, 4) @ ec.ones(5, 2)
    with pytest.raises(RuntimeError, match="at least 1D"):
        ec.matmul(ec.tensor(1.0), ec.ones(2))
    with pytest.raises(RuntimeError, match="same dtype"):
        ec.ones(2, 2) @ ec.ones(2, 2, dtype=ec.float64)
    with pytest.raises(RuntimeError, match="2D"):
        ec.mm(ec.ones(2), ec.ones(2, 2))
    with pytest.raises(RuntimeError, match="batches"):
        ec.bmm(ec.ones(2, 2, 2), ec.ones(3, 2, 2))
    with pytest.raises(RuntimeError, match="same number of elements"):
        ec.dot(ec.ones(2), ec.ones(3))
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        ec.ones(2, 3, 4) @ ec.ones(3, 4, 2)
    with pytest.raises(NotImplementedError, match="Bool"):
        ec.ones(2, 2, dtype=ec.bool) @ ec.ones(2, 2, dtype=ec.bool)


def test_tensordot_inner_vdot(rng):
    a = random_values((2, 3, 4), ec.float64, rng)
    b = random_values((3, 4, 5), ec.float64, rng)
    np.testing.assert_allclose(
        ec.tensordot(ec.tensor(a), ec.tensor(b), 2).numpy(), np.tensordot(a, b, 2)
    )
    np.testing.assert_allclose(
        ec.tensordot(ec.tensor(a), ec.tensor(b), ([1], [0])).numpy(), np.tensordot(a, b, ([1], [0]))
    )
    np.testing.assert_allclose(
        ec.inner(ec.tensor(a), ec.tensor(b[0].T)).numpy(), np.inner(a, b[0].T)
    )
    v = random_values((4,), ec.float64, rng)
    assert ec.vdot(ec.tensor(v), ec.tensor(v)).item() == pytest.approx(v @ v)


# ------------------------------------------------------------------ einsum

EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("...i,kij,...j->...k", [(5, 2), (4, 2, 3), (5, 3)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),
    ("ij->ji", [(2, 3)]),
    ("ba", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("a,b,c->abc", [(2,), (3,), (4,)]),
    ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("...ij,...jk", [(5, 2, 3), (3, 4)]),
    ("i...,i...->...", [(2, 3, 4), (2, 1, 4)]),
    ("ij,j->i", [(2, 1), (3,)]),
    ("i,i", [(0,), (0,)]),
    ("ij,jk", [(2, 0), (0, 3)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("equation, shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_matches_numpy(equation, shapes, rng):
    xs = [random_values(s, ec.float64, rng) for s in shapes]
    got = ec.einsum(equation, *[ec.tensor(x) for x in xs])
    if equation == "ij,j->i":  # NumPy's einsum does not broadcast labelled dims
        want = (xs[0] * xs[1][None, :]).sum(1)
    else:
        want = np.einsum(equation.replace(" ", ""), *xs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_einsum_operand_forms_and_dtypes(rng):
    a, b = random_values((2, 3), ec.float32, rng), random_values((3, 4), ec.float32, rng)
    ta, tb = ec.tensor(a), ec.tensor(b)
    np.testing.assert_allclose(ec.einsum("ij,jk", [ta, tb]).numpy(), a @ b, rtol=1e-5)
    np.testing.assert_allclose(ec.einsum(ta, [0, 1], tb, [1, 2], [0, 2]).numpy(), a @ b, rtol=1e-5)
    np.testing.assert_allclose(
        ec.einsum(ta, [0, Ellipsis]).numpy(), a.T
    )  # implicit output: "...", then A
    i = ec.einsum("ij,jk->ik", ec.ones(2, 3, dtype=ec.int32), ec.ones(3, 4, dtype=ec.int32))
    assert i.dtype is ec.int32 and i.tolist() == [[3] * 4] * 2
    assert ec.einsum("ij->i", ec.ones(2, 3, dtype=ec.int16)).dtype is ec.int16
    h = ec.einsum("ij,jk", ta.half(), tb.half())
    assert h.dtype is ec.float16
    np.testing.assert_allclose(h.float().numpy(), a @ b, rtol=1e-2, atol=1e-2)
    # a transposed operand
    np.testing.assert_allclose(ec.einsum("ji,jk->ik", ta.T, tb).numpy(), a @ b, rtol=1e-5)


@pytest.mark.parametrize(
    "equation, shapes, match",
    [
        ("ij,jk", [(2, 3), (4, 5)], "does not broadcast"),
        ("ij,jk->z", [(2, 3), (3, 5)], "does not appear"),
        ("ij", [(2, 3, 4)], "number of subscripts"),
        ("ii->i", [(2, 3)], "repeated"),
        ("i,j", [(2,)], "fewer operands"),
        ("i", [(2,), (2,)], "more operands"),
        ("i$", [(2, 2)], "invalid subscript"),
        ("ij->ii", [(2, 2)], "more than once"),
        ("i.j", [(2, 2)], "ellipsis"),
    ],
)
def test_einsum_errors(equation, shapes, match):
    with pytest.raises(RuntimeError, match=match):
        ec.einsum(equation, *[ec.ones(*s) for s in shapes])


def test_einsum_rejects_mixed_dtypes_and_no_operands():
    with pytest.raises(RuntimeError, match="same dtype"):
        ec.einsum("i,i", ec.ones(2), ec.ones(2, dtype=ec.float64))
    with pytest.raises(RuntimeError, match="at least one operand"):
        ec.einsum("i")
