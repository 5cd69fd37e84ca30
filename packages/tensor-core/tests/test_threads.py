"""set_num_threads governs ember's OpenMP kernels and its BLAS products together."""

import ctypes
import os

import numpy as np
import pytest
import scipy_openblas32

import ember_core as ec


@pytest.fixture
def restore_threads():
    n = ec.get_num_threads()
    yield
    ec.set_num_threads(n)


def _blas_threads():
    lib = ctypes.CDLL(
        os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(True))
    )
    return lib.scipy_openblas_get_num_threads()


def test_set_num_threads_sets_openmp_and_blas(restore_threads):
    # OpenBLAS itself always runs one thread: ember splits large products over
    # its own threads (Note [BLAS threads])
    ec.set_num_threads(1)
    assert ec.get_num_threads() == 1 and _blas_threads() == 1
    ec.set_num_threads(2)
    assert ec.get_num_threads() == 2 and _blas_threads() == 1
    ec.set_num_threads(0)  # clamped to one thread
    assert ec.get_num_threads() == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "m, k, n, ta, tb",
    [
        (300, 200, 100, False, False),  # split by rows of C
        (100, 200, 300, True, False),  # split by columns of C
        (257, 129, 255, False, True),  # uneven blocks
        (130, 300, 600, True, True),
    ],
)
def test_large_products_split_over_threads(restore_threads, dtype, m, k, n, ta, tb):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    c = rng.standard_normal((m, n)).astype(dtype)
    na, nb = (a.T if ta else a), (b.T if tb else b)
    ea, eb = ec.tensor(a), ec.tensor(b)
    ea, eb = (ea.T if ta else ea), (eb.T if tb else eb)
    ref = na.astype(np.float64) @ nb.astype(np.float64)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    two_threads = []
    for threads in (1, 2, 2):
        ec.set_num_threads(threads)
        product = (ea @ eb).numpy()
        np.testing.assert_allclose(product, ref, rtol=tol, atol=tol * k)
        added = ec.addmm(ec.tensor(c), ea, eb, beta=0.5, alpha=2.0).numpy()
        np.testing.assert_allclose(added, 0.5 * c + 2.0 * ref, rtol=tol, atol=tol * k)
        if threads == 2:
            two_threads.append(product)
    np.testing.assert_array_equal(*two_threads)  # the block split is fixed: same bits each run


def test_results_do_not_depend_on_thread_count(restore_threads):
    rng = np.random.default_rng(0)
    x = ec.tensor(rng.standard_normal((512, 600)).astype(np.float32))
    results = []
    for n in (1, 2):
        ec.set_num_threads(n)
        results.append(
            [
                (x * 2 + 1).numpy(),
                x.exp().numpy(),
                x.T.contiguous().numpy(),
                x.max(1).indices.numpy(),
                x.amax(0).numpy(),
                x.cumsum(1).numpy(),
                (x.double().sum(1)).numpy(),
            ]
        )
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
