"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

All state is thread-local: a mode set in one thread never leaks into another.
Each mode works as a context manager and as a decorator.
"""

import functools
import inspect

from ember_autograd import _native

# The calling thread's state (Note [Thread state] in csrc/autograd.c): enabled
# (record graphs), inference (inference_mode), below (> 0 while an op's
# implementation runs under the handler), anomaly, anomaly_check_nan, fw_level
# (forward-mode AD's innermost dual level), multithreading
# (set_multithreading_enabled, recorded only).
state = _native.ThreadState()


def is_grad_enabled():
    return state.enabled


def is_inference_mode_enabled():
    return state.inference


class _DecoratorContextManager:
    """A context manager usable as @decorator or @decorator() too, on functions
    and generator functions."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(func):

            @functools.wraps(func)
            def generator(*args, **kwargs):
                # the mode holds while the generator runs, not between yields
                gen = func(*args, **kwargs)
                try:
                    with self.clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException as exc:
                            with self.clone():
                                response = gen.throw(exc)
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as stop:
                    return stop.value

            return generator

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable graph recording: results of ops do not require grad.

    >>> with no_grad():
    ...     y = x * 2          # y.requires_grad is False
    """

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc):
        state.enabled = self.prev


class enable_grad(_NoParamDecoratorContextManager):
    """Enable graph recording inside a no_grad region.

    >>> with no_grad():
    ...     with enable_grad():
    ...         y = x * 2      # recorded
    """

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc):
        state.enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """``set_grad_enabled(False)`` disables recording at once (a plain call), for
    the rest of a ``with`` block, or for a decorated function.

    >>> with set_grad_enabled(is_train):
    ...     y = x * 2
    """

    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = state.enabled
        state.enabled = self.mode

    def __call__(self, orig_func):
        state.enabled = self.prev  # decorating must not change the mode now
        return super().__call__(orig_func)

    def __enter__(self):
        state.enabled = self.mode

    def __exit__(self, *exc):
        state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """no_grad, and tensors made inside are inference tensors: they may never be
    recorded for backward later (see Note [Inference tensors] in _handler.py).
    ``inference_mode(False)`` turns it off again (and grad mode on).

    >>> with inference_mode():
    ...     y = model(x)
    """

    def __new__(cls, mode_or_orig_func=True):
        if mode_or_orig_func is None or isinstance(mode_or_orig_func, bool):
            return super().__new__(cls)
        return cls()(mode_or_orig_func)

    def __init__(self, mode=True):
        self.mode = bool(mode) if isinstance(mode, bool) or mode is None else True

    def __enter__(self):
        self.prev = (state.enabled, state.inference)
        state.enabled = not self.mode
        state.inference = self.mode

    def __exit__(self, *exc):
        state.enabled, state.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)


class _below:
    """Op implementations run 'below' autograd: public ops they call are not
    recorded (the op itself is, once)."""

    __slots__ = ()

    def __enter__(self):
        state.below += 1

    def __exit__(self, *exc):
        state.below -= 1


below = _below()


class set_multithreading_enabled(_DecoratorContextManager):
    """PyTorch's switch for running backward on per-device threads.  ember's
    engine always runs backward on the calling thread, so this only records
    the mode (``is_multithreading_enabled``), for scripts that set it."""

    def __init__(self, mode):
        self.prev = state.multithreading
        self.mode = bool(mode)
        state.multithreading = self.mode

    def __call__(self, orig_func):
        state.multithreading = self.prev
        return super().__call__(orig_func)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.multithreading = self.prev

    def clone(self):
        return self.__class__(self.mode)


def is_multithreading_enabled():
    return state.multithreading
