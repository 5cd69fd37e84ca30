"""In-place ops (_handler.py, Note [In-place ops and views]; saved-tensor
versions in _node.py): every error case, and correct gradients for in-place
ops on non-leaf tensors and their views (finite differences, and PyTorch)."""

import re

import numpy as np
import pytest
from parity import check_gradients, check_parity

import ember_autograd as ag
import ember_core as ec


def leaf(*shape):
    return ec.rand(*shape, dtype=ec.float64).add(0.5).requires_grad_()


def _this_line(offset):
    """'file:line' of the line ``offset`` lines below the caller's call."""
    import inspect

    frame = inspect.currentframe().f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno + offset}"


# ------------------------------------------------------------ error cases


def test_modified_saved_input_names_saver_modifier_and_line():
    x = leaf(3)
    y = x * 1
    z = y.sin()
    where = _this_line(1)
    y.add_(1)
    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
    msg = str(info.value)
    assert "modified by an inplace operation" in msg
    assert "saved by sin" in msg
    assert "modified in place by add_" in msg
    assert where in msg and "y.add_(1)" in msg
    assert "is at version 1; expected version 0" in msg


def test_modified_saved_output_is_named_as_output():
    x = leaf(3)
    y = (x * 1).exp()  # exp saves its result
    y.mul_(2)
    with pytest.raises(
        RuntimeError, match=r"output 0 of ExpBackward0.*saved by exp.*modified in place by mul_"
    ):
        y.sum().backward()


def test_modification_through_a_view_is_detected():
    x = leaf(2, 3)
    y = x * 1
    z = y.cos()
    y[1].zero_()  # a view shares its base's version counter
    with pytest.raises(RuntimeError, match="modified in place by zero_"):
        z.sum().backward()


def test_modification_under_no_grad_is_detected():
    x = leaf(3)
    y = x * 1
    z = y * y
    with ag.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified in place by mul_"):
        z.sum().backward()


def test_modification_by_setitem_and_copy_is_detected():
    x = leaf(3)
    y = x * 1
    z = y.sin()  # saves its input
    y[0] = 5.0
    with pytest.raises(RuntimeError, match=re.escape("modified in place by __setitem__")):
        z.sum().backward()
    y = x * 1
    z = y.sin()
    y.copy_(ec.zeros(3, dtype=ec.float64))
    with pytest.raises(RuntimeError, match="modified in place by copy_"):
        z.sum().backward()


def test_modified_leaf_saved_by_an_op():
    x = leaf(3)
    w = ec.rand(3, dtype=ec.float64)
    y = (x * w).sum()
    w.add_(1)  # w does not require grad, but x's gradient needs it
    with pytest.raises(RuntimeError, match="saved by mul"):
        y.backward()


def test_in_place_op_reading_its_own_target_raises_as_in_pytorch():
    x = leaf(3)
    y = x + 1
    y.mul_(y)  # mul_ saved y (as other) and then wrote into it
    with pytest.raises(RuntimeError, match="saved by mul_.*modified in place by mul_"):
        y.sum().backward()


def test_unmodified_storage_is_fine_after_unrelated_write():
    x = leaf(3)
    y = x * 1
    other = x * 1
    z = y.sin()
    other.add_(1)  # a different storage
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()))


def test_in_place_on_leaf_requiring_grad_raises():
    x = leaf(3)
    with pytest.raises(
        RuntimeError, match="mul_: a leaf Variable that requires grad is being used in an in-place"
    ):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x[0] = 1.0
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.uniform_()


def test_in_place_on_view_of_leaf_requiring_grad_raises():
    x = leaf(2, 3)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x.t().mul_(2)


def test_out_argument_with_grad_raises():
    x = leaf(3)
    out = ec.empty(3, dtype=ec.float64)
    with pytest.raises(
        RuntimeError,
        match=r"add\(\): functions with out=\.\.\. arguments don't support automatic "
        r"differentiation",
    ):
        ec.add(x, x, out=out)
    with ag.no_grad():
        ec.add(x, x, out=out)  # fine without recording
    np.testing.assert_allclose(out.numpy(), 2 * x.detach().numpy())


def test_version_counter_bumps():
    x = ec.zeros(3)
    v0 = x._version
    x.add_(1)
    x[0] = 2
    x[1:].mul_(3)
    with ag.no_grad():
        x.zero_()
    assert x._version == v0 + 4
    assert x[1:]._version == x._version


# ------------------------------------------------ gradients (non-leaves)


def _mul_(ns, x):
    y = x * 2
    y.mul_(3)
    return y.sum()


def _chain_(ns, x):
    y = x * 1
    y.sin_()
    y.pow_(2)
    y.mul_(x)
    y.exp_()  # saves its result: the last in-place op may
    return y.sum()


def _with_other_(ns, x, w):
    y = x * 1
    y.mul_(w)
    y.add_(w, alpha=2)
    y.div_(w.exp())
    return (y * y).sum()


def _broadcast_other_(ns, x, w):
    y = x + 1
    y.addcmul_(w, w, value=0.5)
    return y.pow(2).sum()


def _row_view_(ns, x):
    y = x * 2
    y[0].exp_()
    return (y * y).sum()


def _column_view_(ns, x, w):
    y = x * 1
    y[:, 1].mul_(w)
    return y.pow(3).sum()


def _view_of_view_(ns, x, w):
    y = x * 1
    v = y[1:][:, :2]
    v.add_(w)
    v.tanh_()
    return (y * x).sum()


def _stale_sibling_view(ns, x):
    y = x * 1
    a = y[0]
    b = y[:, 0]  # made before the write through a
    a.mul_(3)
    return (b * b).sum() + y.sum()


def _view_made_before_base_write(ns, x):
    y = x * 1
    v = y[1]
    y.mul_(x)
    return (v * 2).sum()


def _transposed_view_(ns, x):
    y = x + 1
    y.t()[0].sigmoid_()
    return (y * y).sum()


def _reshaped_view_(ns, x):
    y = x * 1
    y.view(-1)[1:4].mul_(2)
    return (y * y).sum()


def _setitem_value_(ns, x, w):
    y = x * 1
    y[0] = w * 2
    y[1, 1:] = w[1:].exp()
    return (y * y).sum()


def _setitem_into_fresh(ns, w):
    y = ns.zeros(3, 3, dtype=ns.float64)
    y[1] = w.sin()
    y[:, 2] = w * 3
    return (y * y).sum()


def _copy_into_view_of_fresh(ns, w):
    y = ns.zeros(2, 3, dtype=ns.float64)
    y[0].copy_(w)
    y.t()[1].copy_(w[:2] * 5)
    return (y.exp()).sum()


def _fill_and_zero_(ns, x):
    y = x.sin() * 2
    y[0].fill_(2.0)
    y[1, 1].zero_()
    return (y * x).sum()


def _inplace_then_view_use(ns, x):
    y = x * 1
    y.add_(1)
    return (y[0] * y[1]).sum()


def _clamp_inplace(ns, x):
    y = x * 2
    y.clamp_(min=0.5, max=2.0)
    return (y * x).sum()


def _uniform_overwrites(ns, x):
    y = x * 1
    y[0].uniform_()  # the written values do not depend on x
    return (y * 3).sum()


PROGRAMS = [
    (_mul_, [(3,)]),
    (_chain_, [(2, 3)]),
    (_with_other_, [(2, 3), (2, 3)]),
    (_broadcast_other_, [(2, 3), (3,)]),
    (_row_view_, [(2, 3)]),
    (_column_view_, [(3, 3), (3,)]),
    (_view_of_view_, [(3, 3), (2, 2)]),
    (_stale_sibling_view, [(2, 3)]),
    (_view_made_before_base_write, [(2, 3)]),
    (_transposed_view_, [(2, 3)]),
    (_reshaped_view_, [(2, 3)]),
    (_setitem_value_, [(2, 3), (3,)]),
    (_setitem_into_fresh, [(3,)]),
    (_copy_into_view_of_fresh, [(3,)]),
    (_fill_and_zero_, [(2, 3)]),
    (_inplace_then_view_use, [(2, 3)]),
    (_clamp_inplace, [(2, 3)]),
]


@pytest.mark.parametrize("program,shapes", PROGRAMS, ids=[p.__name__ for p, _ in PROGRAMS])
def test_gradients_of_in_place_programs(program, shapes):
    check_gradients(program, *shapes)


@pytest.mark.parity
@pytest.mark.parametrize(
    "program,shapes",
    PROGRAMS + [(_uniform_overwrites, [(2, 3)])],
    ids=[p.__name__ for p, _ in PROGRAMS] + ["uniform"],
)
def test_parity_of_in_place_programs(program, shapes):
    check_parity(program, *shapes)


def test_non_differentiable_in_place_cuts_the_written_region():
    x = leaf(2, 3)
    y = x * 1
    y[0].uniform_()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0, 0], [1, 1, 1]])
    assert y.grad_fn.name() == "CopySlices"


def test_in_place_grad_fn_names():
    x = leaf(3)
    y = x * 1
    y.mul_(2)
    assert y.grad_fn.name() == "MulBackward0"
    v = y[1:]
    v.exp_()
    assert y.grad_fn.name() == "CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"


def test_double_backward_through_in_place():
    x = leaf(3)
    y = x * 1
    y.sin_()
    (g,) = ag.grad(y.sum(), x, create_graph=True)
    (gg,) = ag.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), -np.sin(x.detach().numpy()))


def test_a_factor_that_no_gradient_reads_is_not_saved():
    # As in PyTorch: y * 3 saves y only for the gradient of the 3 (none), so writing
    # y in place afterwards is allowed and the gradient is right
    w = ec.ones(3).requires_grad_()
    y = w * 2
    z = y * 3
    y.add_(1)
    z.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 6.0, 6.0])
    # x / 3 likewise; and a * c with c constant still saves c (a's gradient reads it)
    x = ec.ones(2).requires_grad_()
    q = x * 2
    r = q / 4
    q.mul_(5)
    r.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.5])
    a = ec.ones(2).requires_grad_()
    c = ec.full((2,), 3.0)
    y = a * c
    c.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation|modified in place"):
        y.sum().backward()
