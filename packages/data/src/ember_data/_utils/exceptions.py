"""Carrying an exception from a worker to the main process (as PyTorch's
``ExceptionWrapper``): its type, the worker it came from and its traceback
as text; re-raised in the main process with the original type."""

import pickle
import sys
import traceback


class KeyErrorMessage(str):
    """A str whose repr is itself, so a KeyError's multi-line message prints
    as text rather than as a quoted string."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker: ``reraise()`` raises it in this process
    as ``Type("Caught Type in DataLoader worker process N.\\nOriginal
    Traceback ...")``; when the type cannot be rebuilt that way, the original
    exception object (if it pickles) with the traceback noted, else a
    RuntimeError with the same text."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where
        try:
            self.original = pickle.dumps(exc_info[1], protocol=5)
        except Exception:
            self.original = None

    def __reduce__(self):
        try:  # exception classes defined in __main__ of a spawned worker may not pickle
            pickle.dumps(self.exc_type)
            exc_type = self.exc_type
        except Exception:
            exc_type = None
        state = {
            "exc_type": exc_type,
            "exc_msg": self.exc_msg,
            "where": self.where,
            "original": self.original,
        }
        return _rebuild, (state,)

    def reraise(self):
        name = self.exc_type.__name__ if self.exc_type is not None else "exception"
        msg = f"Caught {name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is None:
            raise RuntimeError(msg)
        try:
            if self.exc_type is KeyError:
                exception = KeyError(KeyErrorMessage(msg))
            elif getattr(self.exc_type, "message", None):
                # types whose first argument is not the text but which take message=
                exception = self.exc_type(message=msg)
            else:
                exception = self.exc_type(msg)
        except Exception:
            exception = self._original()
            if exception is None:
                raise RuntimeError(msg) from None
            if hasattr(exception, "add_note"):
                exception.add_note(msg)
        try:
            raise exception
        finally:
            # no frame -> exception -> traceback -> frame cycle: the iterator up
            # the stack must die (and stop its workers) as soon as it is dropped
            exception = None

    def _original(self):
        """The worker's exception object itself, when it pickled."""
        if self.original is None:
            return None
        try:
            return pickle.loads(self.original)
        except Exception:
            return None


def _rebuild(state):
    w = ExceptionWrapper.__new__(ExceptionWrapper)
    w.__dict__.update(state)
    return w
