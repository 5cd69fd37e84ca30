"""View ops and basic indexing: results match NumPy, share memory with their
base (writes show through), share its version counter, and copy only when the
strides leave no choice (reshape)."""

import numpy as np
import pytest

import ember_core as ec


def base(shape=(2, 3, 4)):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return ec.tensor(a), a


def shares_memory(t, u):
    return t.untyped_storage() is u.untyped_storage()


@pytest.mark.parametrize(
    "op, ref",
    [
        (lambda t: t.view(6, 4), lambda a: a.reshape(6, 4)),
        (lambda t: t.view(-1), lambda a: a.reshape(-1)),
        (lambda t: t.view(2, -1, 2), lambda a: a.reshape(2, -1, 2)),
        (lambda t: t.transpose(0, 2), lambda a: a.transpose(2, 1, 0)),
        (lambda t: t.permute(1, 2, 0), lambda a: a.transpose(1, 2, 0)),
        (lambda t: t.mT, lambda a: np.swapaxes(a, -1, -2)),
        (lambda t: t.unsqueeze(1), lambda a: a[:, None]),
        (lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
        (lambda t: t[:, :1].squeeze(1), lambda a: a[:, 0]),
        (lambda t: t[:1, :, :1].squeeze(), lambda a: a[0, :, 0]),
        (lambda t: t[:1, :, :1].squeeze((0, 2)), lambda a: a[0, :, 0]),
        (lambda t: t.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
        (lambda t: t.narrow(1, -2, 2), lambda a: a[:, 1:3]),
        (lambda t: t.select(1, -1), lambda a: a[:, -1]),
        (lambda t: t.diagonal(), lambda a: np.diagonal(a)),
        (lambda t: t.diagonal(1, 1, 2), lambda a: np.diagonal(a, 1, 1, 2)),
        (lambda t: t.diagonal(-1, 2, 1), lambda a: np.diagonal(a, -1, 2, 1)),
        (
            lambda t: t.unfold(2, 2, 1),
            lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=2),
        ),
        (
            lambda t: t.unfold(1, 2, 2),
            lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=1)[:, ::2],
        ),
        (lambda t: t[0].expand(5, 3, 4), lambda a: np.broadcast_to(a[0], (5, 3, 4))),
        (lambda t: t[:, :1].expand(-1, 3, -1), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
        (
            lambda t: t.as_strided((3, 2), (1, 4), 2),
            lambda a: np.lib.stride_tricks.as_strided(a.reshape(-1)[2:], (3, 2), (4, 16)),
        ),
        (lambda t: t.flatten(1), lambda a: a.reshape(2, 12)),
        (lambda t: t.unflatten(2, (2, 2)), lambda a: a.reshape(2, 3, 2, 2)),
        (lambda t: t.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
        (lambda t: t.swapaxes(0, 1), lambda a: np.swapaxes(a, 0, 1)),
        (lambda t: t.T, lambda a: a.T),
        (lambda t: t.detach(), lambda a: a),
        (lambda t: t.view(ec.int32), lambda a: a.view(np.int32)),
    ],
)
def test_views_match_numpy_and_share_memory(op, ref):
    t, a = base()
    v = op(t)
    expected = ref(a)
    np.testing.assert_array_equal(v.numpy(), expected)
    assert shares_memory(v, t)
    assert v._version == t._version


def test_writes_through_views_are_seen_by_the_base_and_bump_one_version_counter():
    t, a = base()
    v = t.transpose(0, 1)[1]  # a view of a view
    before = t._version
    v.fill_(-1)
    a[:, 1] = -1
    np.testing.assert_array_equal(t.numpy(), a)
    assert t._version == v._version == before + 1
    w = t.view(-1)
    w.add_(1)
    assert t._version == before + 2
    np.testing.assert_array_equal(t.numpy(), a + 1)
    t.mul_(2)
    assert w._version == before + 3


def test_version_counter_bumps_on_every_kind_of_write():
    t = ec.zeros(4)
    writes = [
        lambda: t.add_(1),
        lambda: t.copy_(ec.ones(4)),
        lambda: t.zero_(),
        lambda: t.fill_(2),
        lambda: t.__setitem__(0, 5),
        lambda: ec.exp(t, out=t),
        lambda: t.uniform_(),
        lambda: t.clamp_(0, 1),
        lambda: t.lerp_(ec.ones(4), 0.5),
        lambda: ec.add(t, 1, out=t),
        lambda: ec.sum(t, 0, keepdim=True, out=ec.zeros(1)) and None,
    ]
    for write in writes[:-1]:
        v = t._version
        write()
        assert t._version > v
    a = ec.arange(4.0)
    b = a.view(2, 2)
    v = a._version
    ec.cumsum(b, 1, out=b)
    assert a._version > v


def test_reshape_views_when_it_can_and_copies_when_it_must():
    t, a = base()
    r = t.reshape(4, 6)
    assert shares_memory(r, t)
    tt = t.transpose(1, 2)  # (2, 4, 3), not contiguous
    r2 = tt.reshape(2, 12)
    assert not shares_memory(r2, t)
    np.testing.assert_array_equal(r2.numpy(), a.transpose(0, 2, 1).reshape(2, 12))
    r3 = tt.reshape(8, 3)  # merges dims 0 and 1, which stay compatible
    np.testing.assert_array_equal(r3.numpy(), a.transpose(0, 2, 1).reshape(8, 3))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        tt.view(2, 12)
    with pytest.raises(RuntimeError, match="invalid for input of size"):
        t.view(5, 5)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.view(-1, -1)


def test_view_of_non_contiguous_tensor_follows_pytorch_stride_rules():
    t = ec.arange(24.0).view(2, 3, 4).permute(0, 2, 1)[:, ::2]  # (2, 2, 3)
    v = t.unsqueeze(1).view(2, 1, 2, 3)
    assert shares_memory(v, t)
    np.testing.assert_array_equal(v.numpy()[:, 0], t.numpy())


def test_contiguous_and_is_contiguous():
    t, a = base()
    assert t.is_contiguous() and t.contiguous() is t
    tt = t.transpose(0, 2)
    assert not tt.is_contiguous()
    c = tt.contiguous()
    assert c.is_contiguous() and not shares_memory(c, t)
    np.testing.assert_array_equal(c.numpy(), a.transpose(2, 1, 0))
    assert ec.zeros(3, 1).expand(3, 4).is_contiguous() is False
    assert ec.zeros(0, 4).T.is_contiguous()
    assert ec.zeros(3, 1, 4).transpose(0, 1).is_contiguous()


def test_in_place_view_ops_change_metadata_only():
    t, a = base()
    ptr = t.data_ptr()
    v = t._version
    t.transpose_(0, 2)
    assert t.shape == (4, 3, 2) and t.data_ptr() == ptr and t._version > v
    np.testing.assert_array_equal(t.numpy(), a.transpose(2, 1, 0))
    t.unsqueeze_(0)
    assert t.shape == (1, 4, 3, 2)
    t.squeeze_()
    assert t.shape == (4, 3, 2)
    m = ec.arange(6.0).view(2, 3)
    m.t_()
    np.testing.assert_array_equal(m.numpy(), np.arange(6.0).reshape(2, 3).T)
    m.as_strided_((2, 2), (1, 2))
    np.testing.assert_array_equal(m.numpy(), [[0, 2], [1, 3]])


def test_unbind_split_chunk_are_views():
    t, a = base()
    parts = t.unbind(1)
    assert len(parts) == 3 and all(shares_memory(p, t) for p in parts)
    for i, p in enumerate(parts):
        np.testing.assert_array_equal(p.numpy(), a[:, i])
    for p, q in zip(t.split(3, 2), np.split(a, [3], 2)):
        np.testing.assert_array_equal(p.numpy(), q)
    for p, q in zip(t.split([1, 3], 2), np.split(a, [1], 2)):
        np.testing.assert_array_equal(p.numpy(), q)
    for p, q in zip(t.chunk(3, 2), np.array_split(a, [2], 2)):
        np.testing.assert_array_equal(p.numpy(), q)
    assert all(shares_memory(p, t) for p in t.chunk(2, 2))
    with pytest.raises(RuntimeError, match="sum exactly"):
        t.split([1, 2], 2)


def test_view_errors():
    t, _ = base()
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.transpose(0, 3)
    with pytest.raises(IndexError, match="out of bounds"):
        t.select(0, 2)  # noqa: B018
    with pytest.raises(RuntimeError, match="must match the existing size"):
        t.expand(2, 5, 4)
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        t.as_strided((10, 10), (10, 1))
    with pytest.raises(RuntimeError, match="duplicate"):
        t.permute(0, 0, 1)
    with pytest.raises(RuntimeError, match="number of dimensions"):
        t.permute(0, 1)
    with pytest.raises(RuntimeError, match="identical"):
        t.diagonal(0, 1, 1)
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        t.narrow(0, 1, 5)
    with pytest.raises(RuntimeError, match="size is"):
        t.unfold(0, 5, 1)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ec.empty(2, -3)


def test_zero_dim_and_empty_views():
    s = ec.tensor(3.0)
    assert s.view(1).shape == (1,) and s.view(()).shape == ()
    assert s.unsqueeze(0).shape == (1,)
    assert s.reshape(1, 1).shape == (1, 1)
    assert s.flatten().shape == (1,)
    e = ec.zeros(0, 3)
    assert e.view(3, 0).shape == (3, 0)
    assert e.reshape(-1, 3).shape == (0, 3)
    assert e.T.shape == (3, 0)
    assert e.expand(2, 0, 3).shape == (2, 0, 3)
    with pytest.raises(RuntimeError):
        e.view(-1, 0)


# ---------------------------------------------------------- basic indexing


@pytest.mark.parametrize(
    "key",
    [
        0,
        -1,
        1,
        slice(None),
        slice(1, None),
        slice(None, None, 2),
        slice(-2, None),
        slice(5, 10),
        (0, 1),
        (0, -1, 2),
        (Ellipsis, 1),
        (None, 0),
        (slice(None), None, 1),
        (1, Ellipsis, None),
        (slice(None, None, 3), slice(1, 3), slice(None, None, 2)),
        (Ellipsis,),
        (),
        (0, slice(0, 0)),
        (slice(None), 2, slice(None, None, 3)),
    ],
    ids=str,
)
def test_basic_indexing_matches_numpy_and_views(key):
    t, a = base()
    v = t[key]
    np.testing.assert_array_equal(v.numpy(), a[key])
    assert shares_memory(v, t)


def test_setitem_with_basic_keys_writes_in_place():
    t, a = base()
    t[0, 1] = 100
    a[0, 1] = 100
    t[:, :, ::2] = ec.tensor([-1.0, -2.0])
    a[:, :, ::2] = [-1.0, -2.0]
    t[..., 3] = ec.arange(3.0)
    a[..., 3] = np.arange(3.0)
    t[1] = 7
    a[1] = 7
    np.testing.assert_array_equal(t.numpy(), a)
    i = ec.zeros(3, dtype=ec.int32)
    i[1] = 2.7  # converted like a cast
    assert i.tolist() == [0, 2, 0]


def test_indexing_errors():
    t, _ = base()
    with pytest.raises(IndexError, match="out of bounds"):
        t[2]
    with pytest.raises(IndexError, match="out of bounds"):
        t[0, -4]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(ValueError, match="step"):
        t[::-1]
    with pytest.raises(IndexError, match="only integers"):
        t["a"]
    with pytest.raises(IndexError):
        ec.tensor(1.0)[0]


def test_numpy_integers_as_index():
    t, a = base()
    np.testing.assert_array_equal(t[np.int64(1), np.int32(2)].numpy(), a[1, 2])
    assert t[0, 0, 0].item() == 0.0
