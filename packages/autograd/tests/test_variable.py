"""The legacy Variable: a Tensor factory, and every Tensor is one."""

import numpy as np
import pytest

import ember_autograd as ag
import ember_core as ec
from ember_autograd import Variable


def test_variable_makes_a_leaf_sharing_data():
    t = ec.tensor([1.0, 2.0])
    v = Variable(t, requires_grad=True)
    assert type(v) is ec.Tensor and v is not t
    assert v.requires_grad and v.is_leaf
    assert v.data_ptr() == t.data_ptr()
    (v * v).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), [2.0, 4.0])


def test_variable_detaches_and_checks_its_input():
    x = ec.ones(2, requires_grad=True)
    y = Variable(x * 2)
    assert not y.requires_grad and y.grad_fn is None
    assert Variable().shape == (0,)
    with pytest.raises(TypeError, match="has to be a tensor"):
        Variable([1.0])
    with pytest.warns(UserWarning, match="volatile"), pytest.raises(ValueError):
        Variable(x, True, True)


def test_every_tensor_is_a_variable():
    assert isinstance(ec.ones(1), Variable)
    assert not isinstance(1.0, Variable)


def test_queue_callback_runs_at_the_end_of_backward():
    order = []
    x = ec.ones(2, requires_grad=True)
    y = x * 3

    def hook(g):
        Variable._execution_engine.queue_callback(lambda: order.append("callback"))
        order.append("hook")

    y.register_hook(hook)
    y.sum().backward()
    assert order == ["hook", "callback"]
    with pytest.raises(RuntimeError, match="during backward"):
        Variable._execution_engine.queue_callback(print)


def test_set_multithreading_enabled_is_recorded():
    assert ag.is_multithreading_enabled()
    with ag.set_multithreading_enabled(False):
        assert not ag.is_multithreading_enabled()
    assert ag.is_multithreading_enabled()
