"""ember.jit: TorchScript's Python API with its eager meaning."""

import typing
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import jit


def test_flags_and_markers():
    assert jit.is_scripting() is False and jit.is_tracing() is False

    def f(x):
        return x

    assert jit.ignore(f) is f and hasattr(f, "_torchscript_modifier")
    assert jit.unused(f) is f and jit.export(f) is f
    assert jit.ignore(drop=False)(f) is f
    with pytest.raises(RuntimeError, match="must be a bool"):
        jit.ignore(3)
    prop = jit.unused(property(lambda self: 1))
    assert isinstance(prop, property)
    assert jit.annotate(list[int], [1]) == [1]
    assert jit.Final is typing.Final


def test_script_and_trace_run_eagerly():
    def gelu(x):
        return x * 0.5 * (1.0 + ember.erf(x / 1.41421))

    sf = jit.script(gelu)
    assert isinstance(sf, jit.ScriptFunction) and sf.name == "gelu"
    x = ember.tensor([-1.0, 0.0, 2.0])
    np.testing.assert_allclose(sf(x).numpy(), gelu(x).numpy())
    lin = nn.Linear(2, 2)
    assert jit.script(lin) is lin
    seen = []

    def probe(x):
        seen.append(jit.is_tracing())
        return x + 1

    tf = jit.trace(probe, ember.ones(2))
    assert seen == [True]  # the example ran, under tracing
    np.testing.assert_allclose(tf(ember.zeros(1)).numpy(), [1.0])
    assert seen == [True, False]
    assert jit.trace(lin, ember.ones(2)) is lin
    with pytest.raises(RuntimeError, match="example_kwarg_inputs should be a dict"):
        jit.trace(lin)
    with pytest.raises(TypeError):
        jit.trace(probe)
    with pytest.raises(AttributeError, match="expected torch.nn.Module"):
        jit.trace_module(probe, {})


def test_script_module_subclass_and_methods():
    class M(jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(2))

        @jit.script_method
        def forward(self, x):
            return x * self.w

    m = M()
    np.testing.assert_allclose(m(ember.full((2,), 3.0)).detach().numpy(), [3.0, 3.0])
    assert list(m.state_dict()) == ["w"]
    with pytest.raises(RuntimeError, match="ember.save"):
        m.save("m.pt")


def test_fork_wait_future():
    fut = jit.fork(lambda a, b: a + b, ember.ones(1), b=ember.ones(1))
    assert isinstance(fut, jit.Future) and fut.done()
    assert jit.wait(fut).item() == 2.0
    assert fut.then(lambda f: f.value() * 3).wait().item() == 6.0
    with pytest.raises(ValueError, match="now"):
        jit.fork(lambda: (_ for _ in ()).throw(ValueError("now")))


def test_no_torchscript_serialisation():
    for fn in (jit.save, jit.freeze, jit.optimize_for_inference):
        with pytest.raises(RuntimeError, match="no TorchScript serialisation"):
            fn(nn.Linear(1, 1), *(["f.pt"] if fn is jit.save else []))
    with pytest.raises(RuntimeError, match="state_dict"):
        jit.load("f.pt")


def test_jit_isinstance_and_settings():
    assert jit.isinstance([ember.ones(1)], list[ember.Tensor])
    assert not jit.isinstance([1], list[str])
    assert jit.isinstance({"a": 1}, dict[str, int])
    assert jit.isinstance(None, int | None)
    assert jit.isinstance((1, "a"), tuple[int, str])
    prev = jit.set_fusion_strategy([("STATIC", 1)])
    assert prev == [("STATIC", 2), ("DYNAMIC", 10)]
    jit.set_fusion_strategy(prev)
    assert jit.Attribute(1, int).value == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with jit.strict_fusion(), jit.optimized_execution(False):
            pass
