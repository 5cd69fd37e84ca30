"""torch.special's kernels (_ops/pointwise/special.py, csrc/cpu/pointwise/special_fn.c)
against scipy.special over wide ranges, edge cases included (0, negatives, inf, NaN, poles), and the
dtype rules (integers compute in the default float dtype, float32 stays)."""

import math

import numpy as np
import pytest

import ember_core as ec
from ember_core._ops.pointwise import special as S

sp = pytest.importorskip("scipy.special")

WIDE = np.array(
    [
        -700,
        -50,
        -20.1,
        -19.9,
        -5,
        -1,
        -1e-3,
        -1e-300,
        0,
        1e-300,
        1e-4,
        0.5,
        1,
        2,
        3,
        5,
        19.9,
        20.1,
        50,
        700,
        800,
        np.nan,
    ]
)


def _check(ours, ref, x, rtol=1e-12):
    r = ours(ec.tensor(x, dtype=ec.float64)).numpy()
    with np.errstate(all="ignore"):
        e = ref(x)
    np.testing.assert_allclose(r, e, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize(
    "ours, ref, rtol",
    [
        (S.i0, sp.i0, 1e-13),
        (S.special_i0e, sp.i0e, 1e-13),
        (S.special_i1, sp.i1, 1e-13),
        (S.special_i1e, sp.i1e, 1e-13),
        (S.special_modified_bessel_i0, sp.i0, 1e-13),
        (S.special_modified_bessel_i1, sp.i1, 1e-13),
        (S.special_erfcx, sp.erfcx, 1e-13),
        (S.special_entr, sp.entr, 1e-14),
        (S.special_spherical_bessel_j0, lambda v: sp.spherical_jn(0, v), 1e-14),
        (S.special_bessel_j0, sp.j0, 1e-12),
        (S.special_bessel_j1, sp.j1, 1e-12),
    ],
)
def test_unary_against_scipy(ours, ref, rtol):
    x = np.concatenate([WIDE, np.linspace(-30, 30, 121)])
    _check(ours, ref, x, rtol)


@pytest.mark.parametrize(
    "ours, ref",
    [
        (S.special_modified_bessel_k0, sp.k0),
        (S.special_modified_bessel_k1, sp.k1),
        (S.special_scaled_modified_bessel_k0, sp.k0e),
        (S.special_scaled_modified_bessel_k1, sp.k1e),
        (S.special_bessel_y0, sp.y0),
        (S.special_bessel_y1, sp.y1),
    ],
)
def test_second_kind_against_scipy(ours, ref):
    # NaN for x < 0, the pole at 0
    x = np.concatenate([WIDE, np.geomspace(1e-6, 600, 80)])
    _check(ours, ref, x, 1e-12)


def test_airy_ai():
    x = np.concatenate([np.linspace(-30, 30, 241), [0, 1, 1.0001, -6.5, -6.4999, 100]])
    _check(S.special_airy_ai, lambda v: sp.airy(v)[0], x, 1e-9)


def test_normal_distribution_functions():
    x = np.concatenate([WIDE, np.linspace(-40, 10, 101)])
    _check(S.special_log_ndtr, sp.log_ndtr, x, 1e-13)
    p = np.array(
        [0, 1e-300, 1e-20, 1e-5, 0.01, 0.3, 0.5, 0.7, 0.99, 1 - 1e-12, 1, -0.1, 1.1, np.nan]
    )
    _check(S.special_ndtri, sp.ndtri, p, 1e-14)


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_polygamma(n):
    x = np.array([-2.5, -0.5, 0.1, 0.5, 1, 3, 10, 100, 1e4])
    _check(lambda t: S.polygamma(n, t), lambda v: sp.polygamma(n, v), x, 1e-11)


def test_polygamma_zero_is_digamma_and_negative_n_raises():
    x = ec.tensor([0.5, 2.0], dtype=ec.float64)
    np.testing.assert_allclose(S.polygamma(0, x).numpy(), sp.digamma(x.numpy()))
    with pytest.raises(RuntimeError, match="negative n"):
        S.polygamma(-1, x)


def test_zeta():
    xs = np.array([0.5, 1, 1.01, 2, 3, 10, 50, np.nan])
    qs = np.array([-2.5, -2, 0, 0.1, 1, 10, 1e5])
    X, Q = np.meshgrid(xs, qs)
    r = S.special_zeta(ec.tensor(X), ec.tensor(Q)).numpy()
    np.testing.assert_allclose(r, sp.zeta(X, Q), rtol=1e-12, equal_nan=True)


def test_incomplete_gamma():
    a = np.array([0, 0.01, 0.5, 1, 2, 3.5, 10, 100, 1000, np.inf, -1])
    x = np.array([0, 1e-3, 0.1, 0.5, 1, 3, 10, 50, 100, 1000, np.inf, -1, np.nan])
    A, X = np.meshgrid(a, x)
    np.testing.assert_allclose(
        S.igamma(ec.tensor(A), ec.tensor(X)).numpy(),
        sp.gammainc(A, X),
        rtol=1e-11,
        atol=1e-300,
        equal_nan=True,
    )
    np.testing.assert_allclose(
        S.igammac(ec.tensor(A), ec.tensor(X)).numpy(),
        sp.gammaincc(A, X),
        rtol=1e-11,
        atol=1e-300,
        equal_nan=True,
    )


def test_xlog1py():
    x = np.array([0, 0, 1, 2, -3, 0])
    y = np.array([-1, np.nan, 0.5, -0.5, 3, 10])
    r = S.special_xlog1py(ec.tensor(x, dtype=ec.float64), ec.tensor(y)).numpy()
    np.testing.assert_allclose(r, sp.xlog1py(x, y), rtol=1e-14, equal_nan=True)


POLYS = [
    ("chebyshev_polynomial_t", lambda n, x: sp.eval_chebyt(n, x)),
    ("chebyshev_polynomial_u", lambda n, x: sp.eval_chebyu(n, x)),
    ("shifted_chebyshev_polynomial_t", lambda n, x: sp.eval_sh_chebyt(n, x)),
    ("shifted_chebyshev_polynomial_u", lambda n, x: sp.eval_sh_chebyu(n, x)),
    ("hermite_polynomial_h", lambda n, x: sp.eval_hermite(n, x)),
    ("hermite_polynomial_he", lambda n, x: sp.eval_hermitenorm(n, x)),
    ("laguerre_polynomial_l", lambda n, x: sp.eval_laguerre(n, x)),
    ("legendre_polynomial_p", lambda n, x: sp.eval_legendre(n, x)),
]


@pytest.mark.parametrize("name, ref", POLYS)
@pytest.mark.parametrize("n", [0, 1, 2, 5, 12])
def test_polynomials(name, ref, n):
    x = np.linspace(-2, 2, 17)
    r = getattr(S, "special_" + name)(ec.tensor(x), n).numpy()
    np.testing.assert_allclose(r, ref(n, x), rtol=1e-10, atol=1e-10)


def test_chebyshev_v_w_closed_forms():
    # V_n(cos t) = cos((n + 1/2) t) / cos(t / 2),  W_n(cos t) = sin((n + 1/2) t) / sin(t / 2)
    t = np.linspace(0.1, 3.0, 11)
    x = ec.tensor(np.cos(t))
    for n in (0, 1, 4, 9):
        v = S.special_chebyshev_polynomial_v(x, n).numpy()
        w = S.special_chebyshev_polynomial_w(x, n).numpy()
        np.testing.assert_allclose(v, np.cos((n + 0.5) * t) / np.cos(t / 2), rtol=1e-10)
        np.testing.assert_allclose(w, np.sin((n + 0.5) * t) / np.sin(t / 2), rtol=1e-10)


def test_polynomial_negative_degree_is_zero_and_tensor_degree_broadcasts():
    x = ec.tensor([0.3, 0.7], dtype=ec.float64)
    assert S.special_legendre_polynomial_p(x, -1).tolist() == [0.0, 0.0]
    n = ec.tensor([[0], [1], [2]])
    r = S.special_legendre_polynomial_p(x, n).numpy()
    np.testing.assert_allclose(r, sp.eval_legendre(np.array([[0], [1], [2]]), x.numpy()))


def test_dtypes_follow_pytorch():
    assert S.i0(ec.tensor([1, 2])).dtype is ec.float32
    assert S.special_i1(ec.tensor([1.0], dtype=ec.float64)).dtype is ec.float64
    assert S.special_ndtri(ec.tensor([0.5], dtype=ec.float16)).dtype is ec.float16
    assert S.special_zeta(ec.tensor([2, 3]), 1).dtype is ec.float32
    x32 = ec.tensor([0.5, 2.0])
    np.testing.assert_allclose(S.special_i0e(x32).numpy(), sp.i0e([0.5, 2.0]), rtol=1e-6)


def test_out_and_inplace():
    x = ec.tensor([0.5, 1.5], dtype=ec.float64)
    out = ec.empty(2, dtype=ec.float64)
    S.i0(x, out=out)
    np.testing.assert_allclose(out.numpy(), sp.i0([0.5, 1.5]))
    y = x.clone()
    y.i0_()
    np.testing.assert_allclose(y.numpy(), sp.i0([0.5, 1.5]))
    y = x.clone()
    y.polygamma_(1)
    np.testing.assert_allclose(y.numpy(), sp.polygamma(1, [0.5, 1.5]))
    a = ec.tensor([1.0, 2.0], dtype=ec.float64)
    a.igamma_(x)
    np.testing.assert_allclose(a.numpy(), sp.gammainc([1.0, 2.0], [0.5, 1.5]))
    with pytest.raises(RuntimeError, match="can't be cast"):
        ec.tensor([1, 2]).i0_()


def test_mvlgamma():
    x = ec.tensor([2.5, 3.0, 7.25], dtype=ec.float64)
    expect = np.array([sp.multigammaln(v, 3) for v in x.numpy()])
    np.testing.assert_allclose(S.mvlgamma(x, 3).numpy(), expect, rtol=1e-13)
    # no domain check, as PyTorch 2.13: outside (p-1)/2 the lgamma terms are summed all the same
    lg = np.vectorize(math.lgamma)
    below = S.mvlgamma(ec.tensor([0.3], dtype=ec.float64), 3).numpy()
    np.testing.assert_allclose(
        below, lg(0.3) + lg(-0.2) + lg(-0.7) + 3 * 2 / 4 * math.log(math.pi), rtol=1e-13
    )
    with pytest.raises(RuntimeError, match="greater than or equal to 1"):
        S.mvlgamma(ec.tensor([0.5]), 0)


def test_bad_arguments_raise():
    with pytest.raises(TypeError):
        S.i0([1.0])
    with pytest.raises(RuntimeError, match="broadcast|shape"):
        S.special_zeta(ec.ones(2), ec.ones(3))


def test_incomplete_gamma_rejects_integers_as_pytorch():
    with pytest.raises(NotImplementedError, match="igamma_cpu"):
        S.igamma(ec.tensor([1, 2]), ec.tensor([1, 2]))
