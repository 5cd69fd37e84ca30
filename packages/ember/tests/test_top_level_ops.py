"""torch-level functions, Tensor methods and process switches reached through
the umbrella (ember_core's composites: quantile, windows, asarray, the scatter
and copy families, renorm, gradient, the LU/QR extras, deepcopy, storage()...)
and ember.special, against NumPy (values) and, marked parity, against PyTorch
(values, shapes, dtypes)."""

import copy
import warnings

import numpy as np
import pytest

import ember

MODES = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_quantile_against_numpy(mode, dim):
    v = np.array([[1.0, 7.0, 3.0, 0.5], [4.0, 5.0, 6.0, 2.0], [9.0, -1.0, 0.0, 8.0]])
    q = np.array([0.0, 0.33, 0.5, 1.0])
    r = ember.quantile(
        ember.tensor(v), ember.tensor(q, dtype=ember.float64), dim=dim, interpolation=mode
    )
    np.testing.assert_allclose(r.numpy(), np.quantile(v, q, axis=dim, method=mode))
    w = v.copy()
    w[0, 1] = np.nan
    r = ember.nanquantile(ember.tensor(w), 0.4, dim=dim, interpolation=mode)
    np.testing.assert_allclose(r.numpy(), np.nanquantile(w, 0.4, axis=dim, method=mode))
    r = ember.quantile(ember.tensor(w), 0.4, dim=dim, interpolation=mode)
    np.testing.assert_allclose(r.numpy(), np.quantile(w, 0.4, axis=dim, method=mode))


def test_quantile_errors_and_keepdim():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert ember.quantile(x, ember.tensor([0.5, 0.7]), dim=1, keepdim=True).shape == (2, 2, 1)
    with pytest.raises(RuntimeError, match=r"range \[0, 1\]"):
        ember.quantile(x, 1.5)
    with pytest.raises(RuntimeError, match="float or double"):
        ember.quantile(ember.tensor([1, 2]), 0.5)


def test_windows_against_numpy():
    for n in (1, 2, 7, 16):
        np.testing.assert_allclose(
            ember.hann_window(n, periodic=False).numpy(), np.hanning(n), atol=1e-6
        )
        np.testing.assert_allclose(
            ember.hamming_window(n, periodic=False).numpy(), np.hamming(n), atol=1e-6
        )
        np.testing.assert_allclose(
            ember.blackman_window(n, periodic=False).numpy(), np.blackman(n), atol=1e-6
        )
        np.testing.assert_allclose(
            ember.bartlett_window(n, periodic=False).numpy(), np.bartlett(n), atol=1e-6
        )
        np.testing.assert_allclose(
            ember.kaiser_window(n, periodic=False, beta=5.0, dtype=ember.float64).numpy(),
            np.kaiser(n, 5.0),
            rtol=1e-10,
        )
        # periodic: the symmetric window of n + 1 points without its last (n > 1)
        expect = np.hanning(n + 1)[:n] if n > 1 else np.ones(1)
        np.testing.assert_allclose(ember.hann_window(n).numpy(), expect, atol=1e-6)
    assert ember.hann_window(0).shape == (0,)


def test_constants_and_range():
    assert ember.pi == np.pi and ember.e == np.e and ember.inf == np.inf
    assert np.isnan(ember.nan) and ember.newaxis is None
    with pytest.warns(UserWarning, match="deprecated"):
        r = ember.range(1, 4)
    assert r.dtype == ember.float32 and r.tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.warns(UserWarning):
        assert ember.range(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_asarray_copy_semantics():
    a = np.array([1.0, 2.0])
    t = ember.asarray(a)
    a[0] = 5.0
    assert t[0].item() == 5.0 and t.dtype == ember.float64
    assert ember.asarray(a, copy=True).data_ptr() != t.data_ptr()
    x = ember.ones(2)
    assert ember.asarray(x) is x
    assert ember.asarray(x, dtype=ember.float64).dtype == ember.float64
    with pytest.raises(ValueError):
        ember.asarray(x, dtype=ember.float64, copy=False)
    assert ember.asarray([1, 2]).dtype == ember.int64
    assert ember.asarray([1.0], requires_grad=True).requires_grad


def test_frombuffer_shares_memory():
    b = bytearray(np.arange(4, dtype=np.int32).tobytes())
    t = ember.frombuffer(b, dtype=ember.int32, count=2, offset=4)
    b[4] = 9
    assert t.tolist() == [9, 2]


def test_scatter_family_and_copies():
    z = ember.zeros(4, 3)
    r = ember.slice_scatter(z, ember.ones(2, 3), 0, 1, 3)
    np.testing.assert_array_equal(
        r.numpy(), np.r_[np.zeros((1, 3)), np.ones((2, 3)), np.zeros((1, 3))]
    )
    r = ember.select_scatter(z, ember.ones(4), 1, 2)
    assert r[:, 2].tolist() == [1.0] * 4 and z.sum().item() == 0
    r = ember.diagonal_scatter(ember.zeros(3, 3), ember.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(r.numpy(), np.diag([1.0, 2.0, 3.0]))
    r = ember.as_strided_scatter(ember.zeros(4), ember.ones(2), (2,), (2,))
    assert r.tolist() == [1.0, 0.0, 1.0, 0.0]
    x = ember.arange(6.0).reshape(2, 3)
    c = ember.transpose_copy(x, 0, 1)
    assert c.is_contiguous() and c.tolist() == x.t().tolist()
    assert ember.narrow_copy(x, 1, 1, 2).tolist() == [[1.0, 2.0], [4.0, 5.0]]
    assert [t.tolist() for t in ember.unsafe_split(ember.arange(5), 2)] == [[0, 1], [2, 3], [4]]


def test_tensor_methods():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.sum_to_size(1, 2).tolist() == [[4.0, 6.0]]
    assert x.sum_to_size(2).tolist() == [4.0, 6.0]
    assert x.new((2, 3)).tolist() == [2.0, 3.0]
    assert x.new(2, 3).shape == (2, 3) and x.new().shape == (0,)
    assert [t.tolist() for t in reversed(ember.tensor([1, 2, 3]))] == [3, 2, 1]
    assert int(ember.tensor(3.7).__long__()) == 3
    y = x.clone().apply_(lambda v: v * 10)
    assert y.tolist() == [[10.0, 20.0], [30.0, 40.0]]
    y.map_(ember.tensor([1.0, 2.0]), lambda a, b: a + b)
    assert y.tolist() == [[11.0, 22.0], [31.0, 42.0]]
    assert x.allclose(x + 1e-9) and x.equal(x.clone()) and not x.is_neg()
    assert x.dist(ember.zeros(2, 2)).item() == pytest.approx(np.sqrt(30))
    assert ember.nonzero_static(ember.tensor([0, 1, 0, 2]), size=3).tolist() == [[1], [3], [-1]]
    assert not x.is_pinned()
    with pytest.raises(RuntimeError):
        x.pin_memory()
    assert x.adjoint().tolist() == x.t().tolist()


def test_renorm_against_numpy():
    x = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    r = ember.renorm(ember.tensor(x), 2, 0, 1.0).numpy()
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    expect = np.where(norms > 1, x / (norms + 1e-7), x)
    np.testing.assert_allclose(r, expect, rtol=1e-6)


def test_switches():
    ember.set_warn_always(True)
    assert ember.is_warn_always_enabled()
    ember.set_warn_always(False)
    ember.set_deterministic_debug_mode("warn")
    assert ember.get_deterministic_debug_mode() == 1
    ember.set_deterministic_debug_mode(0)
    assert ember.get_deterministic_debug_mode() == 0
    ember.set_anomaly_enabled(True)
    assert ember.is_anomaly_enabled()
    ember.set_anomaly_enabled(False)
    assert not ember.is_anomaly_enabled()
    assert ember.typename(ember.ones(1)) == "torch.FloatTensor"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.set_default_tensor_type("torch.DoubleTensor")
        assert ember.get_default_dtype() == ember.float64
        ember.set_default_tensor_type(ember.FloatTensor)
    assert ember.get_default_dtype() == ember.float32


def test_linalg_lu_against_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 4, 4))
    b = rng.standard_normal((2, 4, 3))
    P, L, U = ember.linalg.lu(ember.tensor(a))
    np.testing.assert_allclose((P @ L @ U).numpy(), a, atol=1e-12)
    LU, piv = ember.linalg.lu_factor(ember.tensor(a))
    x = ember.linalg.lu_solve(LU, piv, ember.tensor(b))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), atol=1e-12)
    x = ember.linalg.lu_solve(LU, piv, ember.tensor(b), adjoint=True)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a.transpose(0, 2, 1), b), atol=1e-12)
    bt = b.transpose(0, 2, 1)
    x = ember.linalg.lu_solve(LU, piv, ember.tensor(bt), left=False)
    np.testing.assert_allclose(x.numpy() @ a, bt, atol=1e-12)
    t = rng.standard_normal((4, 6, 24))
    np.testing.assert_allclose(
        ember.linalg.tensorinv(ember.tensor(t)).numpy(), np.linalg.tensorinv(t), atol=1e-10
    )
    t = rng.standard_normal((2, 3, 6))
    bb = rng.standard_normal((2, 3))
    np.testing.assert_allclose(
        ember.linalg.tensorsolve(ember.tensor(t), ember.tensor(bb)).numpy(),
        np.linalg.tensorsolve(t, bb),
        atol=1e-10,
    )


def test_householder_product_is_qr_q():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 3))
    # Q from numpy's raw QR: reflectors below the diagonal of h.T, scalars tau
    h, tau = np.linalg.qr(a, mode="raw")
    q = ember.linalg.householder_product(ember.tensor(h.T.copy()), ember.tensor(tau))
    np.testing.assert_allclose(q.numpy(), np.linalg.qr(a)[0], atol=1e-12)


def test_deepcopy_keeps_requires_grad_and_shared_storage():
    a = ember.ones(3, requires_grad=True)
    b = copy.deepcopy(a)
    assert b.requires_grad and b.is_leaf and b.data_ptr() != a.data_ptr()
    base = ember.arange(4.0)
    v1, v2 = base[:2], base[1:]
    c1, c2 = copy.deepcopy([v1, v2])
    c1[1] = 7.0
    assert c2[0].item() == 7.0


@pytest.mark.parity
def test_special_parity_with_pytorch():
    torch = pytest.importorskip("torch")
    x = np.array([-3.0, -0.5, 0.0, 0.3, 1.0, 2.5, 10.0, np.inf, -np.inf, np.nan])
    for name in ember.special.__all__:
        if name in ("softmax", "log_softmax", "logsumexp", "multigammaln", "polygamma"):
            continue
        e_fn, t_fn = getattr(ember.special, name), getattr(torch.special, name)
        if "polynomial" in name or name in ("zeta", "xlog1py", "xlogy", "gammainc", "gammaincc"):
            args_e = (ember.tensor(x), ember.tensor(np.full_like(x, 3.0)))
            args_t = (torch.tensor(x), torch.tensor(np.full_like(x, 3.0)))
        else:
            args_e, args_t = (ember.tensor(x),), (torch.tensor(x),)
        r, e = e_fn(*args_e), t_fn(*args_t)
        assert str(r.dtype).split(".")[1] == str(e.dtype).split(".")[1], name
        np.testing.assert_allclose(
            r.numpy(), e.numpy(), rtol=1e-7, atol=1e-12, equal_nan=True, err_msg=name
        )


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_against_numpy(edge_order):
    rng = np.random.default_rng(2)
    f = rng.standard_normal((5, 6))
    for dim in (None, 0, 1):
        r = ember.gradient(ember.tensor(f), dim=dim, edge_order=edge_order)
        e = np.gradient(f, axis=dim, edge_order=edge_order)
        e = e if isinstance(e, (list, tuple)) else [e]
        for a, b in zip(r, e, strict=True):
            np.testing.assert_allclose(a.numpy(), b, atol=1e-12)
    r = ember.gradient(ember.tensor(f), spacing=[2.0, 0.5], edge_order=edge_order)
    for a, b in zip(r, np.gradient(f, 2.0, 0.5, edge_order=edge_order), strict=True):
        np.testing.assert_allclose(a.numpy(), b, atol=1e-12)
    x = np.array([0.0, 0.5, 1.5, 1.7, 3.0])
    (r,) = ember.gradient(ember.tensor(f[:, 0]), spacing=(ember.tensor(x),), edge_order=edge_order)
    np.testing.assert_allclose(
        r.numpy(), np.gradient(f[:, 0], x, edge_order=edge_order), atol=1e-12
    )
    assert ember.gradient(ember.tensor([1, 2, 4]))[0].tolist() == [1.0, 1.5, 2.0]


def test_geqrf_orgqr_ormqr_against_numpy():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 3))
    h, tau = ember.geqrf(ember.tensor(a))
    q_np, r_np = np.linalg.qr(a)
    np.testing.assert_allclose(np.abs(h.triu()[:3].numpy()), np.abs(r_np), atol=1e-12)
    q = ember.orgqr(h, tau)
    np.testing.assert_allclose((q @ h.triu()[:3]).numpy(), a, atol=1e-12)
    c = rng.standard_normal((5, 2))
    qc = ember.ormqr(h, tau, ember.tensor(c)).numpy()
    q_full = ember.ormqr(h, tau, ember.eye(5, dtype=ember.float64)).numpy()
    np.testing.assert_allclose(q_full.T @ q_full, np.eye(5), atol=1e-12)
    np.testing.assert_allclose(q_full[:, :3], q.numpy(), atol=1e-12)
    np.testing.assert_allclose(qc, q_full @ c, atol=1e-12)
    np.testing.assert_allclose(
        ember.ormqr(h, tau, ember.tensor(c), transpose=True).numpy(), q_full.T @ c, atol=1e-12
    )
    ct = c.T.copy()
    np.testing.assert_allclose(
        ember.ormqr(h, tau, ember.tensor(ct), left=False).numpy(), ct @ q_full, atol=1e-12
    )
    np.testing.assert_allclose(
        ember.ormqr(h, tau, ember.tensor(ct), left=False, transpose=True).numpy(),
        ct @ q_full.T,
        atol=1e-12,
    )


def test_storage_and_small_tensor_methods():
    t = ember.arange(4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = t[1:].storage()
    assert s.dtype == ember.float32 and s.size() == 4 and len(s) == 4
    assert s.tolist() == [0.0, 1.0, 2.0, 3.0] and s[2] == 2.0
    s[0] = 9.0
    assert t[0].item() == 9.0 and s.data_ptr() == t.data_ptr()
    assert t.real is t
    with pytest.raises(RuntimeError, match="non-complex"):
        _ = t.imag
    x = ember.empty(2, 3, 4).permute(2, 0, 1)
    assert x.dim_order() == (1, 2, 0)
    p = ember.empty_permuted((2, 3, 4), (2, 0, 1))
    assert p.shape == (2, 3, 4) and p.dim_order() == (2, 0, 1)
    assert ember.fill(t, 2.0).tolist() == [2.0] * 4 and t[1].item() == 1.0
    assert t.is_set_to(t) and not t.is_set_to(t[1:])
    assert t.new_empty_strided((2,), (2,)).stride() == (2,)


def test_ldl_factor_and_solve():
    rng = np.random.default_rng(4)
    m = rng.standard_normal((2, 5, 5))
    m = m + m.transpose(0, 2, 1)
    m[0, :3, :3] = [[0.0, 1.0, 2.0], [1.0, 0.0, 0.5], [2.0, 0.5, 0.0]]  # 2x2 pivots
    LD, piv = ember.linalg.ldl_factor(ember.tensor(m))
    assert piv.dtype == ember.int32 and LD.shape == (2, 5, 5)
    np.testing.assert_array_equal(np.triu(LD.numpy(), 1), 0)
    b = rng.standard_normal((3, 2, 5, 2))  # batches broadcast against LD's
    x = ember.linalg.ldl_solve(LD, piv, ember.tensor(b)).numpy()
    np.testing.assert_allclose(x, np.linalg.solve(m, b), atol=1e-10)
    info = ember.linalg.ldl_factor_ex(ember.zeros(2, 2, dtype=ember.float64)).info
    assert info.item() == 1
    with pytest.raises(RuntimeError, match="singular"):
        ember.linalg.ldl_factor(ember.zeros(2, 2, dtype=ember.float64))


@pytest.mark.parity
def test_lapack_factorizations_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    m = rng.standard_normal((3, 6, 6))
    s = m + m.transpose(0, 2, 1)
    for a, b in zip(
        ember.linalg.ldl_factor(ember.tensor(s)),
        torch.linalg.ldl_factor(torch.tensor(s)),
        strict=True,
    ):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)
    for a, b in zip(ember.geqrf(ember.tensor(m)), torch.geqrf(torch.tensor(m)), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)
    for a, b in zip(
        ember.linalg.lu(ember.tensor(m)), torch.linalg.lu(torch.tensor(m)), strict=True
    ):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)
