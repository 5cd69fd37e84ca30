"""ember.autograd.profiler: ``record_function``, the range label training
scripts put around their steps. ember has no profiler to record into, so a
range is entered and left with no effect, which is what PyTorch does when no
profiler is running; the label is kept on the object for a reader."""

import functools

__all__ = ["record_function"]


class record_function:
    """Label a block or a function for a profiler (none runs in ember).

    >>> with record_function("forward"):
    ...     out = model(x)
    """

    def __init__(self, name, args=None):
        self.name = name
        self.args = args

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper
