"""repr() in PyTorch's format: known strings here, and the same repr as
PyTorch over many tensors in the parity tests."""

import math

import numpy as np
import pytest

import ember_core as ec

CASES = [
    ("[[1.0, 2.0]]", None),
    ("[1.5, -2.25, 3.0]", None),
    ("[1, 2, 3]", None),
    ("[True, False]", None),
    ("3.5", None),
    ("7", None),
    ("[]", None),
    ("[1.0, 2.0]", "float64"),
    ("[1, 2]", "int32"),
    ("[1, 2]", "uint8"),
    ("[0.5, 1.25]", "float16"),
    ("[0.5, 1.25]", "bfloat16"),
    ("[1e-5, 1.0, 1000.0]", None),
    ("[1e10, 1.0]", None),
    ("[0.0001, 0.5]", None),
    ("[123456789.0, 1.0]", None),
    ("[[1.123456, -22.5], [3.0, 4.0]]", None),
    ("[float('nan'), float('inf'), -float('inf'), 1.5]", None),
    ("[float('nan'), 1.0]", None),
    ("[-0.0, 0.0]", None),
    ("[0.0, 0.0]", None),
    ("[[[1, -2], [3, 4]], [[5, 6], [7, 800]]]", None),
    ("list(range(2000))", None),
    ("[[float(i + j) for j in range(50)] for i in range(40)]", None),
    ("[x / 7 for x in range(30)]", None),
    ("[1e-20, 1.0]", None),
    ("[2.0 ** 60, 1.0]", "float64"),
]


def make_case(expr, dtype):
    data = eval(expr)  # noqa: S307 - test data written above
    return ec.tensor(data, dtype=getattr(ec, dtype) if dtype else None)


def test_known_reprs():
    assert repr(ec.tensor([[1.0, 2.0]])) == "tensor([[1., 2.]])"
    assert repr(ec.tensor([1.5, -2.25])) == "tensor([ 1.5000, -2.2500])"
    assert repr(ec.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ec.tensor([1, 2], dtype=ec.int32)) == "tensor([1, 2], dtype=ember.int32)"
    assert repr(ec.tensor([1.0], dtype=ec.float64)) == "tensor([1.], dtype=ember.float64)"
    assert repr(ec.tensor(True)) == "tensor(True)"
    assert repr(ec.tensor(2.5)) == "tensor(2.5000)"
    assert repr(ec.zeros(0)) == "tensor([])"
    assert repr(ec.zeros(2, 0)) == "tensor([], size=(2, 0))"
    assert repr(ec.zeros(0, dtype=ec.int32)) == "tensor([], dtype=ember.int32)"
    assert repr(ec.tensor([math.nan, math.inf])) == "tensor([nan, inf])"
    assert repr(ec.ones(2, requires_grad=True)) == "tensor([1., 1.], requires_grad=True)"
    assert repr(ec.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"


def test_large_tensors_are_summarised():
    r = repr(ec.arange(2000))
    assert r == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    m = repr(ec.zeros(100, 100))
    assert "..." in m and m.count("\n") < 10


def test_set_printoptions():
    try:
        ec.set_printoptions(precision=2)
        assert repr(ec.tensor([1.2345])) == "tensor([1.23])"
        ec.set_printoptions(sci_mode=True)
        assert repr(ec.tensor([1.5])) == "tensor([1.50e+00])"
    finally:
        ec.set_printoptions(profile="default")
    assert repr(ec.tensor([1.2345])) == "tensor([1.2345])"


def test_str_of_size_and_dtype_and_device():
    assert repr(ec.zeros(2, 3).shape) == "ember.Size([2, 3])"
    assert repr(ec.float16) == "ember.float16"
    assert repr(ec.device("cpu")) == "device(type='cpu')"
    assert str(ec.device("cpu")) == "cpu"


@pytest.mark.parity
@pytest.mark.parametrize("expr, dtype", CASES, ids=[f"{e[:30]}-{d}" for e, d in CASES])
def test_repr_matches_pytorch(expr, dtype):
    torch = pytest.importorskip("torch")
    data = eval(expr)  # noqa: S307
    t = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    e = make_case(expr, dtype)
    assert repr(e).replace("ember.", "torch.") == repr(t)


@pytest.mark.parity
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (1000,), (1001,), (5, 300), (0, 3)], ids=str)
def test_random_reprs_match_pytorch(shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for scale in (1.0, 1000.0, 1e-3, 1e6):
        a = (rng.standard_normal(shape) * scale).astype(np.float32)
        assert repr(ec.tensor(a)).replace("ember.", "torch.") == repr(torch.tensor(a))
    i = rng.integers(-1000, 1000, shape)
    assert repr(ec.tensor(i)).replace("ember.", "torch.") == repr(torch.tensor(i))


def test_return_types_print_and_pickle_as_named_tuples():
    import pickle

    r = ec.tensor([[1.0, 2.0], [3.0, 4.0]]).max(1)
    assert repr(r) == ("ember.return_types.max(\nvalues=tensor([2., 4.]),\nindices=tensor([1, 1]))")
    assert str(r) == repr(r) and isinstance(r, tuple) and r.values is r[0]
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is type(r) and back.indices.tolist() == [1, 1]
    assert repr(ec.var_mean(ec.ones(3))) == "(tensor(0.), tensor(1.))"  # a plain tuple in torch
