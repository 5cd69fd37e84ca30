"""repr() of tensors, in PyTorch's format: ``tensor([[1., 2.]])``, values in a
common width and notation, summarised with ``...`` beyond 1000 elements, dtype
shown when it is not the default one for its kind."""

import math

import numpy as np

from ember_core._interop.numpy import _ArrayView
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import to_dtype_copy
from ember_core._tensor.device import CPU


class _Options:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _Options()


def set_printoptions(
    precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None
):
    """Set printing options (as torch.set_printoptions)."""
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = (
            4,
            1000,
            3,
            80,
        )
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = (
            2,
            1000,
            2,
            80,
        )
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = (
            4,
            math.inf,
            3,
            80,
        )
    for name, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode


def _summarize_array(a):
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * e:
        parts = [_summarize_array(x) for x in a[:e]] + [_summarize_array(x) for x in a[-e:]]
    else:
        parts = [_summarize_array(x) for x in a]
    if a.ndim == 1:
        return np.array(parts, dtype=a.dtype) if parts else a
    return np.stack(parts) if parts else a


class _Formatter:
    """PyTorch's _Formatter: one notation and width for every element shown.
    The width comes from the non-zero finite values only (NaN, inf and zeros
    may stick out), as in PyTorch."""

    def __init__(self, values, dtype):
        self.floating = dtype.is_floating_point
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        vals = values.reshape(-1)
        if not self.floating:
            for v in vals.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = vals[np.isfinite(vals) & (vals != 0)].astype(np.float64)
        if finite.size == 0:
            return  # PyTorch stops here, before looking at sci_mode
        absv = np.abs(finite)
        nonzero_min, nonzero_max = absv.min(), absv.max()
        self.int_mode = bool(np.all(np.ceil(finite) == finite))
        p = PRINT_OPTS.precision
        # the notation is settled first (a set sci_mode wins), then the width in it
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = bool(
                nonzero_max / nonzero_min > 1000.0 or nonzero_max > 1.0e8 or nonzero_min < 1.0e-4
            )
        else:
            self.sci_mode = bool(PRINT_OPTS.sci_mode)
        if self.sci_mode:
            widths = (len(f"{v:.{p}e}") for v in finite.tolist())
        elif self.int_mode:
            widths = (len(f"{v:.0f}") + 1 for v in finite.tolist())
        else:
            widths = (len(f"{v:.{p}f}") for v in finite.tolist())
        self.max_width = max(self.max_width, *widths)

    def width(self):
        return self.max_width

    def format(self, v):
        if self.floating:
            v = float(v)
            p = PRINT_OPTS.precision
            if self.sci_mode:
                s = f"{v:{self.max_width}.{p}e}" if math.isfinite(v) else _special(v)
            elif self.int_mode:
                s = f"{v:.0f}" if math.isfinite(v) else _special(v)
                if math.isfinite(v):
                    s += "."
            else:
                s = f"{v:.{p}f}" if math.isfinite(v) else _special(v)
        else:
            s = str(v)
        return " " * (self.max_width - len(s)) + s


class _ComplexFormatter:
    """PyTorch's complex form: the real parts and the imaginary parts each get a
    _Formatter of their own; an element is ``real+imagj`` (``1.+2.j``)."""

    def __init__(self, values, dtype):
        real = dtype.to_real()
        self.re = _Formatter(np.ascontiguousarray(values.real), real)
        self.im = _Formatter(np.ascontiguousarray(values.imag), real)

    def width(self):
        return self.re.width() + self.im.width() + 1

    def format(self, v):
        v = complex(v)
        imag = (self.im.format(v.imag) + "j").lstrip()
        sign = "" if imag[0] in "+-" else "+"
        return self.re.format(v.real) + sign + imag


def _special(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:.0f}." if v == int(v) else repr(v)
    return str(v)


def _vector_str(a, indent, summarize, fmt):
    element_length = fmt.width() + 2
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        data = (
            [fmt.format(v) for v in a[:e].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in a[-e:].tolist()]
        )
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item()).strip()
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        slices = (
            [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(e)]
            + ["..."]
            + [
                _tensor_str(a[i], indent + 1, summarize, fmt)
                for i in range(a.shape[0] - e, a.shape[0])
            ]
        )
    else:
        slices = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _values(t):
    src = t
    if t._dtype is D.bfloat16:
        src = to_dtype_copy(t, D.float32, CPU)
    elif t._storage._device is not CPU:  # printing reads the values on the host
        src = to_dtype_copy(t, t._dtype, CPU)

    return np.asarray(_ArrayView(src, readonly=True))


def tensor_repr(t, prefix="tensor("):
    indent = len(prefix)
    suffixes = []
    default = t._dtype in (D.get_default_dtype(), D.default_complex_dtype(), D.int64, D.bool_)
    meta = t._storage._device.type == "meta"
    if meta:  # no values to show (Note [Meta tensors]): PyTorch's form
        body = "..."
        default = t._dtype is D.get_default_dtype()
        suffixes += ["device='meta'", f"size={tuple(t._shape)}"]
    elif t._numel == 0:
        if len(t._shape) != 1:
            suffixes.append(f"size={tuple(t._shape)}")
        # no elements tell int64 from the default dtype: always say it
        default = t._dtype is D.get_default_dtype()
        body = "[]"
    else:
        a = _values(t)
        summarize = t._numel > PRINT_OPTS.threshold
        shown = _summarize_array(a) if summarize else a
        fmt = (_ComplexFormatter if t._dtype.is_complex else _Formatter)(shown, t._dtype)
        body = _tensor_str(a, indent, summarize, fmt)
    if t._storage._device.type not in ("cpu", "meta"):
        suffixes.append(f"device='{t._storage._device}'")
    if not default:
        suffixes.append(f"dtype=ember.{t._dtype.name}")
    grad_fn = t.grad_fn
    if grad_fn is not None:
        name = getattr(grad_fn, "name", None)
        name = name() if callable(name) else type(grad_fn).__name__
        suffixes.append(f"grad_fn=<{name}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    out = prefix + body
    for s in suffixes:
        out += ", " + s
    return out + ")"
