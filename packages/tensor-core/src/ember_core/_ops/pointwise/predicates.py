"""The function forms of the Tensor predicates and queries (``torch.is_signed(x)``
for ``x.is_signed()``...): is_floating_point, is_complex, is_signed, is_conj,
is_neg, is_same_size, is_nonzero and get_device.  They return Python values,
so none is differentiable.
"""

from ember_core._base.dispatch import defop
from ember_core._tensor.tensor import Tensor


def _tensor_arg(op, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input


# Tensor has these as methods of its own class (_tensor/tensor.py): functions only here.


@defop(method=False, composite=True, differentiable=False)
def is_floating_point(input):
    return _tensor_arg("is_floating_point", input).is_floating_point()


@defop(method=False, composite=True, differentiable=False)
def is_complex(input):
    """Whether input's dtype is complex64 or complex128."""
    return _tensor_arg("is_complex", input).is_complex()


@defop(method=False, composite=True, differentiable=False)
def is_signed(input):
    """Whether input's dtype is signed (every dtype but uint8 and bool)."""
    return _tensor_arg("is_signed", input).is_signed()


@defop(method=False, composite=True, differentiable=False)
def get_device(input):
    """The CUDA device index of input, -1 for a CPU tensor."""
    return _tensor_arg("get_device", input).get_device()


# ember's tensors are never conjugated or negated views (Note [Eager conjugation]).


@defop(composite=True, differentiable=False)
def is_conj(input):
    return False


@defop(composite=True, differentiable=False)
def is_neg(input):
    return False


@defop(composite=True, differentiable=False)
def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


@defop(composite=True, differentiable=False)
def is_nonzero(input):
    """The truth of a one-element tensor."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())  # nan is nonzero
