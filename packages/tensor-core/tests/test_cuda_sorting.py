"""Sorting and searching on CUDA against the CPU: sort (stable and not,
ascending and descending, along each dim), argsort, msort, topk, kthvalue,
unique / unique_consecutive (with inverse and counts, along a dim),
searchsorted, bucketize, bincount, histc, isin -- every dtype, and lines long
enough for the multi-block / radix paths.

Values are distinct where indices are compared (ties make indices of an
unstable sort ambiguous); with ties only values and stable-sort indices are.
"""

import zlib

import numpy as np
import pytest
from cuda_helpers import (
    ALL_DTYPES,
    LARGE,
    REDUCTION_TOL,
    Spec,
    maker,
    run_table,
    values,
)

import ember_core as ec

SELFTEST_OK = True
pytestmark = pytest.mark.cuda


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _values_only(r):
    return r[0]


def sorting_cases(dtype, rng, shape=(6, 7, 33)):
    distinct = Spec(values(shape, dtype, rng, -100, 100, distinct=True), dtype)
    ties = Spec(values(shape, dtype, rng, -3, 3), dtype)
    ties_t = Spec(values(shape, dtype, rng, -3, 3), dtype, "transposed")
    floats = dtype.is_floating_point
    cases = []
    for dim in (-1, 0, 1):
        for desc in (False, True):
            tag = f"dim={dim} descending={desc}"
            cases += [
                (
                    f"sort stable ties {tag}",
                    lambda x, d=dim, s=desc: ec.sort(x, d, s, stable=True),
                    maker(ties),
                    "sort",
                ),
                (
                    f"sort stable ties transposed {tag}",
                    lambda x, d=dim, s=desc: ec.sort(x, d, s, stable=True),
                    maker(ties_t),
                    "sort",
                ),
                (
                    f"sort values {tag}",
                    lambda x, d=dim, s=desc: ec.sort(x, d, s),
                    maker(ties),
                    "sort",
                    _values_only,
                ),
                (
                    f"argsort stable {tag}",
                    lambda x, d=dim, s=desc: ec.argsort(x, d, s, stable=True),
                    maker(ties),
                    "argsort",
                ),
            ]
            if floats:  # distinct values: an unstable sort's indices are unique too
                cases.append(
                    (
                        f"sort distinct {tag}",
                        lambda x, d=dim, s=desc: ec.sort(x, d, s),
                        maker(distinct),
                        "sort",
                    )
                )
    cases.append(("msort", lambda x: ec.msort(x), maker(ties), "msort"))
    for k in (1, 5, 33):
        for largest in (True, False):
            cases.append(
                (
                    f"topk k={k} largest={largest} values",
                    lambda x, k=k, big=largest: ec.topk(x, k, -1, big),
                    maker(ties),
                    "topk",
                    _values_only,
                )
            )
            if floats:
                cases.append(
                    (
                        f"topk k={k} largest={largest} distinct",
                        lambda x, k=k, big=largest: ec.topk(x, k, -1, big),
                        maker(distinct),
                        "topk",
                    )
                )
        cases.append(
            (
                f"topk k={k} dim=0",
                lambda x, k=k: ec.topk(x, min(k, 6), 0),
                maker(ties),
                "topk",
                _values_only,
            )
        )
        cases.append(
            (
                f"kthvalue k={k}",
                lambda x, k=k: ec.kthvalue(x, k),
                maker(ties),
                "kthvalue",
                _values_only,
            )
        )
        if floats:
            cases.append(
                (
                    f"kthvalue k={k} distinct",
                    lambda x, k=k: ec.kthvalue(x, k, 1 if k < 7 else -1, keepdim=True),
                    maker(distinct),
                    "kthvalue",
                )
            )
    cases += [
        ("unique", lambda x: ec.unique(x), maker(ties), "unique"),
        (
            "unique inverse counts",
            lambda x: ec.unique(x, return_inverse=True, return_counts=True),
            maker(ties_t),
            "unique",
        ),
        (
            "unique dim=1",
            lambda x: ec.unique(x[:, :, :2], dim=1, return_counts=True),
            maker(ties),
            "unique",
        ),
        (
            "unique_consecutive",
            lambda x: ec.unique_consecutive(
                x.flatten().sort()[0], return_counts=True, return_inverse=True
            ),
            maker(ties),
            "unique_consecutive",
        ),
        (
            "unique_consecutive dim=1",
            lambda x: ec.unique_consecutive(x[:, :, :1].expand(6, 7, 3), dim=2),
            maker(ties),
            "unique_consecutive",
        ),
    ]
    if dtype is not ec.bool:
        seq = np.sort(values((40,), dtype, rng, -50, 50))
        seq2 = np.sort(values((6, 40), dtype, rng, -50, 50), axis=-1)
        q = values((5, 9), dtype, rng, -60, 60)
        cases += [
            (
                "searchsorted",
                lambda s, v: ec.searchsorted(s, v),
                maker(Spec(seq, dtype), Spec(q, dtype)),
                "searchsorted",
            ),
            (
                "searchsorted right int32",
                lambda s, v: ec.searchsorted(s, v, right=True, out_int32=True),
                maker(Spec(seq, dtype), Spec(q, dtype)),
                "searchsorted",
            ),
            (
                "searchsorted batched",
                lambda s, v: ec.searchsorted(s, v),
                maker(Spec(seq2, dtype), Spec(q[:, :6].T.copy()[:6], dtype)),
                "searchsorted",
            ),
            (
                "bucketize",
                lambda v, s: ec.bucketize(v, s),
                maker(Spec(q, dtype), Spec(seq, dtype)),
                "bucketize",
            ),
            ("isin", lambda a, b: ec.isin(a, b), maker(ties, Spec(q, dtype)), "isin"),
            (
                "isin invert",
                lambda a, b: ec.isin(a, b, invert=True),
                maker(ties, Spec(q, dtype)),
                "isin",
            ),
        ]
    if dtype in (ec.uint8, ec.int8, ec.int16, ec.int32, ec.int64):
        counts = Spec(rng.integers(0, 50, 1000).astype(dtype.numpy), dtype)
        w = Spec(rng.random(1000), ec.float64)
        cases += [
            ("bincount", lambda x: ec.bincount(x), maker(counts), "bincount"),
            (
                "bincount weights minlength",
                lambda x, w: ec.bincount(x, w, minlength=70),
                maker(counts, w),
                "bincount",
            ),
        ]
    if floats:
        cases += [
            ("histc", lambda x: ec.histc(x, bins=17, min=-80, max=80), maker(distinct), "histc"),
            ("histc auto range", lambda x: ec.histc(x, bins=5), maker(ties), "histc"),
        ]
    return cases


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_sorting(dtype):
    run_table(
        f"sorting on CUDA ({dtype})",
        sorting_cases(dtype, _rng("sort", dtype)),
        dtype,
        tol=REDUCTION_TOL,
    )


@pytest.mark.parametrize(
    "dtype", [ec.float32, ec.int64, ec.bfloat16, ec.uint8, ec.float64], ids=str
)
def test_sorting_long_lines(dtype):
    """One line of 2^20+3 elements (the multi-block sort), and many short lines."""
    rng = _rng("sort-long", dtype)
    long = Spec(values((LARGE,), dtype, rng, -1000, 1000), dtype)
    many = Spec(values((4099, 257), dtype, rng, -1000, 1000), dtype)
    cases = [
        ("sort stable long", lambda x: ec.sort(x, stable=True), maker(long), "sort"),
        (
            "sort descending stable long",
            lambda x: ec.sort(x, descending=True, stable=True),
            maker(long),
            "sort",
        ),
        ("argsort stable many lines", lambda x: ec.argsort(x, stable=True), maker(many), "argsort"),
        ("sort stable dim=0 many", lambda x: ec.sort(x, 0, stable=True), maker(many), "sort"),
        ("topk 1000 long values", lambda x: ec.topk(x, 1000), maker(long), "topk", _values_only),
        (
            "kthvalue long values",
            lambda x: ec.kthvalue(x, LARGE // 3),
            maker(long),
            "kthvalue",
            _values_only,
        ),
        ("unique long", lambda x: ec.unique(x, return_counts=True), maker(long), "unique"),
        ("median long values", lambda x: ec.median(x), maker(long), "median"),
    ]
    run_table(f"long sorts on CUDA ({dtype})", cases, dtype)


def test_sort_of_special_floats():
    """NaN sorts last (ascending) / first (descending), -0.0 and 0.0 keep order when stable."""
    vals = np.array([3.0, np.nan, -np.inf, 0.0, -0.0, np.inf, np.nan, -1.0, 2.0])
    cases = []
    for dtype in (ec.float16, ec.bfloat16, ec.float32, ec.float64):
        x = Spec(vals, dtype)
        cases += [
            (f"sort {dtype}", lambda x: ec.sort(x, stable=True), maker(x), "sort"),
            (
                f"sort desc {dtype}",
                lambda x: ec.sort(x, descending=True, stable=True),
                maker(x),
                "sort",
            ),
            (f"topk {dtype}", lambda x: ec.topk(x, 4), maker(x), "topk", _values_only),
            (f"unique {dtype}", lambda x: ec.unique(x[~ec.isnan(x)]), maker(x), "unique"),
        ]
    run_table("special floats", cases, ec.float32)
