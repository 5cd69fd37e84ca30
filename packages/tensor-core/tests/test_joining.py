"""Joining, splitting and rearranging against NumPy: cat, stack, flip, roll,
repeat, tile, tril/triu and friends."""

import numpy as np
import pytest
from conftest import ALL_DTYPES, LAYOUTS, make, random_values, to_np

import ember_core as ec


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cat_and_stack(dtype, layout, rng):
    a = random_values((2, 3, 4), dtype, rng)
    b = random_values((2, 1, 4), dtype, rng)
    ta, tb = make(a, dtype, layout), make(b, dtype, "strided")
    np.testing.assert_array_equal(to_np(ec.cat([ta, tb], 1)), np.concatenate([a, b], 1))
    np.testing.assert_array_equal(to_np(ec.cat((ta, ta), -1)), np.concatenate([a, a], -1))
    np.testing.assert_array_equal(to_np(ec.stack([ta, ta], 0)), np.stack([a, a], 0))
    np.testing.assert_array_equal(to_np(ec.stack([ta, ta], -1)), np.stack([a, a], -1))


def test_cat_promotes_skips_legacy_empty_and_checks_shapes():
    r = ec.cat([ec.tensor([1, 2]), ec.tensor([0.5])])
    assert r.dtype is ec.float32 and r.tolist() == [1.0, 2.0, 0.5]
    assert ec.cat([ec.ones(2, 3), ec.empty(0)]).shape == (2, 3)
    assert ec.cat([ec.ones(0, 3), ec.ones(2, 3)]).shape == (2, 3)
    out = ec.empty(0)
    assert ec.cat([ec.ones(2), ec.zeros(1)], out=out) is out and out.tolist() == [1, 1, 0]
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        ec.cat([ec.ones(2, 3), ec.ones(2, 4)])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        ec.cat([ec.ones(2, 3), ec.ones(3)])
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        ec.cat([ec.tensor(1.0), ec.tensor(2.0)])
    with pytest.raises(RuntimeError, match="non-empty"):
        ec.cat([])
    with pytest.raises(TypeError):
        ec.cat(ec.ones(2))
    with pytest.raises(RuntimeError, match="equal size"):
        ec.stack([ec.ones(2), ec.ones(3)])


def test_hstack_vstack_dstack_column_stack(rng):
    a, b = random_values((3,), ec.float32, rng), random_values((3,), ec.float32, rng)
    m = random_values((2, 3), ec.float32, rng)
    ta, tb, tm = ec.tensor(a), ec.tensor(b), ec.tensor(m)
    np.testing.assert_array_equal(ec.hstack([ta, tb]).numpy(), np.hstack([a, b]))
    np.testing.assert_array_equal(ec.vstack([ta, tb]).numpy(), np.vstack([a, b]))
    np.testing.assert_array_equal(ec.vstack([tm, ta]).numpy(), np.vstack([m, a]))
    np.testing.assert_array_equal(ec.dstack([ta, tb]).numpy(), np.dstack([a, b]))
    np.testing.assert_array_equal(ec.column_stack([ta, tb]).numpy(), np.column_stack([a, b]))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_flip_roll(layout, rng):
    x = random_values((3, 4, 5), ec.int32, rng)
    t = make(x, ec.int32, layout)
    for dims in [(0,), (1, 2), (-1,), (0, 1, 2)]:
        np.testing.assert_array_equal(ec.flip(t, dims).numpy(), np.flip(x, dims))
    np.testing.assert_array_equal(ec.fliplr(t).numpy(), np.fliplr(x))
    np.testing.assert_array_equal(ec.flipud(t).numpy(), np.flipud(x))
    for shifts, dims in [(1, 0), (-2, 2), ((1, 3), (0, 1)), (7, 1), (0, 0)]:
        np.testing.assert_array_equal(ec.roll(t, shifts, dims).numpy(), np.roll(x, shifts, dims))
    np.testing.assert_array_equal(ec.roll(t, 5).numpy(), np.roll(x, 5))
    f = ec.flip(t, (0,))
    assert f.untyped_storage() is not t.untyped_storage()


@pytest.mark.parametrize("reps", [(2,), (2, 3), (1, 1), (2, 1, 3), (0, 2)], ids=str)
def test_repeat_tile(reps, rng):
    x = random_values((2, 3), ec.float32, rng)
    t = make(x, ec.float32, "transposed")
    if len(reps) >= 2:
        np.testing.assert_array_equal(t.repeat(*reps).numpy(), np.tile(x, reps))
    np.testing.assert_array_equal(ec.tile(t, reps).numpy(), np.tile(x, reps))
    with pytest.raises(RuntimeError, match="repeat dims"):
        t.repeat(2)


@pytest.mark.parametrize("diagonal", [-2, -1, 0, 1, 3])
@pytest.mark.parametrize("dtype", [ec.bool, ec.int16, ec.float64, ec.bfloat16], ids=str)
def test_tril_triu(diagonal, dtype, rng):
    x = random_values((2, 4, 5), dtype, rng)
    t = make(x, dtype, "transposed")
    np.testing.assert_array_equal(to_np(ec.tril(t, diagonal)), np.tril(x, diagonal))
    np.testing.assert_array_equal(to_np(ec.triu(t, diagonal)), np.triu(x, diagonal))
    u = t.clone()
    v = u._version
    u.triu_(diagonal)
    assert u._version > v
    np.testing.assert_array_equal(to_np(u), np.triu(x, diagonal))
    out = ec.empty(0, dtype=dtype)
    ec.tril(t, diagonal, out=out)
    np.testing.assert_array_equal(to_np(out), np.tril(x, diagonal))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ec.tril(ec.ones(3))


def test_tensor_split_and_out_forms(rng):
    x = np.arange(10)
    t = ec.tensor(x)
    for p, q in zip(ec.tensor_split(t, 3), np.array_split(x, 3)):
        np.testing.assert_array_equal(p.numpy(), q)
    for p, q in zip(ec.tensor_split(t, [2, 5]), np.split(x, [2, 5])):
        np.testing.assert_array_equal(p.numpy(), q)
    out = ec.empty(0, dtype=ec.int64)
    ec.flip(t, (0,), out=out)
    np.testing.assert_array_equal(out.numpy(), x[::-1])
    ec.roll(t, 2, out=out)
    np.testing.assert_array_equal(out.numpy(), np.roll(x, 2))


def test_cat_legacy_empty_takes_part_in_type_promotion():
    # PyTorch skips a (0,) tensor's shape but not its dtype.
    r = ec.cat([ec.zeros(0, dtype=ec.int64), ec.ones(2, 2, dtype=ec.int8)])
    assert r.dtype == ec.int64 and r.shape == (2, 2)
    r = ec.cat([ec.ones(1, 3, dtype=ec.uint8), ec.zeros(0)])
    assert r.dtype == ec.float32
    np.testing.assert_array_equal(r.numpy(), np.ones((1, 3), np.float32))


@pytest.mark.parametrize("dims", [0, -1, (0,)])
def test_flip_zero_dim(dims):
    r = ec.tensor(3.5).flip(dims)
    assert r.shape == () and r.item() == 3.5
