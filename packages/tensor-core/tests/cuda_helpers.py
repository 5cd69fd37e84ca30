"""Shared helpers of the CUDA tests (test_cuda_*.py).

Skipping: every CUDA test carries ``@pytest.mark.cuda``; conftest.py's
``pytest_runtest_setup`` calls :func:`require_cuda` for them.  Without a usable
CUDA device they skip, with the reason ember gives -- unless the environment
says a GPU is expected (``EMBER_EXPECT_CUDA=1``, which ``make gpu-check`` sets
on a machine where nvidia-smi lists a GPU): then they fail, so that a GPU
machine on which ember cannot use CUDA never reads as a pass.

Checking: :func:`check_op` runs one function on CPU tensors and on CUDA tensors
made from the same values (views built on each device, so non-contiguous inputs
stay non-contiguous on CUDA) and compares the results with :func:`compare`:
same dtype and shape, the CUDA result on CUDA, values within a tolerance by
dtype (fp16/bf16 are computed in fp32 on both devices, so they may differ by an
ulp of the stored type).  An op that has no CUDA implementation raises
``NotImplementedError``: its test fails, unless the op is listed in
EXPECTED_MISSING, in which case it is reported as xfail (and listed in
``make gpu-check``'s summary).

Nothing here touches CUDA at import time: the test modules must import and skip
fast on machines without a GPU.
"""

import math
import os

import numpy as np
import pytest

import ember_core as ec

# Ops allowed to raise NotImplementedError on CUDA for now (issue 15 allows a
# clear NotImplementedError per linalg decomposition left to cuSOLVER later; they
# must be listed in the tensor-core README).  Keep this list short: everything
# else the CPU tensor core has must run on CUDA.
EXPECTED_MISSING = (
    "geqrf",
    "_linalg_eigh",
    "_linalg_svd",
    "_linalg_lstsq",
    # the LAPACK-only decompositions and solvers (README: "linalg on CUDA"), until
    # cuSOLVER runs them; the matmul family runs on cuBLAS and is not listed
    "_linalg_inv_ex",
    "inverse",
    "_linalg_det",
    "_linalg_slogdet",
    "logdet",
    "_linalg_solve",
    "_linalg_cholesky_ex",
    "cholesky_solve",
    "cholesky_inverse",
    "_linalg_solve_triangular",
    "triangular_solve",
    "_linalg_lu_factor_ex",
    "_linalg_qr",
    "_linalg_pinv",
    "matrix_exp",
)

EXPECT_ENV = "EMBER_EXPECT_CUDA"
# Self-test of the tables without a GPU: EMBER_CUDA_TESTS_ON=cpu runs the
# table-driven modules (those with SELFTEST_OK = True) with "cpu" standing in for
# "cuda", so their argument makers and comparisons are checked on any machine.
CUDA = os.environ.get("EMBER_CUDA_TESTS_ON", "cuda")
SELFTEST = CUDA != "cuda"

ALL_DTYPES = (
    ec.bool,
    ec.uint8,
    ec.int8,
    ec.int16,
    ec.int32,
    ec.int64,
    ec.float16,
    ec.bfloat16,
    ec.float32,
    ec.float64,
)
FLOAT_DTYPES = (ec.float16, ec.bfloat16, ec.float32, ec.float64)
INT_DTYPES = (ec.uint8, ec.int8, ec.int16, ec.int32, ec.int64)
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES
LARGE = (1 << 20) + 3  # many blocks, and not a multiple of any vector width
# dtypes the large non-contiguous variants run for (one per element size, and bf16)
LARGE_NC_DTYPES = (ec.bool, ec.int16, ec.bfloat16, ec.float32, ec.int64)

_reason = []


def unavailable_reason():
    """None when ember can use a CUDA device, else why not (ember's own words)."""
    if _reason:
        return _reason[0]
    cuda = getattr(ec, "cuda", None)
    if cuda is None or not hasattr(cuda, "is_available"):
        why = "ember_core has no `cuda` module yet (its CUDA backend is not built)"
    else:
        try:
            ok = bool(cuda.is_available())
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            ok, why = False, f"ember_core.cuda.is_available() raised {type(e).__name__}: {e}"
        else:
            why = None
        if not ok and why is None:
            why = "ember_core.cuda.is_available() is False"
            try:
                ec.empty(1, device="cuda")
            except Exception as e:  # noqa: BLE001 - the message says why
                why += f"; creating a CUDA tensor says: {type(e).__name__}: {e}"
    _reason.append(why)
    return why


def cuda_expected():
    return os.environ.get(EXPECT_ENV, "") not in ("", "0")


def require_cuda(item=None):
    """Skip (no GPU) or fail (GPU expected) when ember cannot use CUDA."""
    if SELFTEST:
        if item is not None and getattr(item.module, "SELFTEST_OK", False):
            return
        pytest.skip(f"EMBER_CUDA_TESTS_ON={CUDA}: only the table-driven modules run")
    why = unavailable_reason()
    if why is None:
        return
    if cuda_expected():
        pytest.fail(f"{EXPECT_ENV}=1 but ember cannot use CUDA: {why}", pytrace=False)
    pytest.skip(f"no CUDA: {why}")


def has_module(name):
    try:
        __import__(name)
    except ImportError:
        return False
    return True


# --- values -------------------------------------------------------------------------


def np_dtype(dtype):
    return np.dtype(np.float32) if dtype is ec.bfloat16 else np.dtype(dtype.numpy)


def values(shape, dtype, rng, low=-3.0, high=3.0, *, nonzero=False, distinct=False):
    """Random NumPy values for ``dtype`` within [low, high] (clipped to the dtype)."""
    shape = tuple(shape)
    n = math.prod(shape)
    if dtype is ec.bool:
        v = rng.random(shape) < 0.5
        return np.ones(shape, bool) if nonzero else v
    if dtype.is_floating_point:
        if distinct:
            # distinct and exactly representable: a permutation of a grid
            grid = np.linspace(low, high, max(n, 1))[:n]
            v = rng.permutation(grid).reshape(shape)
        else:
            v = rng.uniform(low, high, shape)
        if nonzero:
            v = np.where(np.abs(v) < 0.25, 0.25 + np.abs(v), v)
        return v.astype(np_dtype(dtype))
    info = np.iinfo(dtype.numpy)
    lo, hi = max(int(math.floor(low)), info.min), min(int(math.ceil(high)), info.max)
    if distinct and hi - lo + 1 < n:
        lo, hi = info.min, info.max
    v = rng.integers(lo, hi + 1, shape, dtype=np.int64)
    if nonzero:
        v = np.where(v == 0, 1, v)
    return v.astype(dtype.numpy)


SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -3.0]


# --- tensors on a device ------------------------------------------------------------

LAYOUTS = ("contiguous", "transposed", "stepped", "offset", "expanded")


def tensor(vals, dtype, device, layout="contiguous"):
    """A ``dtype`` tensor on ``device`` holding ``vals`` in the given memory layout.

    The view is built on ``device`` itself (``.cuda()`` of a stepped view would
    make it contiguous).  ``expanded`` broadcasts along dim 0 (vals' dim 0 must be
    1 or the result repeats vals[0:1]); ``offset`` starts one element into its
    storage (misaligned for vector loads)."""
    vals = np.asarray(vals)
    if layout == "contiguous" or vals.ndim == 0:
        return ec.tensor(vals, dtype=dtype, device=device)
    if layout == "transposed":
        base = ec.tensor(np.ascontiguousarray(vals.T), dtype=dtype, device=device)
        return base.permute(*reversed(range(vals.ndim)))
    if layout == "stepped":
        big = np.zeros(tuple(2 * s + 1 for s in vals.shape), dtype=vals.dtype)
        big[tuple(slice(1, None, 2) for _ in vals.shape)] = vals
        base = ec.tensor(big, dtype=dtype, device=device)
        return base[tuple(slice(1, None, 2) for _ in vals.shape)]
    if layout == "offset":
        flat = np.concatenate([np.zeros(1, vals.dtype), vals.reshape(-1)])
        base = ec.tensor(flat, dtype=dtype, device=device)
        return base[1:].view(*vals.shape)
    if layout == "expanded":
        row = ec.tensor(np.ascontiguousarray(vals[:1]), dtype=dtype, device=device)
        return row.expand(*vals.shape)
    raise ValueError(layout)


def expanded_values(vals):
    """What ``tensor(vals, ..., 'expanded')`` holds."""
    vals = np.asarray(vals)
    return np.broadcast_to(vals[:1], vals.shape) if vals.ndim else vals


def on(device, obj):
    """``obj`` with every CPU tensor inside (tuples, lists, dicts) moved to ``device``."""
    if isinstance(obj, ec.Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(on(device, o) for o in obj)
    if isinstance(obj, list):
        return [on(device, o) for o in obj]
    if isinstance(obj, dict):
        return {k: on(device, v) for k, v in obj.items()}
    return obj


def to_np(t):
    """A NumPy copy of a tensor's values, from any device (bf16 widened to fp32)."""
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype is ec.bfloat16:
        t = t.float()
    return np.array(t.numpy(), copy=True)


# --- comparison ---------------------------------------------------------------------

# CUDA result vs CPU result, both computed by ember: PyTorch's assert_close
# defaults, fp16 allowing one ulp of rounding difference after an fp32 compute.
TOL = {
    ec.float16: (2e-3, 1e-5),
    ec.bfloat16: (1.6e-2, 1e-5),
    ec.float32: (1.3e-6, 1e-5),
    ec.float64: (1e-7, 1e-7),
}
# Reductions: the summation order differs between devices.
REDUCTION_TOL = {
    ec.float16: (4e-3, 1e-3),
    ec.bfloat16: (2e-2, 1e-2),
    ec.float32: (2e-5, 2e-5),
    ec.float64: (1e-10, 1e-10),
}
# Special functions (series, continued fractions): a few more ulps on the GPU.
SPECIAL_TOL = {
    ec.float16: (4e-3, 1e-4),
    ec.bfloat16: (2e-2, 1e-4),
    ec.float32: (2e-5, 2e-5),
    ec.float64: (1e-9, 1e-10),
}


def _close(g, e, rtol, atol):
    """A fast all-close (NaN == NaN, inf == inf of the same sign) for the common case."""
    g = g.astype(np.float64, copy=False)
    e = e.astype(np.float64, copy=False)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.abs(g - e) <= atol + rtol * np.abs(e)
        ok |= (g == e) | (np.isnan(g) & np.isnan(e))
    return bool(ok.all())


def compare(got, exp, *, tol=None, where="result", check_device=True):
    """Assert a CUDA result ``got`` equals the CPU result ``exp``.

    ``tol`` maps dtype -> (rtol, atol) (default TOL); non-float dtypes compare
    exactly; NaNs are equal to NaNs."""
    tol = TOL if tol is None else tol
    if isinstance(exp, ec.Tensor):
        assert isinstance(got, ec.Tensor), f"{where}: got {type(got).__name__}, expected Tensor"
        if check_device:
            assert got.device.type == CUDA, f"{where}: result on {got.device}, not {CUDA}"
        assert got.dtype == exp.dtype, f"{where}: dtype {got.dtype} != CPU's {exp.dtype}"
        assert tuple(got.shape) == tuple(exp.shape), (
            f"{where}: shape {tuple(got.shape)} != CPU's {tuple(exp.shape)}"
        )
        g, e = to_np(got), to_np(exp)
        if exp.dtype.is_floating_point or exp.dtype.is_complex:
            rtol, atol = tol.get(exp.dtype, TOL.get(exp.dtype, (1e-7, 1e-7)))
            if _close(g, e, rtol, atol):
                return
            np.testing.assert_allclose(
                g.astype(np.float64),
                e.astype(np.float64),
                rtol=rtol,
                atol=atol,
                equal_nan=True,
                err_msg=f"{where} ({exp.dtype}, shape {tuple(exp.shape)})",
            )
        elif not np.array_equal(g, e):
            np.testing.assert_array_equal(
                g, e, err_msg=f"{where} ({exp.dtype}, shape {tuple(exp.shape)})"
            )
        return
    if isinstance(exp, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{where}: got {type(got).__name__}"
        assert len(got) == len(exp), f"{where}: {len(got)} items != CPU's {len(exp)}"
        if hasattr(exp, "_fields"):
            assert getattr(got, "_fields", None) == exp._fields, f"{where}: field names"
        for i, (g, e) in enumerate(zip(got, exp)):
            compare(g, e, tol=tol, where=f"{where}[{i}]", check_device=check_device)
        return
    if isinstance(exp, float) and math.isnan(exp):
        assert isinstance(got, float) and math.isnan(got), f"{where}: {got!r} != nan"
        return
    if isinstance(exp, float):
        assert got == pytest.approx(exp, rel=1e-6, abs=1e-6), f"{where}: {got!r} != {exp!r}"
        return
    assert got == exp, f"{where}: {got!r} != CPU's {exp!r}"


def bits(t):
    """The raw bit patterns of a tensor's values (for bit-exact comparisons)."""
    a = np.ascontiguousarray(
        t.cpu().view(ec.int16).numpy() if t.dtype is ec.bfloat16 else t.cpu().numpy()
    )
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype != bool else a


# --- running an op on both devices --------------------------------------------------


def expected_missing(name):
    return name in EXPECTED_MISSING


def _missing(err, op_name):
    """Fail for an op without CUDA support (xfail if listed in EXPECTED_MISSING)."""
    if op_name is not None and expected_missing(op_name):
        pytest.xfail(f"{op_name}: no CUDA implementation yet (EXPECTED_MISSING): {err}")
    pytest.fail(
        f"{op_name or 'op'} has no CUDA implementation: NotImplementedError: {err}",
        pytrace=False,
    )


def run_cuda(fn, op_name=None):
    """fn() on CUDA; NotImplementedError fails the test (or xfails, if expected)."""
    try:
        return fn()
    except NotImplementedError as e:
        _missing(e, op_name)


def check_op(fn, make, *, op_name=None, tol=None, where=None, post=None):
    """Compare ``fn(*args, **kwargs)`` on CPU and on CUDA.

    ``make(device)`` builds ``(args, kwargs)`` on ``device`` from the same values
    each time.  If the CPU raises, CUDA must raise an exception of the same kind
    (not NotImplementedError).  ``post(result)`` maps results before comparing
    (e.g. to drop tie-dependent indices).  Returns the CUDA result."""
    where = where or op_name or getattr(fn, "__name__", "op")
    args, kwargs = make("cpu")
    try:
        exp = fn(*args, **kwargs)
    except Exception as cpu_err:  # noqa: BLE001 - CUDA must refuse the same way
        if os.environ.get("EMBER_CUDA_TESTS_LOG_REFUSED"):  # to review the tables
            with open(os.environ["EMBER_CUDA_TESTS_LOG_REFUSED"], "a") as f:
                f.write(f"{where}: {type(cpu_err).__name__}: {str(cpu_err)[:150]}\n")
        cargs, ckwargs = make(CUDA)
        try:
            got = fn(*cargs, **ckwargs)
        except type(cpu_err):
            return None  # refused alike (PyTorch too raises NotImplementedError per dtype)
        except NotImplementedError as e:
            _missing(e, op_name)
        except Exception as e:  # noqa: BLE001
            pytest.fail(
                f"{where}: CPU raised {type(cpu_err).__name__}({cpu_err}) but CUDA raised "
                f"{type(e).__name__}({e})",
                pytrace=False,
            )
        else:
            pytest.fail(
                f"{where}: CPU raised {type(cpu_err).__name__}({cpu_err}) but CUDA returned "
                f"{type(got).__name__}",
                pytrace=False,
            )
        return None
    cargs, ckwargs = make(CUDA)
    got = run_cuda(lambda: fn(*cargs, **ckwargs), op_name)
    if post is not None:
        exp, got = post(exp), post(got)
    compare(got, exp, tol=tol, where=where)
    return got


class Failures:
    """Collects the failures of several sub-cases so one test reports them all."""

    def __init__(self, title):
        self.title = title
        self.items = []
        self.expected = []  # sub-cases of EXPECTED_MISSING ops that raised NotImplementedError

    def run(self, label, fn):
        try:
            fn()
        except pytest.xfail.Exception as e:  # (a Failed subclass) the other sub-cases still run
            self.expected.append(f"[{label}] {str(e).strip()}")
        except (pytest.fail.Exception, AssertionError) as e:
            self.items.append(f"[{label}] {str(e).strip()}")
        except pytest.skip.Exception:
            raise
        except Exception as e:  # noqa: BLE001 - every sub-case reports
            self.items.append(f"[{label}] {type(e).__name__}: {e}")

    def check(self):
        if self.items:
            text = "\n".join(self.items)
            if len(text) > 6000:
                text = text[:6000] + f"\n... ({len(self.items)} failing sub-cases in all)"
            if self.expected:
                text += f"\n(and {len(self.expected)} expected-missing: {self.expected[:5]})"
            pytest.fail(f"{self.title}: {len(self.items)} failing sub-case(s)\n{text}", False)
        if self.expected:
            pytest.xfail(f"{'; '.join(self.expected)[:1500]}")


def synchronize():
    if not SELFTEST:
        ec.cuda.synchronize()


# --- argument specs: tensors built the same way on each device ----------------------


class Spec:
    """A tensor to build on each device: values, dtype and memory layout."""

    def __init__(self, vals, dtype, layout="contiguous"):
        self.vals = np.asarray(vals)
        self.dtype = dtype
        self.layout = layout

    def build(self, device):
        return tensor(self.vals, self.dtype, device, self.layout)


def build(obj, device):
    """``obj`` with every Spec inside (tuples, lists, dicts) built on ``device``."""
    if isinstance(obj, Spec):
        return obj.build(device)
    if isinstance(obj, tuple):
        return tuple(build(o, device) for o in obj)
    if isinstance(obj, list):
        return [build(o, device) for o in obj]
    if isinstance(obj, dict):
        return {k: build(v, device) for k, v in obj.items()}
    return obj


def maker(*args, **kwargs):
    """A ``make(device)`` for check_op from specs and plain values."""

    def make(device):
        return build(args, device), build(kwargs, device)

    return make


def idx(vals):
    """An int64 index tensor spec."""
    return Spec(np.asarray(vals, dtype=np.int64), ec.int64)


def run_table(title, cases, dtype, tol=None):
    """Run [(label, fn, make, op_name[, post])] and report every failing case at once."""
    fails = Failures(title)
    for case in cases:
        label, fn, make, op_name = case[:4]
        post = case[4] if len(case) > 4 else None
        fails.run(
            label,
            lambda fn=fn, make=make, op_name=op_name, label=label, post=post: check_op(
                fn, make, op_name=op_name, tol=tol, where=f"{label} ({dtype})", post=post
            ),
        )
    fails.check()


def equal(a, b):
    """torch.equal across devices: same shape and the same values (NaN != NaN)."""
    return tuple(a.shape) == tuple(b.shape) and bool(np.array_equal(to_np(a), to_np(b)))
