"""Indexing on CUDA against the CPU: basic/advanced/boolean indexing and
assignment, index_put_ (with accumulate), gather/scatter/scatter_add/
scatter_reduce, index_select/index_add/index_copy/index_fill/index_reduce,
masked_fill/masked_select/masked_scatter, where, nonzero/argwhere, take/put,
take_along_dim -- every dtype, small and large (many blocks), contiguous and not.

Out-of-range indices: kernel-side errors surface as a Python exception at the
next synchronisation (and at the launch itself under EMBER_LAUNCH_BLOCKING=1).
Those run in a subprocess, since a device-side assert may leave the CUDA
context unusable (as in PyTorch).
"""

import os
import subprocess
import sys
import textwrap
import zlib

import numpy as np
import pytest
from cuda_helpers import (
    ALL_DTYPES,
    LARGE,
    REDUCTION_TOL,
    SELFTEST,
    Spec,
    idx,
    maker,
    run_table,
    values,
)

import ember_core as ec

SELFTEST_OK = True
pytestmark = pytest.mark.cuda


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _perm_index(rng, shape, dim, size):
    """An index of ``shape`` along ``dim`` with no repeats within each line
    (scatter without accumulation is only deterministic so)."""
    shape = list(shape)
    n = shape[dim]
    assert n <= size
    keys = rng.random([*shape[:dim], size, *shape[dim + 1 :]])
    order = np.argsort(keys, axis=dim)
    return np.take(order, np.arange(n), axis=dim)


def _getitem(key):
    def f(x, *tensors):
        k = key(*tensors) if callable(key) else key
        return x[k]

    return f


def _setitem(key, value_is_tensor=False):
    def f(x, *rest):
        x = x.clone()
        if value_is_tensor:
            *tensors, v = rest
        else:
            tensors, v = rest[:-1], rest[-1]
        k = key(*tensors) if callable(key) else key
        x[k] = v
        return x

    return f


def indexing_cases(dtype, rng):
    shape = (5, 6, 7)
    xv = values(shape, dtype, rng)
    x = Spec(xv, dtype)
    xt = Spec(xv, dtype, "transposed")
    i4 = idx([0, 4, 2, 2])
    j3 = idx([5, 0, 3])
    mask = Spec(rng.random(shape) < 0.4, ec.bool)
    mask0 = Spec(np.array([True, False, True, True, False]), ec.bool)
    one = np.ones((), dtype=np.float64).astype(xv.dtype)
    val = Spec(one, dtype)  # a 0-d value
    src = Spec(values((3, 6, 7), dtype, rng), dtype)
    cases = [
        ("x[1]", _getitem(1), maker(x), "__getitem__"),
        ("x[-1, 1:5:2]", _getitem((-1, slice(1, 5, 2))), maker(x), "__getitem__"),
        ("x[..., 2]", _getitem((Ellipsis, 2)), maker(x), "__getitem__"),
        ("x[None, 1:3]", _getitem((None, slice(1, 3))), maker(x), "__getitem__"),
        ("xT[1:4, ::2]", _getitem((slice(1, 4), slice(None, None, 2))), maker(xt), "__getitem__"),
        ("x[idx]", _getitem(lambda i: i), maker(x, i4), "__getitem__"),
        ("x[:, idx]", _getitem(lambda i: (slice(None), i)), maker(x, j3), "__getitem__"),
        (
            "x[idx, idx] broadcast",
            _getitem(lambda i, j: (i[:, None], j)),
            maker(x, i4, j3),
            "__getitem__",
        ),
        ("x[idx, :, idx]", _getitem(lambda i: (i, slice(None), i)), maker(x, i4), "__getitem__"),
        ("xT[idx]", _getitem(lambda i: i), maker(xt, i4), "__getitem__"),
        ("x[mask]", _getitem(lambda m: m), maker(x, mask), "__getitem__"),
        ("x[mask0]", _getitem(lambda m: m), maker(x, mask0), "__getitem__"),
        ("x[[0, 2], 1]", _getitem(([0, 2], 1)), maker(x), "__getitem__"),
        ("x[1] = 0-d", _setitem(1, True), maker(x, val), "__setitem__"),
        ("x[1:4] = src", _setitem(slice(1, 4), True), maker(x, src), "__setitem__"),
        ("x[idx] = 0-d", _setitem(lambda i: i, True), maker(x, idx([0, 3]), val), "__setitem__"),
        ("x[mask] = 0-d", _setitem(lambda m: m, True), maker(x, mask, val), "__setitem__"),
        ("x[mask0] = src", _setitem(lambda m: m, True), maker(x, mask0, src), "__setitem__"),
        ("xT[:, 2] = 0-d", _setitem((slice(None), 2), True), maker(xt, val), "__setitem__"),
    ]
    # index_put_ / index_put, with and without accumulation (duplicates accumulate)
    vals4 = Spec(values((4, 6, 7), dtype, rng), dtype)
    cases += [
        (
            "index_put",
            lambda x, i, v: ec.index_put(x, (i,), v),
            maker(x, idx([0, 3, 1, 4]), vals4),
            "index_put",
        ),
        (
            "index_put accumulate (duplicates)",
            lambda x, i, v: ec.index_put(x, (i,), v, accumulate=True),
            maker(x, idx([0, 3, 3, 0]), vals4),
            "index_put",
        ),
        (
            "index_put_ accumulate, 2 indices",
            lambda x, i, j, v: x.clone().index_put_((i, j), v, accumulate=True),
            maker(x, idx([0, 1, 0, 1]), idx([2, 2, 2, 5]), Spec(values((4, 7), dtype, rng), dtype)),
            "index_put_",
        ),
    ]
    # gather / scatter family along each dim
    for dim in (0, 1, 2):
        n = shape[dim]
        gshape = list(shape)
        gshape[dim] = 4
        gi = idx(rng.integers(0, n, gshape))
        cases.append(
            (f"gather dim={dim}", lambda x, i, d=dim: ec.gather(x, d, i), maker(x, gi), "gather")
        )
        cases.append(
            (
                f"gather xT dim={dim}",
                lambda x, i, d=dim: ec.gather(x, d, i),
                maker(xt, gi),
                "gather",
            )
        )
        si = idx(_perm_index(rng, gshape, dim, n))
        sv = Spec(values(gshape, dtype, rng), dtype)
        cases.append(
            (
                f"scatter dim={dim}",
                lambda x, i, s, d=dim: ec.scatter(x, d, i, s),
                maker(x, si, sv),
                "scatter",
            )
        )
        cases.append(
            (
                f"scatter value dim={dim}",
                lambda x, i, d=dim: ec.scatter(x, d, i, value=2),
                maker(x, si),
                "scatter",
            )
        )
        cases.append(
            (
                f"scatter_ xT dim={dim}",
                lambda x, i, s, d=dim: x.clone().scatter_(d, i, s),
                maker(xt, si, sv),
                "scatter_",
            )
        )
        dup = idx(rng.integers(0, n, gshape))  # duplicates: accumulating reductions
        cases.append(
            (
                f"scatter_add dim={dim}",
                lambda x, i, s, d=dim: ec.scatter_add(x, d, i, s),
                maker(x, dup, sv),
                "scatter_add",
            )
        )
        for red in ("sum", "prod", "mean", "amax", "amin"):
            for include_self in (True, False):
                cases.append(
                    (
                        f"scatter_reduce {red} include_self={include_self} dim={dim}",
                        lambda x, i, s, d=dim, r=red, inc=include_self: ec.scatter_reduce(
                            x, d, i, s, r, include_self=inc
                        ),
                        maker(x, dup, sv),
                        "scatter_reduce",
                    )
                )
        sel = idx([n - 1, 0, 1, 0])
        cases.append(
            (
                f"index_select dim={dim}",
                lambda x, i, d=dim: ec.index_select(x, d, i),
                maker(x, sel),
                "index_select",
            )
        )
        cases.append(
            (
                f"index_select xT dim={dim}",
                lambda x, i, d=dim: ec.index_select(x, d, i),
                maker(xt, sel),
                "index_select",
            )
        )
        srcshape = list(shape)
        srcshape[dim] = 4
        srcv = Spec(values(srcshape, dtype, rng), dtype)
        cases.append(
            (
                f"index_add dim={dim}",
                lambda x, i, s, d=dim: ec.index_add(x, d, i, s, alpha=2),
                maker(x, sel, srcv),
                "index_add",
            )
        )
        uniq = idx(rng.permutation(n)[:2])
        srcshape[dim] = 2
        src2 = Spec(values(srcshape, dtype, rng), dtype)
        cases.append(
            (
                f"index_copy dim={dim}",
                lambda x, i, s, d=dim: ec.index_copy(x, d, i, s),
                maker(x, uniq, src2),
                "index_copy",
            )
        )
        cases.append(
            (
                f"index_fill dim={dim}",
                lambda x, i, d=dim: ec.index_fill(x, d, i, 3),
                maker(x, sel),
                "index_fill",
            )
        )
        for red in ("prod", "mean", "amax", "amin"):
            cases.append(
                (
                    f"index_reduce {red} dim={dim}",
                    lambda x, i, s, d=dim, r=red: ec.index_reduce(x, d, i, s, r),
                    maker(x, sel, srcv),
                    "index_reduce",
                )
            )
    # masks, where, nonzero, take/put
    cases += [
        ("masked_fill scalar", lambda x, m: ec.masked_fill(x, m, 2), maker(x, mask), "masked_fill"),
        (
            "masked_fill 0-d",
            lambda x, m, v: ec.masked_fill(x, m, v),
            maker(x, mask, val),
            "masked_fill",
        ),
        (
            "masked_fill_ xT",
            lambda x, m: x.clone().masked_fill_(m, 1),
            maker(xt, mask),
            "masked_fill_",
        ),
        (
            "masked_fill broadcast mask",
            lambda x, m: ec.masked_fill(x, m[:, None, None], 1),
            maker(x, mask0),
            "masked_fill",
        ),
        ("masked_select", lambda x, m: ec.masked_select(x, m), maker(x, mask), "masked_select"),
        ("masked_select xT", lambda x, m: ec.masked_select(x, m), maker(xt, mask), "masked_select"),
        (
            "masked_scatter",
            lambda x, m, s: ec.masked_scatter(x, m, s),
            maker(x, mask, Spec(values(shape, dtype, rng), dtype)),
            "masked_scatter",
        ),
        ("where(cond)", lambda m: ec.where(m), maker(mask), "where"),
        ("nonzero", lambda x: ec.nonzero(x), maker(x), "nonzero"),
        ("nonzero as_tuple", lambda x: ec.nonzero(x, as_tuple=True), maker(xt), "nonzero"),
        ("argwhere", lambda x: ec.argwhere(x), maker(x), "argwhere"),
        ("take", lambda x, i: ec.take(x, i), maker(xt, idx([[0, 209], [-1, 17]])), "take"),
        (
            "take_along_dim",
            lambda x, i: ec.take_along_dim(x, i, 1),
            maker(x, idx(rng.integers(0, 6, (5, 2, 7)))),
            "take_along_dim",
        ),
        (
            "unravel_index",
            lambda i: ec.unravel_index(i, (5, 6, 7)),
            maker(idx([0, 209, 17, 100])),
            "unravel_index",
        ),
        (
            "put",
            lambda x, i, s: ec.put(x, i, s),
            maker(x, idx([0, 5, -1]), Spec(values((3,), dtype, rng), dtype)),
            "put",
        ),
        (
            "put_ accumulate",
            lambda x, i, s: x.clone().put_(i, s, accumulate=True),
            maker(x, idx([0, 5, 5, 0]), Spec(values((4,), dtype, rng), dtype)),
            "put_",
        ),
    ]
    return cases


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_indexing(dtype):
    run_table(
        f"indexing on CUDA ({dtype})",
        indexing_cases(dtype, _rng("idx", dtype)),
        dtype,
        tol=REDUCTION_TOL,
    )


@pytest.mark.parametrize("dtype", [ec.float32, ec.int64, ec.bfloat16, ec.bool, ec.uint8], ids=str)
def test_indexing_large(dtype):
    """Sizes that need many blocks (and nonzero's two passes)."""
    rng = _rng("idx-large", dtype)
    xv = values((LARGE,), dtype, rng)
    x = Spec(xv, dtype)
    x2 = Spec(values((1031, 1029), dtype, rng), dtype, "transposed")
    gi = idx(rng.integers(0, LARGE, LARGE))
    mask = Spec(rng.random(LARGE) < 0.3, ec.bool)
    sv = Spec(values((LARGE,), dtype, rng), dtype)
    cases = [
        ("gather", lambda x, i: ec.gather(x, 0, i), maker(x, gi), "gather"),
        ("index_select", lambda x, i: ec.index_select(x, 0, i), maker(x, gi), "index_select"),
        ("x[idx]", lambda x, i: x[i], maker(x, gi), "__getitem__"),
        ("x[mask]", lambda x, m: x[m], maker(x, mask), "__getitem__"),
        ("masked_fill", lambda x, m: ec.masked_fill(x, m, 1), maker(x, mask), "masked_fill"),
        ("nonzero", lambda x: ec.nonzero(x), maker(x), "nonzero"),
        ("nonzero 2-d transposed", lambda x: ec.nonzero(x), maker(x2), "nonzero"),
        ("where", lambda m, x, s: ec.where(m, x, s), maker(mask, x, sv), "where"),
        (
            "scatter_add",
            lambda x, i, s: ec.scatter_add(x, 0, i, s),
            maker(x, gi, sv),
            "scatter_add",
        ),
        (
            "index_put accumulate",
            lambda x, i, s: ec.index_put(x, (i,), s, accumulate=True),
            maker(x, gi, sv),
            "index_put",
        ),
    ]
    # sums of duplicate indices add in an unspecified order on CUDA (atomics, as in
    # PyTorch), each step rounding to bfloat16: a few ulps of the largest partial sum
    tol = {ec.float32: (1e-5, 1e-4), ec.bfloat16: (2e-2, 1e-1)}
    run_table(f"large indexing on CUDA ({dtype})", cases, dtype, tol=tol)


# --- kernel-side errors -------------------------------------------------------------

BAD_INDEX = """
import ember_core as ec
x = ec.zeros(10, device="cuda")
i = ec.tensor([0, 3, {bad}], device="cuda")
try:
    y = {expr}
    print("RETURNED", flush=True)
    ec.cuda.synchronize()
except Exception as e:
    print("RAISED", type(e).__name__, isinstance(e, RuntimeError), str(e).replace("\\n", " "))
else:
    print("NO ERROR")
"""


def _run(code, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return p.stdout + p.stderr


@pytest.mark.skipif(SELFTEST, reason="needs a real GPU")
@pytest.mark.parametrize(
    "expr,op",
    [
        ("ec.gather(x, 0, i)", "gather"),
        ("ec.index_select(x, 0, i)", "index_select"),
        ("x[i]", "index"),
        ("ec.take(x, i)", "take"),
        ("ec.scatter_add(x, 0, i, ec.ones(3, device='cuda'))", "scatter_add"),
    ],
)
def test_out_of_range_index_raises_by_the_next_synchronize(expr, op):
    out = _run(BAD_INDEX.format(bad=12, expr=expr))
    assert "RAISED" in out, f"no exception for an out-of-range index in {op}:\n{out[-2000:]}"
    line = out[out.index("RAISED") :].splitlines()[0]
    assert " True " in line, f"not a RuntimeError subclass: {line}"
    assert "index" in line.lower() or "assert" in line.lower(), line


@pytest.mark.skipif(SELFTEST, reason="needs a real GPU")
def test_negative_out_of_range_index_raises():
    out = _run(BAD_INDEX.format(bad=-11, expr="ec.index_select(x, 0, i)"))
    assert "RAISED" in out, out[-2000:]


@pytest.mark.skipif(SELFTEST, reason="needs a real GPU")
def test_launch_blocking_raises_at_the_launch():
    """EMBER_LAUNCH_BLOCKING=1: the op itself raises (no RETURNED before RAISED)."""
    out = _run(BAD_INDEX.format(bad=12, expr="ec.gather(x, 0, i)"), {"EMBER_LAUNCH_BLOCKING": "1"})
    assert "RAISED" in out, out[-2000:]
    assert "RETURNED" not in out, f"gather returned before raising under launch blocking:\n{out}"
    assert "gather" in out.lower(), f"the error should name the op: {out[-1000:]}"


@pytest.mark.skipif(SELFTEST, reason="needs a real GPU")
def test_launch_blocking_results_are_right():
    out = _run(
        """
        import ember_core as ec
        x = ec.arange(10, device="cuda").float()
        y = (x * 2 + 1).sum()
        print("VALUE", y.item())
        """,
        {"EMBER_LAUNCH_BLOCKING": "1"},
    )
    assert "VALUE 100.0" in out, out[-2000:]
