"""complex, FFT and unsigned-integer behaviour against PyTorch (-m parity):
promotion of every dtype pair, elementwise values (branch cuts included) and
exception types, printing, torch.fft's transforms."""

import numpy as np
import pytest

import ember_core as ec

pytestmark = pytest.mark.parity
torch = pytest.importorskip("torch")

NAMES = [
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64", "complex64", "complex128", "uint16", "uint32", "uint64",
]  # fmt: skip


@pytest.mark.parametrize("a", NAMES)
def test_promote_types_matches_torch(a):
    for b in NAMES:
        try:
            want = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[-1]
        except RuntimeError:
            want = RuntimeError
        if want is RuntimeError:
            with pytest.raises(RuntimeError):
                ec.promote_types(getattr(ec, a), getattr(ec, b))
        else:
            assert ec.promote_types(getattr(ec, a), getattr(ec, b)).name == want, (a, b)


POINTS = [complex(x, y) for x in (-2.0, -0.5, -0.0, 0.0, 0.7, 3.0) for y in (-1.5, -0.0, 0.0, 2.0)]
UNARY = [
    "abs", "angle", "sgn", "neg", "conj", "exp", "exp2", "expm1", "log", "log2", "log10",
    "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "tanh", "asinh", "acosh", "atanh", "sigmoid", "reciprocal", "square", "sinc", "isnan",
    "isinf", "isfinite", "logical_not", "isreal",
    # rejected by PyTorch: the same exception type here
    "floor", "ceil", "trunc", "round", "frac", "sign", "signbit", "relu", "erf", "lgamma",
    "digamma", "bitwise_not", "deg2rad", "argmax", "max", "amax", "cumprod", "nansum",
]  # fmt: skip


def _run(lib, name, x):
    fn = getattr(lib, name)
    if name in ("argmax", "max", "amax", "nansum"):
        return fn(x)
    if name == "cumprod":
        return fn(x, 0)
    return fn(x)


def _compare(e_call, t_call, tol):
    try:
        want = t_call()
    except Exception as exc:  # noqa: BLE001 - the exception type is what is compared
        with pytest.raises(type(exc)):
            e_call()
        return
    got = e_call()
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    w = want.resolve_conj().numpy() if want.is_complex() else want.numpy()
    np.testing.assert_allclose(got.numpy(), w, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("dtype, tol", [("complex64", 1e-5), ("complex128", 1e-12)])
@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_torch(name, dtype, tol):
    a = np.array(POINTS, dtype=dtype)
    _compare(lambda: _run(ec, name, ec.tensor(a)), lambda: _run(torch, name, torch.tensor(a)), tol)


BINARY = [
    "add", "sub", "mul", "div", "pow", "eq", "ne", "logical_and", "logical_xor",
    "lt", "maximum", "fmod", "remainder", "floor_divide", "atan2", "hypot", "copysign",
]  # fmt: skip


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("other", ["complex", "float64", "int", "complex-number", "float"])
def test_binary_matches_torch(name, other):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64)
    if other == "complex":
        b = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64)
    elif other == "float64":
        b = rng.standard_normal(6)
    else:
        b = {"int": 3, "complex-number": 0.5 - 2j, "float": 1.5}[other]

    def call(lib):
        y = lib.tensor(b) if isinstance(b, np.ndarray) else b
        return getattr(lib, name)(lib.tensor(a), y)

    _compare(lambda: call(ec), lambda: call(torch), 1e-5)


@pytest.mark.parametrize(
    "values, dtype",
    [
        ([1 + 2j, 3 - 1j], "complex64"),
        ([1.5 + 2j, -3.25 - 1e-3j], "complex128"),
        ([[1e10 + 1j, 1j], [0, 1]], "complex64"),
        ([float("nan") + 1j, float("inf") - 2j, 1e-5 + 1e5j], "complex64"),
        ([0.1 + 0.25j, -7j], "complex64"),
        ([1, 2, 70000], "uint32"),
    ],
)
def test_printing_matches_torch(values, dtype):
    e = repr(ec.tensor(values, dtype=getattr(ec, dtype)))
    t = repr(torch.tensor(values, dtype=getattr(torch, dtype)))
    assert e == t.replace("torch.", "ember.")


@pytest.mark.parametrize(
    "call",
    [
        lambda L, x: L.fft.fft(x, n=7, norm="ortho"),
        lambda L, x: L.fft.ifft(x, dim=0),
        lambda L, x: L.fft.rfft(x.real, n=9),
        lambda L, x: L.fft.irfft(x, n=5, norm="forward"),
        lambda L, x: L.fft.hfft(x, dim=0),
        lambda L, x: L.fft.ihfft(x.real),
        lambda L, x: L.fft.fft2(x, s=(3, 8)),
        lambda L, x: L.fft.irfft2(x, s=(4, -1)),
        lambda L, x: L.fft.rfftn(x.real, dim=(0,)),
        lambda L, x: L.fft.irfftn(x),
        lambda L, x: L.fft.hfftn(x, s=(3, 7), norm="ortho"),
        lambda L, x: L.fft.ihfft2(x.real, dim=(1, 0)),
        lambda L, x: L.fft.fftshift(L.fft.fftfreq(9, 0.1)),
        lambda L, x: L.fft.ifftshift(L.fft.rfftfreq(8)),
    ],
)
def test_fft_matches_torch(call):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    _compare(lambda: call(ec, ec.tensor(a)), lambda: call(torch, torch.tensor(a)), 1e-10)
