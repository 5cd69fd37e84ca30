"""complex64/complex128: creation, casts, promotion, elementwise values and branch
cuts against NumPy, views of the parts, reductions, matmul (cgemm/zgemm), printing."""

import warnings

import numpy as np
import pytest

import ember_core as ec

CDTYPES = [(ec.complex64, np.complex64, 1e-5), (ec.complex128, np.complex128, 1e-12)]


def _rand(shape, npdt, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(npdt)


def _close(t, ref, tol):
    a = t.numpy() if isinstance(t, ec.Tensor) else np.asarray(t)
    np.testing.assert_allclose(a, ref, rtol=tol * 10, atol=tol * 10, equal_nan=True)


# ------------------------------------------------------------------ dtypes


def test_dtype_names_and_aliases():
    assert ec.cfloat is ec.complex64 and ec.cdouble is ec.complex128
    assert ec.complex64.is_complex and not ec.complex64.is_floating_point
    assert ec.complex64.itemsize == 8 and ec.complex128.itemsize == 16
    assert ec.complex64.to_real() is ec.float32 and ec.float64.to_complex() is ec.complex128
    with pytest.raises(AttributeError, match="complex32"):
        ec.chalf  # noqa: B018
    with pytest.raises(TypeError, match="chalf"):
        ec.ones(2, dtype="complex32")


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (ec.float16, ec.complex64, ec.complex64),
        (ec.bfloat16, ec.complex64, ec.complex64),
        (ec.float32, ec.complex64, ec.complex64),
        (ec.float64, ec.complex64, ec.complex128),
        (ec.float32, ec.complex128, ec.complex128),
        (ec.int64, ec.complex64, ec.complex64),
        (ec.bool, ec.complex128, ec.complex128),
        (ec.complex64, ec.complex128, ec.complex128),
    ],
)
def test_promote_types(a, b, expected):
    assert ec.promote_types(a, b) is expected
    assert ec.promote_types(b, a) is expected


def test_result_type_with_complex_numbers():
    # a complex number with real tensors: complex parts as wide as the tensors' floats
    assert (ec.ones(2, dtype=ec.float64) * 1j).dtype is ec.complex128
    assert (ec.ones(2) * 1j).dtype is ec.complex64
    assert (ec.ones(2, dtype=ec.int32) * 1j).dtype is ec.complex64
    assert (ec.ones(2, dtype=ec.bfloat16) * 1j).dtype is ec.complex64
    with pytest.raises(TypeError, match="complex32"):
        ec.ones(2, dtype=ec.float16) * 1j
    # a 0-d float64 tensor does not widen a dimensioned complex64 tensor
    z = ec.ones(2, dtype=ec.complex64)
    assert (z * ec.tensor(1.0, dtype=ec.float64)).dtype is ec.complex64
    assert (z * ec.ones(2, dtype=ec.float64)).dtype is ec.complex128


# ---------------------------------------------------------------- creation


def test_tensor_from_python_and_numpy():
    t = ec.tensor([1 + 2j, 3 - 1j])
    assert t.dtype is ec.complex64 and t.tolist() == [1 + 2j, 3 - 1j]
    assert ec.tensor(2j).item() == 2j
    assert ec.tensor([1, 2j]).dtype is ec.complex64
    a = np.array([1 + 1j, 2], dtype=np.complex128)
    assert ec.tensor(a).dtype is ec.complex128
    ec.set_default_dtype(ec.float64)
    try:
        assert ec.tensor([1j]).dtype is ec.complex128
    finally:
        ec.set_default_dtype(ec.float32)


@pytest.mark.parametrize("dt, npdt, tol", CDTYPES)
def test_fill_creation(dt, npdt, tol):
    assert ec.zeros(3, dtype=dt).tolist() == [0j] * 3
    assert ec.ones(2, 2, dtype=dt).numpy().dtype == npdt
    f = ec.full((2,), 1 - 2j, dtype=dt)
    assert f.tolist() == [1 - 2j] * 2
    assert ec.full((2,), 3j).dtype is ec.complex64
    inf = ec.full((1,), complex(float("inf"), 0.0), dtype=dt).item()
    assert inf.real == float("inf") and inf.imag == 0.0  # no 0 * inf in the fill


@pytest.mark.parametrize("dt, npdt, tol", CDTYPES)
def test_numpy_and_dlpack_share_memory(dt, npdt, tol):
    a = _rand((3, 4), npdt)
    t = ec.from_numpy(a)
    assert t.dtype is dt
    a[0, 0] = 7 + 7j
    assert t[0, 0].item() == 7 + 7j
    n = t.numpy()
    n[1, 1] = -1j
    assert a[1, 1] == -1j
    back = np.from_dlpack(t)
    back[2, 2] = 5
    assert a[2, 2] == 5
    u = ec.from_dlpack(a.T)
    assert u.dtype is dt and u[1, 0].item() == a[0, 1]


def test_casts():
    z = ec.tensor([1.5 + 2j, -3 - 0.5j])
    assert z.to(ec.complex128).tolist() == [1.5 + 2j, -3 - 0.5j]
    assert ec.tensor([1.0, 2.0]).to(ec.complex64).tolist() == [1 + 0j, 2 + 0j]
    assert ec.tensor([3, -4]).to(ec.complex128).tolist() == [3 + 0j, -4 + 0j]
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert z.to(ec.float32).tolist() == [1.5, -3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert z.to(ec.int64).tolist() == [1, -3]
        assert ec.tensor([0j, 1j, 0.5 + 0j]).to(ec.bool).tolist() == [False, True, True]
    # in place: complex results cannot go into a real tensor
    r = ec.ones(2)
    with pytest.raises(RuntimeError, match="ComplexFloat"):
        r.mul_(z)


# -------------------------------------------------------------- elementwise

UNARY = {
    "neg": np.negative,
    "abs": np.abs,
    "sqrt": np.sqrt,
    "rsqrt": lambda a: 1 / np.sqrt(a),
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "reciprocal": np.reciprocal,
    "square": np.square,
    "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
    "angle": np.angle,
    "conj": np.conj,
    "sgn": lambda a: np.where(a == 0, 0, a / np.where(a == 0, 1, np.abs(a))),
    "sinc": np.sinc,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "logical_not": np.logical_not,
}

# points on and next to every branch cut, with both signs of zero
CUT_POINTS = [
    complex(x, y)
    for x in (-2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0)
    for y in (-2.0, -0.0, 0.0, 2.0)
] + [complex(0.0, y) for y in (-3.0, -1.0, 1.0, 3.0)]


@pytest.mark.parametrize("dt, npdt, tol", CDTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_against_numpy(name, dt, npdt, tol):
    a = np.concatenate([_rand(40, npdt), np.array(CUT_POINTS, dtype=npdt)])
    a = a[np.abs(a) > 0] if name in ("reciprocal", "rsqrt", "log", "log2", "log10") else a
    if name in ("atanh",):
        a = a[np.abs(a.real) != 1]
    if name in ("log1p",):
        a = a[a != -1]
    with np.errstate(all="ignore"):
        ref = UNARY[name](a)
    got = getattr(ec, name)(ec.from_numpy(a))
    if name in ("abs", "angle"):
        assert got.dtype is dt.to_real()
    _close(got, ref, tol)
    # the sign of every zero imaginary part on a branch cut is NumPy's (C99 Annex G)
    if name in ("sqrt", "log", "asin", "acos", "atan", "asinh", "acosh", "atanh"):
        assert np.array_equal(np.signbit(got.numpy().imag), np.signbit(ref.imag)) or np.allclose(
            got.numpy().imag[ref.imag != 0], ref.imag[ref.imag != 0], rtol=tol * 10
        )


@pytest.mark.parametrize("dt, npdt, tol", CDTYPES)
def test_branch_cuts_signed_zero(dt, npdt, tol):
    # just above and below the negative real axis: opposite imaginary parts
    z = ec.tensor([complex(-4.0, 0.0), complex(-4.0, -0.0)], dtype=dt)
    assert ec.sqrt(z).tolist() == [2j, -2j]
    lg = ec.log(z).numpy()
    assert lg[0].imag == pytest.approx(np.pi) and lg[1].imag == pytest.approx(-np.pi)
    # asin's cut: the real axis beyond 1
    w = ec.tensor([complex(2.0, 0.0), complex(2.0, -0.0)], dtype=dt)
    ref = np.arcsin(np.array([complex(2.0, 0.0), complex(2.0, -0.0)], dtype=npdt))
    _close(ec.asin(w), ref, tol)


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": np.power,
    "eq": np.equal,
    "ne": np.not_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "logaddexp": np.logaddexp,
}


@pytest.mark.parametrize("dt, npdt, tol", CDTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_against_numpy(name, dt, npdt, tol):
    a, b = _rand((4, 5), npdt, 1), _rand((5,), npdt, 2)
    if name == "logaddexp":  # NumPy's logaddexp is real-only: log(exp(a) + exp(b))
        ref = np.log(np.exp(a) + np.exp(b))
    else:
        ref = BINARY[name](a, b)
    got = getattr(ec, name)(ec.from_numpy(a), ec.from_numpy(b))
    _close(got, ref, tol)
    # a transposed operand and (for the ops taking numbers) a Python number
    if name not in ("logaddexp", "logical_and", "logical_or", "logical_xor"):
        _close(getattr(ec, name)(ec.from_numpy(a).T, 2.5), BINARY[name](a.T, 2.5), tol)


def test_scalars_alpha_and_mixed_operands():
    z = ec.tensor([1 + 1j, 2 - 1j])
    assert (z + (1 - 1j)).tolist() == [2 + 0j, 3 - 2j]
    assert ((2j) * z).tolist() == [-2 + 2j, 2 + 4j]
    assert ec.add(z, z, alpha=1j).tolist() == [(1 + 1j) + 1j * (1 + 1j), (2 - 1j) + 1j * (2 - 1j)]
    assert ec.add(z, ec.tensor([1.0, 2.0])).tolist() == [2 + 1j, 4 - 1j]
    assert (z**2).tolist() == [(1 + 1j) ** 2, (2 - 1j) ** 2]
    _close(2**z, 2 ** z.numpy(), 1e-6)
    _close(z ** (0.5 + 1j), z.numpy() ** (0.5 + 1j), 1e-6)
    _close(ec.lerp(z, z * 2, 0.5), z.numpy() * 1.5, 1e-6)
    with pytest.raises(RuntimeError, match="complex"):
        ec.add(ec.ones(2), ec.ones(2), alpha=1j)


@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda z: z < z, NotImplementedError),
        (lambda z: ec.maximum(z, z), RuntimeError),
        (lambda z: z.floor(), NotImplementedError),
        (lambda z: z.clamp(0, 1), NotImplementedError),
        (lambda z: z.sign(), NotImplementedError),
        (lambda z: z.relu(), NotImplementedError),
        (lambda z: z.erf(), NotImplementedError),
        (lambda z: z & z, NotImplementedError),
        (lambda z: z.max(), NotImplementedError),
        (lambda z: z // z, NotImplementedError),
        (lambda z: ec.atan2(z, z), NotImplementedError),
    ],
)
def test_ops_pytorch_rejects_on_complex(call, exc):
    with pytest.raises(exc):
        call(ec.tensor([1 + 1j, 2j]))


# --------------------------------------------------------------- the parts


def test_real_imag_are_views():
    z = ec.tensor([1 + 2j, 3 - 4j])
    re, im = z.real, z.imag
    assert re.dtype is ec.float32 and re.tolist() == [1.0, 3.0] and im.tolist() == [2.0, -4.0]
    re[0] = 10
    im.mul_(2)
    assert z.tolist() == [10 + 4j, 3 - 8j]
    r = ec.ones(2)
    assert r.real is r
    with pytest.raises(RuntimeError, match="non-complex"):
        r.imag  # noqa: B018


def test_view_as_real_and_complex():
    z = ec.tensor([[1 + 2j, 3 - 4j]], dtype=ec.complex128)
    v = ec.view_as_real(z)
    assert v.shape == (1, 2, 2) and v.dtype is ec.float64
    v[0, 1, 1] = 9
    assert z[0, 1].item() == 3 + 9j
    w = ec.view_as_complex(v)
    assert w.dtype is ec.complex128 and w.tolist() == z.tolist()
    w[0, 0] = 0
    assert v[0, 0].tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="complex"):
        ec.view_as_real(ec.ones(2))
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        ec.view_as_complex(ec.ones(3))
    with pytest.raises(RuntimeError, match="stride 1"):
        ec.view_as_complex(ec.ones(2, 2).T)


def test_conj_polar_complex_isreal():
    z = ec.tensor([1 + 2j, -3j, 4])
    assert z.conj().tolist() == [1 - 2j, 3j, 4]
    assert z.conj_physical().tolist() == [1 - 2j, 3j, 4]
    assert not z.conj().is_conj() and z.resolve_conj() is z
    x = ec.ones(2)
    assert x.conj() is x
    c = ec.complex(ec.tensor([1.0, 2.0]), ec.tensor([3.0, -4.0]))
    assert c.dtype is ec.complex64 and c.tolist() == [1 + 3j, 2 - 4j]
    with pytest.raises(RuntimeError):
        ec.complex(ec.ones(2), ec.ones(2, dtype=ec.float64))
    p = ec.polar(ec.tensor([2.0]), ec.tensor([np.pi / 2], dtype=ec.float32))
    _close(p, np.array([2j]), 1e-6)
    assert ec.isreal(z).tolist() == [False, False, True]
    assert ec.is_complex(z) and z.is_complex() and not x.is_complex()
    m = ec.tensor([[1 + 1j, 2], [3j, 4]])
    assert m.mH.tolist() == [[1 - 1j, -3j], [2, 4]]
    assert m.adjoint().tolist() == m.mH.tolist()


# -------------------------------------------------------------- reductions


@pytest.mark.parametrize("dt, npdt, tol", CDTYPES)
def test_reductions(dt, npdt, tol):
    a = _rand((3, 4, 5), npdt)
    t = ec.from_numpy(a)
    _close(t.sum(), a.sum(), tol)
    _close(t.sum(dim=(0, 2), keepdim=True), a.sum(axis=(0, 2), keepdims=True), tol)
    _close(t.mean(1), a.mean(1), tol)
    _close(t.prod(2), a.prod(2), tol)
    _close(t.prod(0, keepdim=True), a.prod(0, keepdims=True), tol)
    _close(t.prod(), a.prod(), tol * 10)
    _close(t.cumsum(1), a.cumsum(1), tol)
    _close(t.var(1), a.var(1, ddof=1), tol)
    _close(t.std(), a.std(ddof=1), tol)
    assert t.sum().dtype is dt and t.var().dtype is dt.to_real()
    z = ec.tensor([0j, 1j, 0j])
    assert z.count_nonzero().item() == 1 and z.any().item() and not z.all().item()


# ------------------------------------------------------------------ matmul


@pytest.mark.parametrize("dt, npdt, tol", CDTYPES)
@pytest.mark.parametrize("m, k, n", [(2, 3, 4), (70, 65, 80)])
def test_matmul_complex_blas(dt, npdt, tol, m, k, n):
    a, b = _rand((m, k), npdt, 3), _rand((k, n), npdt, 4)
    _close(ec.from_numpy(a) @ ec.from_numpy(b), a @ b, tol * 100)
    # transposed operands go to BLAS as transposes; batched products
    _close(ec.from_numpy(b.T.copy()).T.__rmatmul__(ec.from_numpy(a)), a @ b, tol * 100)
    ab = _rand((3, m, k), npdt, 5)
    _close(ec.from_numpy(ab) @ ec.from_numpy(b), ab @ b, tol * 100)
    v = _rand(k, npdt, 6)
    _close(ec.vdot(ec.from_numpy(v), ec.from_numpy(v)), np.vdot(v, v), tol * 100)


# ---------------------------------------------------------------- printing


def test_printing_like_pytorch():
    assert repr(ec.tensor([1 + 2j, 3 - 1j])) == "tensor([1.+2.j, 3.-1.j])"
    assert (
        repr(ec.tensor([1.5 + 2j, -3.25 - 1e-3j], dtype=ec.complex128))
        == "tensor([ 1.5000+2.0000e+00j, -3.2500-1.0000e-03j], dtype=ember.complex128)"
    )
    assert repr(ec.tensor(3 + 4j)) == "tensor(3.+4.j)"
    assert repr(ec.tensor([[1e10 + 1j, 1j], [0, 1]])) == (
        "tensor([[1.0000e+10+1.j, 0.0000e+00+1.j],\n        [0.0000e+00+0.j, 1.0000e+00+0.j]])"
    )


def test_pickle_round_trip():
    import pickle

    z = ec.tensor([1 + 2j, 3 - 4j], dtype=ec.complex128)
    back = pickle.loads(pickle.dumps(z))
    assert back.dtype is ec.complex128 and back.tolist() == z.tolist()


@pytest.mark.cuda
@pytest.mark.parametrize("dt", [ec.complex64, ec.complex128, ec.uint16, ec.uint64])
def test_cpu_only_dtypes_refuse_cuda(dt):
    # Note [CPU-only dtypes]: never a silent copy or a kernel without the dtype
    with pytest.raises(NotImplementedError, match="cuda"):
        ec.zeros(3, dtype=dt).to("cuda")
    with pytest.raises(NotImplementedError, match="cuda"):
        ec.ones(2, dtype=dt, device="cuda")
    with pytest.raises(NotImplementedError, match="cuda"):
        ec.fft.fft(ec.ones(4, device="cuda"))


def test_composites_keep_complex_values():
    z = ec.tensor([[1 + 2j, 3 - 1j, 0.5j], [2, -1j, 1 + 1j]])
    assert ec.isclose(z, z + 1e-9).all() and not ec.isclose(z, z + 1e-3j).any()
    assert ec.allclose(z, z.clone())
    r = ec.zeros(2, 3, dtype=ec.complex64).index_add(1, ec.tensor([0, 0, 1]), z)
    assert r.tolist() == [[4 + 1j, 0.5j, 0j], [2 - 1j, 1 + 1j, 0j]]
    assert ec.vander(ec.tensor([1 + 1j, 2]), 3).tolist() == [[2j, 1 + 1j, 1], [4, 2, 1]]
    assert ec.trapezoid(ec.tensor([1 + 1j, 2, 3j])).item() == 2.5 + 2j
    n = ec.randn(20000, dtype=ec.complex128)
    assert n.dtype is ec.complex128 and abs(n.abs().square().mean().item() - 1) < 0.05
    u = ec.rand(1000, dtype=ec.complex64)
    assert u.real.min().item() >= 0 and u.imag.max().item() < 1


def test_complex_linalg():
    # (the whole of linalg takes complex matrices: tests/test_linalg_complex.py)
    z = ec.tensor([[1 + 1j, 2], [3, 4j]])
    assert abs(complex(ec.linalg.inv(z)[0, 0].item()) - (4j / (4j * (1 + 1j) - 6))) < 1e-6
