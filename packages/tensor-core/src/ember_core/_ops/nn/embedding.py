"""Embedding lookups (torch.embedding, torch.embedding_bag, embedding_renorm_,
one_hot) with a scatter-add backward (csrc/cpu/nn/embedding.c).

torch.nn.functional.embedding / embedding_bag (argument normalisation,
max_norm, 2-D bags) live in ember_nn.functional and call these."""

from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._ops.nn import nnutil as U
from ember_core._tensor import dtype as D
from ember_core._tensor.creation import arange
from ember_core._tensor.tensor import Tensor, empty, written

_MODES = {"sum": 0, "mean": 1, "max": 2, 0: 0, 1: 1, 2: 2}


def _indices(op, indices):
    if not isinstance(indices, Tensor):
        raise TypeError(f"{op}(): argument 'indices' must be Tensor, not {type(indices).__name__}")
    if indices._dtype not in (D.int64, D.int32):
        raise RuntimeError(
            f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {indices._dtype.name} instead (while checking arguments for {op})"
        )
    return U.compute(indices, indices._dtype)


def _table(op, weight):
    """weight as (table, row stride) with unit column stride."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"{op}(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    if len(weight._shape) != 2:
        raise RuntimeError(f"'weight' must be 2-D, got a tensor of shape {list(weight._shape)}")
    if weight._stride[1] != 1 and weight._shape[1] > 1:
        weight = weight.contiguous()
    return weight, weight._stride[0]


@defop(
    method=False,
)
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at ``indices``: shape indices.shape + (embedding_dim,).
    The row ``padding_idx`` (if >= 0) gets no gradient; ``sparse`` gradients are
    returned dense (ember has no sparse tensors)."""
    idx = _indices("embedding", indices)
    w, w_rs = _table("embedding", weight)
    num, dim = w._shape
    out = empty(tuple(indices._shape) + (dim,), w._dtype, w._storage._device)
    check(
        U.fn("ec_embedding", out._numel * w._dtype.itemsize, out._storage._device)(
            w._dtype.code,
            num,
            dim,
            out._ptr,
            w._ptr,
            w_rs,
            idx._ptr,
            idx._dtype is D.int32,
            idx._numel,
        ),
        "embedding",
    )
    return out


@defop(
    method=False,
)
def _embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    """Scatter-add of grad_output's rows into a (num_weights, dim) gradient."""
    idx = _indices("embedding_backward", indices)
    dim = grad_output._shape[-1] if grad_output._shape else 1
    kd = U.kernel_dtype(grad_output._dtype)
    g = U.compute(grad_output, kd)
    if g._numel != idx._numel * dim:
        raise RuntimeError(
            f"embedding_backward: grad_output of shape {list(grad_output._shape)} does not match "
            f"indices of shape {list(indices._shape)}"
        )
    gw = empty((num_weights, dim), kd, g._storage._device)
    check(
        U.fn(
            "ec_embedding_backward",
            (num_weights + idx._numel) * dim * kd.itemsize,
            gw._storage._device,
        )(
            kd.code,
            num_weights,
            dim,
            gw._ptr,
            g._ptr,
            idx._ptr,
            idx._dtype is D.int32,
            idx._numel,
            int(padding_idx),
            bool(scale_grad_by_freq),
        ),
        "embedding_backward",
    )
    return U.restore(gw, grad_output._dtype)


@defop(method=False, differentiable=False, tags=("unchecked-overlap",))
def embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rescale in place every row referenced by ``indices`` whose norm_type-norm
    exceeds max_norm to norm max_norm (each row once)."""

    idx = _indices("embedding_renorm_", indices)
    w, w_rs = _table("embedding_renorm_", weight)
    if w is not weight:
        raise RuntimeError("embedding_renorm_: weight must have a unit column stride")
    written(weight, "embedding_renorm_")
    num, dim = w._shape
    check(
        U.fn("ec_embedding_renorm", idx._numel * dim * w._dtype.itemsize, w._storage._device)(
            w._dtype.code,
            num,
            dim,
            w._ptr,
            w_rs,
            idx._ptr,
            idx._dtype is D.int32,
            idx._numel,
            float(max_norm),
            float(norm_type),
        ),
        "embedding_renorm_",
    )
    return weight


@defop(
    method=False,
)
def embedding_bag(
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """Sums, means or maxima of bags of embedding rows: bag b takes
    indices[offsets[b]:offsets[b+1]].  Returns (output, offset2bag, bag_size,
    max_indices) like torch.embedding_bag; mode 0/1/2 = sum/mean/max."""
    try:
        m = _MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(
            f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}"
        ) from None
    w, w_rs = _table("embedding_bag", weight)
    num, dim = w._shape
    if not w._dtype.is_floating_point:
        raise RuntimeError(f"embedding_bag: expected a floating point weight, got {w._dtype.name}")
    idx = _indices("embedding_bag", indices).reshape(-1)
    idx = U.compute(idx, D.int64)
    if not isinstance(offsets, Tensor) or len(offsets._shape) != 1:
        raise ValueError("embedding_bag: offsets has to be a 1D Tensor")
    off = U.compute(offsets, D.int64)
    bags = off._numel - 1 if include_last_offset else off._numel
    if bags < 0:
        raise ValueError(
            "embedding_bag: offsets must hold at least one element with include_last_offset"
        )
    n = idx._numel
    if include_last_offset and off._numel:
        n = min(n, int(off[-1].item()))  # the extra offset ends the last bag
    kd = U.kernel_dtype(w._dtype)
    tw = w if w._dtype is kd else U.compute(w, kd)
    if tw is not w:
        w_rs = tw._stride[0]
    psw = None
    if per_sample_weights is not None:
        if m != 0:
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{['sum', 'mean', 'max'][m]}')."
            )
        if per_sample_weights._shape != indices._shape and per_sample_weights._numel != idx._numel:
            raise ValueError("embedding_bag: per_sample_weights must have the same shape as input")
        psw = U.compute(per_sample_weights, kd)
    pad = -1
    if padding_idx is not None:
        pad = int(padding_idx)
        if not -num <= pad < num:
            raise RuntimeError(
                f"padding_idx must be within the number of embeddings, {-num} through {num - 1}, "
                f"but got {pad}"
            )
        pad = pad + num if pad < 0 else pad
    dev = w._storage._device
    out = empty((bags, dim), kd, dev)
    o2b = empty((idx._numel,), D.int64, dev)
    bag_size = empty((bags,), D.int64, dev)
    max_idx = empty((bags, dim) if m == 2 else (bags,), D.int64, dev)
    check(
        U.fn("ec_embedding_bag", idx._numel * dim * kd.itemsize, out._storage._device)(
            kd.code,
            num,
            dim,
            m,
            out._ptr,
            o2b._ptr,
            bag_size._ptr,
            max_idx._ptr if m == 2 else 0,
            tw._ptr,
            w_rs,
            idx._ptr,
            n,
            off._ptr,
            bags,
            U.ptr(psw),
            pad,
        ),
        "embedding_bag",
    )
    if m != 2:
        max_idx = bag_size.clone()  # PyTorch returns bag_size here outside max mode
    return U.restore(out, weight._dtype), o2b, bag_size, max_idx


@defop(
    method=False,
    differentiable=False,
)
def _embedding_bag_backward(
    grad,
    weight,
    indices,
    offset2bag,
    bag_size,
    max_indices,
    mode,
    per_sample_weights,
    padding_idx,
    scale_grad_by_freq,
    output_mask,
):
    """(grad_weight, grad_per_sample_weights) of embedding_bag's output."""
    m = _MODES[mode]
    w, w_rs = _table("embedding_bag_backward", weight)
    num, dim = w._shape
    kd = U.kernel_dtype(w._dtype)
    tw = w if w._dtype is kd else U.compute(w, kd)
    if tw is not w:
        w_rs = tw._stride[0]
    idx = U.compute(indices.reshape(-1), D.int64)
    g = U.compute(grad, kd)
    bags = g._shape[0]
    psw = None if per_sample_weights is None else U.compute(per_sample_weights, kd)
    want_w, want_psw = (tuple(output_mask) + (True, True))[:2]
    dev = w._storage._device
    gw = empty((num, dim), kd, dev)
    gp = empty(per_sample_weights._shape, kd, dev) if (want_psw and psw is not None) else None
    pad = -1 if padding_idx is None else int(padding_idx)
    mi = U.compute(max_indices, D.int64) if m == 2 else None
    check(
        U.fn(
            "ec_embedding_bag_backward", (num + idx._numel) * dim * kd.itemsize, gw._storage._device
        )(
            kd.code,
            num,
            dim,
            m,
            gw._ptr,
            U.ptr(gp),
            g._ptr,
            tw._ptr,
            w_rs,
            idx._ptr,
            idx._numel,
            U.compute(offset2bag, D.int64)._ptr,
            U.compute(bag_size, D.int64)._ptr,
            U.ptr(mi),
            bags,
            U.ptr(psw),
            pad,
            bool(scale_grad_by_freq),
        ),
        "embedding_bag_backward",
    )
    return (
        U.restore(gw, weight._dtype) if want_w else None,
        None if gp is None else U.restore(gp, per_sample_weights._dtype),
    )


@defop(method=False, differentiable=False)
def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding: shape tensor.shape + (num_classes,); -1 infers
    max + 1."""
    if not isinstance(tensor, Tensor) or tensor._dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor._numel:
        lo, hi = int(tensor.min().item()), int(tensor.max().item())
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes == -1:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")

    classes = arange(num_classes, device=tensor._storage._device)
    return (tensor.unsqueeze(-1) == classes).to(D.int64)
