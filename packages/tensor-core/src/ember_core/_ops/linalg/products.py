"""Matrix products: matmul (NumPy/PyTorch batching and broadcasting), mm, bmm,
addmm, baddbmm, mv, dot, outer and friends, through ec_matmul (BLAS on the
CPU, cuBLAS on CUDA: Note [cuBLAS] in csrc/cuda/blas_launch.c); einsum and
tensordot; the products written with them (addbmm, cross, chain_matmul,
bilinear); and the float32 matmul precision switch."""

import functools
import warnings

from ember_core._base import shape as _shape
from ember_core._base.dispatch import defop
from ember_core._base.lib import NOGIL_THRESHOLD, check, lib
from ember_core._base.shape import normalize_dim
from ember_core._cuda import blas as _cuda_blas
from ember_core._ops.pointwise.elementwise import _tname, check_device, mul
from ember_core._ops.reduction.reduction import sum as _sum
from ember_core._ops.shape.joining import stack as _stack
from ember_core._tensor import dtype as D
from ember_core._tensor.copy import contiguous, copy_into, resize_, write_out
from ember_core._tensor.tensor import Tensor, empty, view_of, written
from ember_core._tensor.views import broadcast_to as _broadcast_to


def _same_dtype(op, a, b):
    if a._dtype is not b._dtype:
        raise RuntimeError(
            f"{op}: expected m1 and m2 to have the same dtype, but got: {_tname(a._dtype)} != "
            f"{_tname(b._dtype)}"
        )
    if a._dtype is D.bool_:
        kernel = "addmm_cuda" if a._storage._device.type == "cuda" else "addmm_impl_cpu_"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool' ({op})")
    if a._dtype in D.WIDE_UINTS:  # PyTorch has no product kernel for them
        raise NotImplementedError(f"\"addmm_impl_cpu_\" not implemented for '{_tname(a._dtype)}'")


def _gemm(op, a, b, c, batch, m, n, k, a_st, b_st, c_st, alpha=1.0, beta=0.0):
    """c[i] = alpha * a[i] @ b[i] + beta * c[i]; *_st are (batch, row, col) strides."""
    dev = a._storage._device
    if dev.type == "cuda":
        return _gemm_cuda(op, dev, a, b, c, batch, m, n, k, a_st, b_st, c_st, alpha, beta)
    flops = batch * m * n * k
    fn = (dev._kn if flops > NOGIL_THRESHOLD * 16 else dev._k).ec_matmul
    check(
        fn(
            a._dtype.code,
            batch,
            m,
            n,
            k,
            alpha,
            a._ptr,
            a_st[0],
            a_st[1],
            a_st[2],
            b._ptr,
            b_st[0],
            b_st[1],
            b_st[2],
            beta,
            c._ptr,
            c_st[0],
            c_st[1],
            c_st[2],
        ),
        op,
    )


def _dense_operand(t, batch, rows, cols, st, fill):
    """A fresh dense row-major copy of operand ``t`` seen as (batch, rows, cols)
    with strides ``st`` (one matrix when its batch stride is 0), and the copy's
    strides.  ``fill`` False leaves it uninitialised (an output read with beta 0)."""
    if st[0] == 0 or batch == 1:
        shape, view_st, dense_st = (rows, cols), st[1:], (0, cols, 1)
    else:
        shape, view_st, dense_st = (batch, rows, cols), st, (rows * cols, cols, 1)
    view = view_of(t, shape, tuple(view_st), t._offset)
    d = empty(shape, t._dtype, t._storage._device)
    if fill:
        copy_into(d, view)
    return d, dense_st, view


def _gemm_cuda(op, dev, a, b, c, batch, m, n, k, a_st, b_st, c_st, alpha, beta):
    """_gemm on CUDA: cuBLAS through the launcher ecu_matmul, after dense copies
    of the operands cuBLAS cannot address in place (Note [GEMM plan])."""
    if not a._dtype.is_floating_point:
        kernel = "bmm_cuda" if batch > 1 else "addmm_cuda"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_tname(a._dtype)}'")
    if not _cuda_blas.loaded:
        _cuda_blas.load()
    copies = lib.ecu_gemm_copies(batch, m, n, k, *a_st, *b_st, *c_st)
    target = None
    if copies:
        if copies & lib.ECU_GEMM_COPY_A:
            a, a_st, _ = _dense_operand(a, batch, m, k, a_st, True)
        if copies & lib.ECU_GEMM_COPY_B:
            b, b_st, _ = _dense_operand(b, batch, k, n, b_st, True)
        if copies & lib.ECU_GEMM_COPY_C:
            c, c_st, target = _dense_operand(c, batch, m, n, c_st, beta != 0)
    check(
        dev._k.ec_matmul(
            a._dtype.code, batch, m, n, k, alpha,
            a._ptr, a_st[0], a_st[1], a_st[2],
            b._ptr, b_st[0], b_st[1], b_st[2],
            beta, c._ptr, c_st[0], c_st[1], c_st[2],
        ),
        op,
    )  # fmt: skip
    if target is not None:
        copy_into(target, c)


def _flat_batch(t, batch_shape):
    """View t (batch..., r, c), already expanded to batch_shape, with its batch dims
    merged into one stride; returns (tensor, batch_stride) or copies when the
    batch dims do not merge."""
    nb = len(batch_shape)
    if nb == 0:
        return t, 0
    strides = t._stride[:nb]
    # merged if each batch stride equals the next one times its size (or sizes are 1)
    dims = [(s, st) for s, st in zip(batch_shape, strides) if s != 1]
    ok = all(dims[i][1] == dims[i + 1][1] * dims[i + 1][0] for i in range(len(dims) - 1))
    if ok:
        return t, (dims[-1][1] if dims else 0)

    c = contiguous(t)
    return c, c._shape[-1] * c._shape[-2]


def _mm_out(op, shape, dtype, dev, out):
    if out is None:
        return empty(shape, dtype, dev)
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out._dtype is not dtype:
        raise RuntimeError(
            f"{op}: expected out tensor to have dtype {dtype}, but got {out._dtype} instead"
        )
    written(out, op)
    if out._shape != shape:
        resize_(out, shape)
    return out


@defop(autocast="lower_precision_fp")
def matmul(input, other, *, out=None):
    """Matrix product with NumPy's rules: 1-D operands are vectors, leading dims
    are batch dims that broadcast."""
    op = "matmul"
    if out is None and input.__class__ is Tensor and other.__class__ is Tensor:
        # the common case, matrix @ matrix, without the batching machinery below
        sa, sb = input._shape, other._shape
        dt = input._dtype
        if (
            len(sa) == 2
            and len(sb) == 2
            and sa[1] == sb[0]
            and other._dtype is dt
            and dt is not D.bool_
            and input._storage._device is other._storage._device
        ):
            m, n = sa[0], sb[1]
            c = empty((m, n), dt, input._storage._device)
            ast, bst = input._stride, other._stride
            _gemm(
                op,
                input,
                other,
                c,
                1,
                m,
                n,
                sa[1],
                (0, ast[0], ast[1]),
                (0, bst[0], bst[1]),
                (0, n, 1),
            )
            return c
    for x, name in ((input, "input"), (other, "other")):
        if not isinstance(x, Tensor):
            raise TypeError(f"matmul(): argument '{name}' must be Tensor, not {type(x).__name__}")
    da, db = len(input._shape), len(other._shape)
    if da == 0 or db == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )
    _same_dtype(op, input, other)
    dev = check_device(op, input, other)
    a, b = input, other
    if da == 1:
        a = view_of(a, (1,) + a._shape, (0,) + a._stride, a._offset)
    if db == 1:
        b = view_of(b, b._shape + (1,), b._stride + (0,), b._offset)
    m, k = a._shape[-2], a._shape[-1]
    k2, n = b._shape[-2], b._shape[-1]
    if k != k2:
        raise RuntimeError(
            f"{op}: mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n}) "
            f"(input shapes {list(input._shape)} and {list(other._shape)})"
        )
    batch = _shape.broadcast_shapes(a._shape[:-2], b._shape[:-2], op=op)
    a = a.expand(batch + (m, k)) if a._shape[:-2] != batch else a
    b = b.expand(batch + (k, n)) if b._shape[:-2] != batch else b
    a, a_bs = _flat_batch(a, batch)
    b, b_bs = _flat_batch(b, batch)
    nbatch = _shape.numel(batch)
    full = batch + (m, n)
    result_shape = full
    if da == 1:
        result_shape = batch + (n,)
    if db == 1:
        result_shape = result_shape[:-1] if da != 1 else batch
    c = empty(full, input._dtype, dev)
    _gemm(
        op,
        a,
        b,
        c,
        nbatch,
        m,
        n,
        k,
        (a_bs, a._stride[-2], a._stride[-1]),
        (b_bs, b._stride[-2], b._stride[-1]),
        (m * n, n, 1),
    )
    if result_shape != full:
        c._shape = result_shape
        c._stride = _shape.contiguous_strides(result_shape)
    if out is not None:
        return write_out(out, c, op)
    return c


def _check_dims(op, t, nd, name):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if len(t._shape) != nd:
        raise RuntimeError(
            f"{op}: {name} must be a {nd}D tensor, got {len(t._shape)}D (shape {list(t._shape)})"
        )


@defop(autocast="lower_precision_fp")
def mm(input, mat2, *, out=None):
    """Product of two matrices."""
    _check_dims("mm", input, 2, "self")
    _check_dims("mm", mat2, 2, "mat2")
    return matmul(input, mat2, out=out)


@defop(autocast="lower_precision_fp")
def bmm(input, mat2, *, out=None):
    """Batched product of (b, n, m) and (b, m, p) tensors."""
    _check_dims("bmm", input, 3, "batch1")
    _check_dims("bmm", mat2, 3, "batch2")
    if input._shape[0] != mat2._shape[0]:
        raise RuntimeError(
            f"bmm: batch1 and batch2 must have same number of batches, got {input._shape[0]} and {mat2._shape[0]}"  # noqa: E501 - one string, as PyTorch spells it
        )
    return matmul(input, mat2, out=out)


@defop
def mv(input, vec, *, out=None):
    """Matrix-vector product."""
    _check_dims("mv", input, 2, "self")
    _check_dims("mv", vec, 1, "vec")
    return matmul(input, vec, out=out)


@defop
def dot(input, other, *, out=None):
    """Inner product of two 1-D tensors of equal length."""
    _check_dims("dot", input, 1, "self")
    _check_dims("dot", other, 1, "tensor")
    if input._shape != other._shape:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input._shape[0]}] and src "
            f"[{other._shape[0]}] to have the same number of elements, but got "
            f"{input._shape[0]} and {other._shape[0]} elements respectively"
        )
    return matmul(input, other, out=out)


@defop(composite=True)
def vdot(input, other):
    """sum(conj(input) * other) of two 1-D tensors."""
    return dot(input.conj(), other)


@defop(composite=True)
def inner(input, other):
    if not input._shape or not other._shape:
        return input * other
    return matmul(input, other.transpose(-1, -2) if len(other._shape) > 1 else other)


@defop(aliases=("ger",))
def outer(input, vec2, *, out=None):
    """Outer product of two vectors (an elementwise product of a column and a
    row, so dtypes promote and bool works, as in PyTorch)."""

    _check_dims("outer", input, 1, "self")
    _check_dims("outer", vec2, 1, "vec2")
    a = view_of(input, (input._shape[0], 1), (input._stride[0], 0), input._offset)
    b = view_of(vec2, (1, vec2._shape[0]), (0, vec2._stride[0]), vec2._offset)
    return mul(a, b, out=out)


ger = outer


def _addmm_like(op, input, a, b, beta, alpha, out):
    """beta * input + alpha * (a @ b), input broadcast to the product's shape."""
    _same_dtype(op, a, b)
    if input._dtype is not a._dtype:
        raise RuntimeError(
            f"{op}: self and mat2 must have the same dtype, but got {input._dtype} and {a._dtype}"
        )
    dev = check_device(op, input, a, b)
    batch = a._shape[:-2]
    m, k, n = a._shape[-2], a._shape[-1], b._shape[-1]
    if b._shape[-2] != k:
        raise RuntimeError(
            f"{op}: mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {b._shape[-2]}x{n})"
        )
    shape = batch + (m, n)
    c = _mm_out(op, shape, a._dtype, dev, out)
    if beta != 0:
        try:
            copy_into(c, input.expand(shape))
        except RuntimeError:
            raise RuntimeError(
                f"{op}: the input of shape {list(input._shape)} cannot be broadcast to the "
                f"product's shape {list(shape)}"
            ) from None
    nb = _shape.numel(batch)
    a2, a_bs = _flat_batch(a, batch)
    b2, b_bs = _flat_batch(b, batch)
    if c._stride[-1] != 1 and c._stride[-2] != 1:
        raise RuntimeError(f"{op}: out must have a unit stride in one of its last two dims")
    _gemm(
        op,
        a2,
        b2,
        c,
        nb,
        m,
        n,
        k,
        (a_bs, a2._stride[-2], a2._stride[-1]),
        (b_bs, b2._stride[-2], b2._stride[-1]),
        (c._stride[0] if batch else 0, c._stride[-2], c._stride[-1]),
        float(alpha),
        float(beta),
    )
    return c


@defop(autocast="lower_precision_fp")
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat1 @ mat2)."""
    _check_dims("addmm", mat1, 2, "mat1")
    _check_dims("addmm", mat2, 2, "mat2")
    return _addmm_like("addmm", input, mat1, mat2, beta, alpha, out)


@defop(inplace_of="addmm")
def addmm_(input, mat1, mat2, *, beta=1, alpha=1):
    return input.copy_(addmm(input, mat1, mat2, beta=beta, alpha=alpha))


@defop(autocast="lower_precision_fp")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (batch1 @ batch2), batched."""
    _check_dims("baddbmm", batch1, 3, "batch1")
    _check_dims("baddbmm", batch2, 3, "batch2")
    return _addmm_like("baddbmm", input, batch1, batch2, beta, alpha, out)


@defop(inplace_of="baddbmm")
def baddbmm_(input, batch1, batch2, *, beta=1, alpha=1):
    return input.copy_(baddbmm(input, batch1, batch2, beta=beta, alpha=alpha))


def _require_tensors(op, **tensors):
    # (composites that start with Python arithmetic: an int input times a tuple
    # beta would build a huge tuple before any Tensor method is reached)
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")


@defop(composite=True)
def addmv(input, mat, vec, *, beta=1, alpha=1):
    _require_tensors("addmv", input=input, mat=mat, vec=vec)
    return input * beta + mv(mat, vec) * alpha if beta != 0 else mv(mat, vec) * alpha


@defop(composite=True)
def addmv_(input, mat, vec, *, beta=1, alpha=1):
    return input.copy_(addmv(input, mat, vec, beta=beta, alpha=alpha))


@defop(composite=True)
def addr_(input, vec1, vec2, *, beta=1, alpha=1):
    return input.copy_(addr(input, vec1, vec2, beta=beta, alpha=alpha))


@defop(composite=True)
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    _require_tensors("addr", input=input, vec1=vec1, vec2=vec2)
    return input * beta + outer(vec1, vec2) * alpha if beta != 0 else outer(vec1, vec2) * alpha


@defop(composite=True, method=False)
def tensordot(a, b, dims=2):
    """Contract the last ``dims`` dims of a with the first of b (or explicit lists)."""
    _require_tensors("tensordot", a=a, b=b)
    if isinstance(dims, int) and not 0 <= dims <= min(len(a._shape), len(b._shape)):
        raise RuntimeError(f"tensordot expects 0 <= dims <= ndim_a and ndim_b, but got dims={dims}")
    if isinstance(dims, int):
        da = list(range(len(a._shape) - dims, len(a._shape)))
        db = list(range(dims))
    else:
        da, db = (list(d) if isinstance(d, (list, tuple)) else [d] for d in dims)
    da = [_shape.normalize_dim(d, len(a._shape), "tensordot") for d in da]
    db = [_shape.normalize_dim(d, len(b._shape), "tensordot") for d in db]
    free_a = [d for d in range(len(a._shape)) if d not in da]
    free_b = [d for d in range(len(b._shape)) if d not in db]
    ka = 1
    for d in da:
        ka *= a._shape[d]
    a2 = a.permute(*free_a, *da).reshape(-1, ka)
    b2 = b.permute(*db, *free_b).reshape(ka, -1)
    out_shape = [a._shape[d] for d in free_a] + [b._shape[d] for d in free_b]
    return matmul(a2, b2).reshape(out_shape)


# ------------------------------------------------------------------ einsum

# Subscript labels in PyTorch's order (upper case first); the dims an ellipsis
# stands for get labels after these, right-aligned across operands.
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_LABEL = {c: i for i, c in enumerate(_LETTERS)}
_ELLIPSIS = -1


def _einsum_term(term, where):
    """Labels of one term ('ab...c'), with _ELLIPSIS standing for '...'."""
    labels, i = [], 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i : i + 3] != "..." or _ELLIPSIS in labels:
                raise RuntimeError(
                    f"einsum(): found '.' for {where} that is not part of any ellipsis"
                )
            labels.append(_ELLIPSIS)
            i += 3
            continue
        if c not in _LABEL:
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {i} of {where} in the equation "
                f"string, subscripts must be in [a-zA-Z]"
            )
        labels.append(_LABEL[c])
        i += 1
    return labels


def _einsum_sublist(args):
    """einsum(op0, sublist0, op1, sublist1, ..., [out]) as (equation, operands)."""

    def term(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < len(_LETTERS):
                out.append(_LETTERS[s])
            else:
                raise RuntimeError(
                    "einsum(): subscript in subscript list is not within the valid range "
                    f"[0, 52), got {s!r}"
                )
        return "".join(out)

    operands = list(args[0::2])
    terms = [term(s) for s in args[1::2]]
    eq = ",".join(terms[: len(operands)])
    if len(args) % 2:
        eq += "->" + term(args[-1])
        operands = operands[:-1]
    return eq, operands


def _einsum_plan(equation, operands):
    """Each operand's labels (ellipses expanded) and the output's labels."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        more = "more" if len(operands) > len(terms) else "fewer"
        raise RuntimeError(
            f"einsum(): {more} operands were provided than specified in the equation "
            f"({len(operands)} tensors for {len(terms)} terms of '{equation}')"
        )
    parsed = [_einsum_term(t, f"operand {k}") for k, t in enumerate(terms)]
    ell_dims = []
    for k, (labels, x) in enumerate(zip(parsed, operands)):
        named = len(labels) - (1 if _ELLIPSIS in labels else 0)
        nd = len(x._shape)
        if _ELLIPSIS in labels:
            if nd < named:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({named}) is more than "
                    f"the number of dimensions ({nd}) for operand {k}"
                )
            ell_dims.append(nd - named)
        else:
            if nd != named:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({named}) does not match "
                    f"the number of dimensions ({nd}) for operand {k} and no ellipsis was given"
                )
            ell_dims.append(0)
    n_ell = max(ell_dims, default=0)
    ell_labels = [len(_LETTERS) + j for j in range(n_ell)]

    def expand(labels, e):
        out = []
        for lab in labels:
            out.extend(ell_labels[n_ell - e :] if lab == _ELLIPSIS else [lab])
        return out

    op_labels = [expand(lbl, e) for lbl, e in zip(parsed, ell_dims)]
    if arrow:
        out_raw = _einsum_term(rhs, "the output")
        out = expand(out_raw, n_ell) if _ELLIPSIS in out_raw else out_raw
        seen = set()
        for lab in out:
            if lab in seen:
                raise RuntimeError(
                    f"einsum(): output subscript {_LETTERS[lab]} appears more than once in the "
                    "output"
                )
            seen.add(lab)
            if not any(lab in lbl for lbl in op_labels):
                raise RuntimeError(
                    f"einsum(): output subscript {_LETTERS[lab]} does not appear in the equation "
                    "for any input operand"
                )
    else:
        counts = {}
        for lbl in parsed:
            for lab in lbl:
                if lab != _ELLIPSIS:
                    counts[lab] = counts.get(lab, 0) + 1
        out = ell_labels + sorted(lab for lab, c in counts.items() if c == 1)
    return op_labels, out


def _einsum_name(lab):
    return _LETTERS[lab] if lab < len(_LETTERS) else "..."


def _einsum_diagonals(x, labels, k):
    """Take the diagonal of every label repeated within one operand ('ii')."""
    labels = list(labels)
    while len(set(labels)) != len(labels):
        for p1, lab in enumerate(labels):
            if lab in labels[p1 + 1 :]:
                p2 = labels.index(lab, p1 + 1)
                if x._shape[p1] != x._shape[p2]:
                    raise RuntimeError(
                        f"einsum(): subscript {_einsum_name(lab)} is repeated for operand {k} but "
                        f"the sizes don't match, {x._shape[p2]} != {x._shape[p1]}"
                    )
                x = x.diagonal(0, p1, p2)
                labels = [lb for i, lb in enumerate(labels) if i not in (p1, p2)] + [lab]
                break
    return x, labels


def _einsum_contract(a, la, b, lb, keep):
    """Multiply two operands, summing the labels they share that are not in
    ``keep``, as one batched matrix product: (batch, a-only, shared) @ (batch,
    shared, b-only)."""
    batch = [lab for lab in la if lab in lb and lab in keep]
    shared = [lab for lab in la if lab in lb and lab not in keep]
    a_only = [lab for lab in la if lab not in lb]
    b_only = [lab for lab in lb if lab not in la]
    size = dict(zip(la, a._shape))
    size.update(zip(lb, b._shape))

    def numel(labels):
        n = 1
        for lab in labels:
            n *= size[lab]
        return n

    nb, nm, nk, nn = numel(batch), numel(a_only), numel(shared), numel(b_only)
    a3 = a.permute(*[la.index(lab) for lab in batch + a_only + shared]).reshape(nb, nm, nk)
    b3 = b.permute(*[lb.index(lab) for lab in batch + shared + b_only]).reshape(nb, nk, nn)
    r = bmm(a3, b3).reshape([size[lab] for lab in batch + a_only + b_only])
    return r, batch + a_only + b_only


@defop("einsum(equation, *operands)", method=False, composite=True)
def einsum(equation, *operands):
    """Sums of products of operands' elements, as described by Einstein
    summation notation ('ij,jk->ik' is a matrix product).  Labels repeated in
    one operand take its diagonal, size-1 dims broadcast, '...' stands for the
    remaining dims.  Computed with permute/reshape and batched matrix products.

    >>> import ember_core as ec
    >>> ec.einsum('ij,j->i', ec.ones(2, 3), ec.arange(3.0)).tolist()
    [3.0, 3.0]
    """

    if isinstance(equation, Tensor):
        equation, operands = _einsum_sublist((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): equation must be a str, got {type(equation).__name__}")
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for k, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): operand {k} must be a Tensor, not {type(x).__name__}")
        if x._dtype is not operands[0]._dtype:
            raise RuntimeError(
                f"einsum(): operands must have the same dtype, got {operands[0]._dtype} "
                f"(operand 0) and {x._dtype} (operand {k})"
            )
    check_device("einsum", *operands)
    op_labels, out = _einsum_plan(equation, operands)
    xs = []
    for k, (x, labels) in enumerate(zip(operands, op_labels)):
        x, labels = _einsum_diagonals(x, labels, k)
        xs.append([x, labels])
    # each label's size; a size-1 dim broadcasts against the others
    size = {}
    for k, (x, labels) in enumerate(xs):
        for lab, s in zip(labels, x._shape):
            prev = size.get(lab, 1)
            if s != 1 and prev != 1 and s != prev:
                raise RuntimeError(
                    f"einsum(): subscript {_einsum_name(lab)} has size {s} for operand {k} which "
                    f"does not broadcast with previously seen size {prev}"
                )
            size[lab] = max(prev, s) if s != 1 else prev
    # drop broadcast size-1 dims: such an operand is constant along the label
    for item in xs:
        x, labels = item
        drop = [p for p, lab in enumerate(labels) if x._shape[p] == 1 and size[lab] != 1]
        if drop:
            item[0] = x.squeeze(tuple(drop))
            item[1] = [lab for p, lab in enumerate(labels) if p not in drop]
    # sum labels that only one operand has and the output lacks
    for k, item in enumerate(xs):
        x, labels = item
        others = set(out)
        for j, (_, lb) in enumerate(xs):
            if j != k:
                others.update(lb)
        lonely = [p for p, lab in enumerate(labels) if lab not in others]
        if lonely:
            item[0] = _sum(x, tuple(lonely), dtype=x._dtype)
            item[1] = [lab for p, lab in enumerate(labels) if p not in lonely]
    r, lr = xs[0]
    for k in range(1, len(xs)):
        keep = set(out)
        for _, lb in xs[k + 1 :]:
            keep.update(lb)
        r, lr = _einsum_contract(r, lr, xs[k][0], xs[k][1], keep)
    extra = [p for p, lab in enumerate(lr) if lab not in out]
    if extra:
        r = _sum(r, tuple(extra), dtype=r._dtype)
        lr = [lab for p, lab in enumerate(lr) if p not in extra]
    # labels of the output that every operand broadcast (size 1 everywhere)
    for lab in out:
        if lab not in lr:
            r = r.unsqueeze(-1)
            lr = lr + [lab]
    return r.permute(*[lr.index(lab) for lab in out])


# ------------------------------------------- more products, written with the above


@defop(composite=True, autocast="lower_precision_fp")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * sum_i batch1[i] @ batch2[i] (one matrix product)."""
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError(
            f"batch1 and batch2 must be 3D tensors, got {batch1.dim()}D and {batch2.dim()}D"
        )
    b, n, m = batch1.shape
    if batch2.shape[0] != b or batch2.shape[1] != m:
        raise RuntimeError(
            f"addbmm: batch1 {list(batch1.shape)} and batch2 {list(batch2.shape)} do not "
            "multiply (expected equal batch sizes and batch1.size(2) == batch2.size(1))"
        )
    p = batch2.shape[2]
    # the sum over the batch of products is one (n, b*m) x (b*m, p) product
    left = batch1.permute(1, 0, 2).reshape(n, b * m)
    right = batch2.reshape(b * m, p)
    r = addmm(input, left, right, beta=beta, alpha=alpha)
    return out.copy_(r) if out is not None else r


@defop(composite=True, inplace_of="addbmm")
def addbmm_(input, batch1, batch2, *, beta=1, alpha=1):
    return input.copy_(addbmm(input, batch1, batch2, beta=beta, alpha=alpha))


@defop(composite=True)
def cross(input, other, dim=None, *, out=None):
    """Cross product of 3-vectors along dim (default: the first dim of size 3)."""
    if input.dim() != other.dim():
        raise RuntimeError(
            f"linalg.cross: inputs must have the same number of dimensions, got {input.dim()} "
            f"and {other.dim()}"
        )
    shape = _broadcast_shape(input, other)
    a, b = _broadcast_to(input, shape), _broadcast_to(other, shape)
    if dim is None:
        sizes = list(a.shape)
        if 3 not in sizes:
            raise RuntimeError(
                f"no dimension of size 3 in input (shapes {list(input.shape)} "
                f"and {list(other.shape)})"
            )
        d = sizes.index(3)
    else:
        d = normalize_dim(dim, a.dim(), "cross")
        if a.shape[d] != 3:
            raise RuntimeError(
                f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} "
                f"and {other.shape[d]}"
            )
    a0, a1, a2 = (a.select(d, i) for i in range(3))
    b0, b1, b2 = (b.select(d, i) for i in range(3))
    r = _stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)
    return out.copy_(r) if out is not None else r


def _broadcast_shape(a, b):
    return _shape.broadcast_shapes(tuple(a.shape), tuple(b.shape), op="cross")


@defop(method=False, composite=True)
def chain_matmul(*matrices, out=None):
    """Deprecated: the product of the matrices, left to right."""
    warnings.warn(
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
        "Use torch.linalg.multi_dot instead, which accepts a list of two or more tensors "
        "rather than multiple parameters.",
        UserWarning,
        stacklevel=2,
    )
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    r = matrices[0].clone() if len(matrices) == 1 else functools.reduce(mm, matrices)
    return out.copy_(r) if out is not None else r


@defop(method=False, composite=True)
def bilinear(input1, input2, weight, bias=None):
    """y_k = x1^T W_k x2 + b_k."""
    out = einsum("...i,kij,...j->...k", input1, weight, input2)
    return out + bias if bias is not None else out


# ------------------------------------------------ float32 matmul precision
# PyTorch's switch for TF32 in float32 matmuls.  On CUDA 'high' and 'medium' let
# float32 products use TF32 (``ember.backends.cuda.matmul.allow_tf32``, which
# this sets, as PyTorch does); CPU float32 products always run in full float32.

_matmul_precision = ["highest"]


def set_float32_matmul_precision(precision):
    """'highest', 'high' or 'medium' (TF32 on CUDA for the last two)."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(
            f"Invalid precision {precision!r}: expected 'highest', 'high' or 'medium'"
        )
    _matmul_precision[0] = precision
    _cuda_blas.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision():
    # allow_tf32 set directly counts too (PyTorch keeps the two in step)
    tf32 = _cuda_blas.matmul.allow_tf32
    if tf32 == (_matmul_precision[0] != "highest"):
        return _matmul_precision[0]
    return "high" if tf32 else "highest"
