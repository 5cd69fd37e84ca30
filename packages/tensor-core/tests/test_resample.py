"""Padding and resampling (ember_core._ops.nn.resample) against NumPy references: pad in
every mode (negative pads too), interpolate as per-dim interpolation matrices
(nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area),
pixel_shuffle/unshuffle; the backward ops as adjoints; bad input; hypothesis
fuzzing of the shape arguments."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember_core as ec

rng = np.random.default_rng(2)


def E(a):
    return ec.from_numpy(np.ascontiguousarray(a))


def rand(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


# -------------------------------------------------------------------- pad


def pad_ref(x, pad, mode, value=0.0):
    """np.pad of the positive pads, with the negative ones cropping: after
    padding for reflect/replicate (their maps reflect about the input's own
    edges), before it for circular (which wraps the cropped input, as PyTorch)."""
    k = len(pad) // 2
    widths = [(0, 0)] * (x.ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]
    out_shape = tuple(n + a + b for n, (a, b) in zip(x.shape, widths))
    if 0 in out_shape:
        return np.empty(out_shape, x.dtype)
    pos = [(max(a, 0), max(b, 0)) for a, b in widths]
    crop = tuple(slice(max(-a, 0), n - max(-b, 0)) for (a, b), n in zip(widths, x.shape))
    np_mode = {
        "constant": "constant",
        "reflect": "reflect",
        "replicate": "edge",
        "circular": "wrap",
    }[mode]
    kw = {"constant_values": value} if mode == "constant" else {}
    if mode == "circular":
        return np.pad(x[crop], pos, mode=np_mode)
    y = np.pad(x, pos, mode=np_mode, **kw)
    crop_after = tuple(
        slice(max(-a, 0), y.shape[i] - max(-b, 0)) for i, (a, b) in enumerate(widths)
    )
    return y[crop_after]


PAD_CASES = [
    ((2, 3, 5), (1, 2)),
    ((2, 3, 5), (-1, 2)),
    ((3, 4, 5), (2, 0, 1, 3)),
    ((1, 2, 4, 5), (1, -2, 3, 1)),
    ((1, 2, 3, 4, 5), (1, 1, 2, 0, 0, 2)),
    ((2, 3, 4, 4), (-1, -1, 2, 2, 1, 0)),
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", PAD_CASES)
def test_pad_matches_numpy(shape, pad, mode):
    x = rand(*shape)
    k = len(pad) // 2
    if mode != "constant" and (len(shape) not in (k + 1, k + 2)):
        with pytest.raises(NotImplementedError, match="not supported"):
            ec.pad(E(x), pad, mode)
        return
    y = ec.pad(E(x), pad, mode, 2.5 if mode == "constant" else None)
    np.testing.assert_array_equal(y.numpy(), pad_ref(x, pad, mode, 2.5))


def test_constant_pad_dtypes_and_noncontiguous():
    xi = np.arange(12).reshape(3, 4)
    y = ec.pad(E(xi), (1, 1), value=7)
    assert y.dtype == ec.int64
    np.testing.assert_array_equal(y.numpy(), np.pad(xi, [(0, 0), (1, 1)], constant_values=7))
    xb = ec.ones(2, 2, dtype=ec.bool)
    np.testing.assert_array_equal(
        ec.pad(xb, (0, 1)).numpy(), np.pad(np.ones((2, 2), bool), [(0, 0), (0, 1)])
    )
    t = E(rand(4, 5)).t()[None]
    assert not t.is_contiguous()
    np.testing.assert_array_equal(
        ec.pad(t, (1, 0, 0, 2), "reflect").numpy(), pad_ref(t.numpy(), (1, 0, 0, 2), "reflect")
    )
    h = E(rand(1, 2, 4)).to(ec.float16)
    np.testing.assert_array_equal(
        ec.pad(h, (2, 1), "replicate").float().numpy(),
        pad_ref(h.float().numpy(), (2, 1), "replicate"),
    )


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_backward_is_the_adjoint(mode):
    x = rand(2, 3, 4, 5)
    pad = (2, 1, -1, 3)
    y = ec._pad_mode(E(x), pad, mode).numpy()
    gy = rand(*y.shape)
    gx = ec._pad_mode_backward(E(gy), x.shape, pad, mode).numpy()
    np.testing.assert_allclose((gx * x).sum(), (gy * y).sum(), rtol=1e-10, atol=1e-12)
    e = np.zeros_like(x)
    e[1, 2, 3, 0] = 1
    np.testing.assert_allclose(
        gx[1, 2, 3, 0], (gy * ec._pad_mode(E(e), pad, mode).numpy()).sum(), rtol=1e-10, atol=1e-12
    )


def test_constant_pad_negative_is_a_crop():
    x = rand(3, 6)
    np.testing.assert_array_equal(
        ec.constant_pad_nd(E(x), (-1, -2, 1, 0)).numpy(), np.pad(x[:, 1:4], [(1, 0), (0, 0)])
    )


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (lambda: ec.pad(ec.ones(2, 3), (1, 1, 1)), RuntimeError, "Length of pad must be even"),
        (
            lambda: ec.pad(ec.ones(2), (1, 1, 1, 1)),
            RuntimeError,
            "Length of pad should be no more than twice",
        ),
        (
            lambda: ec.pad(ec.ones(1, 3), (4, 4), "reflect"),
            RuntimeError,
            r"Padding size should be less than the corresponding input dimension.*\(4, 4\)",
        ),
        (
            lambda: ec.pad(ec.ones(1, 2, 3), (1, 1), "reflect", 1.0),
            RuntimeError,
            'Padding mode "reflect" doesn\'t take in value argument',
        ),
        (
            lambda: ec.pad(ec.ones(1, 1, 4, 4), (1, 1), "reflect"),
            NotImplementedError,
            "Padding size 2 is not supported for 4D input tensor",
        ),
        (
            lambda: ec.pad(ec.ones(1, 2, 3), (4, 0), "circular"),
            RuntimeError,
            "wrapping around more than once",
        ),
        (
            lambda: ec.pad(ec.ones(1, 2, 3), (-2, -2), "replicate"),
            RuntimeError,
            "too small for padding",
        ),
        (
            lambda: ec.pad(ec.ones(2, 3), (-2, -2)),
            RuntimeError,
            "resulted in a negative output size",
        ),
        (
            lambda: ec.pad(ec.ones(1, 2, 3), (1, 1), "wrap"),
            NotImplementedError,
            "Unrecognised padding mode wrap",
        ),
    ],
)
def test_pad_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ------------------------------------------------------------ interpolate


def src_index(o, n_in, n_out, align, scale, cubic=False):
    if align:
        return (n_in - 1) / (n_out - 1) * o if n_out > 1 else 0.0
    s = 1.0 / scale if scale else n_in / n_out
    r = s * (o + 0.5) - 0.5
    return r if cubic or r >= 0 else 0.0


def _cc1(x, a=-0.75):
    """Keys' cubic convolution weight for |x| <= 1."""
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cc2(x, a=-0.75):
    """... and for 1 < |x| < 2."""
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def interp_matrix(mode, n_in, n_out, align, scale):
    """The (n_out, n_in) matrix of one dim's interpolation."""
    m = np.zeros((n_out, n_in))
    s = 1.0 / scale if scale else n_in / n_out
    for o in range(n_out):
        if mode == "nearest":
            m[o, min(int(math.floor(o * s)), n_in - 1)] = 1
        elif mode == "nearest-exact":
            m[o, min(int(math.floor((o + 0.5) * s)), n_in - 1)] = 1
        elif mode == "linear":
            if n_in == n_out:
                m[o, o] = 1
                continue
            r = src_index(o, n_in, n_out, align, scale)
            i0 = min(int(math.floor(r)), n_in - 1)
            lam = min(max(r - i0, 0.0), 1.0)
            m[o, i0] += 1 - lam
            m[o, i0 + (1 if i0 < n_in - 1 else 0)] += lam
        else:  # cubic, A = -0.75
            r = src_index(o, n_in, n_out, align, scale, cubic=True)
            i0 = min(int(math.floor(r)), n_in - 1)
            t = min(max(r - i0, 0.0), 1.0)
            for j, c in enumerate((_cc2(t + 1), _cc1(t), _cc1(1 - t), _cc2(2 - t))):
                m[o, min(max(i0 - 1 + j, 0), n_in - 1)] += c
    return m


def apply_dims(x, mats):
    k = len(mats)
    for i, m in enumerate(mats):
        ax = x.ndim - k + i
        x = np.moveaxis(np.tensordot(x, m, axes=([ax], [1])), -1, ax)
    return x


def interp_ref(x, size, scale, mode, align):
    k = x.ndim - 2
    base = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    mats = [
        interp_matrix(base, x.shape[2 + i], size[i], align, scale[i] if scale else None)
        for i in range(k)
    ]
    return apply_dims(x, mats), mats


INTERP_CASES = [
    ("nearest", (1, 2, 5), (9,), None, None),
    ("nearest", (2, 2, 4, 5), None, (1.5, 2.3), None),
    ("nearest", (1, 1, 3, 4, 5), (5, 3, 7), None, None),
    ("nearest-exact", (2, 2, 4, 5), (7, 3), None, None),
    ("nearest-exact", (1, 2, 6), None, (0.7,), None),
    ("linear", (2, 3, 5), (8,), None, False),
    ("linear", (2, 3, 5), None, (2.5,), True),
    ("bilinear", (1, 2, 4, 6), (7, 5), None, False),
    ("bilinear", (1, 2, 4, 6), (7, 5), None, True),
    ("bilinear", (2, 1, 5, 5), None, (0.6, 1.7), False),
    ("bicubic", (1, 2, 4, 5), (9, 3), None, False),
    ("bicubic", (1, 1, 5, 4), (6, 8), None, True),
    ("bicubic", (1, 1, 4, 4), None, (2.0, 1.5), False),
    ("trilinear", (1, 2, 3, 4, 5), (5, 3, 6), None, False),
    ("trilinear", (1, 1, 3, 4, 2), None, (2.0, 0.5, 3.0), True),
]


@pytest.mark.parametrize("mode,shape,size,scale,align", INTERP_CASES)
def test_interpolate_matches_numpy(mode, shape, size, scale, align):
    x = rand(*shape)
    y = ec.interpolate(E(x), size, scale, mode, align)
    out = size or tuple(int(n * s) for n, s in zip(shape[2:], scale))
    ref, mats = interp_ref(x, out, scale, mode, align)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-12, atol=1e-12)
    # float32 too (indices and weights computed in float: compare loosely)
    y32 = ec.interpolate(E(x.astype(np.float32)), size, scale, mode, align)
    assert y32.dtype == ec.float32
    if mode in ("linear", "bilinear", "trilinear", "bicubic"):
        np.testing.assert_allclose(y32.numpy(), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode,shape,size,scale,align", INTERP_CASES)
def test_interpolate_backward_is_the_transposed_matrix(mode, shape, size, scale, align):
    x = rand(*shape)
    out = size or tuple(int(n * s) for n, s in zip(shape[2:], scale))
    k = len(out)
    _, mats = interp_ref(x, out, scale, mode, align)
    gy = rand(*(shape[:2] + tuple(out)))
    scales = tuple(scale) if scale else None
    if mode in ("nearest", "nearest-exact"):
        gx = ec._upsample_nearest_backward(E(gy), shape, out, scales, mode == "nearest-exact")
    elif mode == "bicubic":
        gx = ec._upsample_bicubic_backward(E(gy), shape, out, align, scales)
    else:
        gx = ec._upsample_linear_backward(E(gy), shape, out, align, scales)
    ref = apply_dims(gy, [m.T for m in mats])
    assert k == len(mats)
    np.testing.assert_allclose(gx.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_interpolate_area_recompute_and_integer_nearest():
    x = rand(2, 3, 8, 6)
    y = ec.interpolate(E(x), (3, 4), mode="area")
    np.testing.assert_allclose(y.numpy(), ec.adaptive_avg_pool2d(E(x), (3, 4)).numpy())
    # recompute_scale_factor: the kernel gets the size only
    a = ec.interpolate(E(x), scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)
    b = ec.interpolate(E(x), size=(13, 10), mode="bilinear")
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    xi = np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4)
    yi = ec.interpolate(E(xi), scale_factor=2)
    assert yi.dtype == ec.uint8
    np.testing.assert_array_equal(yi.numpy(), xi.repeat(2, axis=2).repeat(2, axis=3))


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4), 3, 2.0),
            ValueError,
            "only one of size or scale_factor",
        ),
        (lambda: ec.interpolate(ec.ones(1, 1, 4)), ValueError, "either size or scale_factor"),
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4), 3, mode="nearest", align_corners=True),
            ValueError,
            "align_corners option can only be set",
        ),
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4, 4), (3,)),
            ValueError,
            "same number of spatial dimensions",
        ),
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4, 4), 3, mode="linear"),
            NotImplementedError,
            "Got 4D input, but linear mode needs 3D input",
        ),
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4), 3, mode="bicubic"),
            NotImplementedError,
            "bicubic mode needs 4D input",
        ),
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4), 3, mode="cubic"),
            NotImplementedError,
            "Input Error",
        ),
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4), (3.5,)),
            TypeError,
            "expected size to be one of int",
        ),
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4), 0),
            RuntimeError,
            "Input and output sizes should be greater than 0",
        ),
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4), 3, mode="linear", antialias=True),
            ValueError,
            "Anti-alias option is restricted to bilinear and bicubic",
        ),
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4, dtype=ec.int64), 3, mode="linear"),
            NotImplementedError,
            "not implemented for 'Long'",
        ),
        (
            lambda: ec.interpolate(ec.ones(1, 1, 4), size=3, recompute_scale_factor=True),
            ValueError,
            "recompute_scale_factor is not meaningful",
        ),
    ],
)
def test_interpolate_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ---------------------------------------------------------- pixel shuffle


def test_pixel_shuffle_and_unshuffle():
    x = rand(2, 3, 8, 2, 3)  # extra leading dim
    y = ec.pixel_shuffle(E(x), 2)
    ref = x.reshape(2, 3, 2, 2, 2, 2, 3).transpose(0, 1, 2, 5, 3, 6, 4).reshape(2, 3, 2, 4, 6)
    np.testing.assert_array_equal(y.numpy(), ref)
    np.testing.assert_array_equal(ec.pixel_unshuffle(y, 2).numpy(), x)
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        ec.pixel_shuffle(ec.ones(1, 5, 2, 2), 2)
    with pytest.raises(RuntimeError, match="at least 3 dimensions"):
        ec.pixel_shuffle(ec.ones(4, 2), 2)
    with pytest.raises(RuntimeError, match="height to be divisible by downscale_factor"):
        ec.pixel_unshuffle(ec.ones(1, 1, 3, 4), 2)
    with pytest.raises(RuntimeError, match="positive"):
        ec.pixel_unshuffle(ec.ones(1, 1, 4, 4), 0)


# ------------------------------------------------------------------ fuzzing


@settings(max_examples=60, deadline=None)
@given(
    nd=st.integers(1, 3),
    size=st.integers(1, 5),
    lead=st.integers(1, 2),
    pads=st.lists(st.integers(-4, 5), min_size=2, max_size=6),
    mode=st.sampled_from(["constant", "reflect", "replicate", "circular"]),
)
def test_fuzz_pad_never_crashes(nd, size, lead, pads, mode):
    x = rand(*((2,) * lead + (size,) * nd))
    try:
        y = ec.pad(E(x), pads, mode)
    except (RuntimeError, NotImplementedError):
        return
    np.testing.assert_array_equal(y.numpy(), pad_ref(x, pads, mode))


@settings(max_examples=60, deadline=None)
@given(
    mode=st.sampled_from(
        ["nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"]
    ),
    nd=st.integers(1, 3),
    size=st.integers(1, 6),
    out=st.integers(-1, 9),
    scale=st.sampled_from([None, 0.5, 1.0, 1.3, 2.0, 3.7]),
)
def test_fuzz_interpolate_never_crashes(mode, nd, size, out, scale):
    x = ec.ones(*((1, 2) + (size,) * nd))
    align = False if mode in ("linear", "bilinear", "bicubic", "trilinear") else None
    try:
        y = ec.interpolate(x, None if scale else out, scale, mode, align)
    except (RuntimeError, ValueError, NotImplementedError):
        return
    expect = out if scale is None else int(size * scale)
    assert y.shape == (1, 2) + (expect,) * nd
    np.testing.assert_allclose(y.numpy(), 1.0, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------- parity


@pytest.mark.parity
@pytest.mark.parametrize(
    "mode,size,scale,align",
    [
        ("nearest", None, (1.7, 0.6), None),
        ("nearest-exact", (7, 3), None, None),
        ("bilinear", None, (2.3, 0.7), False),
        ("bilinear", (5, 9), None, True),
        ("bicubic", (7, 9), None, False),
        ("bicubic", None, (1.5, 2.5), True),
    ],
)
def test_parity_interpolate(mode, size, scale, align):
    torch = pytest.importorskip("torch")
    x = rand(2, 3, 5, 6, dtype=np.float32)
    ref = torch.nn.functional.interpolate(torch.from_numpy(x), size, scale, mode, align)
    np.testing.assert_allclose(
        ec.interpolate(E(x), size, scale, mode, align).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parity
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_parity_pad(mode):
    torch = pytest.importorskip("torch")
    x = rand(2, 3, 5, 6, dtype=np.float32)
    pad = (2, -1, 1, 3)
    ref = torch.nn.functional.pad(torch.from_numpy(x), pad, mode)
    np.testing.assert_array_equal(ec.pad(E(x), pad, mode).numpy(), ref.numpy())
