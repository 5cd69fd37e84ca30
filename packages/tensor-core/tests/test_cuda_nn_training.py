"""The nn kernels a training step needs, on CUDA against the CPU, forward and
backward (the backward ops called directly, so the tensor core's tests need no
autograd): cross entropy / nll (ignore_index, class weights, label smoothing,
every reduction), the activation family's backward, embedding (padding_idx,
out-of-range indices), bags and max_norm, layer/RMS/batch/group norm, the
backward ops of pooling, convolution, padding and interpolation (their
forwards are in test_cuda_nn.py's table), and mixed precision's inf/NaN check
and scale update (csrc/cuda/nn_*.cuh, nn_launch.c)."""

import zlib

import numpy as np
import pytest
from cuda_helpers import CUDA, Spec, compare, idx, maker, run_table, synchronize, values

import ember_core as ec

SELFTEST_OK = True
pytestmark = pytest.mark.cuda

TOL = {ec.float32: (2e-5, 2e-5), ec.float64: (1e-10, 1e-10), ec.bfloat16: (5e-2, 5e-2)}


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def training_cases(dt, rng):
    """[(label, fn, make, op_name)] (test_cuda_coverage.py traces them too)."""

    def S(*shape, low=-2.0, high=2.0, layout="contiguous"):
        return Spec(values(shape, dt, rng, low, high), dt, layout)

    def F32(v):  # a float32 scalar (mixed precision's found_inf, scales)
        return Spec(np.array(v, dtype=np.float32), ec.float32)

    t8 = idx([0, 4, 1, 1, 3, 2, 0, 4])
    x85 = S(8, 5)
    return [
        # losses
        (
            "cross_entropy mean",
            lambda x, t: ec.cross_entropy(x, t),
            maker(x85, t8),
            "cross_entropy",
        ),
        (
            "cross_entropy weight ignore sum",
            lambda x, t, w: ec.cross_entropy(x, t, w, ignore_index=1, reduction="sum"),
            maker(x85, t8, S(5, low=0.5, high=2)),
            "cross_entropy",
        ),
        (
            "cross_entropy smoothing weight ignore mean",
            lambda x, t, w: ec.cross_entropy(x, t, w, ignore_index=3, label_smoothing=0.2),
            maker(x85, t8, S(5, low=0.5, high=2)),
            "cross_entropy",
        ),
        (
            "cross_entropy none, wide rows",
            lambda x, t: ec.cross_entropy(x, t, reduction="none"),
            maker(S(3, 700), idx([5, 699, 0])),
            "cross_entropy",
        ),
        (
            "cross_entropy spatial",
            lambda x, t: ec.cross_entropy(x, t, ignore_index=2),
            maker(S(2, 4, 3, 5), idx(rng.integers(0, 4, (2, 3, 5)))),
            "cross_entropy",
        ),
        (
            "cross_entropy all ignored",
            lambda x, t: ec.cross_entropy(x, t, ignore_index=1),
            maker(S(3, 4), idx([1, 1, 1])),
            "cross_entropy",
        ),
        (
            "nll_loss none / mean / sum",
            lambda x, t, w: tuple(ec.nll_loss(x, t, w, -100, r) for r in ("none", "mean", "sum")),
            maker(x85, t8, S(5, low=0.5, high=2)),
            "nll_loss",
        ),
        (
            "_fused_cross_entropy_backward",
            lambda g, x, t, w: ec._fused_cross_entropy_backward(
                g, x, t, w, 4, 1, ec._fused_cross_entropy(x, t, w, 4, 1)[1]
            ),
            maker(S(), x85, t8, S(5, low=0.5, high=2)),
            "_fused_cross_entropy_backward",
        ),
        (
            "_fused_cross_entropy_backward none",
            lambda g, x, t: ec._fused_cross_entropy_backward(
                g, x, t, None, -100, 0, ec._fused_cross_entropy(x, t, None, -100, 0)[1]
            ),
            maker(S(8), x85, t8),
            "_fused_cross_entropy_backward",
        ),
        (
            "_nll_loss_backward mean spatial",
            lambda g, x, t, w: ec._nll_loss_backward(g, x, t, w, 1, 2),
            maker(S(), S(2, 4, 3), idx([[0, 2, 3], [2, 1, 0]]), S(4, low=0.5, high=2)),
            "_nll_loss_backward",
        ),
        (
            "_nll_loss_backward none",
            lambda g, x, t: ec._nll_loss_backward(g, x, t, None, 0, -100),
            maker(S(8), x85, t8),
            "_nll_loss_backward",
        ),
        # activations (strided operands)
        (
            "activation backward family",
            lambda g, x: tuple(
                ec._activation_backward(g, x, kind, p0, p1)
                for kind, p0, p1 in (
                    ("threshold", 0.0, 0.0),
                    ("leaky_relu", 0.1, 0.0),
                    ("elu", 1.0, 1.0),
                    ("celu", 0.7, 0.0),
                    ("hardtanh", -0.5, 0.5),
                    ("hardshrink", 0.3, 0.0),
                    ("softshrink", 0.3, 0.0),
                )
            ),
            maker(S(4, 6, layout="transposed"), S(4, 6)),
            "_activation_backward",
        ),
        (
            "hardshrink softshrink",
            lambda x: (ec.hardshrink(x, 0.4), ec.softshrink(x, 0.4)),
            maker(S(5, 7, layout="transposed")),
            "hardshrink",
        ),
        # embedding
        (
            "embedding",
            lambda w, i: ec.embedding(w, i),
            maker(S(20, 8), idx([[1, 5, 19], [0, 0, 3]])),
            "embedding",
        ),
        (
            "embedding backward padding_idx",
            lambda g, i: ec._embedding_dense_backward(g, i, 10, 3, False),
            maker(S(6, 4), idx([1, 3, 3, 9, 1, 0])),
            "_embedding_dense_backward",
        ),
        # norms, forward and backward
        (
            "layer_norm",
            lambda x, w, b: ec.native_layer_norm(x, (9, 10), w, b, 1e-5),
            maker(S(2, 3, 9, 10, low=5, high=9), S(9, 10), S(9, 10)),
            "native_layer_norm",
        ),
        (
            "layer_norm backward",
            lambda g, x, w, b: ec._native_layer_norm_backward(
                g,
                x,
                (37,),
                *ec.native_layer_norm(x, (37,), w, b, 1e-5)[1:],
                w,
                b,
                (True, True, True),
            ),
            maker(S(6, 37), S(6, 37), S(37), S(37)),
            "_native_layer_norm_backward",
        ),
        ("rms_norm", lambda x, w: ec.rms_norm(x, (10,), w), maker(S(4, 3, 10), S(10)), "rms_norm"),
        (
            "rms_norm backward",
            lambda g, x, w: ec._fused_rms_norm_backward(
                g, x, (300,), ec._fused_rms_norm(x, (300,), w, 1e-6)[1], w, (True, True)
            ),
            maker(S(3, 300), S(3, 300), S(300)),
            "_fused_rms_norm_backward",
        ),
        (
            "batch_norm train (running stats updated)",
            lambda x, w, b, rm, rv: (ec.batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5), rm, rv),
            maker(S(4, 3, 5, 6, low=1, high=4), S(3), S(3), S(3), S(3, low=0.5, high=2.0)),
            "batch_norm",
        ),
        (
            "batch_norm eval, 2-d",
            lambda x, m, v: ec.batch_norm(x, None, None, m, v, False, 0.1, 1e-5),
            maker(S(7, 3), S(3), S(3, low=0.5, high=2.0)),
            "batch_norm",
        ),
        (
            "batch_norm backward train / eval",
            lambda g, x, w: tuple(
                ec._native_batch_norm_backward(
                    g,
                    x,
                    w,
                    *ec.native_batch_norm(x, w, None, None, None, True, 0.1, 1e-5)[1:],
                    train,
                    (True, True, True),
                )
                for train in (True, False)
            ),
            maker(S(4, 3, 5), S(4, 3, 5), S(3)),
            "_native_batch_norm_backward",
        ),
        (
            "group_norm",
            lambda x, w, b: ec.native_group_norm(x, w, b, 2, 6, 20, 3, 1e-5),
            maker(S(2, 6, 4, 5), S(6), S(6)),
            "native_group_norm",
        ),
        (
            "group_norm backward",
            lambda g, x, w: ec._native_group_norm_backward(
                g,
                x,
                *ec.native_group_norm(x, w, None, 2, 6, 20, 3, 1e-5)[1:],
                w,
                2,
                6,
                20,
                3,
                (True, True, True),
            ),
            maker(S(2, 6, 20), S(2, 6, 20), S(6)),
            "_native_group_norm_backward",
        ),
        # bags and max_norm
        (
            "embedding_bag backward sum+weights / mean / max",
            lambda g, w, i, o, ps: tuple(
                ec._embedding_bag_backward(
                    g,
                    w,
                    i,
                    *ec.embedding_bag(w, i, o, False, m, False, p, False, 5)[1:],
                    m,
                    p,
                    5,
                    False,
                    (True, p is not None),
                )
                for m, p in ((0, ps), (1, None), (2, None))
            ),
            maker(S(4, 8), S(20, 8), idx([1, 5, 19, 5, 7, 7, 0]), idx([0, 2, 2, 5]), S(7)),
            "_embedding_bag_backward",
        ),
        (
            "embedding_renorm_ (repeated rows, norms 2 and inf)",
            lambda w, i: (
                ec.embedding_renorm_(w.clone(), i, 1.0, 2.0),
                ec.embedding_renorm_(w.clone(), i, 0.5, float("inf")),
            ),
            maker(S(20, 8), idx([1, 5, 5, 19, 1])),
            "embedding_renorm_",
        ),
        # pooling, convolution and resampling backward ops
        (
            "max pool backward and double backward",
            lambda g, x: (
                ec._max_pool_backward(
                    g, ec._max_pool(x, (3, 3), (2, 2), (1, 1), (1, 1), True)[1], x.shape
                ),
                ec._max_pool_double_backward(
                    x, ec._max_pool(x, (3, 3), (2, 2), (1, 1), (1, 1), True)[1]
                ),
            ),
            maker(S(2, 3, 5, 6), S(2, 3, 9, 10, low=-100, high=100)),
            "_max_pool_backward",
        ),
        (
            "avg pool backward (padding, ceil, divisor)",
            lambda g: (
                ec._avg_pool_backward(g, (2, 3, 9, 10), (3, 3), (2, 2), (1, 1), True, False, None),
                ec._avg_pool_backward(g, (2, 3, 9, 10), (3, 3), (2, 2), (1, 1), True, True, 4),
            ),
            maker(S(2, 3, 5, 6)),
            "_avg_pool_backward",
        ),
        (
            "adaptive avg pool backward",
            lambda g: ec._adaptive_avg_pool_backward(g, (2, 3, 9, 10)),
            maker(S(2, 3, 4, 3)),
            "_adaptive_avg_pool_backward",
        ),
        (
            "convolution backward (stride, padding, dilation, groups, bias)",
            lambda g, x, w: ec.convolution_backward(
                g, x, w, (4,), (2, 1), (1, 2), (1, 2), False, (0, 0), 2, (True, True, True)
            ),
            maker(S(2, 4, 4, 10), S(2, 6, 8, 10), S(4, 3, 3, 3)),
            "convolution_backward",
        ),
        (
            "convolution backward depthwise / pointwise",
            lambda g, gp, x, wd, wp: (
                ec.convolution_backward(
                    g, x, wd, None, (1, 1), (1, 1), (1, 1), False, (0, 0), 3, (True, True, False)
                ),
                ec.convolution_backward(
                    gp, x, wp, (4,), (1, 1), (0, 0), (1, 1), False, (0, 0), 1, (True, True, True)
                ),
            ),
            maker(S(2, 6, 5, 6), S(2, 4, 5, 6), S(2, 3, 5, 6), S(6, 1, 3, 3), S(4, 3, 1, 1)),
            "convolution_backward",
        ),
        (
            "pad and interpolate backward",
            lambda g, gi, gc: (
                ec._pad_mode_backward(g, (2, 3, 4, 5), (2, 1, 1, 2), "reflect"),
                ec._pad_mode_backward(g, (2, 3, 4, 5), (2, 1, 1, 2), "circular"),
                ec._upsample_nearest_backward(gi, (2, 3, 4, 5), (7, 8), None, False),
                ec._upsample_linear_backward(gi, (2, 3, 4, 5), (7, 8), False, None),
                ec._upsample_bicubic_backward(gc, (2, 3, 4, 5), (6, 9), True, None),
            ),
            maker(S(2, 3, 7, 8), S(2, 3, 7, 8), S(2, 3, 6, 9)),
            "_pad_mode_backward",
        ),
        # mixed precision's ops (float32 scalars; the gradients of the table's dtype)
        (
            "_amp_foreach_non_finite_check_and_unscale_",
            lambda a, b, found, inv: (
                ec._amp_foreach_non_finite_check_and_unscale_([a, b], found, inv),
                a,
                b,
                found,
            )[1:],
            maker(S(3, 4), S(70000), F32(0.0), F32(0.125)),
            "_amp_foreach_non_finite_check_and_unscale_",
        ),
        (
            "_amp_update_scale_",
            lambda scale, tracker, found: (
                ec._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 1),
                tracker,
            ),
            maker(F32(1024.0), Spec(np.array(0, dtype=np.int32), ec.int32), F32(0.0)),
            "_amp_update_scale_",
        ),
    ]


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64], ids=str)
def test_nn_training_kernels(dtype):
    run_table(
        f"nn training kernels on CUDA ({dtype})",
        training_cases(dtype, _rng("train", dtype)),
        dtype,
        TOL,
    )


def test_nn_training_kernels_bfloat16():
    """bfloat16 operands compute in float32 on both devices."""
    names = {"cross_entropy", "native_layer_norm", "embedding", "batch_norm", "rms_norm"}
    cases = [c for c in training_cases(ec.bfloat16, _rng("train-bf16")) if c[3] in names]
    run_table("nn training kernels on CUDA (bfloat16)", cases, ec.bfloat16, TOL)


def test_out_of_range_targets_and_indices_raise_at_synchronisation():
    x = ec.zeros((3, 4), device=CUDA)
    bad = ec.tensor([0, 7, 1], device=CUDA)
    for fn in (
        lambda: ec.cross_entropy(x, bad),
        lambda: ec.nll_loss(x, bad),
        lambda: ec.embedding(ec.zeros((5, 2), device=CUDA), bad),
    ):
        with pytest.raises((IndexError, RuntimeError), match="out of"):
            fn()
            synchronize()


@pytest.mark.parametrize("dtype", [ec.float32, ec.bfloat16], ids=str)
def test_amp_unscale_finds_inf_and_nan(dtype):
    rng = _rng("amp", dtype)
    for poison in (None, float("inf"), float("nan")):
        grads = [
            ec.from_numpy(values(shape, ec.float64, rng)).to(dtype)
            for shape in ((5,), (3, 70000), (2, 2))
        ]
        if poison is not None:
            grads[1][1, 65000] = poison
        want = [g.float() * 0.25 for g in grads]
        dev = [g.to(CUDA) for g in grads]
        found = ec.zeros((), device=CUDA)
        ec._amp_foreach_non_finite_check_and_unscale_(dev, found, ec.full((), 0.25, device=CUDA))
        assert found.item() == (0.0 if poison is None else 1.0)
        for g, w in zip(dev, want):
            compare(g.float(), w.to(CUDA), tol=TOL, where=f"unscale {dtype}")


def test_amp_update_scale_on_the_device():
    scale = ec.full((), 1024.0, device=CUDA)
    tracker = ec.zeros((), dtype=ec.int32, device=CUDA)
    found = ec.zeros((), device=CUDA)
    seen = []
    for inf in [0, 0, 1, 0, 0, 0]:
        found.fill_(float(inf))
        ec._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 2)
        seen.append((scale.item(), int(tracker.item())))
    assert seen == [
        (1024.0, 1),
        (2048.0, 0),
        (1024.0, 0),
        (1024.0, 1),
        (2048.0, 0),
        (2048.0, 1),
    ]
