"""Anomaly detection: while it is on, every node remembers the Python stack of
the forward call that created it, and backward raises — with that stack in the
exception's message, not only in a warning — when a node fails or returns NaN,
so the user sees which forward line is at fault.

>>> with detect_anomaly():
...     y = x.sqrt()               # x has a negative entry
...     y.sum().backward()         # RuntimeError: Function 'SqrtBackward0' returned nan
...                                # values in its 0th output. ... y = x.sqrt() ...
"""

import os
import sys
import traceback
import warnings

import ember_core as ec
from ember_autograd._grad_mode import _DecoratorContextManager, state

# The forward stack shown stops at the user's call: frames of ember_core and
# ember_autograd themselves (dispatch, recording) say nothing to the user.
_INTERNAL = tuple(
    os.path.dirname(m.__file__) for m in (ec, sys.modules[__name__.rsplit(".", 1)[0]])
)


def capture_stack():
    frames = traceback.extract_stack(sys._getframe(1))
    while frames and frames[-1].filename.startswith(_INTERNAL):
        frames.pop()
    return "".join(traceback.format_list(frames))


def is_anomaly_enabled():
    return state.anomaly


def is_anomaly_check_nan_enabled():
    return state.anomaly_check_nan


def _warn_enabled():
    warnings.warn(
        "Anomaly Detection has been enabled. This mode will increase the runtime and should only "
        "be enabled for debugging.",
        stacklevel=3,
    )


class detect_anomaly(_DecoratorContextManager):
    """Context manager / decorator turning anomaly detection on: nodes remember
    their forward call, and a NaN produced in backward (with ``check_nan``) or
    any error in a node raises with that forward stack."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        _warn_enabled()
        self.prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = True, self.check_nan

    def __exit__(self, *exc):
        state.anomaly, state.anomaly_check_nan = self.prev

    def clone(self):
        return self.__class__(self.check_nan)


class set_detect_anomaly(_DecoratorContextManager):
    """``set_detect_anomaly(True)`` turns anomaly detection on at once (a plain
    call), or for a ``with`` block."""

    def __init__(self, mode, check_nan=True):
        self.mode, self.check_nan = bool(mode), check_nan
        self.prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = self.mode, check_nan

    def __call__(self, orig_func):
        state.anomaly, state.anomaly_check_nan = self.prev
        return super().__call__(orig_func)

    def __enter__(self):
        state.anomaly, state.anomaly_check_nan = self.mode, self.check_nan

    def __exit__(self, *exc):
        state.anomaly, state.anomaly_check_nan = self.prev

    def clone(self):
        return self.__class__(self.mode, self.check_nan)


def set_anomaly_enabled(enabled, check_nan=True):
    """torch.set_anomaly_enabled: turn anomaly detection on or off (the process
    switch; set_detect_anomaly is its context-manager form)."""
    state.anomaly, state.anomaly_check_nan = bool(enabled), check_nan


def _where(node):
    if node._trace:
        return (
            f"\n\nError detected in {node.name()}. Traceback of forward call that caused the error "
            f"(most recent call last):\n{node._trace}"
        )
    return (
        f"\n\n(No forward traceback for {node.name()}: it was created before anomaly "
        "detection was enabled.)"
    )


def run_node(node, grads):
    """node.apply(grads), checked: an error gets the forward stack as a note,
    a NaN gradient raises with it."""
    try:
        result = node.apply(tuple(grads))
    except Exception as exc:
        if not getattr(exc, "_ember_anomaly_noted", False):
            note = _where(node).strip()
            if hasattr(exc, "add_note"):
                exc.add_note(note)
            elif exc.args and isinstance(exc.args[0], str):  # Python 3.10
                exc.args = (f"{exc.args[0]}\n\n{note}",) + exc.args[1:]
            exc._ember_anomaly_noted = True  # a nested backward's node noted it already
        raise
    if state.anomaly_check_nan:
        for i, g in enumerate(result):
            if g is not None and g.dtype.differentiable and bool(g.isnan().any()):
                where = _where(node)
                raise RuntimeError(
                    f"Function '{node.name()}' returned nan values in its {i}th output.{where}"
                )
    return result
