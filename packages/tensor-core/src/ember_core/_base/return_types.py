"""The named tuples ops return (``torch.return_types``): tuples with field names,
printed as PyTorch prints them, one field per line::

    ember.return_types.max(
    values=tensor([2., 4.]),
    indices=tensor([1, 1]))
"""

import collections

_CLASSES = {}  # name -> class, so that pickles find them (see _rebuild)


def _repr(self):
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"ember.return_types.{type(self).__name__}(\n{fields})"


def return_type(name, fields, plain_repr=False):
    """A named tuple class ``name`` with ``fields``; ``plain_repr`` keeps the plain
    tuple's repr (for ops PyTorch types as plain tuples, e.g. var_mean)."""
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "ember.return_types"
    cls.__repr__ = tuple.__repr__ if plain_repr else _repr
    cls.__str__ = cls.__repr__
    cls.__reduce__ = _reduce
    _CLASSES[name] = cls
    return cls


def _reduce(self):
    return _rebuild, (type(self).__name__, tuple(self))


def _rebuild(name, values):
    return _CLASSES[name](*values)
