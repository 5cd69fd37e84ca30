"""Argument errors named after the op and the argument (Note [Argument errors]
ember's ops check the values of their arguments (dims, sizes, dtypes, modes)
with errors that name the op; their types are not declared in the op table.
A value of the wrong type -- an int where a Tensor goes, a list of strings
where tensors go -- shows up as an AttributeError when the implementation
first uses it as a Tensor.  Every function the op table generates catches
that AttributeError (free in CPython when nothing is raised) and, when the
object that lacks the attribute is one of the call's arguments (or an item of
one), raises PyTorch's TypeError instead: "add(): argument 'other' (position
2) must be Tensor, not str".  Likewise a KeyError whose key is an argument (a
mode no table knows) becomes a ValueError naming it, and an OverflowError (an
int past int64 on its way to C, a float that overflowed) PyTorch's ValueError
"Overflow when unpacking long long", naming the argument when it is an int.
Any other error is a bug in ember and is re-raised as it is.
tests/test_fuzz_args.py calls every op in the table with arguments of every
kind and fails on any exception but TypeError, ValueError, RuntimeError and
IndexError with a message.
"""

from ember_core._tensor.tensor import Tensor

# What an implementation reads from a Tensor (its slots and its public surface).
_TENSOR_ATTRIBUTES = frozenset(dir(Tensor)) | frozenset(Tensor.__slots__)


_INT64 = range(-(1 << 63), 1 << 63)


def _overflow(op, args, exc):
    """An integer argument past int64 (PyTorch: "Overflow when unpacking long
    long", a ValueError), or an out-of-range value that overflowed inside."""
    negative = "negative" in str(exc)
    for position, (name, value) in enumerate(zip(op.params, args), 1):
        items = value if isinstance(value, (list, tuple)) else (value,)
        for v in items:
            if isinstance(v, int) and (v not in _INT64 or (negative and v < 0)):
                raise ValueError(
                    f"{op.name}(): argument '{name}' (position {position}) is out of range "
                    f"({v}): Overflow when unpacking long long"
                ) from None
    raise ValueError(f"{op.name}(): an argument is out of range ({exc})") from None


def _type_name(v):
    return "None" if v is None else type(v).__name__


def bad_argument(op, args, exc):
    """Raise the TypeError (or ValueError) for ``exc`` when an argument of ``op``
    (``args`` in declaration order) caused it; else return, and the caller
    re-raises ``exc``.

    - AttributeError on an argument, an item of one, or the dtype of a non-Tensor
      argument (a NumPy array): the argument has the wrong type;
    - KeyError whose key is an argument: the argument's value is not one the op
      knows (a mode name, say);
    - OverflowError: an argument out of range (a ValueError, always)."""
    if isinstance(exc, OverflowError):
        _overflow(op, args, exc)
    if isinstance(exc, KeyError):
        key = exc.args[0] if exc.args else exc
        for position, (name, value) in enumerate(zip(op.params, args), 1):
            if value is key:
                raise ValueError(
                    f"{op.name}(): argument '{name}' (position {position}) has an invalid value "
                    f"{value!r}"
                ) from None
        return
    obj = getattr(exc, "obj", exc)
    wants_tensor = getattr(exc, "name", None) in _TENSOR_ATTRIBUTES
    if obj is exc or (isinstance(obj, Tensor) and wants_tensor):
        return  # a Tensor without a Tensor attribute: a bug in ember, not an argument
    expected = "Tensor" if wants_tensor or obj.__class__.__module__.startswith("numpy") else None
    for position, (name, value) in enumerate(zip(op.params, args), 1):
        where = f"{op.name}(): argument '{name}' (position {position})"
        culprit = value is obj or (
            not isinstance(value, Tensor) and obj is getattr(value, "dtype", None)
        )
        if culprit:
            if expected is None:
                raise TypeError(f"{where} has an unsupported type {_type_name(value)}") from None
            raise TypeError(f"{where} must be {expected}, not {_type_name(value)}") from None
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                if item is obj:
                    raise TypeError(
                        f"{where} must be a sequence of {expected or 'supported values'}, but "
                        f"item {i} is {_type_name(obj)}"
                    ) from None
    if wants_tensor and not isinstance(obj, Tensor):
        _first_non_tensor(op, args)


_PLAIN = (int, float, complex, str, bytes)


def _first_non_tensor(op, args):
    """A Tensor attribute was asked of a value computed from the arguments (a
    composite doing ``x1 - x2`` on numbers, say): the leading tensor arguments
    are the ones it uses as tensors, so the first of them that is a plain value
    (or a sequence of plain values) is the culprit."""
    for position, (name, value) in enumerate(zip(op.params, args), 1):
        if isinstance(value, Tensor):
            continue
        where = f"{op.name}(): argument '{name}' (position {position})"
        if isinstance(value, _PLAIN) or type(value).__module__ == "numpy":
            raise TypeError(f"{where} must be Tensor, not {_type_name(value)}") from None
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                if not isinstance(item, Tensor):
                    raise TypeError(
                        f"{where} must be a sequence of Tensor, but item {i} is {_type_name(item)}"
                    ) from None
            continue
        return
