"""Forward-mode AD (forward_ad.py): dual tensors and jvps against finite
differences for every elementwise, linear and product op with a forward rule,
driven by the same cases as test_derivatives.py; and against PyTorch."""

import numpy as np
import pytest
from op_cases import CASES, build, make_values, rng_for

import ember_autograd as ag
import ember_core as ec
from ember_autograd import forward_ad as fwAD

# ops with a forward rule: explicit (JVPS) or derived from the declaration's tags
POINTWISE = {op.name for op in ec.ops_tagged("pointwise")}
LINEAR = {op.name for op in ec.ops_tagged("linear") if not op.composite}
FORWARD_OPS = set(fwAD.JVPS.names()) | POINTWISE | LINEAR
FORWARD = [c for c in CASES if c.op in FORWARD_OPS and c.gradcheck and c.forward]

# the float32 cases (_to_copy, dtype mixes) warn by design
FLOAT32_WARNING = "ignore:Input #.* requires gradient and is not a double precision"


def test_every_op_with_a_forward_rule_is_checked_where_it_has_a_case():
    # the pointwise and linear ops with a formula all have a (derived) rule
    assert {n for n in ag.DERIVATIVES.names() if n in POINTWISE | LINEAR} <= FORWARD_OPS
    assert {c.op for c in FORWARD} == {
        c.op for c in CASES if c.op in FORWARD_OPS and c.gradcheck and c.forward
    }
    assert POINTWISE & {c.op for c in FORWARD}  # the check runs over the pointwise cases


@pytest.mark.filterwarnings(FLOAT32_WARNING)
@pytest.mark.parametrize("case", FORWARD, ids=[c.id for c in FORWARD])
def test_forward_mode_against_finite_differences(case):
    if case.skip_reason():
        pytest.skip(case.skip_reason())
    rng = rng_for(case)
    inputs = tuple(build(ec, spec, make_values(spec, rng)) for spec in case.inputs)
    assert ag.gradcheck(
        lambda *ts: case.call(ec, ts),
        inputs,
        eps=case.eps,
        atol=case.atol,
        rtol=case.rtol,
        check_forward_ad=True,
        check_backward_ad=False,
    )


def test_make_dual_and_unpack():
    x = ec.tensor([1.0, 2.0], dtype=ec.float64)
    t = ec.tensor([0.5, -1.0], dtype=ec.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        y = d.sin() * d
        primal, tangent = fwAD.unpack_dual(y)
        assert fwAD.unpack_dual(y).tangent is tangent
        a = np.array([1.0, 2.0])
        np.testing.assert_allclose(primal.numpy(), np.sin(a) * a)
        np.testing.assert_allclose(tangent.numpy(), (np.cos(a) * a + np.sin(a)) * [0.5, -1.0])
        assert fwAD.unpack_dual(x).tangent is None
    assert fwAD.unpack_dual(y).tangent is None  # tangents die with their level


def test_make_dual_checks_its_arguments():
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="tangent to have the primal's shape"):
            fwAD.make_dual(ec.ones(2, dtype=ec.float64), ec.ones(3, dtype=ec.float64))
        with pytest.raises(ValueError, match="floating point"):
            fwAD.make_dual(ec.ones(2, dtype=ec.int64), ec.ones(2, dtype=ec.int64))
    with pytest.raises(RuntimeError, match="no dual level is open"):
        fwAD.make_dual(ec.ones(2), ec.ones(2))


def test_unsupported_op_raises_clearly():
    with fwAD.dual_level():
        d = fwAD.make_dual(ec.ones(3, dtype=ec.float64), ec.ones(3, dtype=ec.float64))
        with pytest.raises(RuntimeError, match="forward-mode AD is not implemented for 'cumprod'"):
            d.cumprod(0)


def test_in_place_op_carries_the_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(
            ec.tensor([1.0, 2.0], dtype=ec.float64), ec.tensor([1.0, 1.0], dtype=ec.float64)
        )
        y = d * 1
        y.mul_(d)
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), [2.0, 4.0])


def test_forward_over_reverse():
    # the tangent of a gradient: a Hessian-vector product
    x = ec.tensor([0.5, 1.5], dtype=ec.float64, requires_grad=True)
    v = ec.tensor([1.0, -2.0], dtype=ec.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        (g,) = ag.grad((d * d * d).sum(), d, create_graph=True)
        hvp = fwAD.unpack_dual(g).tangent
    np.testing.assert_allclose(hvp.detach().numpy(), 6 * np.array([0.5, 1.5]) * [1.0, -2.0])


def test_handler_is_removed_when_the_last_level_closes():
    with fwAD.dual_level():
        assert fwAD._handle in ec._dispatch.handlers()
    assert fwAD._handle not in ec._dispatch.handlers()


@pytest.mark.parity
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit, inside torch's forward_ad
def test_parity_with_torch_jvp():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a, b, t = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal((3, 4))
    results = []
    for ns, fw in ((ec, fwAD), (torch, torch.autograd.forward_ad)):
        with fw.dual_level():
            x = fw.make_dual(ns.tensor(a, dtype=ns.float64), ns.tensor(t, dtype=ns.float64))
            y = (x.tanh() @ ns.tensor(b, dtype=ns.float64)).exp().sum(1) / (x.abs() + 1).sum(1)
            results.append(fw.unpack_dual(y).tangent.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10)
