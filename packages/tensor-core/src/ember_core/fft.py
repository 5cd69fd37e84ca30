"""``ember_core.fft`` (``ember.fft``): torch.fft's discrete Fourier transforms.

Note [FFT primitives]: as in PyTorch, every transform is a composite over three
primitive ops, ``_fft_c2c`` (complex to complex), ``_fft_r2c`` (real to
complex, one-sided along the last transformed dim) and ``_fft_c2r`` (its
inverse, given the real length), each with its own derivative formula.  The
composites resize the input (``n``/``s``: zero-padding or trimming), turn
``norm`` into the primitives' normalization code and pick the direction:

    normalization  0: none   1: by 1/sqrt(n)   2: by 1/n   (n: the signal's size)

The primitives call ducc0's FFTs (the successor of pocketfft, on which NumPy
and SciPy build) on ember's memory: the input is read where it lies, any
strides, and the result is written into a fresh ember tensor through NumPy
views -- nothing is copied -- on ember's thread count (``set_num_threads``).
CPU only: a CUDA tensor raises (cuFFT is the planned backend).
"""

import ducc0
import numpy as np

from ember_core._base.dispatch import defop
from ember_core._base.settings import get_num_threads
from ember_core._base.shape import normalize_dim
from ember_core._interop.numpy import _ArrayView
from ember_core._ops.nn.resample import constant_pad_nd
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import to_dtype_copy
from ember_core._tensor.creation import arange
from ember_core._tensor.device import require_cpu, to_device
from ember_core._tensor.tensor import Tensor, empty

__all__ = [
    "fft",
    "ifft",
    "fft2",
    "ifft2",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfft2",
    "irfft2",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "hfft2",
    "ihfft2",
    "hfftn",
    "ihfftn",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]

_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


def _np(t):
    """A NumPy view of tensor t's memory (writable unless t is read-only)."""

    return np.asarray(_ArrayView(t))


def _threads():
    return get_num_threads()


def _check(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    require_cpu(x._storage._device, op)


# ------------------------------------------------------------------ primitives


@defop(method=False, tags=("linear",))
def _fft_c2c(input, dim, normalization, forward):
    """The complex DFT of a complex tensor over dims ``dim`` (Note [FFT primitives])."""
    _check("_fft_c2c", input)
    out = empty(input._shape, input._dtype)
    if out._numel:
        ducc0.fft.c2c(
            _np(input),
            axes=list(dim),
            forward=bool(forward),
            inorm=int(normalization),
            out=_np(out),
            nthreads=_threads(),
        )
    return out


@defop(method=False, tags=("linear",))
def _fft_r2c(input, dim, normalization, onesided):
    """The DFT of a real tensor over ``dim``: ``n // 2 + 1`` values along the last
    of them when ``onesided``, all n (Hermitian-symmetric) otherwise."""
    _check("_fft_r2c", input)
    dim = list(dim)
    if not onesided:
        return _fft_c2c(to_dtype_copy(input, input._dtype.to_complex()), dim, normalization, True)
    last = dim[-1]
    shape = list(input._shape)
    shape[last] = shape[last] // 2 + 1
    out = empty(tuple(shape), input._dtype.to_complex())
    if out._numel:
        ducc0.fft.r2c(
            _np(input),
            axes=dim,
            forward=True,
            inorm=int(normalization),
            out=_np(out),
            nthreads=_threads(),
        )
    return out


@defop(method=False, tags=("linear",))
def _fft_c2r(input, dim, normalization, last_dim_size):
    """The inverse of a one-sided ``_fft_r2c``: a real tensor whose last
    transformed dim has ``last_dim_size`` elements (the input holds
    ``last_dim_size // 2 + 1`` of them; the imaginary parts of the values
    Hermitian symmetry makes real are ignored)."""
    _check("_fft_c2r", input)
    dim = list(dim)
    shape = list(input._shape)
    shape[dim[-1]] = int(last_dim_size)
    out = empty(tuple(shape), input._dtype.to_real())
    if out._numel:
        ducc0.fft.c2r(
            _np(input),
            axes=dim,
            lastsize=int(last_dim_size),
            forward=False,
            inorm=int(normalization),
            out=_np(out),
            nthreads=_threads(),
        )
    return out


# ------------------------------------------------------------- argument rules


def _norm_mode(norm, forward, op):
    """PyTorch's norm_from_string: the normalization code of a transform."""
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise ValueError(f"{op}: Invalid normalization mode: {norm}")


def _float_input(op, x, complex_ok=True):
    """x promoted as torch.fft promotes: integers to the default float dtype;
    float16/bfloat16 are refused (PyTorch's CPU FFT has no half kernel)."""
    _check(op, x)
    dt = x._dtype
    if dt.is_complex:
        if not complex_ok:
            raise RuntimeError(f"{op} expects a real input tensor, but got {D._torch_name(dt)}")
        return x
    if dt.category < 2:
        return x.to(D.get_default_dtype())
    if dt in (D.float16, D.bfloat16):
        raise RuntimeError(f"Unsupported dtype {D._torch_name(dt)}")
    return x


def _complex_input(op, x):
    x = _float_input(op, x)
    return x if x._dtype.is_complex else x.to(x._dtype.to_complex())


def _resize(x, dims, sizes, op):
    """x zero-padded or trimmed at the end of each of ``dims`` to ``sizes``."""
    for d, n in zip(dims, sizes):
        if n < 1:
            raise RuntimeError(f"{op}: Invalid number of data points ({n}) specified")
        have = x._shape[d]
        if n < have:
            x = x.narrow(d, 0, n)
        elif n > have:
            pad = [0, 0] * (len(x._shape) - 1 - d) + [0, n - have]
            x = constant_pad_nd(x, pad, 0)
    return x


def _one_dim(op, x, n, dim):
    d = normalize_dim(dim, len(x._shape), op)
    size = x._shape[d] if n is None else int(n)
    return d, size


def _shape_and_dims(op, x, s, dim):
    """PyTorch's canonicalize_fft_shape_and_dim_args: (dims, sizes)."""

    nd = len(x._shape)
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [normalize_dim(d, nd, op) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op}: FFT dims must be unique")
    if s is not None:
        s = [int(v) for v in s]
        if dim is None:
            if len(s) > nd:
                raise RuntimeError(
                    f"{op}: Got shape with {len(s)} values but input tensor only "
                    f"has {nd} dimensions."
                )
            dims = list(range(nd - len(s), nd))
        elif len(s) != len(dims):
            raise RuntimeError(
                f"{op}: When given, dim and shape arguments must have the same length"
            )
        sizes = [x._shape[d] if v == -1 else v for d, v in zip(dims, s)]
    else:
        if dim is None:
            dims = list(range(nd))
        sizes = [x._shape[d] for d in dims]
    for v in sizes:
        if v < 1:
            raise RuntimeError(f"{op}: Invalid number of data points ({v}) specified")
    return dims, sizes


def _finish(r, out):
    return r if out is None else out.copy_(r)


# ------------------------------------------------------------ 1-d transforms


def _c2c_1d(op, input, n, dim, norm, forward, out):
    x = _complex_input(op, input)
    d, size = _one_dim(op, x, n, dim)
    x = _resize(x, [d], [size], op)
    return _finish(_fft_c2c(x, [d], _norm_mode(norm, forward, op), forward), out)


@defop(
    "fft_fft(input, n=None, dim=-1, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def fft(input, n=None, dim=-1, norm=None, out=None):
    """The one-dimensional discrete Fourier transform (torch.fft.fft).

    >>> import ember_core as ec
    >>> ec.fft.fft(ec.tensor([1.0, 0.0, 0.0, 0.0])).tolist()
    [(1+0j), (1+0j), (1+0j), (1+0j)]
    """
    return _c2c_1d("fft", input, n, dim, norm, True, out)


@defop(
    "fft_ifft(input, n=None, dim=-1, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def ifft(input, n=None, dim=-1, norm=None, out=None):
    """The inverse of fft."""
    return _c2c_1d("ifft", input, n, dim, norm, False, out)


@defop(
    "fft_rfft(input, n=None, dim=-1, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def rfft(input, n=None, dim=-1, norm=None, out=None):
    """The FFT of a real signal: the n // 2 + 1 non-negative frequencies."""
    x = _float_input("rfft", input, complex_ok=False)
    d, size = _one_dim("rfft", x, n, dim)
    x = _resize(x, [d], [size], "rfft")
    return _finish(_fft_r2c(x, [d], _norm_mode(norm, True, "rfft"), True), out)


@defop(
    "fft_irfft(input, n=None, dim=-1, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def irfft(input, n=None, dim=-1, norm=None, out=None):
    """The inverse of rfft: a real signal of n points (2 * (m - 1) by default)."""
    x = _complex_input("irfft", input)
    d, m = _one_dim("irfft", x, None, dim)
    size = 2 * (m - 1) if n is None else int(n)
    if size < 1:
        raise RuntimeError(f"irfft: Invalid number of data points ({size}) specified")
    x = _resize(x, [d], [size // 2 + 1], "irfft")
    return _finish(_fft_c2r(x, [d], _norm_mode(norm, False, "irfft"), size), out)


@defop(
    "fft_hfft(input, n=None, dim=-1, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def hfft(input, n=None, dim=-1, norm=None, out=None):
    """The FFT of a Hermitian-symmetric signal given by its first half: real output."""
    x = _complex_input("hfft", input)
    d, m = _one_dim("hfft", x, None, dim)
    size = 2 * (m - 1) if n is None else int(n)
    if size < 1:
        raise RuntimeError(f"hfft: Invalid number of data points ({size}) specified")
    x = _resize(x, [d], [size // 2 + 1], "hfft")
    return _finish(_fft_c2r(x.conj(), [d], _norm_mode(norm, True, "hfft"), size), out)


@defop(
    "fft_ihfft(input, n=None, dim=-1, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def ihfft(input, n=None, dim=-1, norm=None, out=None):
    """The inverse of hfft: the one-sided spectrum of a real signal, conjugated."""
    x = _float_input("ihfft", input, complex_ok=False)
    d, size = _one_dim("ihfft", x, n, dim)
    x = _resize(x, [d], [size], "ihfft")
    return _finish(_fft_r2c(x, [d], _norm_mode(norm, False, "ihfft"), True).conj(), out)


# ------------------------------------------------------------ n-d transforms


def _c2c_nd(op, input, s, dim, norm, forward, out):
    x = _complex_input(op, input)
    dims, sizes = _shape_and_dims(op, x, s, dim)
    x = _resize(x, dims, sizes, op)
    if not dims:
        return _finish(x.clone(), out)
    return _finish(_fft_c2c(x, dims, _norm_mode(norm, forward, op), forward), out)


def _r2c_nd(op, input, s, dim, norm, out):
    x = _float_input(op, input, complex_ok=False)
    dims, sizes = _shape_and_dims(op, x, s, dim)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    x = _resize(x, dims, sizes, op)
    return _finish(_fft_r2c(x, dims, _norm_mode(norm, True, op), True), out)


def _c2r_nd(op, input, s, dim, norm, out):
    x = _complex_input(op, input)
    dims, sizes = _shape_and_dims(op, x, s, dim)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    last = 2 * (x._shape[dims[-1]] - 1) if s is None or s[-1] == -1 else sizes[-1]
    if last < 1:
        raise RuntimeError(f"{op}: Invalid number of data points ({last}) specified")
    sizes = sizes[:-1] + [last // 2 + 1]
    x = _resize(x, dims, sizes, op)
    return _finish(_fft_c2r(x, dims, _norm_mode(norm, False, op), last), out)


@defop(
    "fft_fftn(input, s=None, dim=None, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def fftn(input, s=None, dim=None, norm=None, out=None):
    """The n-dimensional FFT over ``dim`` (all dims, or the last len(s))."""
    return _c2c_nd("fftn", input, s, dim, norm, True, out)


@defop(
    "fft_ifftn(input, s=None, dim=None, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def ifftn(input, s=None, dim=None, norm=None, out=None):
    return _c2c_nd("ifftn", input, s, dim, norm, False, out)


@defop(
    "fft_fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def fft2(input, s=None, dim=(-2, -1), norm=None, out=None):
    return _c2c_nd("fft2", input, s, dim, norm, True, out)


@defop(
    "fft_ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def ifft2(input, s=None, dim=(-2, -1), norm=None, out=None):
    return _c2c_nd("ifft2", input, s, dim, norm, False, out)


@defop(
    "fft_rfftn(input, s=None, dim=None, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def rfftn(input, s=None, dim=None, norm=None, out=None):
    return _r2c_nd("rfftn", input, s, dim, norm, out)


@defop(
    "fft_irfftn(input, s=None, dim=None, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def irfftn(input, s=None, dim=None, norm=None, out=None):
    return _c2r_nd("irfftn", input, s, dim, norm, out)


@defop(
    "fft_rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def rfft2(input, s=None, dim=(-2, -1), norm=None, out=None):
    return _r2c_nd("rfft2", input, s, dim, norm, out)


@defop(
    "fft_irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def irfft2(input, s=None, dim=(-2, -1), norm=None, out=None):
    return _c2r_nd("irfft2", input, s, dim, norm, out)


def _hermitian_nd(op, input, s, dim, norm, out):
    # PyTorch's fft_hfftn: c2c over all but the last dim, then c2r of the conjugate
    x = _complex_input(op, input)
    dims, sizes = _shape_and_dims(op, x, s, dim)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    last = 2 * (x._shape[dims[-1]] - 1) if s is None or s[-1] == -1 else sizes[-1]
    if last < 1:
        raise RuntimeError(f"{op}: Invalid number of data points ({last}) specified")
    x = _resize(x, dims, sizes[:-1] + [last // 2 + 1], op)
    mode = _norm_mode(norm, True, op)
    if len(dims) > 1:
        x = _fft_c2c(x, dims[:-1], mode, True)
    return _finish(_fft_c2r(x.conj(), [dims[-1]], mode, last), out)


def _inverse_hermitian_nd(op, input, s, dim, norm, out):
    # conj(rfftn(x)) normalised as an inverse: r2c of the last dim, conjugated, then
    # the inverse c2c over the rest
    x = _float_input(op, input, complex_ok=False)
    dims, sizes = _shape_and_dims(op, x, s, dim)
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    x = _resize(x, dims, sizes, op)
    mode = _norm_mode(norm, False, op)
    r = _fft_r2c(x, [dims[-1]], mode, True).conj()
    if len(dims) > 1:  # conj(forward DFT) of the rest = inverse DFT of the conjugate
        r = _fft_c2c(r, dims[:-1], mode, False)
    return _finish(r, out)


@defop(
    "fft_hfftn(input, s=None, dim=None, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def hfftn(input, s=None, dim=None, norm=None, out=None):
    """The n-dimensional FFT of a Hermitian-symmetric signal given by its half."""
    return _hermitian_nd("hfftn", input, s, dim, norm, out)


@defop(
    "fft_hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def hfft2(input, s=None, dim=(-2, -1), norm=None, out=None):
    return _hermitian_nd("hfft2", input, s, dim, norm, out)


@defop(
    "fft_ihfftn(input, s=None, dim=None, norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def ihfftn(input, s=None, dim=None, norm=None, out=None):
    """The inverse of hfftn: the one-sided spectrum of a real signal, conjugated."""
    return _inverse_hermitian_nd("ihfftn", input, s, dim, norm, out)


@defop(
    "fft_ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None)",
    method=False,
    composite=True,
    public=False,
    autocast="fp32",
)
def ihfft2(input, s=None, dim=(-2, -1), norm=None, out=None):
    return _inverse_hermitian_nd("ihfft2", input, s, dim, norm, out)


# ------------------------------------------------------------------- helpers


@defop(
    "fft_fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, out=None)",
    method=False,
    composite=True,
    differentiable=False,
    public=False,
)
def fftfreq(n, d=1.0, dtype=None, device=None, requires_grad=False, out=None):
    """The sample frequencies of an n-point FFT: [0, 1, ..., -1] / (d * n)."""

    dt = D.to_dtype(dtype) or D.get_default_dtype()
    k = arange(n, dtype=D.int64, device=to_device(device))
    k = k - n * (k >= (n + 1) // 2).to(D.int64)
    r = (k.to(dt) / (d * n)).requires_grad_(requires_grad)
    return _finish(r, out)


@defop(
    "fft_rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, out=None)",
    method=False,
    composite=True,
    differentiable=False,
    public=False,
)
def rfftfreq(n, d=1.0, dtype=None, device=None, requires_grad=False, out=None):
    """The non-negative sample frequencies of an n-point rfft: [0, ..., n // 2] / (d * n)."""

    dt = D.to_dtype(dtype) or D.get_default_dtype()
    r = arange(n // 2 + 1, device=to_device(device)).to(dt) / (d * n)
    return _finish(r.requires_grad_(requires_grad), out)


def _shift_dims(x, dim):
    if dim is None:
        return list(range(len(x._shape)))
    return [dim] if isinstance(dim, int) else list(dim)


@defop(
    "fft_fftshift(input, dim=None)",
    method=False,
    composite=True,
    public=False,
)
def fftshift(input, dim=None):
    """The zero frequency moved to the centre (a roll by n // 2 along each dim)."""
    dims = _shift_dims(input, dim)
    if not dims:
        return input.clone()
    return input.roll([input._shape[d] // 2 for d in dims], dims)


@defop(
    "fft_ifftshift(input, dim=None)",
    method=False,
    composite=True,
    public=False,
)
def ifftshift(input, dim=None):
    """The inverse of fftshift (a roll by -(n // 2))."""
    dims = _shift_dims(input, dim)
    if not dims:
        return input.clone()
    return input.roll([-(input._shape[d] // 2) for d in dims], dims)
