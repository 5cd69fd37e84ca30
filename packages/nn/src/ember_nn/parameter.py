"""Parameter and Buffer: tensors a Module registers by attribute assignment."""

import ember_core as ec

Tensor = ec.Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning it to a Module attribute
    registers it, and it requires grad by default.

    >>> p = Parameter(ember_core.zeros(3))
    >>> p.requires_grad
    True
    """

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = ec.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, got {type(data).__name__}")
        p = data.detach().as_subclass(cls)
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __reduce_ex__(self, protocol):
        from ember_core._interop import numpy as _interop

        rebuild, args = _interop.reduce_tensor(self, protocol)
        return (_rebuild_parameter, (rebuild, args, self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result


def _rebuild_parameter(rebuild, args, requires_grad):
    return Parameter(rebuild(*args), requires_grad)


class Buffer(Tensor):
    """A tensor to register as a module buffer (``persistent=False`` keeps it out of
    the state_dict).  Assigning ``Buffer(t)`` to a module attribute registers it."""

    __slots__ = ()

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = ec.empty(0)
        b = data.detach().as_subclass(cls)
        b._persistent = persistent
        return b

    def __init__(self, data=None, *, persistent=True):
        pass


class UninitializedParameter(Parameter):
    """A parameter whose shape is decided later (lazy modules): materialize(shape)
    gives it storage and turns it into a Parameter."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Parameter.__new__(cls, ec.empty(0, dtype=dtype, device=device), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None):
        self.data = ec.empty(tuple(shape), dtype=dtype or self.dtype, device=device or self.device)
        self.__class__ = self.cls_to_become
        return self

    def __repr__(self):
        return "<UninitializedParameter>"


class UninitializedBuffer(Tensor):
    """A buffer whose shape is decided later (lazy modules)."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        return ec.empty(0, dtype=dtype, device=device).as_subclass(cls)

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None):
        self.data = ec.empty(tuple(shape), dtype=dtype or self.dtype, device=device or self.device)
        self.__class__ = self.cls_to_become
        return self

    def __repr__(self):
        return "<UninitializedBuffer>"


def is_lazy(t):
    return isinstance(t, (UninitializedParameter, UninitializedBuffer))
