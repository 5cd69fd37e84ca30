"""Anomaly detection: nodes remember where their forward op was created, and
backward raises (with that place in the message) when a node fails or returns
NaN, instead of leaving the user to guess which forward op is at fault."""

import traceback

from ember_autograd import _grad_mode
from ember_autograd._grad_mode import _DecoratorContextManager, state


def capture_stack():
    return "".join(traceback.format_stack()[:-3])


def is_anomaly_enabled():
    return state.anomaly


def is_anomaly_check_nan_enabled():
    return state.anomaly_check_nan


class detect_anomaly(_DecoratorContextManager):
    """Context manager / decorator turning on anomaly detection.

    >>> with detect_anomaly():
    ...     loss.backward()   # a NaN gradient raises, naming the forward op and where it ran
    """

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = True, self.check_nan

    def __exit__(self, *exc):
        state.anomaly, state.anomaly_check_nan = self.prev

    def clone(self):
        return self.__class__(self.check_nan)


class set_detect_anomaly(_DecoratorContextManager):
    """set_detect_anomaly(True) turns anomaly detection on (a call or a context)."""

    def __init__(self, mode, check_nan=True):
        self.mode, self.check_nan = bool(mode), check_nan
        self.prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = self.mode, check_nan

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.anomaly, state.anomaly_check_nan = self.prev

    def clone(self):
        return self.__class__(self.mode, self.check_nan)


def _where(node):
    if node._trace:
        return f"\n\nThe forward operation of {node.name()} was called at (most recent call last):\n{node._trace}"
    return f"\n\n(No forward trace for {node.name()}: it was created before anomaly detection was enabled.)"


def run_node(node, grads):
    try:
        result = node.apply(tuple(grads))
    except Exception as exc:
        exc.add_note(f"Error detected in {node.name()}.{_where(node)}")
        raise
    if state.anomaly_check_nan:
        for i, g in enumerate(result):
            if g is not None and g.dtype.is_floating_point and bool(g.isnan().any()):
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.{_where(node)}")
    return result


__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "_grad_mode"]
