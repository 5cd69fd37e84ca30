"""The tensor core's neural-network kernels on CUDA against the CPU:
convolutions (1-3d, transposed, groups, dilation, stride), pooling (max with
indices, avg, adaptive, unpool), norms (batch/layer/group/instance/RMS), losses,
embedding/embedding_bag, interpolation, grid_sample/affine_grid, padding modes,
pixel_shuffle, im2col/col2im, attention, RNN cells, prelu/glu, one_hot --
float32 and float64 (and bf16 where the models use it).
"""

import zlib

import numpy as np
import pytest
from cuda_helpers import Spec, maker, run_table, values

import ember_core as ec

SELFTEST_OK = True
pytestmark = pytest.mark.cuda

NN_TOL = {
    ec.float32: (1e-4, 1e-4),
    ec.float64: (1e-9, 1e-9),
    ec.bfloat16: (5e-2, 5e-2),
    ec.float16: (1e-2, 1e-2),
}


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def nn_cases(dtype, rng):
    def S(*shape, low=-1.0, high=1.0, layout="contiguous"):
        return Spec(values(shape, dtype, rng, low, high), dtype, layout)

    def I(vals):  # noqa: E743 - an index spec
        return Spec(np.asarray(vals, dtype=np.int64), ec.int64)

    x4 = S(2, 3, 9, 10)
    x4t = S(2, 3, 9, 10, layout="transposed")
    x3 = S(2, 3, 17)
    x5 = S(1, 2, 5, 6, 7)
    cases = [
        (
            "conv1d",
            lambda x, w, b: ec.conv1d(x, w, b, padding=1),
            maker(x3, S(4, 3, 3), S(4)),
            "conv1d",
        ),
        (
            "conv2d",
            lambda x, w, b: ec.conv2d(x, w, b, stride=2, padding=1),
            maker(x4, S(5, 3, 3, 3), S(5)),
            "conv2d",
        ),
        (
            "conv2d transposed input",
            lambda x, w: ec.conv2d(x, w, dilation=2),
            maker(x4t, S(4, 3, 3, 3)),
            "conv2d",
        ),
        (
            "conv2d groups",
            lambda x, w: ec.conv2d(x, w, groups=3),
            maker(S(2, 6, 8, 8), S(6, 2, 3, 3)),
            "conv2d",
        ),
        (
            "conv2d depthwise 1x1",
            lambda x, w: ec.conv2d(x, w, groups=3),
            maker(x4, S(3, 1, 1, 1)),
            "conv2d",
        ),
        ("conv3d", lambda x, w: ec.conv3d(x, w, padding=1), maker(x5, S(3, 2, 3, 3, 3)), "conv3d"),
        (
            "conv_transpose2d",
            lambda x, w, b: ec.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
            maker(x4, S(3, 4, 3, 3), S(4)),
            "conv_transpose2d",
        ),
        (
            "conv_transpose1d",
            lambda x, w: ec.conv_transpose1d(x, w),
            maker(x3, S(3, 2, 4)),
            "conv_transpose1d",
        ),
        (
            "max_pool2d indices",
            lambda x: ec.max_pool2d_with_indices(x, 3, 2, 1),
            maker(S(2, 3, 9, 10, low=-100, high=100)),
            "max_pool2d_with_indices",
        ),
        ("max_pool1d ceil", lambda x: ec.max_pool1d(x, 2, ceil_mode=True), maker(x3), "max_pool1d"),
        ("max_pool3d", lambda x: ec.max_pool3d(x, 2), maker(x5), "max_pool3d"),
        (
            "avg_pool2d",
            lambda x: ec.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
            maker(x4),
            "avg_pool2d",
        ),
        ("avg_pool1d", lambda x: ec.avg_pool1d(x, 4), maker(x3), "avg_pool1d"),
        ("avg_pool3d", lambda x: ec.avg_pool3d(x, 2), maker(x5), "avg_pool3d"),
        (
            "adaptive_avg_pool2d",
            lambda x: ec.adaptive_avg_pool2d(x, (4, 3)),
            maker(x4t),
            "adaptive_avg_pool2d",
        ),
        (
            "adaptive_max_pool2d",
            lambda x: ec.adaptive_max_pool2d(x, 3),
            maker(S(2, 3, 9, 10, low=-100, high=100)),
            "adaptive_max_pool2d",
        ),
        (
            "adaptive_avg_pool1d",
            lambda x: ec.adaptive_avg_pool1d(x, 5),
            maker(x3),
            "adaptive_avg_pool1d",
        ),
        (
            "max_unpool",
            lambda x: ec.max_unpool(*ec.max_pool2d(x, 2, return_indices=True), (9, 10)),
            maker(S(2, 3, 9, 10, low=-100, high=100)),
            "max_unpool",
        ),
        (
            "batch_norm train (running stats updated)",
            lambda x, w, b, rm, rv: (
                ec.batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5),
                rm,
                rv,
            ),
            maker(x4, S(3), S(3), S(3), S(3, low=0.5, high=2.0)),
            "batch_norm",
        ),
        (
            "batch_norm eval",
            lambda x, m, v: ec.batch_norm(x, None, None, m, v, False, 0.1, 1e-5),
            maker(x4, S(3), S(3, low=0.5, high=2.0)),
            "batch_norm",
        ),
        (
            "native_batch_norm stats",
            lambda x: ec.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5),
            maker(x4t),
            "native_batch_norm",
        ),
        (
            "layer_norm",
            lambda x, w, b: ec.layer_norm(x, (9, 10), w, b),
            maker(x4, S(9, 10), S(9, 10)),
            "layer_norm",
        ),
        (
            "native_layer_norm",
            lambda x: ec.native_layer_norm(x, (10,), None, None, 1e-5),
            maker(x4t),
            "native_layer_norm",
        ),
        (
            "group_norm",
            lambda x, w, b: ec.group_norm(ec.cat([x, x], 1), 3, w, b),
            maker(x4, S(6), S(6)),
            "group_norm",
        ),
        (
            "instance_norm",
            lambda x: ec.instance_norm(x, None, None, None, None, True, 0.1, 1e-5),
            maker(x4),
            "instance_norm",
        ),
        ("rms_norm", lambda x, w: ec.rms_norm(x, (10,), w), maker(x4, S(10)), "rms_norm"),
        (
            "embedding",
            lambda w, i: ec.embedding(w, i),
            maker(S(20, 8), I([[1, 5, 19], [0, 0, 3]])),
            "embedding",
        ),
        (
            "embedding padding_idx",
            lambda w, i: ec.embedding(w, i, 0),
            maker(S(20, 8), I([1, 0, 7])),
            "embedding",
        ),
        (
            "embedding_bag sum",
            lambda w, i, o: ec.embedding_bag(w, i, o, mode=0)[0],
            maker(S(20, 8), I([1, 5, 19, 0, 7, 7]), I([0, 2, 2, 5])),
            "embedding_bag",
        ),
        (
            "embedding_bag mean",
            lambda w, i, o: ec.embedding_bag(w, i, o, mode=1)[0],
            maker(S(20, 8), I([1, 5, 19, 0, 7, 7]), I([0, 2, 2, 5])),
            "embedding_bag",
        ),
        (
            "embedding_bag max",
            lambda w, i, o: ec.embedding_bag(w, i, o, mode=2)[0],
            maker(S(20, 8), I([1, 5, 19, 0, 7, 7]), I([0, 2, 3, 5])),
            "embedding_bag",
        ),
        (
            "cross_entropy",
            lambda x, t: ec.cross_entropy(x, t),
            maker(S(8, 5), I([0, 4, 1, 1, 3, 2, 0, 4])),
            "cross_entropy",
        ),
        (
            "cross_entropy smoothing ignore",
            lambda x, t, w: ec.cross_entropy(
                x, t, w, ignore_index=1, reduction="sum", label_smoothing=0.1
            ),
            maker(S(8, 5), I([0, 4, 1, 1, 3, 2, 0, 4]), S(5, low=0.5, high=2)),
            "cross_entropy",
        ),
        (
            "cross_entropy spatial",
            lambda x, t: ec.cross_entropy(x, t, reduction="none"),
            maker(S(2, 5, 3, 4), I(rng.integers(0, 5, (2, 3, 4)))),
            "cross_entropy",
        ),
        (
            "cross_entropy probs",
            lambda x, p: ec.cross_entropy(x, ec.softmax(p, 1)),
            maker(S(8, 5), S(8, 5)),
            "cross_entropy",
        ),
        (
            "nll_loss",
            lambda x, t: ec.nll_loss(ec.log_softmax(x, 1), t, reduction="none"),
            maker(S(8, 5), I([0, 4, 1, 1, 3, 2, 0, 4])),
            "nll_loss",
        ),
        ("mse_loss", lambda a, b: ec.mse_loss(a, b), maker(x4, x4t), "mse_loss"),
        ("l1_loss", lambda a, b: ec.l1_loss(a, b, reduction="sum"), maker(x4, x4t), "l1_loss"),
        (
            "smooth_l1_loss",
            lambda a, b: ec.smooth_l1_loss(a, b, beta=0.5),
            maker(x4, x4t),
            "smooth_l1_loss",
        ),
        ("huber_loss", lambda a, b: ec.huber_loss(a, b, delta=0.7), maker(x4, x4t), "huber_loss"),
        (
            "binary_cross_entropy",
            lambda p, t: ec.binary_cross_entropy(p, t),
            maker(S(6, 7, low=0.05, high=0.95), S(6, 7, low=0.0, high=1.0)),
            "binary_cross_entropy",
        ),
        (
            "bce_with_logits",
            lambda x, t, pw: ec.binary_cross_entropy_with_logits(x, t, pos_weight=pw),
            maker(S(6, 7), S(6, 7, low=0.0, high=1.0), S(7, low=0.5, high=2.0)),
            "binary_cross_entropy_with_logits",
        ),
        (
            "kl_div",
            lambda a, b: ec.kl_div(
                ec.log_softmax(a, 1), ec.log_softmax(b, 1), reduction="sum", log_target=True
            ),
            maker(S(6, 7), S(6, 7)),
            "kl_div",
        ),
        (
            "ctc_loss",
            lambda lp, t: ec.ctc_loss(ec.log_softmax(lp, 2), t, [12, 10], [4, 3]),
            maker(S(12, 2, 6), I([[1, 2, 2, 3], [4, 5, 1, 0]])),
            "ctc_loss",
        ),
        (
            "interpolate nearest",
            lambda x: ec.interpolate(x, scale_factor=2),
            maker(x4),
            "interpolate",
        ),
        (
            "interpolate bilinear",
            lambda x: ec.interpolate(x, size=(5, 13), mode="bilinear", align_corners=False),
            maker(x4t),
            "interpolate",
        ),
        (
            "interpolate bicubic",
            lambda x: ec.interpolate(x, size=(12, 7), mode="bicubic", align_corners=True),
            maker(x4),
            "interpolate",
        ),
        (
            "interpolate bilinear antialias",
            lambda x: ec.interpolate(x, size=(4, 5), mode="bilinear", antialias=True),
            maker(x4),
            "interpolate",
        ),
        (
            "interpolate trilinear",
            lambda x: ec.interpolate(x, scale_factor=1.5, mode="trilinear"),
            maker(x5),
            "interpolate",
        ),
        (
            "grid_sample",
            lambda x, g: ec.grid_sample(x, g, align_corners=False),
            maker(x4, S(2, 4, 5, 2, low=-1.1, high=1.1)),
            "grid_sample",
        ),
        (
            "grid_sample nearest border",
            lambda x, g: ec.grid_sample(
                x, g, mode="nearest", padding_mode="border", align_corners=True
            ),
            maker(x4, S(2, 4, 5, 2, low=-1.1, high=1.1)),
            "grid_sample",
        ),
        (
            "affine_grid",
            lambda th: ec.affine_grid_generator(th, (2, 3, 4, 5), False),
            maker(S(2, 2, 3)),
            "affine_grid_generator",
        ),
        ("pad reflect", lambda x: ec.pad(x, (2, 1, 1, 2), mode="reflect"), maker(x4), "pad"),
        ("pad replicate", lambda x: ec.pad(x, (2, 1), mode="replicate"), maker(x3), "pad"),
        ("pad circular", lambda x: ec.pad(x, (1, 2, 2, 1), mode="circular"), maker(x4t), "pad"),
        ("pad constant", lambda x: ec.pad(x, (1, 1, 2, 0), value=0.5), maker(x4), "pad"),
        ("pixel_shuffle", lambda x: ec.pixel_shuffle(x, 2), maker(S(2, 8, 3, 4)), "pixel_shuffle"),
        (
            "pixel_unshuffle",
            lambda x: ec.pixel_unshuffle(x, 2),
            maker(S(2, 3, 4, 6)),
            "pixel_unshuffle",
        ),
        ("im2col", lambda x: ec.im2col(x, (3, 3), (1, 1), (1, 1), (2, 2)), maker(x4), "im2col"),
        (
            "col2im",
            lambda x: ec.col2im(x, (9, 10), (3, 3), (1, 1), (1, 1), (2, 2)),
            maker(S(2, 27, 25)),
            "col2im",
        ),
        (
            "scaled_dot_product_attention",
            lambda q, k, v: ec.scaled_dot_product_attention(q, k, v),
            maker(S(2, 3, 7, 8), S(2, 3, 9, 8), S(2, 3, 9, 4)),
            "scaled_dot_product_attention",
        ),
        (
            "sdpa causal",
            lambda q, k, v: ec.scaled_dot_product_attention(q, k, v, is_causal=True),
            maker(S(2, 3, 7, 8), S(2, 3, 7, 8), S(2, 3, 7, 8)),
            "scaled_dot_product_attention",
        ),
        (
            "sdpa mask",
            lambda q, k, v, m: ec.scaled_dot_product_attention(q, k, v, attn_mask=m),
            maker(S(2, 3, 7, 8), S(2, 3, 9, 8), S(2, 3, 9, 4), S(7, 9)),
            "scaled_dot_product_attention",
        ),
        (
            "lstm_cell",
            lambda x, h, c, wi, wh, bi, bh: ec.lstm_cell(x, (h, c), wi, wh, bi, bh),
            maker(S(4, 5), S(4, 6), S(4, 6), S(24, 5), S(24, 6), S(24), S(24)),
            "lstm_cell",
        ),
        (
            "gru_cell",
            lambda x, h, wi, wh, bi, bh: ec.gru_cell(x, h, wi, wh, bi, bh),
            maker(S(4, 5), S(4, 6), S(18, 5), S(18, 6), S(18), S(18)),
            "gru_cell",
        ),
        (
            "rnn_tanh_cell",
            lambda x, h, wi, wh: ec.rnn_tanh_cell(x, h, wi, wh),
            maker(S(4, 5), S(4, 6), S(6, 5), S(6, 6)),
            "rnn_tanh_cell",
        ),
        (
            "rnn_relu_cell",
            lambda x, h, wi, wh: ec.rnn_relu_cell(x, h, wi, wh),
            maker(S(4, 5), S(4, 6), S(6, 5), S(6, 6)),
            "rnn_relu_cell",
        ),
        ("prelu", lambda x, w: ec.prelu(x, w), maker(x4, S(3)), "prelu"),
        ("glu", lambda x: ec.glu(x, 1), maker(S(2, 6, 5)), "glu"),
        ("rrelu eval", lambda x: ec.rrelu(x, training=False), maker(x4), "rrelu"),
        (
            "cosine-similarity parts",
            lambda a, b: ec.cdist(a, b, p=1.0),
            maker(S(5, 4), S(3, 4)),
            "cdist",
        ),
        (
            "trapezoid",
            lambda y: (ec.trapezoid(y), ec.cumulative_trapezoid(y, dx=0.5)),
            maker(x3),
            "trapezoid",
        ),
        ("cov corrcoef", lambda x: (ec.cov(x), ec.corrcoef(x)), maker(S(4, 9)), "cov"),
        ("diff", lambda x: ec.diff(x, 2, -1), maker(x4), "diff"),
        ("vander", lambda x: ec.vander(x, 4), maker(S(6)), "vander"),
        ("histogram", lambda x: ec.histogram(x, 7), maker(S(200)), "histogram"),
        (
            "pool variants",
            lambda x, y: (
                ec.adaptive_avg_pool3d(y, 2),
                ec.adaptive_max_pool1d(x, 4),
                ec.adaptive_max_pool3d(y, (2, 3, 2)),
                ec.max_pool1d_with_indices(x, 3),
                ec.max_pool3d_with_indices(y, 2),
                ec.max_pool2d(y[0], 2),
            ),
            maker(S(2, 3, 17, low=-100, high=100), S(1, 2, 5, 6, 7, low=-100, high=100)),
            "adaptive_max_pool3d",
        ),
        (
            "conv_transpose3d",
            lambda x, w: ec.conv_transpose3d(x, w, stride=2),
            maker(x5, S(2, 3, 2, 2, 2)),
            "conv_transpose3d",
        ),
        (
            "embedding_renorm_",
            lambda w, i: ec.embedding_renorm_(w.clone(), i, 1.0, 2.0),
            maker(S(20, 8), I([1, 5, 5, 19])),
            "embedding_renorm_",
        ),
    ]
    return cases


@pytest.mark.parametrize("dtype", [ec.float32, ec.float64], ids=str)
def test_nn_ops(dtype):
    run_table(
        f"nn kernels on CUDA ({dtype})", nn_cases(dtype, _rng("nn", dtype)), dtype, tol=NN_TOL
    )


@pytest.mark.parametrize("dtype", [ec.bfloat16, ec.float16], ids=str)
def test_nn_ops_half(dtype):
    """The kernels models use in reduced precision (computed in fp32)."""
    names = {
        "conv2d",
        "layer_norm",
        "rms_norm",
        "group_norm",
        "batch_norm",
        "cross_entropy",
        "scaled_dot_product_attention",
        "embedding",
        "max_pool2d_with_indices",
        "avg_pool2d",
        "interpolate",
        "gelu",
    }
    cases = [c for c in nn_cases(dtype, _rng("nn-half", dtype)) if c[3] in names]
    run_table(f"nn kernels on CUDA ({dtype})", cases, dtype, tol=NN_TOL)
