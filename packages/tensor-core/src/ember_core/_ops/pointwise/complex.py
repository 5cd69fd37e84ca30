"""The complex API: views of the parts (``real``, ``imag``, ``view_as_real``,
``view_as_complex``), ``complex``/``polar`` construction, conjugation, ``angle``,
``sgn``, ``isreal``.  On real tensors these are what PyTorch makes of them
(a real tensor is its own conjugate and real part).

Note [Eager conjugation]: PyTorch's ``conj()`` of a complex tensor is a lazy
view with a conjugate bit; ember's ``conj()`` writes the conjugate into a new
tensor (the kernels never have to look at a bit).  Values, dtypes and
gradients are PyTorch's; what differs is observable only through aliasing --
writing into ``x`` later does not change an earlier ``x.conj()`` -- and
``is_conj()``, which is False for every ember tensor (the conjugate is always
resolved, so ``resolve_conj`` returns its input and ``conj_physical`` is
``conj``).
"""

import math

from ember_core._base.dispatch import defop
from ember_core._base.lib import lib
from ember_core._base.shape import broadcast_shapes
from ember_core._ops.pointwise.elementwise import unary, where
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import copy_into
from ember_core._tensor.creation import full_like, ones_like, zeros_like
from ember_core._tensor.tensor import Tensor, empty, view_of, written


def _complex_arg(op, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input._dtype.is_complex


def _part(input, which):
    # a complex element is (re, im) of its real dtype: the part's view has doubled
    # strides and offset, starting one real element later for the imaginary part
    rd = input._dtype.to_real()
    stride = tuple(2 * s for s in input._stride)
    t = view_of(input, input._shape, stride, 2 * input._offset + which, input._numel, None)
    t._dtype = rd
    t._ptr = input._storage._ptr + t._offset * rd.itemsize
    t._contig = None
    return t


def as_real_view(t):
    """view_as_real without the op's checks (ember's own kernels' use)."""
    rd = t._dtype.to_real()
    v = view_of(
        t,
        t._shape + (2,),
        tuple(2 * s for s in t._stride) + (1,),
        2 * t._offset,
        t._numel * 2,
        None,
    )
    v._dtype = rd
    v._ptr = t._storage._ptr + v._offset * rd.itemsize
    v._contig = None
    return v


def as_complex_view(t):
    """view_as_complex of a real tensor whose last dim is a contiguous pair."""
    cd = t._dtype.to_complex()
    v = view_of(t, t._shape[:-1], tuple(s // 2 for s in t._stride[:-1]), t._offset // 2, None, None)
    v._dtype = cd
    v._ptr = t._storage._ptr + v._offset * cd.itemsize
    return v


@defop(view=True, tags=("linear",))
def view_as_real(input):
    """A real view of a complex tensor with a last dim of size 2 (real, imaginary).

    >>> import ember_core as ec
    >>> ec.view_as_real(ec.tensor([1 + 2j])).tolist()
    [[1.0, 2.0]]
    """
    if not _complex_arg("view_as_real", input):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return as_real_view(input)


@defop(view=True, tags=("linear",), autocast="fp32")
def view_as_complex(input):
    """A complex view of a real tensor whose last dim is (real, imaginary)."""
    if not isinstance(input, Tensor):
        raise TypeError("view_as_complex(): argument 'input' must be Tensor")
    cd = {D.float32: D.complex64, D.float64: D.complex128}.get(input._dtype)
    if cd is None:
        raise RuntimeError(
            "view_as_complex is only supported for float and double tensors, but got a tensor "
            f"of scalar type: {D._torch_name(input._dtype)}"
        )
    if not input._shape or input._shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if input._stride[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in input._stride[:-1]) or input._offset % 2:
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    return as_complex_view(input)


@defop(method=False, view=True, tags=("linear",))
def real(input):
    """The real part: a view for complex tensors, the tensor itself for real ones
    (``Tensor.real`` is a property)."""
    if not _complex_arg("real", input):
        return input
    return _part(input, 0)


@defop(method=False, view=True, tags=("linear",))
def imag(input):
    """The imaginary part of a complex tensor, as a view (real tensors raise)."""
    if not _complex_arg("imag", input):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _part(input, 1)


@defop(tags=("linear",))
def conj(input):
    """The complex conjugate (Note [Eager conjugation]); a real tensor itself."""
    if not _complex_arg("conj", input):
        return input
    return unary("conj", lib.EC_U_CONJ, 0, input)


@defop(composite=True)
def conj_physical(input, *, out=None):
    r = conj(input)
    return out.copy_(r) if out is not None else r


@defop(composite=True, inplace_of="conj_physical")
def conj_physical_(input):
    if input._dtype.is_complex:
        input.copy_(conj(input))
    return input


@defop(composite=True)
def resolve_conj(input):
    """ember's conjugates are always resolved (Note [Eager conjugation])."""
    return input


@defop(composite=True)
def resolve_neg(input):
    return input


@defop(method=False)
def complex(real, imag, *, out=None):
    """A complex tensor from its real and imaginary parts (float32 -> complex64,
    float64 -> complex128), broadcast."""
    for name, x in (("real", real), ("imag", imag)):
        if not isinstance(x, Tensor):
            raise TypeError(f"complex(): argument '{name}' must be Tensor, not {type(x).__name__}")
    if real._dtype is not imag._dtype:
        raise RuntimeError(
            f"Expected object of scalar type {D._torch_name(real._dtype)} but got scalar type "
            f"{D._torch_name(imag._dtype)} for second argument"
        )
    if real._dtype not in (D.float32, D.float64):
        raise RuntimeError(
            "Expected both inputs to be Half, Float or Double tensors but got "
            f"{D._torch_name(real._dtype)} and {D._torch_name(imag._dtype)}"
        )

    shape = broadcast_shapes(real._shape, imag._shape, op="complex")
    r = empty(shape, real._dtype.to_complex(), real._storage._device)
    copy_into(_part(r, 0), real)
    copy_into(_part(r, 1), imag)
    if out is not None:
        written(out, "complex")
        return copy_into(out, r) if out._shape == shape else out.copy_(r)
    return r


@defop(method=False, composite=True, autocast="fp32")
def polar(abs, angle, *, out=None):
    """abs * (cos(angle) + i sin(angle))."""
    r = complex(abs * angle.cos(), abs * angle.sin())
    return out.copy_(r) if out is not None else r


@defop(composite=True, tags=("pointwise", "float-result"))
def angle(input, *, out=None):
    """The argument of each element: atan2(imag, real) for complex input; for real
    input pi where negative, 0 elsewhere (NaN kept)."""
    if input._dtype.is_complex:
        r = _angle(input)
    else:
        x = input if input._dtype.is_floating_point else input.to(D.get_default_dtype())
        r = where(x < 0, full_like(x, math.pi), zeros_like(x))  # pi in x's own precision
        r = where(x.isnan(), x, r)
    return out.copy_(r) if out is not None else r


@defop(public=False, tags=("pointwise",))
def _angle(input):
    """arg(z) of a complex tensor, in its real dtype (the kernel behind angle)."""
    return unary("angle", lib.EC_U_ANGLE, 0, input)


@defop(composite=True, tags=("pointwise",))
def sgn(input, *, out=None):
    """sign for real tensors, z / |z| (0 at 0) for complex ones."""
    if input._dtype.is_complex:
        a = input.abs()
        r = input / where(a == 0, 1.0, a)
    else:
        r = input.sign()
    return r if out is None else out.copy_(r)


@defop(composite=True, inplace_of="sgn", tags=("pointwise",))
def sgn_(input):
    if input._dtype.is_complex:
        return input.copy_(sgn(input))
    return input.sign_()


@defop(composite=True, tags=("pointwise",))
def isreal(input):
    """True where the imaginary part is zero (everywhere for real tensors)."""
    if input._dtype.is_complex:
        return imag(input) == 0

    return ones_like(input, dtype=D.bool_)
