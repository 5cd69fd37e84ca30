"""Anomaly detection (_anomaly.py): NaN in backward raises an exception that
carries the forward traceback; errors inside nodes get it too."""

import traceback

import pytest

import ember_autograd as ag
import ember_core as ec


def leaf(values):
    return ec.tensor(values, dtype=ec.float64, requires_grad=True)


def make_nan(x):
    return x.sqrt()  # the forward line the error must point at


def test_nan_in_backward_raises_with_forward_traceback():
    x = leaf([-1.0, 4.0])
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"), ag.detect_anomaly():
        y = make_nan(x)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    msg = str(info.value)
    assert "Function 'SqrtBackward0' returned nan values in its 0th output." in msg
    assert "Traceback of forward call that caused the error" in msg
    assert "in make_nan" in msg and "return x.sqrt()" in msg
    assert __file__ in msg
    assert "_handler.py" not in msg  # the stack stops at the user's code


def test_no_error_without_anomaly_mode():
    x = leaf([-1.0, 4.0])
    make_nan(x).sum().backward()
    assert x.grad.isnan().any()


def test_check_nan_false_only_notes_errors():
    x = leaf([-1.0, 4.0])
    with pytest.warns(UserWarning), ag.detect_anomaly(check_nan=False):
        assert ag.is_anomaly_enabled() and not ag.is_anomaly_check_nan_enabled()
        make_nan(x).sum().backward()
    assert not ag.is_anomaly_enabled() and ag.is_anomaly_check_nan_enabled()


def test_error_inside_a_node_carries_the_forward_traceback():
    class Broken(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("broken backward")

    x = leaf([1.0])
    with pytest.warns(UserWarning), ag.detect_anomaly():
        y = Broken.apply(x)  # forward line
        with pytest.raises(ValueError, match="broken backward") as info:
            y.sum().backward()
    text = "".join(traceback.format_exception(info.value))
    assert "Error detected in BrokenBackward" in text
    assert "y = Broken.apply(x)  # forward line" in text


def test_set_detect_anomaly_call_and_decorator():
    ag.set_detect_anomaly(True)
    try:
        assert ag.is_anomaly_enabled()
        x = leaf([-1.0])
        with pytest.raises(RuntimeError, match="returned nan values"):
            make_nan(x).sum().backward()
    finally:
        ag.set_detect_anomaly(False)
    assert not ag.is_anomaly_enabled()

    @ag.detect_anomaly()
    def step():
        return ag.is_anomaly_enabled()

    with pytest.warns(UserWarning):
        assert step() is True
    assert not ag.is_anomaly_enabled()


def test_node_created_before_anomaly_mode_says_so():
    x = leaf([-1.0])
    y = make_nan(x)
    with (
        pytest.warns(UserWarning),
        ag.detect_anomaly(),
        pytest.raises(RuntimeError, match="created before anomaly detection was enabled"),
    ):
        y.sum().backward()
