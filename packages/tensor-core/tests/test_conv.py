"""Convolutions (ember_core._ops.nn.conv) against straightforward NumPy references:
forward values over strides, paddings, dilations, groups, odd sizes and dtypes,
the backward op against the adjoint identity and references, bad input, and
hypothesis fuzzing of the shape arguments."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember_core as ec

rng = np.random.default_rng(0)


def E(a):
    return ec.from_numpy(np.ascontiguousarray(a))


def rand(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- references


def conv_ref(x, w, b, stride, padding, dilation, groups):
    """Plain convolution: for each kernel tap, a strided slice of the padded
    input times that tap's weights (einsum over channels of each group)."""
    k = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    ks = w.shape[2:]
    co, cig = w.shape[0], w.shape[1]
    cog = co // groups
    out_sp = [(xp.shape[2 + i] - dilation[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(k)]
    out = np.zeros((x.shape[0], co, *out_sp), dtype=np.float64)
    for tap in np.ndindex(*ks):
        sl = tuple(
            slice(
                tap[i] * dilation[i],
                tap[i] * dilation[i] + stride[i] * (out_sp[i] - 1) + 1,
                stride[i],
            )
            for i in range(k)
        )
        patch = xp[(slice(None), slice(None)) + sl]
        for g in range(groups):
            wt = w[(slice(g * cog, (g + 1) * cog), slice(None)) + tap]
            out[:, g * cog : (g + 1) * cog] += np.einsum(
                "nc...,oc->no...", patch[:, g * cig : (g + 1) * cig], wt
            )
    if b is not None:
        out += b.reshape((1, -1) + (1,) * k)
    return out


def conv_transpose_ref(x, w, b, stride, padding, output_padding, groups, dilation):
    """Transposed convolution by scattering every input element times the
    kernel into a full-size buffer, then cropping the padding."""
    k = x.ndim - 2
    n, ci = x.shape[:2]
    cog = w.shape[1]
    cig = ci // groups
    ks = w.shape[2:]
    sp = x.shape[2:]
    full = [
        (sp[i] - 1) * stride[i] + dilation[i] * (ks[i] - 1) + 1 + output_padding[i]
        for i in range(k)
    ]
    buf = np.zeros((n, cog * groups, *full))
    for tap in np.ndindex(*ks):
        sl = tuple(
            slice(
                tap[i] * dilation[i], tap[i] * dilation[i] + stride[i] * (sp[i] - 1) + 1, stride[i]
            )
            for i in range(k)
        )
        for g in range(groups):
            wt = w[(slice(g * cig, (g + 1) * cig), slice(None)) + tap]  # (cig, cog)
            contrib = np.einsum("nc...,co->no...", x[:, g * cig : (g + 1) * cig], wt)
            buf[(slice(None), slice(g * cog, (g + 1) * cog)) + sl] += contrib
    out_sp = [full[i] - 2 * padding[i] for i in range(k)]
    out = buf[
        (slice(None), slice(None))
        + tuple(slice(padding[i], padding[i] + out_sp[i]) for i in range(k))
    ]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * k)
    return out


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------- forward values

CONV2D_CASES = [
    # (N, C, H, W), (co, groups), kernel, stride, padding, dilation
    ((2, 3, 7, 6), (4, 1), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((1, 4, 9, 8), (6, 2), (3, 2), (2, 1), (0, 1), (1, 2)),
    ((3, 6, 5, 7), (6, 6), (3, 3), (1, 2), (2, 1), (1, 1)),  # depthwise
    ((2, 4, 8, 8), (8, 4), (5, 3), (2, 2), (2, 1), (1, 1)),  # depthwise, multiplier 2
    ((2, 8, 6, 5), (4, 1), (1, 1), (1, 1), (0, 0), (1, 1)),  # pointwise
    ((2, 8, 6, 5), (6, 2), (1, 1), (1, 1), (0, 0), (1, 1)),  # pointwise, grouped
    ((1, 2, 11, 4), (3, 1), (4, 2), (3, 1), (1, 0), (2, 3)),
    ((1, 1, 5, 5), (2, 1), (5, 5), (1, 1), (0, 0), (1, 1)),  # kernel == input
    ((2, 6, 4, 9), (9, 3), (2, 3), (1, 3), (1, 2), (2, 1)),
    # depthwise, stride 1, square kernels: the padded-plane kernel
    ((2, 4, 9, 7), (4, 4), (5, 5), (1, 1), (2, 1), (1, 2)),
    ((1, 3, 10, 12), (6, 3), (7, 7), (1, 1), (3, 3), (1, 1)),
    ((2, 2, 6, 5), (2, 2), (3, 3), (1, 1), (2, 0), (2, 1)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV2D_CASES)
def test_conv2d_matches_numpy(case, dtype):
    shape, (co, groups), k, s, p, d = case
    x = rand(*shape, dtype=dtype)
    w = rand(co, shape[1] // groups, *k, dtype=dtype)
    b = rand(co, dtype=dtype)
    y = ec.conv2d(E(x), E(w), E(b), s, p, d, groups)
    assert y.dtype == ec.float32 if dtype == np.float32 else ec.float64
    np.testing.assert_allclose(y.numpy(), conv_ref(x, w, b, s, p, d, groups), **tol(dtype))


@pytest.mark.parametrize(
    "stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2), (1, 2, 2, 4), (3, 1, 2, 1)]
)
def test_conv1d_matches_numpy(stride, padding, dilation, groups):
    x = rand(2, 4, 13)
    w = rand(4, 4 // groups, 3)
    y = ec.conv1d(E(x), E(w), None, stride, padding, dilation, groups)
    np.testing.assert_allclose(
        y.numpy(),
        conv_ref(x, w, None, (stride,), (padding,), (dilation,), groups),
        rtol=1e-10,
        atol=1e-12,
    )


@pytest.mark.parametrize(
    "stride,padding,dilation,groups",
    [(1, 0, 1, 1), ((1, 2, 1), (1, 0, 1), 1, 2), (2, 1, (1, 2, 1), 4)],
)
def test_conv3d_matches_numpy(stride, padding, dilation, groups):
    x = rand(2, 4, 5, 6, 4)
    w = rand(4, 4 // groups, 2, 3, 2)
    b = rand(4)
    y = ec.conv3d(E(x), E(w), E(b), stride, padding, dilation, groups)
    norm = lambda v: (v,) * 3 if isinstance(v, int) else v  # noqa: E731
    ref = conv_ref(x, w, b, norm(stride), norm(padding), norm(dilation), groups)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-12)


def test_conv2d_batch_one_unbatched_and_noncontiguous():
    x = rand(3, 9, 8)
    w = rand(5, 3, 3, 3)
    ref = conv_ref(x[None], w, None, (1, 1), (1, 1), (1, 1), 1)[0]
    np.testing.assert_allclose(
        ec.conv2d(E(x), E(w), padding=1).numpy(), ref, rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(
        ec.conv2d(E(x)[None], E(w), padding=1).numpy()[0], ref, rtol=1e-10, atol=1e-12
    )
    # transposed storage for the input and a sliced weight
    xt = E(np.ascontiguousarray(x.transpose(0, 2, 1))).transpose(1, 2)
    wb = E(rand(5, 3, 3, 6))[..., ::2]
    assert not xt.is_contiguous() and not wb.is_contiguous()
    ref2 = conv_ref(x[None], wb.numpy(), None, (1, 1), (1, 1), (1, 1), 1)[0]
    np.testing.assert_allclose(ec.conv2d(xt, wb, padding=1).numpy(), ref2, rtol=1e-10, atol=1e-12)


def test_empty_batch():
    y = ec.conv2d(ec.zeros(0, 3, 5, 5), ec.ones(2, 3, 3, 3))
    assert y.shape == (0, 2, 3, 3)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_padding_same_and_valid(k):
    x = rand(1, 2, 7, 6)
    w = rand(3, 2, k, 3)
    same = ec.conv2d(E(x), E(w), padding="same", dilation=(1, 2))
    assert same.shape == (1, 3, 7, 6)
    # 'same' pads (total // 2) before and the rest after
    th, tw = k - 1, 2 * 2
    xp = np.pad(x, [(0, 0), (0, 0), (th // 2, th - th // 2), (tw // 2, tw - tw // 2)])
    np.testing.assert_allclose(
        same.numpy(), conv_ref(xp, w, None, (1, 1), (0, 0), (1, 2), 1), rtol=1e-10, atol=1e-12
    )
    valid = ec.conv2d(E(x), E(w), padding="valid")
    np.testing.assert_allclose(
        valid.numpy(), conv_ref(x, w, None, (1, 1), (0, 0), (1, 1), 1), rtol=1e-10, atol=1e-12
    )


CONVT_CASES = [
    # (N, ci, spatial), cout/groups, groups, kernel, stride, padding, output_padding, dilation
    ((2, 4, 5, 4), 3, 1, (3, 3), (2, 2), (1, 0), (1, 0), (1, 1)),
    ((1, 6, 3, 6), 2, 3, (2, 3), (1, 2), (0, 1), (0, 1), (2, 1)),
    ((2, 4, 4, 4), 1, 4, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),  # depthwise
    ((2, 3, 6), 2, 1, (4,), (3,), (2,), (2,), (1,)),
    ((1, 2, 3, 4, 3), 2, 2, (2, 2, 3), (2, 1, 2), (0, 1, 1), (1, 0, 0), (1, 2, 1)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONVT_CASES)
def test_conv_transpose_matches_numpy(case, dtype):
    shape, cog, groups, k, s, p, op, d = case
    x = rand(*shape, dtype=dtype)
    w = rand(shape[1], cog, *k, dtype=dtype)
    b = rand(cog * groups, dtype=dtype)
    fn = {1: ec.conv_transpose1d, 2: ec.conv_transpose2d, 3: ec.conv_transpose3d}[len(k)]
    y = fn(E(x), E(w), E(b), s, p, op, groups, d)
    np.testing.assert_allclose(
        y.numpy(), conv_transpose_ref(x, w, b, s, p, op, groups, d), **tol(dtype)
    )


def test_half_and_integer_inputs():
    x = rand(1, 2, 5, 5)
    w = rand(3, 2, 3, 3)
    ref = conv_ref(x.astype(np.float32), w.astype(np.float32), None, (1, 1), (0, 0), (1, 1), 1)
    for dt in (ec.float16, ec.bfloat16):
        y = ec.conv2d(E(x).to(dt), E(w).to(dt))
        assert y.dtype == dt
        np.testing.assert_allclose(y.float().numpy(), ref, rtol=0.05, atol=0.1)
    xi = np.arange(50).reshape(1, 2, 5, 5)
    wi = np.arange(18).reshape(1, 2, 3, 3) - 9
    yi = ec.conv2d(E(xi), E(wi))
    assert yi.dtype == ec.int64
    np.testing.assert_array_equal(
        yi.numpy(), conv_ref(xi, wi, None, (1, 1), (0, 0), (1, 1), 1).astype(np.int64)
    )


# ---------------------------------------------------------------- backward op


def _dot(a, b):
    return float((a * b).sum())


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize(
    "shape,co,groups,k,s,p,d",
    [
        ((2, 4, 6, 5), 6, 2, (3, 2), (2, 1), (1, 1), (1, 2)),
        ((3, 4, 5, 5), 4, 4, (3, 3), (1, 1), (1, 1), (1, 1)),
        ((2, 6, 4, 4), 3, 1, (1, 1), (1, 1), (0, 0), (1, 1)),
        ((1, 2, 7), 4, 2, (3,), (2,), (1,), (2,)),
    ],
)
def test_convolution_backward_is_the_adjoint(transposed, shape, co, groups, k, s, p, d):
    """<gy, conv(x, w)> = <gx, x> = <gw, w> (conv is linear in x and in w) and gb
    sums gy: checks all three gradients of both convolution kinds against the
    forward op."""
    kk = len(k)
    ci = shape[1]
    x = rand(*shape)
    w = rand(ci, co // groups, *k) if transposed else rand(co, ci // groups, *k)
    op = (0,) * kk
    y = ec.convolution(E(x), E(w), None, s, p, d, transposed, op, groups).numpy()
    gy = rand(*y.shape)
    c_out = y.shape[1]
    gx, gw, gb = ec.convolution_backward(
        E(gy), E(x), E(w), [c_out], s, p, d, transposed, op, groups, (True, True, True)
    )
    assert gx.shape == x.shape and gw.shape == w.shape and gb.shape == (c_out,)
    np.testing.assert_allclose(_dot(gx.numpy(), x), _dot(gy, y), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_dot(gw.numpy(), w), _dot(gy, y), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        gb.numpy(), gy.sum(axis=tuple(i for i in range(gy.ndim) if i != 1)), rtol=1e-10, atol=1e-12
    )
    # elementwise: each gradient is the adjoint applied to gy (check one
    # coordinate of each by a finite difference, exact as conv is linear)
    for _ in range(3):
        e = np.zeros_like(x)
        e[tuple(rng.integers(0, n) for n in x.shape)] = 1
        ye = ec.convolution(E(e), E(w), None, s, p, d, transposed, op, groups).numpy()
        np.testing.assert_allclose(_dot(gx.numpy(), e), _dot(gy, ye), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "n,ci,co,hw,k,s,p,d",
    [
        (7, 6, 5, 4, 3, 1, 1, 1),  # stride 1: backward data as a flipped forward
        (33, 4, 8, 6, 3, 2, 1, 1),  # stride 2, images in chunks (33 = 2 * 16 + 1)
        (5, 3, 4, 9, 3, 1, 2, 2),  # dilation
        (6, 4, 4, 5, 1, 2, 0, 1),  # 1x1 with stride 2 (not pointwise)
    ],
)
def test_batched_gemm_convolution_matches_per_image(monkeypatch, dtype, n, ci, co, hw, k, s, p, d):
    """Note [Batched GEMM convolution]: thin outputs share products across
    images; forward and both gradients equal the per-image kernels' and the
    NumPy reference's, with images in several chunks."""
    from ember_core._ops.nn import conv as _conv

    x, w, b = (
        rand(n, ci, hw, hw, dtype=dtype),
        rand(co, ci, k, k, dtype=dtype),
        rand(co, dtype=dtype),
    )
    args = ((s, s), (p, p), (d, d), False, (0, 0), 1)
    results = []
    for thin, side in ((_conv._THIN_L, 32), (0, 32)):  # batched (16 images per chunk), per image
        monkeypatch.setattr(_conv, "_THIN_L", thin)
        monkeypatch.setattr(_conv, "_SIDE_L", side)
        y = ec.convolution(E(x), E(w), E(b), *args).numpy()
        gy = np.cos(np.arange(y.size)).reshape(y.shape).astype(dtype)
        grads = ec.convolution_backward(E(gy), E(x), E(w), [co], *args, (True, True, True))
        results.append([y] + [g.numpy() for g in grads])
    plain = _conv._Plain(n, ci, co, 1, (hw, hw), (k, k), y.shape[2:], (s, s), (p, p), (d, d))
    monkeypatch.undo()
    assert plain.batch(ec.device("cpu")) >= 2  # the first pass did batch
    np.testing.assert_allclose(
        results[0][0], conv_ref(x, w, b, (s, s), (p, p), (d, d), 1), **tol(dtype)
    )
    for batched, per_image in zip(*results):
        np.testing.assert_allclose(batched, per_image, **tol(dtype))


def test_convolution_backward_mask_and_float32_large_batch():
    x = rand(9, 8, 10, 10, dtype=np.float32)
    w = rand(16, 8, 3, 3, dtype=np.float32)
    gy = rand(9, 16, 10, 10, dtype=np.float32)
    gx, gw, gb = ec.convolution_backward(
        E(gy), E(x), E(w), [16], (1, 1), (1, 1), (1, 1), False, (0, 0), 1, (False, True, False)
    )
    assert gx is None and gb is None
    # weight gradient: sum over images and positions of gy * input patch
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)])
    ref = np.zeros((16, 8, 3, 3))
    for a, b in itertools.product(range(3), range(3)):
        ref[:, :, a, b] = np.einsum("nohw,nchw->oc", gy, xp[:, :, a : a + 10, b : b + 10])
    np.testing.assert_allclose(gw.numpy(), ref, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("stride", [1, 2])
def test_large_batch_runs_images_in_parallel(stride):
    """Enough work that images run concurrently (one per thread, serial BLAS):
    forward and all three gradients against the references."""
    x = rand(8, 16, 20, 20)
    w = rand(32, 8, 3, 3)
    b = rand(32)
    args = ((stride, stride), (1, 1), (1, 1), False, (0, 0), 2)
    y = ec.convolution(E(x), E(w), E(b), *args)
    np.testing.assert_allclose(
        y.numpy(), conv_ref(x, w, b, (stride,) * 2, (1, 1), (1, 1), 2), rtol=1e-10, atol=1e-10
    )
    gy = rand(*y.shape)
    gx, gw, gb = ec.convolution_backward(E(gy), E(x), E(w), [32], *args, (True, True, True))
    # transposed convolution computes the input gradient; the weight gradient
    # is the correlation of the input with gy (per group)
    np.testing.assert_allclose(
        gx.numpy(),
        conv_transpose_ref(
            gy, w, None, (stride,) * 2, (1, 1), ((20 + 2 - 3) % stride,) * 2, 2, (1, 1)
        ),
        rtol=1e-9,
        atol=1e-10,
    )
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    ref_w = np.zeros_like(w)
    oh = y.shape[2]
    for g in range(2):
        for a, c in itertools.product(range(3), range(3)):
            patch = xp[
                :,
                g * 8 : (g + 1) * 8,
                a : a + stride * (oh - 1) + 1 : stride,
                c : c + stride * (oh - 1) + 1 : stride,
            ]
            ref_w[g * 16 : (g + 1) * 16, :, a, c] = np.einsum(
                "nohw,nchw->oc", gy[:, g * 16 : (g + 1) * 16], patch
            )
    np.testing.assert_allclose(gw.numpy(), ref_w, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(gb.numpy(), gy.sum(axis=(0, 2, 3)), rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------- im2col, col2im


def im2col_ref(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, k[0], k[1], oh, ow))
    for a, b in itertools.product(range(k[0]), range(k[1])):
        out[:, :, a, b] = xp[
            :,
            :,
            a * d[0] : a * d[0] + s[0] * (oh - 1) + 1 : s[0],
            b * d[1] : b * d[1] + s[1] * (ow - 1) + 1 : s[1],
        ]
    return out.reshape(n, c * k[0] * k[1], oh * ow)


@pytest.mark.parametrize(
    "k,d,p,s",
    [
        ((2, 3), (1, 1), (0, 1), (1, 2)),
        ((3, 3), (2, 1), (1, 1), (2, 2)),
        ((1, 1), (1, 1), (0, 0), (1, 1)),
    ],
)
def test_im2col_col2im(k, d, p, s):
    x = rand(2, 3, 7, 6)
    col = ec.im2col(E(x), k, d, p, s)
    ref = im2col_ref(x, k, d, p, s)
    np.testing.assert_allclose(col.numpy(), ref, rtol=1e-12, atol=1e-12)
    # col2im is its adjoint: <col2im(c), x> = <c, im2col(x)>
    c = rand(*ref.shape)
    img = ec.col2im(E(c), (7, 6), k, d, p, s)
    assert img.shape == x.shape
    np.testing.assert_allclose(_dot(img.numpy(), x), _dot(c, ref), rtol=1e-10, atol=1e-12)
    # unbatched forms
    np.testing.assert_allclose(
        ec.im2col(E(x[0]), k, d, p, s).numpy(), ref[0], rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(
        ec.col2im(E(c[0]), (7, 6), k, d, p, s).numpy(), img.numpy()[0], rtol=1e-12, atol=1e-12
    )


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda: ec.conv2d(ec.ones(4, 4), ec.ones(1, 1, 3, 3)),
            r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, "
            r"but got input of size: \[4, 4\]",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 2, 3, 3)),
            r"expected input\[1, 1, 4, 4\] to have 2 channels, but got 1 channels",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 4, 4, 4), ec.ones(3, 2, 3, 3), groups=2),
            r"Given groups=2, expected weight to be divisible by 2 at dimension 0.*\[3, 2, 3, 3\]",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 5, 5)),
            r"padded input size per channel: \(4 x 4\). Kernel size: \(5 x 5\)",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3, 3), stride=0),
            "non-positive stride",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3, 3), padding=-1),
            "negative padding",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3, 3), dilation=0),
            "dilation should be greater than zero",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3, 3), groups=0),
            "non-positive groups",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3, 3), ec.ones(2)),
            r"expected bias to be 1-dimensional with 1 elements, but got bias of size \[2\]",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3, 3, dtype=ec.float64)),
            "expected scalar type Float but found Double",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3, 3), stride=(1, 1, 1)),
            "expected stride to be a single integer value or a list of 2 values",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3, 3), stride=2, padding="same"),
            "padding='same' is not supported for strided convolutions",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3, 3), padding="full"),
            "Invalid padding string",
        ),
        (
            lambda: ec.conv2d(ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3)),
            r"Expected 3-dimensional input for 3-dimensional weight \[1, 1, 3\], "
            "but got 4-dimensional input",
        ),
        (
            lambda: ec.conv_transpose2d(ec.ones(1, 2, 4, 4), ec.ones(3, 1, 3, 3)),
            r"Given transposed=1, weight of size \[3, 1, 3, 3\], "
            r"expected input\[1, 2, 4, 4\] to have 3 channels",
        ),
        (
            lambda: ec.conv_transpose2d(
                ec.ones(1, 1, 4, 4), ec.ones(1, 1, 3, 3), stride=2, output_padding=2
            ),
            "output padding must be smaller than either stride or dilation",
        ),
        (
            lambda: ec.conv_transpose2d(ec.ones(1, 1, 1, 4), ec.ones(1, 1, 2, 2), padding=(1, 0)),
            r"Calculated output size per channel: \(0 x 5\). Output size is too small",
        ),
        (
            lambda: ec.im2col(ec.ones(1, 1, 2, 2), 3, 1, 0, 1),
            "calculated shape of the array of sliding blocks",
        ),
        (
            lambda: ec.col2im(ec.ones(1, 9, 5), (4, 4), 3, 1, 0, 1),
            "match the calculated number of sliding blocks 2 \\* 2 = 4, "
            "but got input.size\\(2\\)=5",
        ),
        (
            lambda: ec.col2im(ec.ones(1, 8, 4), (4, 4), 3, 1, 0, 1),
            "divisible by the product of kernel_size",
        ),
    ],
)
def test_bad_input_raises(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_bool_input_raises():
    with pytest.raises(RuntimeError, match="Bool"):
        ec.conv2d(ec.ones(1, 1, 4, 4, dtype=ec.bool), ec.ones(1, 1, 3, 3, dtype=ec.bool))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 2),
    groups=st.integers(1, 3),
    cig=st.integers(1, 2),
    cog=st.integers(1, 2),
    h=st.integers(1, 6),
    w=st.integers(1, 6),
    kh=st.integers(1, 4),
    kw=st.integers(1, 4),
    s=st.integers(-1, 3),
    p=st.integers(-1, 3),
    d=st.integers(0, 3),
    transposed=st.booleans(),
    opad=st.integers(0, 2),
)
def test_fuzz_conv_shapes_never_crash(n, groups, cig, cog, h, w, kh, kw, s, p, d, transposed, opad):
    """Any shape arguments give a result of the reference's shape or a clear
    RuntimeError, never a crash."""
    x = ec.ones(n, groups * cig, h, w)
    wt = ec.ones(groups * cig, cog, kh, kw) if transposed else ec.ones(groups * cog, cig, kh, kw)
    try:
        y = ec.convolution(x, wt, None, s, p, d, transposed, opad, groups)
    except RuntimeError as e:
        assert "convolution" in str(e)
        return
    if transposed:
        expect = [(i - 1) * s - 2 * p + d * (k - 1) + opad + 1 for i, k in ((h, kh), (w, kw))]
    else:
        expect = [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k in ((h, kh), (w, kw))]
    assert y.shape == (n, groups * cog, *expect)


# --------------------------------------------------------------- parity


@pytest.mark.parity
@pytest.mark.parametrize(
    "shape,wshape,kw",
    [
        ((2, 3, 9, 8), (6, 3, 3, 3), dict(stride=2, padding=1)),
        ((2, 4, 8, 8), (4, 1, 3, 3), dict(padding="same", groups=4)),
        ((1, 4, 7, 9), (6, 2, 2, 3), dict(dilation=(2, 1), groups=2, padding=(1, 0))),
        ((3, 5, 11), (2, 5, 4), dict(stride=3)),
    ],
)
def test_parity_conv_values_and_gradients(shape, wshape, kw):
    torch = pytest.importorskip("torch")
    x = rand(*shape, dtype=np.float32)
    w = rand(*wshape, dtype=np.float32)
    b = rand(wshape[0], dtype=np.float32)
    tfn = torch.nn.functional.conv2d if len(shape) == 4 else torch.nn.functional.conv1d
    efn = ec.conv2d if len(shape) == 4 else ec.conv1d
    tx, tw, tb = (torch.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
    ty = tfn(tx, tw, tb, **kw)
    y = efn(E(x), E(w), E(b), **kw)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    gy = rand(*ty.shape, dtype=np.float32)
    ty.backward(torch.from_numpy(gy))
    c_out = ty.shape[1]
    k = len(shape) - 2
    pad = kw.get("padding", 0)
    if pad == "same":
        pad = tuple((d * (kk - 1)) // 2 for d, kk in zip((1,) * k, wshape[2:]))
    gx, gw, gb = ec.convolution_backward(
        E(gy),
        E(x),
        E(w),
        [c_out],
        kw.get("stride", 1),
        pad,
        kw.get("dilation", 1),
        False,
        0,
        kw.get("groups", 1),
        (True, True, True),
    )
    for mine, theirs in ((gx, tx.grad), (gw, tw.grad), (gb, tb.grad)):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parity
def test_parity_conv_transpose_and_unfold_fold():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = rand(2, 4, 5, 6, dtype=np.float32)
    w = rand(4, 3, 3, 2, dtype=np.float32)
    kw = dict(stride=(2, 1), padding=(1, 0), output_padding=(1, 0), groups=2, dilation=(1, 2))
    ref = F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), None, **kw)
    np.testing.assert_allclose(
        ec.conv_transpose2d(E(x), E(w), None, **kw).numpy(), ref.numpy(), rtol=1e-4, atol=1e-4
    )
    u = F.unfold(torch.from_numpy(x), (2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
    np.testing.assert_allclose(
        ec.im2col(E(x), (2, 3), (2, 1), 1, (1, 2)).numpy(), u.numpy(), rtol=1e-6, atol=1e-6
    )
    f = F.fold(u, (5, 6), (2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
    np.testing.assert_allclose(
        ec.col2im(E(u.numpy()), (5, 6), (2, 3), (2, 1), 1, (1, 2)).numpy(),
        f.numpy(),
        rtol=1e-5,
        atol=1e-6,
    )
