"""Advanced indexing (_ops/indexing/advanced_index.py, _ops/indexing/indexing.py):
x[key] and x[key] = v against NumPy, PyTorch's placement rules, errors, and fuzzing."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember_core as ec

DTYPES = [
    ec.float32,
    ec.float64,
    ec.float16,
    ec.int64,
    ec.int32,
    ec.int16,
    ec.int8,
    ec.uint8,
    ec.bool,
]


def arange(shape, dtype=ec.float32):
    n = int(np.prod(shape))
    return ec.arange(n).reshape(shape).to(dtype)


def ref_index(a, key):
    """PyTorch's indexing semantics in NumPy: ints select (basic), None/slices are
    basic, Python bools add a dim indexed by [0] or [], arrays index; then NumPy
    advanced indexing (which places the indexed dims exactly as PyTorch does once
    no ints are left)."""
    key = key if isinstance(key, tuple) else (key,)
    ndim = a.ndim
    specified = sum(
        (k.ndim if isinstance(k, np.ndarray) and k.dtype == bool else 1)
        for k in key
        if k is not None
        and k is not Ellipsis
        and not isinstance(k, bool)
        and not (isinstance(k, np.ndarray) and k.dtype == bool and k.ndim == 0)
    )
    basic, adv = [], {}
    pos = 0  # dim of the view being built
    for k in key:
        if k is Ellipsis:
            n = ndim - specified
            basic.extend([slice(None)] * n)
            pos += n
        elif k is None:
            basic.append(None)
            pos += 1
        elif isinstance(k, bool):
            basic.append(None)
            adv[pos] = np.zeros(1 if k else 0, dtype=np.int64)
            pos += 1
        elif isinstance(k, slice):
            basic.append(k)
            pos += 1
        elif isinstance(k, np.ndarray) and k.ndim == 0:
            if k.dtype == bool:  # a 0-d mask acts like a Python bool
                basic.append(None)
                adv[pos] = np.zeros(1 if k else 0, dtype=np.int64)
                pos += 1
            else:  # a 0-d integer index selects, like an int
                basic.append(int(k))
        elif isinstance(k, np.ndarray) and k.dtype == bool:
            basic.extend([slice(None)] * k.ndim)
            for j, col in enumerate(np.nonzero(k)):
                adv[pos + j] = col
            pos += k.ndim
        elif isinstance(k, np.ndarray):
            basic.append(slice(None))
            adv[pos] = k
            pos += 1
        else:
            basic.append(int(k))
    view = a[tuple(basic)]
    if not adv:
        return view
    full = tuple(adv.get(d, slice(None)) for d in range(view.ndim))
    return view[full]


def to_ember_key(key):
    key = key if isinstance(key, tuple) else (key,)
    return tuple(
        ec.from_numpy(np.array(k, copy=True)) if isinstance(k, np.ndarray) else k for k in key
    )


# ------------------------------------------------------ placement rules

# (shape, key, expected result shape), checked against PyTorch 2.13 by hand
PLACEMENT = [
    ((5, 6, 7), ([0, 1],), (2, 6, 7)),
    ((5, 6, 7), (slice(None), [0, 1]), (5, 2, 7)),
    ((5, 6, 7), (0, slice(None), [1, 2]), (6, 2)),  # ints select: NumPy would give (2, 6)
    ((5, 6, 7), ([0], slice(None), [1, 2]), (2, 6)),  # separated: broadcast dims first
    ((5, 6, 7), (slice(None), [0, 1], 2), (5, 2)),
    ((5, 6, 7), (True, [0, 1]), (2, 6, 7)),
    ((5, 6, 7), (None, [0, 1], None, [1, 2]), (2, 1, 1, 7)),
    ((5, 6, 7), (Ellipsis, [0, 1]), (5, 6, 2)),
    ((5, 6, 7), ([0, 1], Ellipsis), (2, 6, 7)),
    ((5, 6, 7), ([[0, 1], [1, 2]],), (2, 2, 6, 7)),
    ((5, 6, 7), (slice(None), [[0], [1]], [1, 2, 3]), (5, 2, 3)),
    ((5, 6, 7), (False,), (0, 5, 6, 7)),
    ((5, 6, 7), (False, [1]), (0, 6, 7)),
    ((5, 6, 7), ([], 0), (0, 7)),
]


@pytest.mark.parametrize("shape,key,expected", PLACEMENT)
def test_result_placement_follows_pytorch(shape, key, expected):
    x = arange(shape)
    key = tuple(ec.tensor(k, dtype=ec.int64) if isinstance(k, list) else k for k in key)
    r = x[key]
    assert tuple(r.shape) == expected
    nkey = tuple(k.numpy() if isinstance(k, ec.Tensor) else k for k in key)
    np.testing.assert_array_equal(r.numpy(), ref_index(x.numpy(), nkey))


def test_zero_dim_integer_tensor_selects_like_an_int():
    x = arange((5, 6, 7))
    assert tuple(x[ec.tensor(0), :, [1, 2]].shape) == (6, 2)
    np.testing.assert_array_equal(x[ec.tensor(2)].numpy(), x.numpy()[2])
    np.testing.assert_array_equal(x[ec.tensor(-1), 1].numpy(), x.numpy()[-1, 1])


def test_zero_dim_bool_tensor_adds_a_dim():
    x = arange((3, 4))
    assert tuple(x[ec.tensor(True)].shape) == (1, 3, 4)
    assert tuple(x[ec.tensor(False)].shape) == (0, 3, 4)
    z = ec.tensor(5.0)
    np.testing.assert_array_equal(z[ec.tensor(True)].numpy(), [5.0])


def test_list_of_sequences_is_a_tuple_of_indices():
    x = arange((5, 6, 7))
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        r = x[[[0, 1], [1, 2]]]
    np.testing.assert_array_equal(r.numpy(), x.numpy()[[0, 1], [1, 2]])
    # a list of ints is one index
    np.testing.assert_array_equal(x[[4, 0, 4]].numpy(), x.numpy()[[4, 0, 4]])


def test_bool_list_is_a_mask():
    x = arange((2, 3))
    np.testing.assert_array_equal(x[[True, False]].numpy(), x.numpy()[[True, False]])


# ------------------------------------------------------------- get: values


@pytest.mark.parametrize("dtype", DTYPES)
def test_integer_index_all_dtypes(dtype):
    x = arange((4, 5), dtype)
    idx = ec.tensor([3, 0, -1, 3])
    np.testing.assert_array_equal(x[idx].numpy(), x.numpy()[[3, 0, -1, 3]])
    np.testing.assert_array_equal(x[:, idx].numpy(), x.numpy()[:, [3, 0, -1, 3]])
    np.testing.assert_array_equal(x[idx, idx].numpy(), x.numpy()[[3, 0, -1, 3], [3, 0, -1, 3]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_mask_all_dtypes(dtype):
    x = arange((3, 4), dtype)
    m = np.arange(12).reshape(3, 4) % 3 == 0
    np.testing.assert_array_equal(x[ec.from_numpy(m)].numpy(), x.numpy()[m])
    np.testing.assert_array_equal(
        x[ec.from_numpy(m[0])[None].expand(3, 4)].numpy(), x.numpy()[np.broadcast_to(m[0], (3, 4))]
    )


def test_bfloat16_index():
    x = arange((4, 3), ec.bfloat16)
    r = x[ec.tensor([2, 0])]
    assert r.dtype is ec.bfloat16
    np.testing.assert_array_equal(r.float().numpy(), x.float().numpy()[[2, 0]])


def test_non_contiguous_inputs_and_indices():
    base = arange((6, 8))
    x = base.t()[::2]  # (4, 6) with odd strides
    idx = ec.tensor([[0, 1, 2, 3], [3, 2, 1, 0]])[:, ::2]  # strided index
    np.testing.assert_array_equal(x[idx].numpy(), x.numpy()[idx.numpy()])
    np.testing.assert_array_equal(x[:, idx].numpy(), x.numpy()[:, idx.numpy()])
    flipped = base.flip(1)  # negative strides
    np.testing.assert_array_equal(flipped[[0, 5], [1, 7]].numpy(), flipped.numpy()[[0, 5], [1, 7]])
    expanded = ec.tensor([1.0, 2.0, 3.0]).expand(4, 3)  # zero strides
    np.testing.assert_array_equal(expanded[[3, 0], [2, 2]].numpy(), [3.0, 3.0])


def test_int32_indices():
    x = arange((4, 5))
    idx = ec.tensor([1, 3], dtype=ec.int32)
    np.testing.assert_array_equal(x[idx].numpy(), x.numpy()[[1, 3]])


def test_empty_indices_and_empty_tensors():
    x = arange((4, 5))
    e = ec.tensor([], dtype=ec.int64)
    assert tuple(x[e].shape) == (0, 5)
    assert tuple(x[:, e].shape) == (4, 0)
    y = ec.zeros(0, 3)
    assert tuple(y[y > 0].shape) == (0,)
    assert tuple(y[e].shape) == (0, 3)
    with pytest.raises(IndexError):
        y[ec.tensor([0])]


def test_zero_dim_tensor_with_none_and_masks():
    z = ec.tensor(7.0)
    assert tuple(z[None].shape) == (1,)
    assert tuple(z[z > 0].shape) == (1,)
    assert tuple(z[z < 0].shape) == (0,)


def test_advanced_result_is_a_copy_and_basic_a_view():
    x = arange((3, 4))
    a = x[[0, 1]]
    a.fill_(-1)
    assert x.numpy().min() == 0
    b = x[0:2]
    b.fill_(-1)
    assert x[0, 0].item() == -1


def test_numpy_array_keys():
    x = arange((4, 5))
    np.testing.assert_array_equal(x[np.array([1, 3])].numpy(), x.numpy()[[1, 3]])
    np.testing.assert_array_equal(x[np.int64(2)].numpy(), x.numpy()[2])
    m = x.numpy() > 7
    np.testing.assert_array_equal(x[m].numpy(), x.numpy()[m])


# ------------------------------------------------------------------ errors


def test_out_of_range_names_index_dim_and_size():
    x = arange((5, 6))
    with pytest.raises(IndexError, match="index 10 is out of bounds for dimension 0 with size 5"):
        x[[10]]
    with pytest.raises(IndexError, match="index -7 is out of bounds for dimension 1 with size 6"):
        x[:, ec.tensor([0, -7])]
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        x[[0, 1], [0, 9]]


def test_bad_index_types():
    x = arange((5, 6))
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[ec.tensor([1.0])]
    with pytest.raises(IndexError, match="tensors used as indices"):
        x[ec.tensor([1], dtype=ec.int16)]
    with pytest.raises(IndexError, match="only integers, slices"):
        x[1.5]
    with pytest.raises(IndexError, match="only integers, slices"):
        x["a"]


def test_mask_shape_mismatch():
    x = arange((5, 6, 7))
    with pytest.raises(IndexError, match=r"The shape of the mask \[4\] at index 0 does not match"):
        x[ec.zeros(4, dtype=ec.bool)]


def test_indices_that_do_not_broadcast():
    x = arange((5, 6))
    with pytest.raises(
        IndexError,
        match=r"shape mismatch: indexing tensors could not be broadcast together with "
        r"shapes \[2\], \[3\]",
    ):
        x[[0, 1], [0, 1, 2]]


def test_too_many_indices():
    x = arange((2, 3))
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[[0], [0], [0]]
    m = ec.ones(2, 3, dtype=ec.bool)
    with pytest.raises(IndexError, match="too many indices"):
        x[m, m]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., [0], ...]


# ------------------------------------------------------------------- set


@pytest.mark.parametrize("dtype", DTYPES)
def test_setitem_integer_index(dtype):
    x = arange((4, 3), dtype)
    a = x.numpy().copy()
    v = ec.ones(2, 3, dtype=dtype)
    x[ec.tensor([3, 1])] = v
    a[[3, 1]] = 1
    np.testing.assert_array_equal(x.numpy(), a)
    x[:, [0, 2]] = 0
    a[:, [0, 2]] = 0
    np.testing.assert_array_equal(x.numpy(), a)


def test_setitem_duplicates_last_write_wins():
    y = ec.zeros(3)
    y[ec.tensor([0, 0, 1])] = ec.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(y.numpy(), [2.0, 3.0, 0.0])


def test_augmented_assignment_does_not_accumulate():
    # x[idx] += v is x[idx] = x[idx] + v: a repeated index is written once
    y = ec.zeros(3)
    y[ec.tensor([0, 0, 1])] += ec.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(y.numpy(), [2.0, 3.0, 0.0])


def test_index_put_accumulate():
    y = ec.zeros(3)
    y.index_put_((ec.tensor([0, 0, 1]),), ec.tensor([1.0, 2.0, 3.0]), accumulate=True)
    np.testing.assert_array_equal(y.numpy(), [3.0, 3.0, 0.0])


def test_setitem_broadcast_values_and_scalars():
    x = ec.zeros(2, 3)
    x[:, [0, 2]] = ec.tensor([[1.0], [2.0]])
    np.testing.assert_array_equal(x.numpy(), [[1, 0, 1], [2, 0, 2]])
    x[[1]] = 5
    np.testing.assert_array_equal(x.numpy(), [[1, 0, 1], [5, 5, 5]])
    z = ec.zeros(3, dtype=ec.int64)
    z[[0]] = 2.7  # converted like PyTorch
    assert z.tolist() == [2, 0, 0]


def test_setitem_mask():
    x = arange((3, 4))
    a = x.numpy().copy()
    x[x > 5] = -1.0
    a[a > 5] = -1
    np.testing.assert_array_equal(x.numpy(), a)
    x[ec.tensor([True, False, True])] = ec.tensor(9)  # a 0-d value of another dtype converts
    a[[True, False, True]] = 9
    np.testing.assert_array_equal(x.numpy(), a)
    m = x.numpy() == 9
    x[ec.from_numpy(m)] = ec.arange(int(m.sum()), dtype=ec.float32)
    a[m] = np.arange(m.sum())
    np.testing.assert_array_equal(x.numpy(), a)


def test_setitem_value_dtype_must_match_for_tensors():
    y = ec.zeros(2, 3)
    with pytest.raises(
        RuntimeError, match="Index put requires the source and destination dtypes match"
    ):
        y[[0, 1]] = ec.tensor([1, 2, 3])


def test_setitem_value_shape_mismatch():
    y = ec.zeros(2, 3)
    with pytest.raises(
        RuntimeError, match=r"shape mismatch: value tensor of shape \[3, 3\] cannot be broadcast"
    ):
        y[[0, 1]] = ec.ones(3, 3)


def test_setitem_out_of_range_changes_nothing():
    y = ec.zeros(4)
    with pytest.raises(IndexError, match="out of bounds"):
        y[ec.tensor([0, 1, 9])] = 1.0
    assert y.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_setitem_bumps_version_and_refuses_read_only():
    y = ec.zeros(4)
    v = y._version
    y[[1]] = 1.0
    assert y._version > v
    a = np.zeros(4, np.float32)
    a.setflags(write=False)
    t = ec.from_numpy(a)
    with pytest.raises(RuntimeError, match="read-only"):
        t[[0]] = 1.0


def test_setitem_from_overlapping_source():
    x = ec.arange(6.0)
    x[ec.tensor([1, 2, 3])] = x[0:3]  # the source is a view of the target
    np.testing.assert_array_equal(x.numpy(), [0, 0, 1, 2, 4, 5])


def test_setitem_through_a_view_writes_the_base():
    base = ec.zeros(3, 4)
    view = base[:, 1:]
    view[[0, 2], [1, 1]] = 7.0
    assert base[0, 2].item() == 7.0 and base[2, 2].item() == 7.0


def test_large_parallel_get_and_put_match_numpy():
    rng = np.random.default_rng(0)
    n = 1 << 17
    a = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(-n, n, n)
    x = ec.from_numpy(a)
    np.testing.assert_array_equal(x[ec.from_numpy(idx)].numpy(), a[idx])
    # accumulate with duplicates, in parallel: identical to a serial np.add.at
    acc = ec.zeros(n)
    acc.index_put_((ec.from_numpy(idx),), x, accumulate=True)
    ref = np.zeros(n, np.float32)
    np.add.at(ref, idx, a)
    np.testing.assert_allclose(acc.numpy(), ref, rtol=1e-5, atol=1e-5)
    # plain put: the last write wins, as serially
    put = ec.zeros(n)
    put[ec.from_numpy(idx)] = x
    refp = np.zeros(n, np.float32)
    refp[idx] = a
    np.testing.assert_array_equal(put.numpy(), refp)


# --------------------------------------------------------------- fuzzing


@st.composite
def shapes_and_keys(draw, with_ints_among_arrays=False):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    items = []
    dim = 0
    used_ellipsis = False
    has_array = False
    while dim < len(shape) and draw(st.booleans()):
        size = shape[dim]
        kind = draw(st.sampled_from(["int", "slice", "none", "array", "mask", "ellipsis", "bool"]))
        if kind == "int" and size:
            items.append(draw(st.integers(-size, size - 1)))
            dim += 1
        elif kind == "slice":
            start = draw(st.none() | st.integers(-5, 5))
            stop = draw(st.none() | st.integers(-5, 5))
            step = draw(st.none() | st.integers(1, 3))
            items.append(slice(start, stop, step))
            dim += 1
        elif kind == "none":
            items.append(None)
        elif kind == "bool":
            items.append(draw(st.booleans()))
        elif kind == "ellipsis" and not used_ellipsis:
            items.append(Ellipsis)
            used_ellipsis = True
            dim = len(shape)  # the rest
        elif kind == "array" and size:
            ishape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
            vals = draw(
                st.lists(
                    st.integers(-size, size - 1),
                    min_size=int(np.prod(ishape)),
                    max_size=int(np.prod(ishape)),
                )
            )
            items.append(np.array(vals, dtype=np.int64).reshape(ishape))
            has_array = True
            dim += 1
        elif kind == "mask":
            k = draw(st.integers(1, max(1, min(2, len(shape) - dim))))
            mshape = shape[dim : dim + k]
            bits = draw(
                st.lists(
                    st.booleans(), min_size=int(np.prod(mshape)), max_size=int(np.prod(mshape))
                )
            )
            items.append(np.array(bits, dtype=bool).reshape(mshape))
            has_array = True
            dim += k
    if not with_ints_among_arrays and has_array:
        items = [
            slice(None) if isinstance(k, int) and not isinstance(k, bool) else k for k in items
        ]
    return shape, tuple(items)


def _broadcastable(key):
    arrays = [k for k in key if isinstance(k, np.ndarray) and k.dtype != bool]
    arrays += [
        np.zeros(int(np.count_nonzero(k)))
        for k in key
        if isinstance(k, np.ndarray) and k.dtype == bool
    ]
    arrays += [np.zeros(1 if k else 0) for k in key if isinstance(k, bool)]
    try:
        np.broadcast_shapes(*(a.shape for a in arrays))
        return True
    except ValueError:
        return False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes_and_keys())
def test_fuzz_get_matches_reference(case):
    shape, key = case
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = ec.from_numpy(a.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = ref_index(a, key)
        except (IndexError, ValueError):
            with pytest.raises((IndexError, ValueError, RuntimeError)):
                x[to_ember_key(key)]
            return
        if not _broadcastable(key):
            with pytest.raises(IndexError):
                x[to_ember_key(key)]
            return
        got = x[to_ember_key(key)]
    assert tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes_and_keys(), st.integers(0, 2**31))
def test_fuzz_set_matches_reference(case, seed):
    shape, key = case
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = ec.from_numpy(a.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            target = ref_index(a, key)
        except (IndexError, ValueError):
            return
        if not _broadcastable(key):
            return
        values = np.random.default_rng(seed).standard_normal(target.shape).astype(np.float32)
        # reference: write through index positions (last write wins, like the kernel)
        pos = ref_index(np.arange(a.size).reshape(shape), key)
        expected = a.copy().reshape(-1)
        for p, v in zip(np.asarray(pos).reshape(-1), values.reshape(-1)):
            expected[p] = v
        x[to_ember_key(key)] = ec.from_numpy(values)
    np.testing.assert_array_equal(x.numpy().reshape(-1), expected)


# ---------------------------------------------------------------- parity


@pytest.mark.parity
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes_and_keys(with_ints_among_arrays=True))
def test_parity_get_and_set_with_torch(case):
    torch = pytest.importorskip("torch")
    shape, key = case
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    tkey = tuple(torch.from_numpy(k.copy()) if isinstance(k, np.ndarray) else k for k in key)
    x = ec.from_numpy(a.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = torch.from_numpy(a.copy())[tkey]
        except (IndexError, RuntimeError, ValueError) as e:
            with pytest.raises(type(e)):
                x[to_ember_key(key)]
            return
        got = x[to_ember_key(key)]
        assert tuple(got.shape) == tuple(expected.shape)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
        if expected.numel():
            t = torch.from_numpy(a.copy())
            t[tkey] = -expected
            x[to_ember_key(key)] = -got
            np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_index_that_aliases_the_target():
    x = ec.tensor([1, 0, 2, 3])
    x[x] = ec.tensor([7, 8, 9, 9])  # indices read before any write
    assert x.tolist() == [8, 7, 9, 9]
    b = ec.tensor([True, False, True])
    b.masked_scatter_(b, ec.tensor([False, True]))
    assert b.tolist() == [False, False, True]
