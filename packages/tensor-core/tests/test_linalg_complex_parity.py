"""Complex linalg and linalg.eig against PyTorch (parity): result dtypes and
shapes, eigenvalue order, eigen- and singular vectors up to the phase LAPACK
builds may choose differently, and the errors PyTorch raises."""

import numpy as np
import pytest

import ember_core as ec
from ember_core import linalg as LA

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.parity

rng = np.random.default_rng(23)


def pair(*shape, dtype=np.complex128):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    a = a.astype(dtype)
    return ec.tensor(a.copy()), torch.tensor(a.copy())


def tol(dtype):
    return 1e-4 if dtype in (np.complex64, np.float32) else 1e-10


def same(e, t, atol):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=0, atol=atol)


def same_up_to_phase(ve, vt, atol):
    """Columns equal up to a unit factor each: |<ve_i, vt_i>| = 1."""
    dots = (np.conj(ve.numpy()) * vt.numpy()).sum(-2)
    np.testing.assert_allclose(np.abs(dots), 1.0, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_eig_matches_torch(dtype):
    e, t = pair(3, 5, 5, dtype=dtype)
    we, ve = LA.eig(e)
    wt, vt = torch.linalg.eig(t)
    same(we, wt, 100 * tol(dtype))  # LAPACK's order, which torch keeps
    same_up_to_phase(ve, vt, 100 * tol(dtype))
    same(LA.eigvals(e), torch.linalg.eigvals(t), 100 * tol(dtype))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_decompositions_match_torch(dtype):
    e, t = pair(2, 5, 3, dtype=dtype)
    for full in (True, False):
        ue, se, vhe = LA.svd(e, full_matrices=full)
        ut, st, vht = torch.linalg.svd(t, full_matrices=full)
        same(se, st, tol(dtype))
        assert ue.shape == ut.shape and vhe.shape == vht.shape and ue.dtype is e.dtype
        same_up_to_phase(ue[..., :3], ut[..., :3], tol(dtype) * 10)
    same(LA.svdvals(e), torch.linalg.svdvals(t), tol(dtype))
    for mode in ("reduced", "complete"):
        qe, re = LA.qr(e, mode=mode)
        qt, rt = torch.linalg.qr(t, mode=mode)
        assert qe.shape == qt.shape and re.shape == rt.shape
        same(qe @ re, qt @ rt, tol(dtype) * 10)
    h_e, h_t = e.mH @ e, t.mH @ t
    we, ve = LA.eigh(h_e)
    wt, vt = torch.linalg.eigh(h_t)
    same(we, wt, tol(dtype) * 10)
    same_up_to_phase(ve, vt, tol(dtype) * 100)
    same(LA.cholesky(h_e), torch.linalg.cholesky(h_t), tol(dtype) * 10)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_solvers_and_scalars_match_torch(dtype):
    (a, ta), (b, tb) = pair(2, 4, 4, dtype=dtype), pair(2, 4, 2, dtype=dtype)
    same(LA.solve(a, b), torch.linalg.solve(ta, tb), tol(dtype) * 10)
    same(LA.inv(a), torch.linalg.inv(ta), tol(dtype) * 10)
    same(LA.det(a), torch.linalg.det(ta), tol(dtype) * 10)
    sign, logabs = LA.slogdet(a)
    st, lt = torch.linalg.slogdet(ta)
    same(sign, st, tol(dtype) * 10)
    same(logabs, lt, tol(dtype) * 10)
    same(ec.logdet(a), torch.logdet(ta), tol(dtype) * 10)
    same(LA.pinv(a), torch.linalg.pinv(ta), tol(dtype) * 10)
    r, rt = LA.lstsq(a, b, driver="gelsd"), torch.linalg.lstsq(ta, tb, driver="gelsd")
    for x, y in zip(r, rt):
        if y.numel():
            same(x, y, tol(dtype) * 10)
    for ord in ("fro", "nuc", 2, 1, float("inf")):
        same(LA.matrix_norm(a, ord), torch.linalg.matrix_norm(ta, ord), tol(dtype) * 10)
    same(LA.matrix_rank(a), torch.linalg.matrix_rank(ta), 0)
    same(LA.cond(a), torch.linalg.cond(ta), tol(dtype) * 100)
    same(LA.matrix_exp(a * 0.3), torch.linalg.matrix_exp(ta * 0.3), tol(dtype) * 10)


def test_eig_errors_match_torch():
    for bad in (np.ones((2, 3)), np.array([[np.nan, 1.0], [0.0, 1.0]])):
        with pytest.raises(RuntimeError) as t_err:
            torch.linalg.eig(torch.tensor(bad))
        with pytest.raises(RuntimeError) as e_err:
            LA.eig(ec.tensor(bad))
        assert str(t_err.value).split(":")[-1].strip()[:20] in str(e_err.value)
    for make_t, make_e in (
        (lambda: torch.eye(2, dtype=torch.float16), lambda: ec.eye(2, dtype=ec.float16)),
        (lambda: torch.eye(2, dtype=torch.int64), lambda: ec.eye(2, dtype=ec.int64)),
    ):
        with pytest.raises(Exception) as t_err:
            torch.linalg.eig(make_t())
        with pytest.raises(Exception) as e_err:
            LA.eig(make_e())
        assert type(t_err.value) is type(e_err.value)


@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_factor_matches_torch(hermitian):
    (a, ta) = pair(4, 4)
    e = a + (a.mH if hermitian else a.mT)
    t = ta + (ta.mH if hermitian else ta.mT)
    LD, piv = LA.ldl_factor(e, hermitian=hermitian)
    LDt, pivt = torch.linalg.ldl_factor(t, hermitian=hermitian)
    same(LD, LDt, 1e-10)
    same(piv, pivt, 0)
