"""Copies and casts: copy_ between any strides and dtypes, clone, to(), the
dtype methods, resize_."""

import numpy as np
import pytest
from conftest import ALL_DTYPES, LAYOUTS, as_dtype_np, make, random_values, to_np

import ember_core as ec


def cast_np(a, dtype):
    """NumPy's conversion, with PyTorch's rules where they differ (float ->
    bool is "non-zero", float -> int truncates)."""
    if dtype is ec.bool:
        return a != 0
    if not dtype.is_floating_point and a.dtype.kind == "f":
        a = np.trunc(a)
    return as_dtype_np(a, dtype)


@pytest.mark.parametrize("src", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("dst", ALL_DTYPES, ids=str)
def test_cast_between_every_pair_of_dtypes(src, dst, rng):
    x = random_values((3, 5), src, rng, 0, 100)
    t = make(x, src, "transposed")
    r = t.to(dst)
    assert r.dtype is dst and r.shape == t.shape
    np.testing.assert_array_equal(
        to_np(r), cast_np(x if src is not ec.bfloat16 else x.astype(np.float32), dst)
    )
    if src is dst:
        assert r is t
    out = ec.empty(3, 5, dtype=dst)
    out.copy_(t)
    np.testing.assert_array_equal(to_np(out), to_np(r))


def test_float_to_int_conversion_of_nan_and_out_of_range_does_not_crash():
    t = ec.tensor([np.nan, np.inf, -np.inf, 1e30, -2.7, 2.7])
    r = t.to(ec.int64)
    assert r.tolist()[4:] == [-2, 2]
    assert t.to(ec.uint8).shape == (6,)
    assert t.to(ec.bool).tolist() == [True, True, True, True, True, True]


@pytest.mark.parametrize("dst_layout", LAYOUTS)
@pytest.mark.parametrize("src_layout", LAYOUTS)
def test_copy_between_layouts(src_layout, dst_layout, rng):
    x = random_values((3, 4, 5), ec.float64, rng)
    src = make(x, ec.float64, src_layout)
    dst = make(np.zeros_like(x), ec.float32, dst_layout)
    v = dst._version
    assert dst.copy_(src) is dst
    assert dst._version == v + 1
    np.testing.assert_allclose(dst.numpy(), x.astype(np.float32))


def test_copy_broadcasts_source_and_rejects_the_reverse():
    dst = ec.zeros(2, 3)
    dst.copy_(ec.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(dst.numpy(), [[1, 2, 3], [1, 2, 3]])
    dst.copy_(ec.tensor(5))
    assert (dst == 5).all().item()
    with pytest.raises(RuntimeError, match="broadcastable"):
        ec.zeros(3).copy_(ec.zeros(2, 3))


def test_copy_from_overlapping_view():
    x = ec.arange(6.0)
    x[1:].copy_(x[:-1])
    np.testing.assert_array_equal(x.numpy(), [0, 0, 1, 2, 3, 4])
    m = ec.arange(9.0).view(3, 3)
    m.copy_(m.T)
    np.testing.assert_array_equal(m.numpy(), np.arange(9.0).reshape(3, 3).T)


def test_clone_owns_its_memory_and_keeps_dense_layouts():
    x = ec.arange(24.0).view(2, 3, 4)
    c = x.clone()
    assert c.untyped_storage() is not x.untyped_storage()
    c.add_(1)
    assert x[0, 0, 0].item() == 0
    p = x.permute(2, 0, 1)
    cp = p.clone()
    assert cp.stride() == p.stride()
    np.testing.assert_array_equal(cp.numpy(), p.numpy())
    s = x[:, ::2].clone()
    assert s.is_contiguous()
    np.testing.assert_array_equal(s.numpy(), x.numpy()[:, ::2])
    assert p.clone(memory_format=ec.contiguous_format).is_contiguous()


def test_channels_last_memory_format():
    x = ec.arange(2 * 3 * 4 * 5.0).view(2, 3, 4, 5)
    cl = x.contiguous(memory_format=ec.channels_last)
    assert cl.stride() == (60, 1, 15, 3)
    assert cl.is_contiguous(memory_format=ec.channels_last) and not cl.is_contiguous()
    np.testing.assert_array_equal(cl.numpy(), x.numpy())
    assert cl.contiguous(memory_format=ec.channels_last) is cl
    c2 = cl.clone()
    assert c2.stride() == cl.stride()
    assert cl.clone(memory_format=ec.contiguous_format).is_contiguous()
    assert x.clone(memory_format=ec.channels_last).stride() == (60, 1, 15, 3)
    with pytest.raises(RuntimeError, match="rank 4"):
        ec.zeros(2, 3).contiguous(memory_format=ec.channels_last)


def test_to_and_dtype_methods():
    t = ec.tensor([1.7, -2.2])
    assert t.long().tolist() == [1, -2]
    assert t.int().dtype is ec.int32
    assert t.double().dtype is ec.float64
    assert t.half().dtype is ec.float16
    assert t.bfloat16().dtype is ec.bfloat16
    assert t.bool().tolist() == [True, True]
    assert t.byte().dtype is ec.uint8
    assert t.char().dtype is ec.int8
    assert t.short().dtype is ec.int16
    assert t.float() is t
    assert t.to(ec.float64, copy=False).dtype is ec.float64
    c = t.to(ec.float32, copy=True)
    assert c is not t and c.untyped_storage() is not t.untyped_storage()
    assert t.to("cpu") is t
    assert t.to(ec.device("cpu"), ec.int64).dtype is ec.int64
    assert t.to(ec.zeros(1, dtype=ec.int16)).dtype is ec.int16
    assert t.type() == "torch.FloatTensor"  # PyTorch's name: scripts compare against it
    assert ec.ones(1, dtype=ec.uint8).type() == "torch.ByteTensor"
    assert t.type(ec.int64).dtype is ec.int64
    assert t.type("torch.DoubleTensor").dtype is ec.float64
    assert t.type("ember.IntTensor").dtype is ec.int32
    assert t.type("torch.FloatTensor") is t
    for bad in ("torch.float16", "DoubleTensor", "torch.Foo"):
        with pytest.raises(ValueError, match="invalid type"):
            t.type(bad)
    with pytest.raises(RuntimeError, match="CUDA"):
        t.type("torch.cuda.FloatTensor")

    class Legacy:  # the umbrella's legacy classes carry a dtype attribute
        dtype = ec.int16

    assert t.type(Legacy).dtype is ec.int16
    assert t.type_as(ec.zeros(1, dtype=ec.float64)).dtype is ec.float64
    assert t.cpu() is t
    with pytest.raises(RuntimeError, match="CUDA"):
        t.to("cuda")


def test_resize_keeps_data_and_grows_storage():
    t = ec.arange(4.0)
    t.resize_(2, 2)
    np.testing.assert_array_equal(t.numpy(), [[0, 1], [2, 3]])
    t.resize_(3, 3)
    assert t.shape == (3, 3)
    np.testing.assert_array_equal(t.numpy().reshape(-1)[:4], [0, 1, 2, 3])
    t.resize_(0)
    assert t.shape == (0,)


def test_bfloat16_rounds_to_nearest_even_and_keeps_nan():
    x = np.array([1.0, 1.00390625, 1.01171875, 3.4e38, np.nan, -0.0], dtype=np.float32)
    r = ec.tensor(x).bfloat16().float().numpy()
    np.testing.assert_array_equal(r[:3], [1.0, 1.0, 1.015625])
    assert np.isnan(r[4]) and np.signbit(r[5])
