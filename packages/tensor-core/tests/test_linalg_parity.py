"""ember_core.linalg against PyTorch (parity): conventions that NumPy does not
pin down (eigenvalue order, SVD/QR shapes per mode, lstsq's fields per driver,
torch.norm's dispatch between vector and matrix norms), error types and
messages, and return-type field names."""

import math

import numpy as np
import pytest

import ember_core as ec
from ember_core import linalg as LA

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.parity

rng = np.random.default_rng(5)


def pair(*shape, dtype=np.float64):
    a = rng.standard_normal(shape).astype(dtype)
    return ec.from_numpy(a.copy()), torch.from_numpy(a.copy())


def same(e, t, rtol=1e-7, atol=1e-9):
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=rtol, atol=atol)


def test_eigh_order_and_reconstruction():
    e, t = pair(3, 5, 5)
    e, t = e + e.mT, t + t.mT
    we, ve = LA.eigh(e)
    wt, vt = torch.linalg.eigh(t)
    same(we, wt)  # ascending, like torch
    # eigenvectors agree up to sign, column by column
    dots = (ve * ec.from_numpy(vt.numpy())).sum(-2).abs()
    np.testing.assert_allclose(dots.numpy(), 1.0, atol=1e-9)
    same(LA.eigvalsh(e, "U"), torch.linalg.eigvalsh(t, "U"))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_shapes_values_and_signs(shape, full):
    e, t = pair(*shape)
    ue, se, vhe = LA.svd(e, full_matrices=full)
    ut, st, vht = torch.linalg.svd(t, full_matrices=full)
    assert ue.shape == ut.shape and se.shape == st.shape and vhe.shape == vht.shape
    same(se, st)
    k = min(shape[-2:])
    # each singular pair (u_i, v_i) agrees with torch's up to one common sign
    su = (ue[..., :k] * ec.from_numpy(ut[..., :k].numpy())).sum(-2)
    sv = (vhe[..., :k, :] * ec.from_numpy(vht[..., :k, :].numpy())).sum(-1)
    np.testing.assert_allclose(su.abs().numpy(), 1.0, atol=1e-9)
    np.testing.assert_allclose((su * sv).numpy(), 1.0, atol=1e-9)
    u2, s2, v2 = ec.svd(e)
    tu2, ts2, tv2 = torch.svd(t)
    assert u2.shape == tu2.shape and v2.shape == tv2.shape


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_qr_modes(mode, shape):
    e, t = pair(*shape)
    qe, re_ = LA.qr(e, mode=mode)
    qt, rt = torch.linalg.qr(t, mode=mode)
    assert qe.shape == qt.shape and re_.shape == rt.shape
    # both are Householder QRs: R's rows (and Q's columns) agree up to sign
    same(re_.abs(), rt.abs())
    if mode != "r":
        same(qe @ re_, qt @ rt)


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(6, 3), (3, 6)])
def test_lstsq_fields(driver, shape):
    ea, ta = pair(2, *shape)
    eb, tb = pair(2, shape[0], 2)
    er = LA.lstsq(ea, eb, driver=driver)
    tr = torch.linalg.lstsq(ta, tb, driver=driver)
    assert er._fields == tr._fields if hasattr(tr, "_fields") else True
    same(er.solution, tr.solution, rtol=1e-6)
    for f in ("residuals", "rank", "singular_values"):
        ev, tv = getattr(er, f), getattr(tr, f)
        assert tuple(ev.shape) == tuple(tv.shape), f
        assert str(ev.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], f
        if tv.numel():
            np.testing.assert_allclose(ev.numpy(), tv.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "p,dim",
    [
        ("fro", None),
        ("fro", (0, 1)),
        ("fro", 1),
        ("nuc", None),
        ("nuc", (1, 2)),
        (2, None),
        (2, (1, 2)),
        (1, 0),
        (math.inf, None),
        (-math.inf, (0, 2)),
        (0, 1),
        (3, (0, 2)),
        (None, 1),
    ],
)
@pytest.mark.parametrize("keepdim", [False, True])
def test_torch_norm(p, dim, keepdim):
    e, t = pair(3, 4, 5)
    if p == "nuc" and dim is None:
        e, t = e[0], t[0]

    def run(mod, x):
        try:
            return mod.norm(x, p, dim, keepdim)
        except RuntimeError as exc:
            return type(exc)

    er, tr = run(ec, e), run(torch, t)
    if isinstance(tr, type):
        assert er is tr
    else:
        same(er, tr)


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf, None])
def test_linalg_norm(ord):
    e, t = pair(4, 5)
    same(LA.norm(e, ord), torch.linalg.norm(t, ord))
    same(LA.norm(e, ord, dim=(1, 0), keepdim=True), torch.linalg.norm(t, ord, (1, 0), True))


def _outcome(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc), str(exc)
    return None, None


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.linalg.inv(m.zeros(3, 3)),
        lambda m: m.linalg.inv(m.zeros(2, 3, 3)),
        lambda m: m.linalg.inv(m.zeros(2, 3)),
        lambda m: m.linalg.inv(m.zeros(3)),
        lambda m: m.linalg.inv(m.zeros(3, 3, dtype=m.int64)),
        lambda m: m.linalg.inv(m.eye(3, dtype=m.float16)),
        lambda m: m.linalg.cholesky(-m.eye(3)),
        lambda m: m.linalg.cholesky(m.eye(3, dtype=m.float16)),
        lambda m: m.linalg.det(m.eye(3, dtype=m.int64)),
        lambda m: m.linalg.eigh(m.eye(3, dtype=m.float16)),
        lambda m: m.linalg.eigh(m.eye(3), UPLO="X"),
        lambda m: m.linalg.svd(m.eye(3, dtype=m.float16)),
        lambda m: m.linalg.qr(m.eye(3), mode="bad"),
        lambda m: m.linalg.solve(m.eye(3), m.ones(2)),
        lambda m: m.linalg.solve(m.eye(3), m.ones(3, dtype=m.float64)),
        lambda m: m.linalg.matrix_norm(m.ones(3, 3), 3),
        lambda m: m.linalg.norm(m.ones(2, 2, 2), 2),
        lambda m: m.linalg.cross(m.ones(2), m.ones(2)),
        lambda m: m.linalg.lstsq(m.ones(3, 3), m.ones(2, 3, 3)),
    ],
)
def test_errors_match_torch(call):
    et, em = _outcome(lambda: call(ec))
    tt, tm = _outcome(lambda: call(torch))
    assert et is not None and tt is not None
    if tt.__name__ == "_LinAlgError":
        assert et is LA.LinAlgError
    else:
        assert issubclass(et, tt.__mro__[0] if tt is not RuntimeError else RuntimeError), (et, tt)
    # the same message, apart from a "torch." prefix PyTorch puts on some
    assert em.replace("torch.", "") == tm.replace("torch.", ""), (em, tm)


def test_return_type_fields():
    e, t = pair(4, 4)
    s = e @ e.mT + 4 * ec.eye(4, dtype=ec.float64)
    ts = t @ t.mT + 4 * torch.eye(4, dtype=torch.float64)
    for name, ef, tf in [
        ("slogdet", LA.slogdet(e), torch.linalg.slogdet(t)),
        ("eigh", LA.eigh(s), torch.linalg.eigh(ts)),
        ("svd", LA.svd(e), torch.linalg.svd(t)),
        ("qr", LA.qr(e), torch.linalg.qr(t)),
        ("cholesky_ex", LA.cholesky_ex(s), torch.linalg.cholesky_ex(ts)),
        ("inv_ex", LA.inv_ex(s), torch.linalg.inv_ex(ts)),
        ("lu_factor", LA.lu_factor(e), torch.linalg.lu_factor(t)),
        ("torch.svd", ec.svd(e), torch.svd(t)),
        ("torch.slogdet", ec.slogdet(e), torch.slogdet(t)),
    ]:
        assert ef._fields == tuple(tf._fields) if hasattr(tf, "_fields") else True, name
        assert type(ef).__name__ == type(tf).__name__, name


def test_values_match_torch():
    e, t = pair(2, 4, 4)
    same(LA.det(e), torch.linalg.det(t))
    same(LA.inv(e), torch.linalg.inv(t), rtol=1e-6)
    same(LA.pinv(e[..., :3]), torch.linalg.pinv(t[..., :3]), rtol=1e-6)
    same(LA.matrix_exp(e), torch.linalg.matrix_exp(t), rtol=1e-10)
    same(LA.matrix_rank(e), torch.linalg.matrix_rank(t), rtol=0)
    same(LA.cond(e), torch.linalg.cond(t), rtol=1e-6)
    same(ec.logdet(e @ e.mT), torch.logdet(t @ t.mT))
    same(LA.lu_factor(e).pivots, torch.linalg.lu_factor(t).pivots, rtol=0)
