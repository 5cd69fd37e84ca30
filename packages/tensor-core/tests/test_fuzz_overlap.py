"""Writes into tensors whose elements share memory (Note [Internal overlap]).

An expanded view, a zero stride from as_strided or a NumPy array with a zero
stride has several elements at one memory location; an in-place op, an out=
tensor, a copy_ destination or a slice assignment written through it would apply
the op once per element (x.expand(3, 4).add_(1) added 3).  ember refuses such
writes with PyTorch's error, before any memory is touched, exactly where PyTorch
does: the case tables below are checked against torch by the parity test, the
property tests draw random layouts and ops."""

# The lambdas in the tables run at once, inside the loops that bind them.
# ruff: noqa: B023

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember_core as ec

OVERLAP = "more than one element of the written-to tensor refers to a single memory location"
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _i(T, values):
    return T.tensor(values, dtype=T.int64)


# Each case writes into t, a (3, 4) float32 view of a (1, 4) tensor expanded
# along dim 0 (stride 0).  T is the namespace: ember_core, or torch in the parity
# test.  RAISES: PyTorch checks the written-to tensor; ember must too.
RAISES = {
    "add_ scalar": lambda T, t: t.add_(1),
    "add_ tensor": lambda T, t: t.add_(T.ones(3, 4)),
    "add_ broadcast": lambda T, t: t.add_(T.ones(4)),
    "mul_": lambda T, t: t.mul_(2),
    "mul_ 0-d tensor": lambda T, t: t.mul_(T.tensor(2.0)),
    "sub_": lambda T, t: t.sub_(1),
    "div_ floor": lambda T, t: t.div_(2, rounding_mode="floor"),
    "pow_": lambda T, t: t.pow_(2),
    "fmod_": lambda T, t: t.fmod_(2),
    "iadd": lambda T, t: t.__iadd__(1),
    "neg_": lambda T, t: t.neg_(),
    "sin_": lambda T, t: t.sin_(),
    "sigmoid_": lambda T, t: t.sigmoid_(),
    "abs_": lambda T, t: t.abs_(),
    "relu_": lambda T, t: T.relu_(t),
    "hardtanh_": lambda T, t: T.nn.functional.hardtanh_(t) if T is not ec else T.hardtanh_(t),
    "clamp_": lambda T, t: t.clamp_(0, 1),
    "clamp_ tensors": lambda T, t: t.clamp_(T.zeros(3, 4), T.ones(3, 4)),
    "clamp_min_": lambda T, t: t.clamp_min_(0),
    "nan_to_num_": lambda T, t: t.nan_to_num_(),
    "logical_not_": lambda T, t: t.logical_not_(),
    "eq_": lambda T, t: t.eq_(0),
    "addcmul_": lambda T, t: t.addcmul_(T.ones(3, 4), T.ones(3, 4)),
    "lerp_": lambda T, t: t.lerp_(T.ones(3, 4), 0.5),
    "cumsum_": lambda T, t: t.cumsum_(0),
    "addmm_": lambda T, t: t.addmm_(T.ones(3, 2), T.ones(2, 4)),
    "copy_": lambda T, t: t.copy_(T.ones(3, 4)),
    "copy_ broadcast": lambda T, t: t.copy_(T.ones(4)),
    "copy_ other dtype": lambda T, t: t.copy_(T.ones(3, 4, dtype=T.int64)),
    "t[:] = tensor": lambda T, t: t.__setitem__(slice(None), T.ones(3, 4)),
    "t[:] = scalar": lambda T, t: t.__setitem__(slice(None), 1.0),
    "t[...] = scalar": lambda T, t: t.__setitem__(Ellipsis, 1.0),
    "t[None] = scalar": lambda T, t: t.__setitem__(None, 1.0),
    "t[:, 0] = scalar": lambda T, t: t.__setitem__((slice(None), 0), 1.0),
    "index_add_": lambda T, t: t.index_add_(0, _i(T, [0]), T.ones(1, 4)),
    "index_copy_": lambda T, t: t.index_copy_(0, _i(T, [0]), T.ones(1, 4)),
    "index_reduce_": lambda T, t: t.index_reduce_(0, _i(T, [0]), T.ones(1, 4), "prod"),
    "scatter_": lambda T, t: t.scatter_(0, _i(T, [[0, 0, 0, 0]]), 1.0),
    "scatter_ src": lambda T, t: t.scatter_(0, _i(T, [[0, 0, 0, 0]]), T.ones(1, 4)),
    "scatter_add_": lambda T, t: t.scatter_add_(0, _i(T, [[0, 0, 0, 0]]), T.ones(1, 4)),
    "scatter_reduce_": lambda T, t: t.scatter_reduce_(
        0, _i(T, [[0, 0, 0, 0]]), T.ones(1, 4), "sum"
    ),
    "masked_scatter_": lambda T, t: t.masked_scatter_(T.ones(3, 4, dtype=T.bool), T.ones(12)),
    "put_": lambda T, t: t.put_(_i(T, [0]), T.ones(1)),
    "uniform_": lambda T, t: t.uniform_(),
    "normal_": lambda T, t: t.normal_(),
    "bernoulli_": lambda T, t: t.bernoulli_(0.5),
    "random_": lambda T, t: t.random_(0, 5),
    "exponential_": lambda T, t: t.exponential_(),
    "cauchy_": lambda T, t: t.cauchy_(),
    "log_normal_": lambda T, t: t.log_normal_(),
    "geometric_": lambda T, t: t.geometric_(0.5),
    "add out=": lambda T, t: T.add(T.ones(3, 4), 1, out=t),
    "add tensor out=": lambda T, t: T.add(T.ones(3, 4), T.ones(3, 4), out=t),
    "sin out=": lambda T, t: T.sin(T.ones(3, 4), out=t),
    "clamp out=": lambda T, t: T.clamp(T.ones(3, 4), 0, 1, out=t),
    "where out=": lambda T, t: T.where(T.ones(3, 4) > 0, T.ones(3, 4), T.ones(3, 4), out=t),
    "maximum out=": lambda T, t: T.maximum(T.ones(3, 4), T.ones(3, 4), out=t),
    "addcmul out=": lambda T, t: T.addcmul(T.ones(3, 4), T.ones(3, 4), T.ones(3, 4), out=t),
    "mean out=": lambda T, t: T.mean(T.ones(3, 4, 2), 2, out=t),
    "logsumexp out=": lambda T, t: T.logsumexp(T.ones(3, 4, 2), 2, out=t),
    "cumsum out=": lambda T, t: T.cumsum(T.ones(3, 4), 0, out=t),
    "index_select out=": lambda T, t: T.index_select(T.ones(3, 4), 0, _i(T, [0, 1, 2]), out=t),
    "gather out=": lambda T, t: T.gather(T.ones(3, 4), 0, T.zeros(3, 4, dtype=T.int64), out=t),
    "index_add out=": lambda T, t: T.index_add(T.ones(3, 4), 0, _i(T, [0]), T.ones(1, 4), out=t),
    "scatter out=": lambda T, t: T.scatter(
        T.ones(3, 4), 0, T.zeros(1, 4, dtype=T.int64), 1.0, out=t
    ),
    "cat out=": lambda T, t: T.cat([T.ones(1, 4), T.ones(2, 4)], out=t),
    "stack out=": lambda T, t: T.stack([T.ones(4), T.ones(4), T.ones(4)], out=t),
    "mm out=": lambda T, t: T.mm(T.ones(3, 2), T.ones(2, 4), out=t),
    "addmm out=": lambda T, t: T.addmm(T.ones(3, 4), T.ones(3, 2), T.ones(2, 4), out=t),
    "baddbmm out=": lambda T, t: T.baddbmm(
        T.ones(3, 1, 4), T.ones(3, 1, 2), T.ones(3, 2, 4), out=t.unsqueeze(1)
    ),
    "rand out=": lambda T, t: T.rand(3, 4, out=t),
    "randn out=": lambda T, t: T.randn(3, 4, out=t),
    "normal out=": lambda T, t: T.normal(0.0, 1.0, (3, 4), out=t),
}

# PyTorch writes these without the check (fills, index fills, reductions into
# out=): accepted, as there.
ACCEPTS = {
    "fill_": lambda T, t: t.fill_(1),
    "zero_": lambda T, t: t.zero_(),
    "masked_fill_": lambda T, t: t.masked_fill_(T.ones(3, 4, dtype=T.bool), 1.0),
    "index_fill_": lambda T, t: t.index_fill_(0, _i(T, [0]), 1.0),
    "index_put_": lambda T, t: t.index_put_((_i(T, [0]),), T.ones(4)),
    "index_put_ accumulate": lambda T, t: t.index_put_((_i(T, [0]),), T.ones(4), True),
    "t[idx] = scalar": lambda T, t: t.__setitem__(_i(T, [0, 1]), 1.0),
    "t[mask] = scalar": lambda T, t: t.__setitem__(T.ones(3, 4) > 0, 1.0),
    "t[0] = row (no overlap in t[0])": lambda T, t: t.__setitem__(0, T.ones(4)),
    "tril_": lambda T, t: t.tril_(),
    "triu_": lambda T, t: t.triu_(),
    "tril out=": lambda T, t: T.tril(T.ones(3, 4), out=t),
    "zeros out=": lambda T, t: T.zeros(3, 4, out=t),
    "full out=": lambda T, t: T.full((3, 4), 1.0, out=t),
    "sum out=": lambda T, t: T.sum(T.ones(3, 4, 2), 2, out=t),
    "prod out=": lambda T, t: T.prod(T.ones(3, 4, 2), 2, out=t),
    "amax out=": lambda T, t: T.amax(T.ones(3, 4, 2), 2, out=t),
    "std out=": lambda T, t: T.std(T.ones(3, 4, 2), 2, out=t),
    "argmax out=": lambda T, t: T.argmax(
        T.ones(3, 4, 2), 2, out=T.zeros(1, 4, dtype=T.int64).expand(3, 4)
    ),
    "all out=": lambda T, t: T.all(
        T.ones(3, 4, 2), 2, out=T.zeros(1, 4, dtype=T.bool).expand(3, 4)
    ),
    "histc out=": lambda T, t: T.histc(T.ones(5), 4, out=T.zeros(1).expand(4)),
    "threshold_": lambda T, t: T.threshold_(t, 0.5, 0.0),
    "embedding_renorm_": lambda T, t: T.embedding_renorm_(t, _i(T, [0, 1]), 1.0, 2.0),
    "copy_ onto the same elements": lambda T, t: t.copy_(t.as_strided((3, 4), (0, 1))),
    "resize_ to its shape": lambda T, t: t.resize_(3, 4),
    "t_ (metadata only)": lambda T, t: t.t_(),
    "add_ on a clone": lambda T, t: t.clone().add_(1),
}


def _expanded(T):
    return T.zeros(1, 4).expand(3, 4)


def test_issue_examples_raise_and_leave_memory_alone():
    x = ec.zeros(1, 4)
    with pytest.raises(RuntimeError, match=OVERLAP):
        x.expand(3, 4).add_(1)
    assert x.tolist() == [[0.0] * 4]
    x = ec.ones(1, 4)
    with pytest.raises(RuntimeError, match=OVERLAP):
        x.expand(3, 4).mul_(2)
    assert x.tolist() == [[1.0] * 4]
    a = np.arange(3.0)
    view = np.lib.stride_tricks.as_strided(a, (4, 3), (0, 8))
    with pytest.raises(RuntimeError, match=OVERLAP):
        ec.from_numpy(view).add_(1)
    np.testing.assert_array_equal(a, [0.0, 1.0, 2.0])
    x = ec.zeros(1, 4)
    with pytest.raises(RuntimeError, match=OVERLAP):
        x.expand(3, 4).index_add_(0, ec.tensor([0, 2]), ec.ones(2, 4))
    assert x.tolist() == [[0.0] * 4]


def test_message_is_pytorchs():
    with pytest.raises(RuntimeError) as info:
        _expanded(ec).add_(1)
    assert str(info.value) == (
        "unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location. Please clone() the tensor before performing the operation."
    )


@pytest.mark.parametrize("name", sorted(RAISES))
def test_checked_writes_raise_before_touching_memory(name):
    base = ec.zeros(1, 4)
    before = base._version
    with pytest.raises(RuntimeError, match=OVERLAP):
        RAISES[name](ec, base.expand(3, 4))
    assert base.tolist() == [[0.0] * 4]
    assert base._version == before


@pytest.mark.parametrize("name", sorted(ACCEPTS))
def test_unchecked_writes_are_accepted(name):
    ACCEPTS[name](ec, _expanded(ec))


@pytest.mark.parametrize(
    "name, op",
    [
        ("masked_fill_", "masked_fill_"),
        ("index_fill_", "index_fill_"),
        ("index_put_", "index_put_"),
        ("t[idx] = scalar", "index_put_"),
    ],
)
def test_unchecked_index_fills_warn_as_deprecated(name, op):
    with pytest.warns(UserWarning, match=f"Use of {op} on expanded tensors is deprecated"):
        ACCEPTS[name](ec, _expanded(ec))


def test_fill_through_an_expanded_view_fills_the_base():
    base = ec.zeros(1, 4)
    base.expand(3, 4).fill_(2.5)
    assert base.tolist() == [[2.5] * 4]
    base.expand(3, 4).masked_fill_(ec.tensor([True, False, True, False]), -1.0)
    assert base.tolist() == [[-1.0, 2.5, -1.0, 2.5]]


def test_layouts_without_overlap_are_accepted():
    # empty, a zero stride on a size-1 dim, an expand that adds nothing
    ec.zeros(1, 4).expand(0, 4).add_(1)
    ec.zeros(0, 1).expand(0, 4).add_(1)
    t = ec.zeros(4)
    t.as_strided((1, 4), (0, 1)).add_(1)
    assert t.tolist() == [1.0] * 4
    ec.zeros(4, 1).expand(4, 1).add_(1)
    # repeats without a zero stride are "too hard" for PyTorch's check, accepted there
    ec.zeros(6).as_strided((3, 2), (1, 1)).add_(1)


def test_out_of_a_factory_is_written_in_its_own_dtype_and_layout():
    # arange/linspace/rand/randn/normal(out=) wrote a contiguous tensor of the
    # default dtype (or ignored out) instead of out itself
    o = ec.zeros(5)
    assert ec.arange(5, out=o) is o and o.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    o = ec.zeros(4, dtype=ec.int64)
    assert ec.linspace(0, 3, 4, out=o).tolist() == [0, 1, 2, 3]
    base = ec.zeros(4, 2)
    ec.arange(4.0, out=base[:, 0])
    assert base.tolist() == [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]
    for make in (ec.rand, ec.randn):
        o = ec.zeros(2, 3)
        assert make(2, 3, out=o) is o and bool((o != 0).all())
    o = ec.zeros(3, 4, dtype=ec.float64)
    assert ec.normal(2.0, 0.5, (3, 4), out=o) is o
    assert abs(float(o.mean()) - 2.0) < 0.5
    with pytest.raises(RuntimeError, match="does not match dtype of out parameter"):
        ec.arange(3, out=ec.zeros(3, dtype=ec.int64), dtype=ec.float32)
    with pytest.raises(RuntimeError, match="does not match dtype of out parameter"):
        ec.zeros(2, out=ec.zeros(3, dtype=ec.int64), dtype=ec.float32)
    with pytest.raises(RuntimeError, match="not implemented for 'int64'"):
        ec.rand(3, out=ec.zeros(3, dtype=ec.int64))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor"):
        ec.randn(3, out=[0.0])


# ----------------------------------------------------------- property tests

# In-place forms drawn by the property tests, with their effect on a copy (None:
# random values, compared by shape only).
INPLACE = {
    "add_": lambda t: t.add_(1.5),
    "mul_ tensor": lambda t: t.mul_(ec.full(t.shape, 2.0)),
    "neg_": lambda t: t.neg_(),
    "clamp_": lambda t: t.clamp_(-0.5, 0.5),
    "copy_": lambda t: t.copy_(ec.arange(t.numel(), dtype=ec.float32).reshape(t.shape)),
    "setitem": lambda t: t.__setitem__(Ellipsis, ec.full(t.shape, 7.0)),
    "add out=": lambda t: ec.add(ec.ones(t.shape), 2, out=t),
    "uniform_": lambda t: t.uniform_(),
}
RANDOM = {"uniform_"}


@st.composite
def zero_stride_views(draw):
    """A view of shape `shape` over a base tensor, dims in `zeros` expanded from
    size 1 (stride 0)."""
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))
    zeros = {d for d in range(len(shape)) if draw(st.booleans())}
    base_shape = tuple(1 if d in zeros else s for d, s in enumerate(shape))
    return shape, zeros, base_shape


@PROPS
@given(zero_stride_views(), st.sampled_from(sorted(INPLACE)))
def test_writes_through_zero_strides_raise_exactly_when_elements_alias(case, name):
    shape, zeros, base_shape = case
    base = ec.arange(int(np.prod(base_shape)), dtype=ec.float32).reshape(base_shape)
    view = base.expand(shape)
    aliased = int(np.prod(shape)) > 0 and any(shape[d] > 1 for d in zeros)
    before = base.clone()
    if aliased:
        with pytest.raises(RuntimeError, match=OVERLAP):
            INPLACE[name](view)
        assert base.tolist() == before.tolist()
        return
    reference = view.clone()
    INPLACE[name](reference)
    INPLACE[name](view)
    if name not in RANDOM:
        assert view.tolist() == reference.tolist()


@PROPS
@given(st.data())
def test_as_strided_writes_follow_pytorchs_rule(data):
    # only a zero stride on a dim of size > 1 (in a non-empty tensor) is refused
    nd = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd)))
    stride = tuple(data.draw(st.lists(st.integers(0, 4), min_size=nd, max_size=nd)))
    extent = 1 + sum((s - 1) * st_ for s, st_ in zip(shape, stride)) if all(shape) else 0
    base = ec.zeros(max(extent, 1))
    view = base.as_strided(shape, stride)
    refused = all(shape) and any(s > 1 and st_ == 0 for s, st_ in zip(shape, stride))
    if refused:
        with pytest.raises(RuntimeError, match=OVERLAP):
            view.sub_(1)
        assert base.tolist() == [0.0] * base.numel()
    else:
        view.sub_(1)


# ------------------------------------------------------------------ parity


@pytest.mark.parity
def test_case_tables_match_pytorch():
    torch = pytest.importorskip("torch")
    wrong = []
    for table, should_raise in ((RAISES, True), (ACCEPTS, False)):
        for name, fn in table.items():
            try:
                fn(torch, _expanded(torch))
                raised = False
            except RuntimeError as e:
                raised = OVERLAP in str(e)
                if not raised:
                    wrong.append(f"{name}: {e}")
                    continue
            if raised != should_raise:
                wrong.append(f"{name}: torch {'raises' if raised else 'accepts'}")
    assert not wrong, wrong


@pytest.mark.parity
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_as_strided_refusals_match_pytorch(data):
    torch = pytest.importorskip("torch")
    nd = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd)))
    stride = tuple(data.draw(st.lists(st.integers(0, 4), min_size=nd, max_size=nd)))
    name = data.draw(st.sampled_from(["add_", "copy_", "setitem", "mul out="]))
    ops = {
        "add_": lambda T, t: t.add_(1),
        "copy_": lambda T, t: t.copy_(T.ones(shape)),
        "setitem": lambda T, t: t.__setitem__(Ellipsis, 2.0),
        "mul out=": lambda T, t: T.mul(T.ones(shape), 3, out=t),
    }
    results = []
    for T in (ec, torch):
        view = T.zeros(64).as_strided(shape, stride)
        try:
            ops[name](T, view)
            results.append("ok")
        except RuntimeError as e:
            assert OVERLAP in str(e)
            results.append("raise")
    assert results[0] == results[1], (shape, stride, name, results)


# ------------------------------------------------------------------- CUDA

CUDA_RAISES = {
    "add_": lambda t: t.add_(1),
    "mul_ tensor": lambda t: t.mul_(ec.ones(3, 4, device="cuda")),
    "copy_": lambda t: t.copy_(ec.ones(3, 4, device="cuda")),
    "t[:] = 1": lambda t: t.__setitem__(slice(None), 1.0),
    "index_add_": lambda t: t.index_add_(
        0, ec.tensor([0], device="cuda"), ec.ones(1, 4, device="cuda")
    ),
    "uniform_": lambda t: t.uniform_(),
    "add out=": lambda t: ec.add(ec.ones(3, 4, device="cuda"), 1, out=t),
}


@pytest.mark.cuda
@pytest.mark.parametrize("name", sorted(CUDA_RAISES))
def test_cuda_writes_through_expanded_tensors_raise(name):
    base = ec.zeros(1, 4, device="cuda")
    with pytest.raises(RuntimeError, match=OVERLAP):
        CUDA_RAISES[name](base.expand(3, 4))
    assert base.cpu().tolist() == [[0.0] * 4]


@pytest.mark.cuda
def test_cuda_fill_through_an_expanded_tensor_is_accepted():
    base = ec.zeros(1, 4, device="cuda")
    base.expand(3, 4).fill_(2.0)
    assert base.cpu().tolist() == [[2.0] * 4]
