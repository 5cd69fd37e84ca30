"""Every op of the op table has a CUDA test (marked `cuda`: runs in `make
gpu-check`, and without a GPU under EMBER_CUDA_TESTS_ON=cpu).

Which ops the tables exercise is found by running them: each table's cases run
once on the CPU with a recording handler on the op table (every dispatched op,
the ones a case calls indirectly too) and the public names of composite ops
wrapped; the generated elementwise/reduction lists and the creation and random
op lists count directly.  Backward kernels are exercised by autograd's CUDA
tests (packages/autograd/tests/test_cuda_autograd.py, which checks that list).
A new op in the table fails this test until a CUDA test covers it or it is
listed below with a reason; an entry below that a table now covers fails too,
so the list stays true.
"""

import contextlib

import numpy as np
import pytest
import test_cuda_composites as CO
import test_cuda_copy as CP
import test_cuda_elementwise as EW
import test_cuda_indexing as IX
import test_cuda_linalg as LI
import test_cuda_nn as NN
import test_cuda_nn_training as NT
import test_cuda_random as RA
import test_cuda_reduction as RE
import test_cuda_sorting as SO

import ember_core as ec
from ember_core._base import dispatch as _dispatch

SELFTEST_OK = True
pytestmark = pytest.mark.cuda

# Backward kernels: test_cuda_autograd.py compares their results on CUDA with the CPU's.
BACKWARD_BY_AUTOGRAD = {
    "_activation_backward",
    "_adaptive_avg_pool_backward",
    "_avg_pool_backward",
    "_ctc_loss_backward",
    "_embedding_bag_backward",
    "_embedding_dense_backward",
    "_fused_cross_entropy_backward",
    "_fused_rms_norm_backward",
    "_getitem_backward",
    "_grid_sampler_backward",
    "_gru_cell_backward",
    "_log_softmax_backward_data",
    "_lstm_cell_backward",
    "_max_pool_backward",
    "_native_batch_norm_backward",
    "_native_dropout_backward",
    "_native_group_norm_backward",
    "_native_layer_norm_backward",
    "_nll_loss_backward",
    "_pad_mode_backward",
    "_softmax_backward_data",
    "_upsample_bicubic_backward",
    "_upsample_linear_backward",
    "_upsample_nearest_backward",
    "convolution_backward",
}
# Ops without a CUDA test yet, and why.
NOT_COVERED = {
    "_standard_gamma_grad": "reparameterised gamma gradient (distributions): no CUDA test yet",
    "frombuffer": "a tensor over a Python buffer's host memory: CPU only, as in PyTorch",
    "apply_": "calls a Python function per element: CPU tensors only, as in PyTorch",
    "map_": "calls a Python function per element: CPU tensors only, as in PyTorch",
    "map2_": "calls a Python function per element: CPU tensors only, as in PyTorch",
}
# Ops with no CPU kernel (the tables trace on the CPU, so they never see
# them), and the test that compares them with the CPU's path.
CUDA_ONLY = {
    "_fused_attention": "test_cuda_attention.py (against the CPU's math path and NumPy)",
    "_fused_attention_backward": "test_cuda_attention.py (against NumPy's gradients)",
}

TABLES = [
    IX.indexing_cases,
    SO.sorting_cases,
    CP.shape_cases,
    CP.view_cases,
    LI.matmul_cases,
    LI.linalg_cases,
    NN.nn_cases,
    NT.training_cases,
    EW.inplace_cases,
    CO.composite_cases,
]


def _listed():
    names = set(CP.CREATION_OPS) | set(RA.RANDOM_OPS) | {c.op for c in RE.CASES}
    for c in EW.UNARY_CASES + EW.BINARY_CASES + EW.TERNARY_CASES:
        names.add(c.op)
        if c.op in EW.INPLACE:
            names.add(EW.INPLACE[c.op])
    return names


def _traced():
    seen = set()

    def record(op, args, kwargs, call):
        seen.add(op.name)
        return call(args, kwargs)

    patched = []

    def wrap(holder, attr, name):
        orig = holder.__dict__[attr] if isinstance(holder, type) else getattr(holder, attr)

        def wrapper(*a, _f=orig, _n=name, **k):
            seen.add(_n)
            return _f(*a, **k)

        patched.append((holder, attr, orig))
        setattr(holder, attr, wrapper)

    # composites are not dispatched: their functions are wrapped wherever they are
    # bound (ember_core, Tensor, the linalg namespace; under aliases too)
    composite = {}
    for name, op in _dispatch.OPS.items():
        if op.composite:
            composite[id(_dispatch.public_function(name))] = name
            if callable(op.method):
                composite[id(op.method)] = name
    for holder in (ec, ec.Tensor, ec.linalg):
        for attr, value in list(vars(holder).items()):
            name = composite.get(id(value))
            if name is not None and callable(value):
                wrap(holder, attr, name)
    _dispatch.register_handler(record)
    try:
        for dtype in (ec.float32, ec.int64, ec.float64):
            rng = np.random.default_rng(0)
            for table in TABLES:
                for case in table(dtype, rng):
                    args, kwargs = case[2]("cpu")
                    with contextlib.suppress(Exception):  # a refusal still called the op
                        case[1](*args, **kwargs)
    finally:
        _dispatch.remove_handler(record)
        for holder, name, orig in reversed(patched):
            setattr(holder, name, orig)
    return seen


def test_every_op_has_a_cuda_test():
    covered = _listed() | _traced()
    ops = set(_dispatch.OPS)
    missing = sorted(ops - covered - BACKWARD_BY_AUTOGRAD - set(NOT_COVERED) - set(CUDA_ONLY))
    assert not missing, (
        f"{len(missing)} op(s) of the op table have no CUDA test: {', '.join(missing)}. "
        "Add them to a table in tests/test_cuda_*.py (or, with a reason, to NOT_COVERED)."
    )
    stale = sorted(set(NOT_COVERED) & covered)
    assert not stale, f"listed as not covered but covered now: {stale}"
    gone = sorted((BACKWARD_BY_AUTOGRAD | set(NOT_COVERED) | set(CUDA_ONLY)) - ops)
    assert not gone, f"listed ops that the op table no longer has: {gone}"
