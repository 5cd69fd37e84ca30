"""PyTorch parity of small compatibility gaps found by running real scripts: NumPy
scalars as operands, sizes, dims and indices; from_numpy on negative strides and
read-only arrays; printing (repr) across dtypes, magnitudes and print options;
legacy ``Tensor.type``; index_select bounds."""

import warnings

import numpy as np
import pytest

import ember_core as ec

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.parity


def _run(f, m):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return f(m)
        except Exception as e:  # noqa: BLE001 - the exception type is compared
            return e


def _same(got, want):
    if isinstance(want, Exception):
        assert isinstance(got, type(want)), (got, want)
        return
    assert not isinstance(got, Exception), got
    if isinstance(want, torch.Tensor):
        assert isinstance(got, ec.Tensor), got
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy().astype(np.float64))
    else:
        assert tuple(got) == tuple(want) if isinstance(want, torch.Size) else got == want


# ------------------------------------------------------------ NumPy scalars

_f = np.float32(2.0)
NP_SCALAR_CASES = {
    "t*f32": lambda m: m.ones(2) * np.float32(2.0),
    "f64+t": lambda m: np.float64(3) + m.ones(2),
    "t/i64": lambda m: m.ones(2) / np.int64(2),
    "ti*f32": lambda m: m.ones(2, dtype=m.int64) * np.float32(2.0),
    "f32*ti": lambda m: np.float32(2.0) * m.ones(2, dtype=m.int64),
    "ti+i32": lambda m: m.ones(2, dtype=m.int64) + np.int32(2),
    "i32+ti": lambda m: np.int32(2) + m.ones(2, dtype=m.int64),
    "tb*i8": lambda m: m.ones(2, dtype=m.bool) * np.int8(2),
    "t16*f64": lambda m: m.ones(2, dtype=m.float16) * np.float64(2),
    "t*f16": lambda m: m.ones(2) * np.float16(2),
    "i64//ti": lambda m: np.int64(3) // m.ones(2, dtype=m.int64),
    "i64-ti": lambda m: np.int64(3) - m.ones(2, dtype=m.int64),
    "i64%ti": lambda m: np.int64(3) % m.full((2,), 2, dtype=m.int64),
    "f32**ti": lambda m: np.float32(2) ** m.ones(2, dtype=m.int64),
    "ti**i64": lambda m: m.full((2,), 3, dtype=m.int64) ** np.int64(2),
    "t>f64": lambda m: m.arange(3.0) > np.float64(0.5),
    "f32<t": lambda m: np.float32(0.5) < m.arange(3.0),
    "ti==i64": lambda m: m.arange(3) == np.int64(1),
    "t*bool_": lambda m: m.ones(2, dtype=m.int64) * np.bool_(True),
    "bool_*t": lambda m: np.bool_(True) * m.ones(2),
    "iadd f32": lambda m: m.ones(2).__iadd__(np.float32(2)),
    "add_ int with f32": lambda m: m.ones(2, dtype=m.int64).add_(np.float32(2.5)),
    "clamp": lambda m: m.arange(4).clamp(np.float32(0.5), np.float64(2.5)),
    "clamp min": lambda m: m.arange(4).clamp(min=np.int32(2)),
    "where": lambda m: m.where(m.arange(3) > 0, m.arange(3), np.float32(0.5)),
    "masked_fill": lambda m: m.ones(3).masked_fill(m.arange(3) > 0, np.float32(3)),
    "fmod": lambda m: m.fmod(m.arange(4.0), np.float32(1.5)),
    "div floor": lambda m: m.div(m.arange(4.0), np.float32(1.5), rounding_mode="floor"),
    "lerp": lambda m: m.lerp(m.ones(2), m.full((2,), 3.0), np.float32(0.5)),
    "0-d * f32": lambda m: m.tensor(2.0) * np.float32(1.5),
    "item": lambda m: (m.arange(3.0).sum() * np.float32(2)).item(),
    "tensor(f32)": lambda m: m.tensor(np.float32(2)),
    "tensor(f64)": lambda m: m.tensor(np.float64(2)),
    "tensor(i32)": lambda m: m.tensor(np.int32(2)),
    "tensor(bool_)": lambda m: m.tensor(np.bool_(True)),
    "tensor([f32, 2.5])": lambda m: m.tensor([np.float32(1), 2.5]),
    "tensor([f64])": lambda m: m.tensor([np.float64(2)]),
    "tensor([i32])": lambda m: m.tensor([np.int32(2)]),
    "tensor([i32, i8])": lambda m: m.tensor([np.int32(2), np.int8(1)]),
    "tensor([u8, i8])": lambda m: m.tensor([np.uint8(2), np.int8(1)]),
    "tensor([f16, i64])": lambda m: m.tensor([np.float16(2), np.int64(1)]),
    "tensor([True, i32])": lambda m: m.tensor([True, np.int32(1)]),
    "tensor([[f64], [2.0]])": lambda m: m.tensor([[np.float64(2)], [2.0]]),
    "tensor([arr i32, arr i32])": lambda m: m.tensor([np.arange(2, dtype=np.int32)] * 2),
    "full f32": lambda m: m.full((2,), np.float32(2)),
    "full i64": lambda m: m.full((2,), np.int64(2)),
    "full i32": lambda m: m.full((2,), np.int32(2)),
    "full bool_": lambda m: m.full((2,), np.bool_(True)),
    "arange f32": lambda m: m.arange(np.float32(3)),
    "arange i32": lambda m: m.arange(np.int32(3)),
    "linspace": lambda m: m.linspace(np.float64(0), np.float64(1), np.int64(3)),
    "zeros(i64, i32)": lambda m: m.zeros(np.int64(2), np.int32(3)),
    "randn(i64).shape": lambda m: m.randn(np.int64(2)).shape,
    "ones(i64)": lambda m: m.ones(np.int64(2)),
    "sum(i64)": lambda m: m.arange(6.0).reshape(2, 3).sum(np.int64(0)),
    "sum(dim=i32)": lambda m: m.arange(6.0).reshape(2, 3).sum(dim=np.int32(1)),
    "t[i64]": lambda m: m.arange(6.0).reshape(2, 3)[np.int64(1)],
    "t[i32, i64]": lambda m: m.arange(6.0).reshape(2, 3)[np.int32(1), np.int64(2)],
    "t[i64:i32]": lambda m: m.arange(5)[np.int64(1) : np.int32(3)],
    "reshape(i64)": lambda m: m.arange(6).reshape(np.int64(3), np.int64(2)),
    "narrow": lambda m: m.arange(6).reshape(2, 3).narrow(np.int64(1), np.int64(0), np.int64(2)),
    "setitem f64": lambda m: (lambda x: (x.__setitem__(np.int64(0), np.float64(1.5)), x)[1])(
        m.zeros(2)
    ),
}


@pytest.mark.parametrize("name", sorted(NP_SCALAR_CASES))
def test_numpy_scalars(name):
    f = NP_SCALAR_CASES[name]
    _same(_run(f, ec), _run(f, torch))


# ------------------------------------------------------------ from_numpy

_A = np.arange(12.0).reshape(3, 4)
FROM_NUMPY_CASES = {
    "negative stride": lambda m: m.from_numpy(_A[:, ::-1]),
    "negative stride 1-d": lambda m: m.from_numpy(_A[0, ::-2]),
    "positive strides": lambda m: m.from_numpy(_A[::2, 1:]),
    "transposed": lambda m: m.from_numpy(_A.T),
    "not an array": lambda m: m.from_numpy([1.0, 2.0]),
}


@pytest.mark.parametrize("name", sorted(FROM_NUMPY_CASES))
def test_from_numpy(name):
    f = FROM_NUMPY_CASES[name]
    _same(_run(f, ec), _run(f, torch))


def test_from_numpy_read_only_warns_as_torch():
    a = np.arange(3.0)
    a.flags.writeable = False
    # torch warns once per process (TORCH_WARN_ONCE), so only ember is checked here;
    # torch's message also starts "The given NumPy array is not writable"
    with pytest.warns(UserWarning, match="^The given NumPy array is not writable"):
        ec.from_numpy(a)


# ------------------------------------------------------------ printing

# (label, build(module), print options or None)
REPR_CASES = [
    ("ints", lambda m: m.tensor([1, -20, 300])),
    ("int big", lambda m: m.tensor([1, 10**12])),
    ("float", lambda m: m.tensor([1.5, -2.25, 3.0])),
    ("float int-valued", lambda m: m.tensor([1.0, 2.0, 3.0])),
    ("small", lambda m: m.tensor([1e-8, 1.0])),
    ("large", lambda m: m.tensor([1e10, 1.0])),
    ("large2", lambda m: m.tensor([12345678.0, 1.5])),
    ("mix", lambda m: m.tensor([1e-5, 1e5, 1.0])),
    ("tiny", lambda m: m.tensor([1e-30, 2e-30])),
    ("nan inf", lambda m: m.tensor([float("nan"), float("inf"), -float("inf"), 1.5])),
    ("nan only", lambda m: m.tensor([float("nan"), float("inf")])),
    ("negzero", lambda m: m.tensor([-0.0, 1.0])),
    ("negzero only", lambda m: m.tensor([-0.0])),
    ("bool", lambda m: m.tensor([True, False])),
    ("f16", lambda m: m.tensor([1.5, 2.0], dtype=m.float16)),
    ("bf16", lambda m: m.tensor([1.5, 2.0], dtype=m.bfloat16)),
    ("f64", lambda m: m.tensor([1.5, 2.0], dtype=m.float64)),
    ("i32", lambda m: m.tensor([1, 2], dtype=m.int32)),
    ("u8", lambda m: m.tensor([1, 2], dtype=m.uint8)),
    ("0d", lambda m: m.tensor(3.5)),
    ("0d int", lambda m: m.tensor(3)),
    ("0d f64", lambda m: m.tensor(3.5, dtype=m.float64)),
    ("0d nan", lambda m: m.tensor(float("nan"))),
    ("empty", lambda m: m.tensor([])),
    ("empty2", lambda m: m.zeros(0, 3)),
    ("empty int", lambda m: m.zeros(2, 0, dtype=m.int64)),
    ("big", lambda m: m.arange(2000.0)),
    ("big int", lambda m: m.arange(2000)),
    ("big 2d", lambda m: m.arange(4000.0).reshape(40, 100)),
    ("big 3d", lambda m: m.arange(3000).reshape(10, 10, 30)),
    ("wrap", lambda m: m.arange(30.0) * 1.5),
    ("wrap int", lambda m: m.arange(50) * 1000),
    ("nested", lambda m: m.arange(24.0).reshape(2, 3, 4)),
    ("nested int", lambda m: m.arange(24).reshape(2, 3, 4)),
    ("2d small", lambda m: m.tensor([[1e-8, 1.0], [2.0, 3.0]])),
    (
        "randn",
        lambda m: m.from_numpy(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)),
    ),
    ("prec4 nosci small", lambda m: m.tensor([1e-8, 1.0]), dict(precision=4, sci_mode=False)),
    ("prec4 nosci", lambda m: m.tensor([1.123456, 100.5]), dict(precision=4, sci_mode=False)),
    ("prec2", lambda m: m.tensor([1.123456, 100.5]), dict(precision=2)),
    ("sci true", lambda m: m.tensor([1.5, 2.0]), dict(sci_mode=True)),
    ("sci true int-valued", lambda m: m.tensor([1.0, 2.0]), dict(sci_mode=True)),
    ("nosci large", lambda m: m.tensor([1e10, 1.0]), dict(sci_mode=False)),
    ("linewidth", lambda m: m.arange(20.0), dict(linewidth=40)),
    ("threshold", lambda m: m.arange(20.0), dict(threshold=5)),
    ("edgeitems", lambda m: m.arange(20.0), dict(threshold=5, edgeitems=2)),
    ("profile short", lambda m: m.tensor([1.123456, 100.5]), dict(profile="short")),
    ("profile full", lambda m: m.arange(1200.0), dict(profile="full")),
    ("int neg", lambda m: m.tensor([-1, -1000])),
    ("float neg", lambda m: m.tensor([-1.5, -1000.25])),
    ("float large int-valued", lambda m: m.tensor([1e8, 2.0])),
    ("float 1e16", lambda m: m.tensor([1e16, 2.0])),
    ("f16 small", lambda m: m.tensor([1e-4, 1.0], dtype=m.float16)),
    ("transposed", lambda m: m.arange(6.0).reshape(2, 3).t()),
    ("expand", lambda m: m.tensor([1.5]).expand(3)),
    ("channels", lambda m: m.zeros(1, 2, 2, 2)),
    ("zeros", lambda m: m.zeros(3)),
    ("ones int-valued large", lambda m: m.tensor([100000.0, 1.0])),
    ("0.1 step", lambda m: m.arange(0, 1, 0.1)),
    ("1d size1", lambda m: m.tensor([7.25])),
    ("sci neg", lambda m: m.tensor([-1e-8, 1.0])),
    ("sci nan", lambda m: m.tensor([1e-8, float("nan"), 1.0])),
    ("0d bool", lambda m: m.tensor(True)),
    ("0d f16", lambda m: m.tensor(1.5, dtype=m.float16)),
    ("big bool", lambda m: m.zeros(1500, dtype=m.bool)),
    ("param-like neg float", lambda m: m.tensor([[0.1234, -0.5678], [1.0, -2.0]])),
    ("i64 max", lambda m: m.tensor([2**63 - 1, -(2**63)])),
    ("int mixed width", lambda m: m.tensor([[1, 22], [333, 4]])),
    ("nosci mix", lambda m: m.tensor([1e-5, 1e5, 1.0]), dict(sci_mode=False)),
    ("nosci int big", lambda m: m.tensor([1e10, 1.0, float("nan")]), dict(sci_mode=False)),
    ("sci int", lambda m: m.tensor([10.0, 1.0, float("inf")]), dict(sci_mode=True)),
    ("sci nested", lambda m: m.arange(6.0).reshape(2, 3) / 7, dict(sci_mode=True)),
    ("prec0", lambda m: m.tensor([1.55, 2.45]), dict(precision=0)),
    ("prec8", lambda m: m.tensor([1.55, 2.45]), dict(precision=8)),
    ("prec8 f64", lambda m: m.tensor([1.55, 2.45], dtype=m.float64), dict(precision=8)),
    (
        "nosci neg small",
        lambda m: m.tensor([-1e-8, 1.0, float("-inf")]),
        dict(sci_mode=False, precision=4),
    ),
    ("linewidth nested", lambda m: m.arange(40.0).reshape(2, 20), dict(linewidth=50)),
    ("threshold nested", lambda m: m.arange(40.0).reshape(8, 5), dict(threshold=10)),
    ("i16", lambda m: m.tensor([1, 2], dtype=m.int16)),
    ("i8", lambda m: m.tensor([1, 2], dtype=m.int8)),
    ("empty f16", lambda m: m.zeros(0, dtype=m.float16)),
    ("empty bool", lambda m: m.zeros(0, dtype=m.bool)),
    ("big f16", lambda m: m.arange(1500, dtype=m.float16)),
    ("0d i32", lambda m: m.tensor(3, dtype=m.int32)),
    ("0d -0", lambda m: m.tensor(-0.0)),
    ("0d inf", lambda m: m.tensor(float("-inf"))),
    ("0d big", lambda m: m.tensor(1e20)),
    ("0d small", lambda m: m.tensor(1e-20)),
    ("0d int-valued", lambda m: m.tensor(100.0)),
    ("size0 dims", lambda m: m.zeros(2, 0, 3)),
]


@pytest.mark.parametrize("case", REPR_CASES, ids=[c[0] for c in REPR_CASES])
def test_repr_matches_torch(case):
    _, build, opts = (*case, None)[:3]
    got = want = None
    try:
        for m in (ec, torch):
            if opts:
                m.set_printoptions(**opts)
            try:
                r = repr(build(m))
            finally:
                m.set_printoptions(profile="default", sci_mode=None)
            if m is ec:
                got = r.replace("ember.", "torch.")
            else:
                want = r
    finally:
        ec.set_printoptions(profile="default")
    assert got == want


# ------------------------------------------------------------ index bounds

_X = np.arange(6.0).reshape(2, 3)
INDEX_CASES = {
    "index_select negative": lambda m: m.tensor(_X).index_select(1, m.tensor([-1])),
    "index_select past the end": lambda m: m.tensor(_X).index_select(1, m.tensor([3])),
    "index_select in range": lambda m: m.tensor(_X).index_select(1, m.tensor([2, 0])),
    "index_add negative": lambda m: m.zeros(3).index_add(0, m.tensor([-1]), m.ones(1)),
    "index_copy negative": lambda m: m.zeros(3).index_copy(0, m.tensor([-1]), m.ones(1)),
    "index_fill negative": lambda m: m.zeros(3).index_fill(0, m.tensor([-1]), 1.0),
    "gather negative": lambda m: m.zeros(3).gather(0, m.tensor([-1])),
    "take negative": lambda m: m.arange(3.0).take(m.tensor([-1])),
    "x[idx] negative": lambda m: m.tensor(_X)[:, m.tensor([-1])],
    "x[idx] on a size-0 dim": lambda m: m.zeros(0, 3)[m.tensor([0])],
    "x[list] on a size-0 dim": lambda m: m.zeros(3, 0)[:, [1]],
    "x[empty idx] on a size-0 dim": lambda m: m.zeros(0, 3)[m.tensor([], dtype=m.int64)],
}


@pytest.mark.parametrize("name", sorted(INDEX_CASES))
def test_index_bounds(name):
    f = INDEX_CASES[name]
    _same(_run(f, ec), _run(f, torch))


# ------------------------------------------------------------ found by differential runs

DIFFERENTIAL_CASES = {
    "add(3, 4)": lambda m: m.add(3, 4),
    "add(3, 4.5)": lambda m: m.add(3, 4.5),
    "add(3, 4, alpha=2)": lambda m: m.add(3, 4, alpha=2),
    "mul(True, 2)": lambda m: m.mul(True, 2),
    "div(3, 4)": lambda m: m.div(3, 4),
    "divide(7, 2, floor)": lambda m: m.divide(7, 2, rounding_mode="floor"),
    "sub(3.0, 1)": lambda m: m.sub(3.0, 1),
    "floor_divide(7, 2)": lambda m: m.floor_divide(7, 2),
    "true_divide(1, 2)": lambda m: m.true_divide(1, 2),
    "eq(3, 4) refused": lambda m: m.eq(3, 4),
    "pow(3, 2) refused": lambda m: m.pow(3, 2),
    "atleast_1d(a, b)": lambda m: m.atleast_1d(m.tensor(1.0), m.ones(2))[0],
    "atleast_2d([a, b])": lambda m: m.atleast_2d([m.tensor(1.0), m.ones(2)])[1],
    "atleast_3d((a,)) is a tuple": lambda m: len(m.atleast_3d((m.ones(2),))),
    "atleast_1d() is ()": lambda m: m.atleast_1d(),
    "atleast_3d(a)": lambda m: m.atleast_3d(m.ones(2, 3)),
    "frexp 0-d exponent": lambda m: m.frexp(m.tensor(8.0))[1],
    "frexp 0-d mantissa": lambda m: m.frexp(m.tensor(8.0))[0],
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIAL_CASES))
def test_differential_cases(name):
    f = DIFFERENTIAL_CASES[name]
    _same(_run(f, ec), _run(f, torch))


_X = np.arange(24.0).reshape(2, 3, 4)
STAR_CASES = {
    "permute(dims=)": lambda m: m.tensor(_X).permute(dims=(2, 0, 1)),
    "torch.permute(dims=)": lambda m: m.permute(m.tensor(_X), dims=(2, 0, 1)),
    "view(size=)": lambda m: m.tensor(_X).view(size=(4, 6)),
    "reshape(shape=)": lambda m: m.tensor(_X).reshape(shape=(6, 4)),
    "repeat(repeats=)": lambda m: m.tensor(_X).repeat(repeats=(1, 2, 1)),
    "expand(size=)": lambda m: m.tensor(_X)[:, :1].expand(size=(2, 3, 4)),
    "flip(0, 2)": lambda m: m.tensor(_X).flip(0, 2),
    "flip((0, 2))": lambda m: m.tensor(_X).flip((0, 2)),
    "flip(dims=[1])": lambda m: m.tensor(_X).flip(dims=[1]),
    "torch.flip(x, (0,))": lambda m: m.flip(m.tensor(_X), (0,)),
    "tile(2)": lambda m: m.tensor(_X).tile(2),
    "tile(2, 1)": lambda m: m.tensor(_X).tile(2, 1),
    "tile(dims=)": lambda m: m.tensor(_X).tile(dims=(2,)),
    "view(shape=) refused": lambda m: m.tensor(_X).view(shape=(24,)),
    "permute both ways refused": lambda m: m.tensor(_X).permute(2, 0, 1, dims=(2, 0, 1)),
}


@pytest.mark.parametrize("name", sorted(STAR_CASES))
def test_sizes_and_dims_as_varargs_or_keyword(name):
    f = STAR_CASES[name]
    _same(_run(f, ec), _run(f, torch))
