"""Derivative formulas of the linalg ops (_derivatives_linalg.py): gradcheck
(float64 finite differences) for every formula and the composites built on
them, second derivatives (create_graph=True through the formulas) against
finite differences of first derivatives, and gradients against PyTorch's
(parity)."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec
from ember_core import linalg as LA

rng = np.random.default_rng(11)


def leaf(*shape, scale=1.0, shift=0.0):
    a = rng.standard_normal(shape) * scale
    if shift:
        a = a + shift * np.eye(shape[-1])
    return ec.from_numpy(a).requires_grad_()


def eye(n):
    return ec.eye(n, dtype=ec.float64)


def sym(x):
    return x + x.mT


def spd(x):
    return x @ x.mT + x.shape[-1] * eye(x.shape[-1])


def check(fn, *inputs):
    assert ag.gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)


def gradgrad(fn, *inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Second derivatives: s(x, v) = <d<fn(x), v>/dx (create_graph=True), u> for
    fixed directions u, differentiated by the engine and by central differences
    with respect to the inputs."""
    out = fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    vs = [ec.from_numpy(rng.standard_normal(tuple(o.shape))) for o in outs]
    us = [ec.from_numpy(rng.standard_normal(tuple(t.shape))) for t in inputs]

    def s():
        o = fn(*inputs)
        o = o if isinstance(o, tuple) else (o,)
        total = sum(((a * v).sum() for a, v in zip(o, vs)), ec.zeros((), dtype=ec.float64))
        grads = ag.grad(total, list(inputs), create_graph=True, allow_unused=True)
        return sum(
            ((g * u).sum() for g, u in zip(grads, us) if g is not None),
            ec.zeros((), dtype=ec.float64),
        )

    analytic = ag.grad(s(), list(inputs), allow_unused=True)
    for t, a in zip(inputs, analytic):
        flat = t.data.view(-1)  # an alias autograd does not track
        num = np.zeros(t.numel())
        for j in range(t.numel()):
            orig = flat[j].item()
            flat[j] = orig + eps
            plus = s().item()
            flat[j] = orig - eps
            minus = s().item()
            flat[j] = orig
            num[j] = (plus - minus) / (2 * eps)
        got = np.zeros(t.numel()) if a is None else a.detach().numpy().reshape(-1)
        np.testing.assert_allclose(got, num, atol=atol, rtol=rtol)


# -------------------------------------------------------------- first order

CASES = {
    "inv": (LA.inv, lambda: (leaf(2, 3, 3, shift=3),)),
    "inverse": (ec.inverse, lambda: (leaf(3, 3, shift=3),)),
    "solve": (LA.solve, lambda: (leaf(2, 3, 3, shift=3), leaf(2, 3, 2))),
    "solve_vector_broadcast": (LA.solve, lambda: (leaf(2, 3, 3, shift=3), leaf(3))),
    "solve_batch_broadcast": (LA.solve, lambda: (leaf(3, 3, shift=3), leaf(2, 3, 2))),
    "solve_left_false": (
        lambda a, b: LA.solve(a, b, left=False),
        lambda: (leaf(2, 3, 3, shift=3), leaf(2, 4, 3)),
    ),
    "det": (LA.det, lambda: (leaf(2, 3, 3),)),
    "det_singular": (
        LA.det,
        lambda: (
            ec.tensor(
                [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 5.0]], dtype=ec.float64
            ).requires_grad_(),
        ),
    ),
    "slogdet": (lambda a: LA.slogdet(a).logabsdet, lambda: (leaf(2, 3, 3),)),
    "logdet": (lambda a: ec.logdet(spd(a)), lambda: (leaf(3, 3),)),
    "cholesky": (lambda a: LA.cholesky(spd(a)), lambda: (leaf(2, 3, 3),)),
    "cholesky_upper": (lambda a: LA.cholesky(spd(a), upper=True), lambda: (leaf(3, 3),)),
    "cholesky_solve": (
        lambda a, b: ec.cholesky_solve(b, LA.cholesky(spd(a))),
        lambda: (leaf(3, 3), leaf(3, 2)),
    ),
    "cholesky_inverse": (lambda a: ec.cholesky_inverse(LA.cholesky(spd(a))), lambda: (leaf(3, 3),)),
    "solve_triangular_upper": (
        lambda a, b: LA.solve_triangular(a, b, upper=True),
        lambda: (leaf(2, 3, 3, shift=3), leaf(2, 3, 2)),
    ),
    "solve_triangular_lower_unit_right": (
        lambda a, b: LA.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
        lambda: (leaf(3, 3), leaf(2, 3)),
    ),
    "triangular_solve": (
        lambda b, a: ec.triangular_solve(b, a, transpose=True).solution,
        lambda: (leaf(3, 2), leaf(3, 3, shift=3)),
    ),
    "qr_tall": (LA.qr, lambda: (leaf(2, 4, 3),)),
    "qr_square_complete": (lambda a: LA.qr(a, mode="complete"), lambda: (leaf(3, 3),)),
    "qr_wide": (LA.qr, lambda: (leaf(3, 5),)),
    "eigh": (lambda a: LA.eigh(sym(a)), lambda: (leaf(2, 4, 4),)),
    "eigh_abs": (
        lambda a: (lambda r: (r.eigenvalues, r.eigenvectors.abs()))(LA.eigh(sym(a))),
        lambda: (leaf(2, 4, 4),),
    ),
    "eigh_upper": (lambda a: LA.eigh(sym(a), UPLO="U"), lambda: (leaf(3, 3),)),
    "eigvalsh": (lambda a: LA.eigvalsh(sym(a)), lambda: (leaf(2, 4, 4),)),
    # singular vectors are defined up to sign: gauge-invariant functions of them
    "svd_reconstruct_wide": (
        lambda a: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.Vh)(LA.svd(a, full_matrices=False)),
        lambda: (leaf(2, 3, 5),),
    ),
    "svd_projectors_tall": (
        lambda a: (
            lambda r: (r.U[..., :2] @ r.U[..., :2].mT, r.Vh[..., :2, :].mT @ r.Vh[..., :2, :])
        )(LA.svd(a, full_matrices=False)),
        lambda: (leaf(5, 3),),
    ),
    "svd_abs_vectors": (
        lambda a: (lambda r: (r.U.abs(), r.S, r.Vh.abs()))(LA.svd(a, full_matrices=False)),
        lambda: (leaf(4, 4),),
    ),
    "svd_full_matrices": (
        lambda a: (lambda r: r.U[..., :3].abs().sum() + r.S.sum())(LA.svd(a, full_matrices=True)),
        lambda: (leaf(5, 3),),
    ),
    "torch_svd": (
        lambda a: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.V.mT)(ec.svd(a)),
        lambda: (leaf(4, 3),),
    ),
    "svdvals": (LA.svdvals, lambda: (leaf(2, 4, 3),)),
    "pinv_tall": (LA.pinv, lambda: (leaf(2, 4, 3),)),
    "pinv_wide": (LA.pinv, lambda: (leaf(3, 5),)),
    "pinv_hermitian": (lambda a: LA.pinv(sym(a), hermitian=True), lambda: (leaf(3, 3, shift=2),)),
    "pinverse": (ec.pinverse, lambda: (leaf(4, 3),)),
    "lstsq": (lambda a, b: LA.lstsq(a, b).solution, lambda: (leaf(2, 5, 3), leaf(2, 5, 2))),
    "lstsq_vector_gelsd": (
        lambda a, b: LA.lstsq(a, b, driver="gelsd").solution,
        lambda: (leaf(5, 3), leaf(5)),
    ),
    "matrix_exp": (LA.matrix_exp, lambda: (leaf(2, 3, 3),)),
    "matrix_exp_scaled": (LA.matrix_exp, lambda: (leaf(3, 3, scale=4.0),)),
    "matrix_power_neg": (lambda a: LA.matrix_power(a, -3), lambda: (leaf(3, 3, shift=3),)),
    "matrix_norm_nuc": (lambda a: LA.matrix_norm(a, "nuc"), lambda: (leaf(2, 3, 4),)),
    "matrix_norm_2": (lambda a: LA.matrix_norm(a, 2), lambda: (leaf(2, 3, 4),)),
    "matrix_norm_fro": (lambda a: LA.matrix_norm(a), lambda: (leaf(2, 3, 4),)),
    "matrix_norm_inf": (lambda a: LA.matrix_norm(a, float("inf")), lambda: (leaf(3, 4),)),
    "torch_norm_nuc": (lambda a: ec.norm(a, "nuc"), lambda: (leaf(3, 4),)),
    "torch_norm_p3_dim": (lambda a: ec.norm(a, 3, dim=1), lambda: (leaf(3, 4),)),
    "cond": (LA.cond, lambda: (leaf(3, 3, shift=2),)),
    "cross": (LA.cross, lambda: (leaf(4, 3), leaf(4, 3))),
    "multi_dot": (
        lambda a, b, c: LA.multi_dot([a, b, c]),
        lambda: (leaf(2, 3), leaf(3, 4), leaf(4)),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, make = CASES[name]
    check(fn, *make())


def test_every_formula_is_covered():
    # every differentiable kernel op of ember_core.linalg has its formula in the linalg
    # derivative modules (lu_factor's in _derivatives_lu)
    ops = [
        op
        for op in ec.OPS.values()
        if op.module == "ember_core.linalg" and op.differentiable and not op.composite
    ]
    assert {"_linalg_inv_ex", "_linalg_svd", "_linalg_lstsq"} <= {op.name for op in ops}
    homes = ("ember_autograd._derivatives_linalg", "ember_autograd._derivatives_lu")
    assert [op.name for op in ops if ag.DERIVATIVES[op].fn.__module__ not in homes] == []


def test_node_names():
    a = leaf(3, 3, shift=3)
    assert LA.inv(a).grad_fn.name() == "LinalgInvExBackward0"
    assert LA.det(a).grad_fn.name() == "LinalgDetBackward0"
    assert LA.slogdet(a).logabsdet.grad_fn.name() == "LinalgSlogdetBackward0"


# ------------------------------------------------------------- second order

GRADGRAD = [
    "inv",
    "solve",
    "det",
    "slogdet",
    "cholesky",
    "solve_triangular_upper",
    "qr_tall",
    "eigh",
    "svd_reconstruct_wide",
    "svdvals",
    "pinv_tall",
    "lstsq",
    "matrix_exp",
]


@pytest.mark.parametrize("name", GRADGRAD)
def test_double_backward(name):
    fn, make = CASES[name]
    gradgrad(fn, *make())


# ----------------------------------------------------- behaviour and errors


def test_eigvalsh_and_svdvals_with_repeated_values_have_finite_gradients():
    # the values-only path (Note [Spectral gauge]): the identity's eigenvalues repeat
    a = eye(3).clone().requires_grad_()
    LA.eigvalsh(a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.eye(3), atol=1e-12)
    b = eye(3).clone().requires_grad_()
    LA.matrix_norm(b, "nuc").backward()  # d ||A||_* = U Vh
    np.testing.assert_allclose(b.grad.numpy(), np.eye(3), atol=1e-12)


def test_det_gradient_of_singular_matrix_is_the_cofactor_matrix():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 5.0]])
    x = ec.from_numpy(a.copy()).requires_grad_()
    LA.det(x).backward()
    cof = np.array(
        [
            [np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j) for j in range(3)]
            for i in range(3)
        ]
    )
    np.testing.assert_allclose(x.grad.numpy(), cof, atol=1e-10)


def test_qr_mode_r_is_not_differentiable():
    a = leaf(4, 3)
    _, r = LA.qr(a, mode="r")
    with pytest.raises(RuntimeError, match="mode='r'"):
        r.sum().backward()
    q, r = LA.qr(leaf(4, 3), mode="complete")
    with pytest.raises(RuntimeError, match="mode='complete' and nrows > ncols"):
        (q.sum() + r.sum()).backward()


# ------------------------------------------------------------------- parity


@pytest.mark.parity
@pytest.mark.parametrize(
    "name",
    [
        "inv",
        "solve",
        "det",
        "slogdet",
        "cholesky",
        "solve_triangular_upper",
        "qr_tall",
        "qr_wide",
        "eigh_abs",
        "svdvals",
        "svd_reconstruct_wide",
        "pinv_tall",
        "lstsq",
        "matrix_exp",
        "matrix_norm_nuc",
    ],
)
def test_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    fn, make = CASES[name]
    inputs = make()
    out = fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    ws = [rng.standard_normal(tuple(o.shape)) for o in outs]
    total = sum(
        ((o * ec.from_numpy(w)).sum() for o, w in zip(outs, ws)), ec.zeros((), dtype=ec.float64)
    )
    mine = ag.grad(total, list(inputs))

    import ember as em

    tins = [torch.tensor(t.detach().numpy(), requires_grad=True) for t in inputs]
    # the same function, run by torch: CASES use the ember namespace, so rebuild it
    tfn = _TORCH_FNS[name](torch)
    tout = tfn(*tins)
    touts = tout if isinstance(tout, tuple) else (tout,)
    ttotal = sum((o * torch.tensor(w)).sum() for o, w in zip(touts, ws))
    theirs = torch.autograd.grad(ttotal, tins)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m.numpy(), t.numpy(), rtol=1e-6, atol=1e-8)
    assert em.linalg is LA


def _sym(x):
    return x + x.mT


_TORCH_FNS = {
    "inv": lambda t: t.linalg.inv,
    "solve": lambda t: t.linalg.solve,
    "det": lambda t: t.linalg.det,
    "slogdet": lambda t: lambda a: t.linalg.slogdet(a).logabsdet,
    "cholesky": lambda t: (
        lambda a: t.linalg.cholesky(a @ a.mT + a.shape[-1] * t.eye(a.shape[-1], dtype=t.float64))
    ),
    "solve_triangular_upper": lambda t: lambda a, b: t.linalg.solve_triangular(a, b, upper=True),
    "qr_tall": lambda t: t.linalg.qr,
    "qr_wide": lambda t: t.linalg.qr,
    "eigh_abs": lambda t: (
        lambda a: (lambda r: (r.eigenvalues, r.eigenvectors.abs()))(t.linalg.eigh(_sym(a)))
    ),
    "svdvals": lambda t: t.linalg.svdvals,
    "svd_reconstruct_wide": lambda t: (
        lambda a: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.Vh)(t.linalg.svd(a, full_matrices=False))
    ),
    "pinv_tall": lambda t: t.linalg.pinv,
    "lstsq": lambda t: lambda a, b: t.linalg.lstsq(a, b).solution,
    "matrix_exp": lambda t: t.linalg.matrix_exp,
    "matrix_norm_nuc": lambda t: lambda a: t.linalg.matrix_norm(a, "nuc"),
}
