"""gradcheck / gradgradcheck (_gradcheck.py): they pass on right gradients,
and on wrong ones raise naming the worst element."""

import re

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec


def leaf(values):
    return ec.tensor(values, dtype=ec.float64, requires_grad=True)


class WrongAtOne(ag.Function):
    """d/dx sin(x) with element 1 of the gradient off by 0.5."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        bump = ec.tensor([0.0, 0.5, 0.0], dtype=ec.float64)
        return g * x.cos() + g * bump


class DetachedBackward(ag.Function):
    """Right first derivative, but written with detached values: its second
    derivative is wrong (zero)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x.detach() ** 2


def test_passes_on_right_gradients_with_several_inputs_and_outputs():
    a, b = leaf([0.5, -1.0, 2.0]), leaf([[1.5], [-0.5]])

    def fn(a, b, scale):
        return (a * b).sin() * scale, (a.exp() + b).sum(0)

    assert ag.gradcheck(fn, (a, b, 3.0)) is True
    assert ag.gradgradcheck(fn, (a, b, 3.0)) is True


def test_reports_the_worst_element():
    x = leaf([0.1, 0.2, 0.3])
    with pytest.raises(ag.GradcheckError) as info:
        ag.gradcheck(WrongAtOne.apply, (x,))
    msg = str(info.value)
    assert "Jacobian mismatch for output 0 with respect to input 0" in msg
    m = re.search(
        r"worst at output element (\d+) \(flat\), input element \[(\d+)\]: "
        r"numerical (\S+), analytical (\S+),",
        msg,
    )
    assert m, msg
    assert (m.group(1), m.group(2)) == ("1", "1")
    np.testing.assert_allclose(float(m.group(3).rstrip(",")), np.cos(0.2), rtol=1e-6)
    np.testing.assert_allclose(float(m.group(4).rstrip(",")), np.cos(0.2) + 0.5, rtol=1e-6)
    assert "numerical:" in msg and "analytical:" in msg


def test_raise_exception_false_returns_false():
    x = leaf([0.1, 0.2, 0.3])
    assert ag.gradcheck(WrongAtOne.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = leaf([0.5, 1.5])
    assert ag.gradcheck(DetachedBackward.apply, (x,))
    with pytest.raises(ag.GradcheckError, match="Jacobian mismatch"):
        ag.gradgradcheck(DetachedBackward.apply, (x,))


def test_forward_mode_check():
    x, y = leaf([0.5, 1.5]), leaf([2.0, -1.0])
    assert ag.gradcheck(lambda a, b: (a * b).exp() + a.sin() / b, (x, y), check_forward_ad=True)
    m = leaf([[1.0, 2.0], [3.0, 4.0]])
    assert ag.gradcheck(
        lambda a, b: a @ b.tanh(), (m, m.detach().clone().requires_grad_()), check_forward_ad=True
    )


def test_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        ag.gradcheck(lambda a: a * 2, (ec.ones(2, dtype=ec.float64),))


def test_warns_for_single_precision_inputs():
    x = ec.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="not a double precision"):
        ag.gradcheck(lambda a: a * 2, (x,), eps=1e-2, atol=1e-2)


def test_detects_non_reentrant_backward():
    calls = [0]

    class Drifting(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls[0] += 1
            return g * (2 + 1e-3 * calls[0])

    with pytest.raises(ag.GradcheckError, match="not reentrant"):
        ag.gradcheck(Drifting.apply, (leaf([1.0, 2.0]),), atol=1e-2)


def test_wrong_gradient_shape_is_reported():
    class Flat(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g.expand(1, 4)  # (1, 4) for a (4,) input: summed to shape by validation

    assert ag.gradcheck(Flat.apply, (leaf([1.0, 2.0, 3.0, 4.0]),))


def test_noncontiguous_and_0d_inputs():
    base = ec.rand(3, 4, dtype=ec.float64)
    x = base[:, ::2].detach().requires_grad_()
    s = leaf(0.7)
    assert ag.gradcheck(lambda a, b: (a * b).tanh(), (x, s))
    assert ag.gradgradcheck(lambda a, b: (a * b).tanh(), (x, s))
