import collections

import numpy as np
import pytest

from ember_data import _rng, default_collate, default_convert
from ember_data._utils import collate as collate_mod

EC = _rng.ember_core()
Point = collections.namedtuple("Point", ["x", "y"])


def arr(x):
    """The batch as a NumPy array (ember tensors convert without copying)."""
    if EC is not None:
        assert isinstance(x, EC.Tensor), f"expected an ember tensor, got {type(x).__name__}"
    else:
        assert isinstance(x, np.ndarray)
    return np.asarray(x)


def test_numbers():
    f = arr(default_collate([1.5, 2.0, -3.25]))
    assert f.dtype == np.float64
    np.testing.assert_array_equal(f, [1.5, 2.0, -3.25])
    i = arr(default_collate([1, 2, 3]))
    assert i.dtype == np.int64
    np.testing.assert_array_equal(i, [1, 2, 3])
    b = arr(default_collate([True, False]))
    assert b.dtype == np.bool_


def test_numpy_scalars_keep_their_dtype():
    out = arr(default_collate([np.float32(1), np.float32(2)]))
    assert out.dtype == np.float32
    out = arr(default_collate([np.int16(1), np.int16(2)]))
    assert out.dtype == np.int16


def test_arrays_are_stacked():
    batch = [np.full((2, 3), i, dtype=np.float32) for i in range(4)]
    out = arr(default_collate(batch))
    assert out.shape == (4, 2, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.stack(batch))


def test_large_arrays_in_a_shared_allocator(monkeypatch):
    made = []

    def allocator(shape, dtype):
        a = np.empty(shape, dtype)
        made.append(a)
        return a

    monkeypatch.setattr(collate_mod, "_shared_allocator", allocator)
    out = arr(default_collate([np.ones((5,)), np.zeros((5,))]))
    assert len(made) == 1 and np.shares_memory(out, made[0])
    np.testing.assert_array_equal(out, [[1] * 5, [0] * 5])


def test_strings_and_bytes_stay_lists():
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


def test_mappings_keep_their_type():
    batch = [collections.OrderedDict(a=1, b=2.0), collections.OrderedDict(a=3, b=4.0)]
    out = default_collate(batch)
    assert type(out) is collections.OrderedDict and list(out) == ["a", "b"]
    np.testing.assert_array_equal(arr(out["a"]), [1, 3])
    np.testing.assert_array_equal(arr(out["b"]), [2.0, 4.0])


def test_namedtuple_and_tuple_and_list():
    out = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert type(out) is Point
    np.testing.assert_array_equal(arr(out.x), [1, 3])
    out = default_collate([(1, "a"), (2, "b")])
    assert isinstance(out, list) and list(out[1]) == ["a", "b"]  # tuples come back as lists
    out = default_collate([[1, 2], [3, 4]])
    assert isinstance(out, list)
    np.testing.assert_array_equal(arr(out[0]), [1, 3])


def test_nested_structures():
    batch = [
        {"img": np.zeros((2, 2)), "meta": {"id": i, "tags": ["x", "y"], "p": Point(i, float(i))}}
        for i in range(3)
    ]
    out = default_collate(batch)
    assert arr(out["img"]).shape == (3, 2, 2)
    np.testing.assert_array_equal(arr(out["meta"]["id"]), [0, 1, 2])
    assert [list(t) for t in out["meta"]["tags"]] == [["x", "x", "x"], ["y", "y", "y"]]
    np.testing.assert_array_equal(arr(out["meta"]["p"].y), [0.0, 1.0, 2.0])


def test_errors_name_the_problem():
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(
        RuntimeError,
        match=r"stack expects each tensor to be equal size, but got \[2\] at entry 0 "
        r"and \[3\] at entry 1",
    ):
        default_collate([np.zeros(2), np.zeros(3)])


def test_default_convert():
    a = np.arange(3)
    out = default_convert(a)
    np.testing.assert_array_equal(np.asarray(out), a)
    if EC is not None:
        assert isinstance(out, EC.Tensor)
        assert np.shares_memory(np.asarray(out), a)  # no copy, as torch.as_tensor
    assert default_convert("s") == "s"
    assert default_convert(np.array(["a"])).dtype.kind == "U"  # strings are left alone
    out = default_convert({"a": np.ones(2), "b": (np.zeros(1), 3)})
    assert isinstance(out["b"], list) and out["b"][1] == 3
    assert type(default_convert(Point(np.ones(1), 2))) is Point


def test_ember_tensors_are_stacked():
    ec = pytest.importorskip("ember_core")
    batch = [ec.tensor([[1.0, 2.0]]) * i for i in range(3)]
    out = default_collate(batch)
    assert isinstance(out, ec.Tensor) and tuple(out.shape) == (3, 1, 2)
    np.testing.assert_array_equal(out.numpy(), [[[0, 0]], [[1, 2]], [[2, 4]]])
    ints = default_collate([ec.tensor(1), ec.tensor(2)])
    assert ints.dtype == ec.int64 and ints.tolist() == [1, 2]


@pytest.mark.parity
def test_structure_and_dtypes_match_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate

    batch = [
        {
            "f": 1.5 * i,
            "i": i,
            "b": bool(i % 2),
            "s": f"s{i}",
            "np32": np.full((2,), i, np.float32),
            "npu8": np.full((2, 2), i, np.uint8),
            "scalar": np.int32(i),
            "nt": Point(i, [float(i), 2.0]),
            "tup": (i, "t"),
        }
        for i in range(3)
    ]

    def describe(x):
        if isinstance(x, torch.Tensor):
            return ("tensor", str(x.dtype).replace("torch.", ""), tuple(x.shape), x.tolist())
        if EC is not None and isinstance(x, EC.Tensor):
            return ("tensor", x.dtype.name, tuple(x.shape), x.tolist())
        if isinstance(x, np.ndarray):
            return ("tensor", x.dtype.name, tuple(x.shape), x.tolist())
        if isinstance(x, dict):
            return (type(x).__name__, {k: describe(v) for k, v in x.items()})
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return (type(x).__name__, [describe(v) for v in x])
        if isinstance(x, list):
            return ("list", [describe(v) for v in x])
        return (type(x).__name__, x)

    assert describe(default_collate(batch)) == describe(torch_collate(batch))


# ------------------------------------------------ the collate choice (Note [Collate choice])


def test_default_collate_makes_ember_tensors_exactly_when_ember_core_is_installed():
    out = default_collate([np.zeros(2, np.float32), np.ones(2, np.float32)])
    assert type(out) is (EC.Tensor if EC is not None else np.ndarray)


def test_numpy_collate_always_makes_numpy_arrays():
    from ember_data import numpy_collate

    batch = [
        {"x": np.full(3, i, np.float32), "y": i, "w": float(i), "n": np.int16(i), "s": str(i)}
        for i in range(4)
    ]
    out = numpy_collate(batch)
    assert all(type(out[k]) is np.ndarray for k in "xywn")
    np.testing.assert_array_equal(
        out["x"], np.repeat(np.arange(4, dtype=np.float32), 3).reshape(4, 3)
    )
    assert out["y"].dtype == np.int64 and out["w"].dtype == np.float64
    assert out["n"].dtype == np.int16 and out["s"] == ["0", "1", "2", "3"]
    if EC is not None:  # ember tensors in the samples become arrays too
        out = numpy_collate([(EC.ones(2), 1), (EC.zeros(2), 2)])
        assert type(out[0]) is np.ndarray and out[0].tolist() == [[1, 1], [0, 0]]


def test_numpy_collate_with_the_dataloader_and_workers():
    from ember_data import DataLoader, TensorDataset, numpy_collate

    ds = TensorDataset(np.arange(20, dtype=np.float32).reshape(10, 2), np.arange(10))
    for workers in (0, 2):
        loader = DataLoader(ds, batch_size=4, collate_fn=numpy_collate, num_workers=workers)
        batches = list(loader)
        assert all(type(x) is np.ndarray and type(y) is np.ndarray for x, y in batches)
        np.testing.assert_array_equal(np.concatenate([y for _, y in batches]), np.arange(10))


def test_torch_collate_without_torch_says_what_to_do(monkeypatch):
    import sys

    from ember_data import torch_collate

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails
    with pytest.raises(ImportError, match="numpy_collate"):
        torch_collate([1, 2])


@pytest.mark.parity
def test_torch_collate_and_default_collate_of_torch_tensors():
    torch = pytest.importorskip("torch")
    from ember_data import DataLoader, TensorDataset, torch_collate

    out = torch_collate([(np.zeros(2, np.float32), 1, 0.5), (np.ones(2, np.float32), 2, 1.5)])
    assert all(isinstance(t, torch.Tensor) for t in out)
    assert out[0].dtype == torch.float32 and out[1].dtype == torch.int64
    assert out[2].dtype == torch.float64 and out[1].tolist() == [1, 2]
    # PyTorch tensors in the samples: default_collate stacks them with torch, as torch does
    batch = [(torch.ones(3), torch.tensor(1)), (torch.zeros(3), torch.tensor(2))]
    for fn in (default_collate, torch_collate):
        x, y = fn(batch)
        assert isinstance(x, torch.Tensor) and x.shape == (2, 3) and y.tolist() == [1, 2]
    want = torch.utils.data.default_collate(batch)
    assert torch.equal(default_collate(batch)[0], want[0])
    ds = TensorDataset(np.arange(12, dtype=np.float32).reshape(6, 2), np.arange(6))
    batches = list(DataLoader(ds, batch_size=4, collate_fn=torch_collate))
    assert isinstance(batches[0][0], torch.Tensor) and batches[1][1].tolist() == [4, 5]
    if EC is not None:
        x, _ = torch_collate([(EC.ones(2), 0), (EC.zeros(2), 1)])
        assert isinstance(x, torch.Tensor) and x.tolist() == [[1, 1], [0, 0]]
