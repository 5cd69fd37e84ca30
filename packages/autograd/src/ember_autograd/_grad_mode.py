"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

All state is thread-local: a mode set in one thread never leaks into another.
Each mode works as a context manager and as a decorator.
"""

import functools
import inspect
import threading


class _State(threading.local):
    def __init__(self):
        self.enabled = True  # record graphs
        self.inference = False  # inference_mode: not even version tracking matters
        self.below = 0  # > 0 while an op's implementation runs under the handler
        self.anomaly = False
        self.anomaly_check_nan = True
        self.fw_level = -1  # forward-mode AD: the innermost open dual level


state = _State()


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
                gen = func(*args, **kwargs)
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

            return generator

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable graph recording: results of ops do not require grad.

    >>> with no_grad():
    ...     y = x * 2          # y.requires_grad is False
    """

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc):
        state.enabled = self.prev


class enable_grad(_DecoratorContextManager):
    """Enable graph recording inside a no_grad region."""

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc):
        state.enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """set_grad_enabled(False) disables recording; works as a function call too."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = state.enabled
        state.enabled = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """no_grad, and tensors made inside are never recorded later either."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (state.enabled, state.inference)
        if self.mode:
            state.enabled = False
            state.inference = True

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
