"""Derivative formulas of the convolution, pooling, padding and resampling ops
(_derivatives_conv.py): gradcheck (float64 finite differences) for every op
over strides/paddings/dilations/groups, a finite-difference check of second
derivatives for the double backward formulas, and parity of gradients with
PyTorch."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec

rng = np.random.default_rng(3)


def leaf(*shape):
    return ec.from_numpy(rng.standard_normal(shape)).requires_grad_()


def check(fn, *inputs):
    assert ag.gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


def gradgrad(fn, *inputs, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Second derivatives against finite differences of first derivatives.

    With a fixed output gradient v and directions u, s(x, v) = <grad of
    <fn(x), v> wrt x (create_graph=True), u> is differentiated by the engine
    (double backward through the formulas) and by central differences, with
    respect to the inputs and to v (a directional check, cheaper than
    ember_autograd.gradgradcheck's full Jacobians for these conv sizes).
    """
    out = fn(*inputs)
    v = ec.from_numpy(rng.standard_normal(tuple(out.shape))).requires_grad_()
    us = [ec.from_numpy(rng.standard_normal(tuple(t.shape))) for t in inputs]

    def s():
        grads = ag.grad(fn(*inputs), list(inputs), v, create_graph=True, allow_unused=True)
        terms = [(g * u).sum() for g, u in zip(grads, us) if g is not None]
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total

    wrt = list(inputs) + [v]
    analytic = ag.grad(s(), wrt, allow_unused=True)
    for t, a in zip(wrt, analytic):
        flat = t.data.view(-1)  # an alias autograd does not track
        num = np.zeros(t.numel())
        for j in range(t.numel()):
            orig = flat[j].item()
            flat[j] = orig + eps
            plus = s().item()
            flat[j] = orig - eps
            minus = s().item()
            flat[j] = orig
            num[j] = (plus - minus) / (2 * eps)
        got = np.zeros(t.numel()) if a is None else a.detach().numpy().reshape(-1)
        np.testing.assert_allclose(got, num, atol=atol, rtol=rtol)
    return True


# ------------------------------------------------------------ convolution


@pytest.mark.parametrize(
    "xshape,wshape,kw",
    [
        ((2, 2, 5, 4), (3, 2, 3, 2), dict(stride=1, padding=1)),
        (
            (1, 4, 5, 5),
            (4, 2, 2, 3),
            dict(stride=(2, 1), padding=(0, 1), dilation=(1, 2), groups=2),
        ),
        ((2, 3, 5, 5), (3, 1, 3, 3), dict(padding=1, groups=3)),  # depthwise
        ((2, 2, 4, 4), (4, 1, 2, 2), dict(stride=2, groups=2)),  # depthwise, multiplier 2
        ((2, 4, 3, 3), (2, 4, 1, 1), dict()),  # pointwise
        ((1, 2, 5, 4), (2, 2, 3, 3), dict(padding="same", dilation=(1, 2))),
    ],
)
def test_conv2d_gradcheck(xshape, wshape, kw):
    x, w, b = leaf(*xshape), leaf(*wshape), leaf(wshape[0])
    check(lambda x, w, b: ec.conv2d(x, w, b, **kw), x, w, b)


def test_conv1d_conv3d_gradcheck():
    x, w, b = leaf(2, 2, 7), leaf(4, 1, 3), leaf(4)
    check(lambda x, w, b: ec.conv1d(x, w, b, stride=2, padding=2, dilation=2, groups=2), x, w, b)
    x3, w3 = leaf(1, 2, 3, 4, 3), leaf(2, 2, 2, 2, 2)
    check(lambda x, w: ec.conv3d(x, w, None, stride=(1, 2, 1), padding=1), x3, w3)


@pytest.mark.parametrize(
    "xshape,wshape,kw",
    [
        ((2, 2, 3, 3), (2, 3, 3, 2), dict(stride=2, padding=(1, 0), output_padding=(1, 0))),
        (
            (1, 4, 3, 2),
            (4, 1, 2, 3),
            dict(groups=2, dilation=(2, 1), stride=(1, 2), output_padding=(1, 1)),
        ),
        ((1, 2, 3, 3), (2, 1, 3, 3), dict(groups=2, padding=1)),  # depthwise
    ],
)
def test_conv_transpose2d_gradcheck(xshape, wshape, kw):
    x, w, b = leaf(*xshape), leaf(*wshape), leaf(wshape[1] * kw.get("groups", 1))
    check(lambda x, w, b: ec.conv_transpose2d(x, w, b, **kw), x, w, b)


def test_conv_transpose1d_unbatched_gradcheck():
    x, w = leaf(2, 5), leaf(2, 3, 3)
    check(lambda x, w: ec.conv_transpose1d(x, w, None, stride=2, padding=1, output_padding=1), x, w)


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_double_backward(transposed):
    x = leaf(1, 2, 4, 4)
    w = leaf(2, 2, 3, 3)
    b = leaf(2)
    params = ((2, 1), (1, 0), (2, 1), transposed, (1, 0) if transposed else (0, 0), 1)

    def f(x, w, b):
        return ec.convolution(x, w, b, *params)

    assert gradgrad(f, x, w, b)


def test_convolution_double_backward_grouped_and_depthwise():
    x, w = leaf(1, 4, 4, 3), leaf(4, 2, 2, 2)
    assert gradgrad(lambda x, w: ec.conv2d(x, w, groups=2, padding=1), x, w)
    x, w = leaf(1, 2, 4, 4), leaf(2, 1, 3, 3)
    assert gradgrad(lambda x, w: ec.conv2d(x, w, groups=2, stride=2), x, w)


def test_convolution_grad_of_grad_only_weight():
    """A gradient penalty on the input gradient, with only the weight needing a
    gradient: create_graph through convolution_backward with a partial mask."""
    x = ec.from_numpy(rng.standard_normal((2, 2, 5, 5)))
    w = leaf(3, 2, 3, 3)
    x.requires_grad_()
    y = ec.conv2d(x, w, padding=1)
    (gx,) = ag.grad(y.sum(), x, create_graph=True)
    (gw,) = ag.grad((gx * gx).sum(), w)
    # gx = conv_transpose of ones with w: d/dw sum(gx^2), by finite differences
    wn = w.detach().numpy().copy()

    def penalty(wv):
        xx = x.detach().requires_grad_()
        yy = ec.conv2d(xx, ec.from_numpy(wv), padding=1)
        (g,) = ag.grad(yy.sum(), xx)
        return float((g * g).sum())

    num = np.zeros_like(wn)
    for idx in np.ndindex(*wn.shape):
        e = np.zeros_like(wn)
        e[idx] = 1e-6
        num[idx] = (penalty(wn + e) - penalty(wn - e)) / 2e-6
    np.testing.assert_allclose(gw.numpy(), num, rtol=1e-4, atol=1e-5)


def test_unfold_fold_gradcheck():
    x = leaf(1, 2, 4, 5)
    check(lambda x: ec.im2col(x, (2, 3), (1, 1), 1, (2, 1)), x)
    c = leaf(1, 2 * 6, 3 * 5)
    check(lambda c: ec.col2im(c, (4, 5), (2, 3), (1, 1), 1, (2, 1)), c)


# ---------------------------------------------------------------- pooling


@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True),
        dict(kernel_size=(2, 3), stride=1, dilation=(2, 1)),
    ],
)
def test_max_pool2d_gradcheck(kw):
    # distinct values keep the max away from ties (finite differences need that)
    x = ec.from_numpy(rng.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7) / 10.0).requires_grad_()
    check(lambda x: ec.max_pool2d(x, **kw), x)
    assert gradgrad(lambda x: ec.max_pool2d(x, **kw), x)


def test_max_pool1d_3d_and_adaptive_max_gradcheck():
    x = ec.from_numpy(rng.permutation(2 * 3 * 9).reshape(2, 3, 9) / 7.0).requires_grad_()
    check(lambda x: ec.max_pool1d(x, 3, 2, 1), x)
    check(lambda x: ec.adaptive_max_pool1d(x, 4)[0], x)
    x3 = ec.from_numpy(
        rng.permutation(1 * 2 * 4 * 4 * 5).reshape(1, 2, 4, 4, 5) / 9.0
    ).requires_grad_()
    check(lambda x: ec.max_pool3d(x, 2, (1, 2, 2), (1, 0, 1)), x3)
    x2 = ec.from_numpy(rng.permutation(2 * 6 * 5).reshape(1, 2, 6, 5) / 5.0).requires_grad_()
    check(lambda x: ec.adaptive_max_pool2d(x, (4, 3))[0], x2)


@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), divisor_override=4),
    ],
)
def test_avg_pool2d_gradcheck(kw):
    x = leaf(2, 2, 5, 6)
    check(lambda x: ec.avg_pool2d(x, **kw), x)
    assert gradgrad(lambda x: ec.avg_pool2d(x, **kw), x)


def test_avg_pool1d_3d_adaptive_avg_gradcheck():
    check(lambda x: ec.avg_pool1d(x, 3, 2, 1), leaf(2, 2, 8))
    check(lambda x: ec.avg_pool3d(x, 2, 1, 1, False, False), leaf(1, 1, 3, 3, 4))
    x = leaf(2, 2, 7, 5)
    check(lambda x: ec.adaptive_avg_pool2d(x, (3, 4)), x)
    assert gradgrad(lambda x: ec.adaptive_avg_pool2d(x, (3, 2)), x)
    check(lambda x: ec.adaptive_avg_pool1d(x, 3), leaf(1, 2, 7))
    check(lambda x: ec.adaptive_avg_pool3d(x, (2, 1, 3)), leaf(1, 1, 3, 2, 5))


# ------------------------------------------------------------ pad, resample


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradcheck(mode):
    x = leaf(1, 2, 4, 5)
    pad = (2, -1, 1, 3)
    check(lambda x: ec.pad(x, pad, mode), x)
    assert gradgrad(lambda x: ec.pad(x, pad, mode), x)


def test_pad_3d_gradcheck():
    check(lambda x: ec.pad(x, (1, 1, 0, 2, 1, 0), "reflect"), leaf(1, 2, 3, 3, 4))
    check(lambda x: ec.pad(x, (1, 2), "replicate"), leaf(2, 3))


@pytest.mark.parametrize(
    "shape,kw",
    [
        ((1, 2, 5), dict(size=8, mode="nearest")),
        ((1, 2, 4, 5), dict(scale_factor=(1.5, 0.7), mode="nearest-exact")),
        ((1, 2, 5), dict(scale_factor=2.3, mode="linear", align_corners=False)),
        ((1, 2, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=True)),
        ((1, 2, 4, 5), dict(size=(6, 7), mode="bilinear", align_corners=False)),
        ((1, 1, 4, 4), dict(size=(5, 7), mode="bicubic", align_corners=False)),
        ((1, 1, 4, 3), dict(scale_factor=2, mode="bicubic", align_corners=True)),
        ((1, 1, 2, 3, 3), dict(size=(3, 4, 2), mode="trilinear", align_corners=False)),
        ((1, 2, 6, 5), dict(size=(4, 3), mode="area")),
    ],
)
def test_interpolate_gradcheck(shape, kw):
    x = leaf(*shape)
    check(lambda x: ec.interpolate(x, **kw), x)
    assert gradgrad(lambda x: ec.interpolate(x, **kw), x)


def test_pixel_shuffle_gradcheck():
    check(lambda x: ec.pixel_shuffle(x, 2), leaf(1, 8, 2, 3))
    check(lambda x: ec.pixel_unshuffle(x, 2), leaf(1, 2, 4, 2))


def test_every_conv_op_has_a_formula():
    # the differentiable kernel ops of convolution, pooling, padding and resampling
    ops = [
        op
        for op in ec.OPS.values()
        if op.module
        in ("ember_core._ops.nn.conv", "ember_core._ops.nn.pool", "ember_core._ops.nn.resample")
        and op.differentiable
        and not op.composite
    ]
    assert {"convolution", "_max_pool", "_pad_mode", "_upsample_bicubic"} <= {op.name for op in ops}
    assert [op.name for op in ops if op not in ag.DERIVATIVES] == []


# ------------------------------------------------------------------ parity


@pytest.mark.parity
def test_parity_gradients():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    xs = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    ws = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)

    def run(lib, fns):
        x = lib.from_numpy(xs.copy()).requires_grad_()
        w = lib.from_numpy(ws.copy()).requires_grad_()
        y = fns.conv2d(x, w, None, 2, 1, 1, 2)
        y = fns.max_pool2d(y, 2, 1, 1)
        y = fns.interpolate(y, scale_factor=1.5, mode="bilinear", align_corners=False)
        y = fns.pad(y, (1, 2, 0, 1), mode="reflect")
        y = fns.avg_pool2d(y, 3, 2, 1, True, False)
        (y * y).sum().backward()
        return x.grad.numpy(), w.grad.numpy()

    class EF:
        conv2d = staticmethod(ec.conv2d)
        max_pool2d = staticmethod(ec.max_pool2d)
        interpolate = staticmethod(ec.interpolate)
        pad = staticmethod(ec.pad)
        avg_pool2d = staticmethod(ec.avg_pool2d)

    ex, ew = run(ec, EF)
    tx, tw = run(torch, F)
    np.testing.assert_allclose(ex, tx, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(ew, tw, rtol=1e-3, atol=1e-3)


@pytest.mark.parity
def test_parity_conv_transpose_and_depthwise_gradients():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    xs = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    ws = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    wt = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    out = {}
    for name, lib, fns in (("ember", ec, ec), ("torch", torch, F)):
        x = lib.from_numpy(xs.copy()).requires_grad_()
        w = lib.from_numpy(ws.copy()).requires_grad_()
        w2 = lib.from_numpy(wt.copy()).requires_grad_()
        y = fns.conv2d(x, w, None, 1, 1, 1, 4)
        y = fns.conv_transpose2d(y, w2, None, 2, 1, 1, 1, 1)
        (y * y).sum().backward()
        out[name] = (x.grad.numpy(), w.grad.numpy(), w2.grad.numpy())
    for a, b in zip(out["ember"], out["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)
