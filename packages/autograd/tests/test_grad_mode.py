"""Grad modes (_grad_mode.py): no_grad, enable_grad, set_grad_enabled,
inference_mode as context managers and decorators, thread-local; inference
tensors."""

import threading

import pytest

import ember_autograd as ag
import ember_core as ec


def leaf():
    return ec.ones(2, dtype=ec.float64, requires_grad=True)


def test_no_grad_context():
    x = leaf()
    with ag.no_grad():
        assert not ag.is_grad_enabled()
        y = x * 2
    assert ag.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None


def test_no_grad_restores_on_exception():
    with pytest.raises(ValueError), ag.no_grad():
        raise ValueError
    assert ag.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = leaf()
    with ag.no_grad():
        with ag.enable_grad():
            y = x * 2
        z = x * 2
    assert y.requires_grad and not z.requires_grad


@pytest.mark.parametrize("bare", [True, False])
def test_decorators_with_and_without_parentheses(bare):
    def probe():
        return ag.is_grad_enabled(), ag.is_inference_mode_enabled()

    nograd = ag.no_grad(probe) if bare else ag.no_grad()(probe)
    infer = ag.inference_mode(probe) if bare else ag.inference_mode()(probe)
    assert nograd() == (False, False)
    assert infer() == (False, True)
    with ag.no_grad():
        assert (ag.enable_grad(probe) if bare else ag.enable_grad()(probe))() == (True, False)
    assert probe() == (True, False)


def test_decorator_keeps_name_and_doc():
    @ag.no_grad()
    def step(a):
        """Doc."""
        return a

    assert step.__name__ == "step" and step.__doc__ == "Doc." and step(3) == 3


def test_decorated_generator_keeps_the_mode_between_yields():
    @ag.no_grad()
    def gen():
        for _ in range(3):
            yield ag.is_grad_enabled()

    it = gen()
    assert next(it) is False
    assert ag.is_grad_enabled()  # not leaked out between yields
    assert list(it) == [False, False]


def test_set_grad_enabled_call_context_and_decorator():
    x = leaf()
    ag.set_grad_enabled(False)
    try:
        assert not ag.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        ag.set_grad_enabled(True)
    with ag.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ag.is_grad_enabled()

    @ag.set_grad_enabled(False)
    def off():
        return ag.is_grad_enabled()

    assert ag.is_grad_enabled()  # decorating does not switch the mode
    assert off() is False and ag.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}
    started, release = threading.Event(), threading.Event()

    def other():
        seen["start"] = ag.is_grad_enabled()
        with ag.no_grad():
            started.set()
            release.wait(5)
            seen["inside"] = ag.is_grad_enabled()

    with ag.no_grad():
        t = threading.Thread(target=other)
        t.start()
        started.wait(5)
        # this thread's no_grad and the other's do not interfere
        with ag.enable_grad():
            assert ag.is_grad_enabled()
        release.set()
        t.join()
    assert seen == {"start": True, "inside": False}
    assert ag.is_grad_enabled()


def test_recording_in_threads_follows_each_threads_mode():
    x = leaf()
    out = {}

    def work(name, mode):
        with ag.set_grad_enabled(mode):
            for _ in range(200):
                y = x * 3
            out[name] = y.requires_grad

    threads = [threading.Thread(target=work, args=(f"t{i}", i % 2 == 0)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {"t0": True, "t1": False, "t2": True, "t3": False}


def test_in_place_on_leaf_allowed_under_no_grad():
    x = leaf()
    with ag.no_grad():
        x.mul_(3)
    assert x.requires_grad and x.is_leaf
    (x * x).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_factory_requires_grad_under_no_grad():
    with ag.no_grad():
        w = ec.ones(2, requires_grad=True)
    assert w.requires_grad and w.is_leaf


def test_inference_mode_flags_and_nesting():
    assert not ag.is_inference_mode_enabled()
    with ag.inference_mode():
        assert ag.is_inference_mode_enabled() and not ag.is_grad_enabled()
        with ag.inference_mode(False):
            assert not ag.is_inference_mode_enabled() and ag.is_grad_enabled()
        assert ag.is_inference_mode_enabled()
    with ag.no_grad(), ag.inference_mode(False):
        assert ag.is_grad_enabled()  # as in PyTorch: mode=False turns grad mode on
    assert ag.is_grad_enabled() and not ag.is_inference_mode_enabled()


def test_inference_tensors():
    w = leaf()
    with ag.inference_mode():
        x = ec.ones(2, dtype=ec.float64)
        y = x * 2
        z = w * 2
        assert y.is_inference() and z.is_inference() and not z.requires_grad
        y.add_(1)  # in-place inside inference mode is fine
    assert not ec.ones(1).is_inference()
    assert x.view(2).is_inference()  # views of inference tensors are inference tensors
    assert not x.clone().is_inference()
    with pytest.raises(
        RuntimeError, match="Inplace update to inference tensor outside InferenceMode"
    ):
        x.add_(1)
    with (
        pytest.raises(
            RuntimeError, match="Inplace update to inference tensor outside InferenceMode"
        ),
        ag.no_grad(),
    ):
        x.add_(1)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        w * x
    assert (w + x).requires_grad  # add saves nothing: allowed, as in PyTorch
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
        x.requires_grad_()
    c = x.clone()
    (w * c).sum().backward()
    assert w.grad.tolist() == [1.0, 1.0]
