"""set_num_threads governs ember's OpenMP kernels and BLAS together."""

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
    ec.set_num_threads(1)
    assert ec.get_num_threads() == 1 and _blas_threads() == 1
    ec.set_num_threads(2)
    assert ec.get_num_threads() == 2 and _blas_threads() == 2
    ec.set_num_threads(0)  # clamped to one thread
    assert ec.get_num_threads() == 1


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
