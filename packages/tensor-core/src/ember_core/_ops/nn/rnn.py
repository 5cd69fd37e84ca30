"""Recurrent cells: lstm_cell and gru_cell (torch's signatures) as one fused op
each way (csrc/cpu/nn/rnn.c: gate GEMMs through BLAS, gate nonlinearities and the
state update in one pass), and the plain RNN cells as compositions."""

from ember_core._base.dispatch import defop
from ember_core._base.lib import check
from ember_core._ops.linalg.products import addmm, matmul
from ember_core._ops.nn import nnutil as U
from ember_core._tensor.tensor import Tensor, empty


def _rows(t, kd):
    """t (2-D) in dtype kd with a unit column stride: (tensor, row stride)."""
    if t._dtype is not kd or (t._stride[1] != 1 and t._shape[1] > 1):
        t = U.compute(t, kd)
    return t, t._stride[0] if t._shape[0] > 1 else t._shape[1]


def _check_cell(op, input, hx, w_ih, w_hh, b_ih, b_hh, gates, cx=None):
    for t, name in ((input, "input"), (hx, "hx"), (w_ih, "w_ih"), (w_hh, "w_hh")):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if input.dim() != 2 or hx.dim() != 2 or w_ih.dim() != 2 or w_hh.dim() != 2:
        raise RuntimeError(
            f"{op}: expected 2-D input, hidden state and weights, got input {list(input.shape)}, "
            f"hx {list(hx.shape)}, w_ih {list(w_ih.shape)}, w_hh {list(w_hh.shape)}"
        )
    h = w_hh.shape[1]
    if w_ih.shape[0] != gates * h or w_hh.shape[0] != gates * h:
        raise RuntimeError(
            f"{op}: weights of shape {list(w_ih.shape)} and {list(w_hh.shape)} do not hold "
            f"{gates} gates of hidden size {h}"
        )
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(
            f"input has inconsistent input_size: got {input.shape[1]} expected {w_ih.shape[1]}"
        )
    states = [(hx, "hidden0")] + ([(cx, "hidden1")] if cx is not None else [])
    for s, name in states:
        if s.shape[0] != input.shape[0]:
            raise RuntimeError(
                f"Input batch size {input.shape[0]} doesn't match {name} batch size {s.shape[0]}"
            )
        if s.shape[1] != h:
            raise RuntimeError(
                f"{name} has inconsistent hidden_size: got {s.shape[1]}, expected {h}"
            )
    for b, name in ((b_ih, "b_ih"), (b_hh, "b_hh")):
        if b is not None and b._numel != gates * h:
            raise RuntimeError(f"{op}: {name} must have {gates * h} elements, got {b._numel}")
    dt = input.dtype
    for t in (hx, cx, w_ih, w_hh, b_ih, b_hh):
        if t is not None and t.dtype is not dt:
            raise RuntimeError(
                f"{op}: expected all tensors to have dtype {dt.name}, got {t.dtype.name}"
            )
    if not dt.is_floating_point:
        raise RuntimeError(f"{op}: expected floating point tensors, got {dt.name}")
    return input.shape[0], input.shape[1], h


@defop(method=False)
def _lstm_cell(input, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None):
    """(hy, cy, workspace): one LSTM step; workspace holds the activated gates
    for the backward."""
    b, i, h = _check_cell("lstm_cell", input, hx, w_ih, w_hh, b_ih, b_hh, 4, cx)
    kd = U.kernel_dtype(input._dtype)
    x, x_rs = _rows(input, kd)
    hh, h_rs = _rows(hx, kd)
    cc, c_rs = _rows(cx, kd)
    wi, wi_rs = _rows(w_ih, kd)
    wh, wh_rs = _rows(w_hh, kd)
    bi = None if b_ih is None else U.compute(b_ih, kd)
    bh = None if b_hh is None else U.compute(b_hh, kd)
    dev = x._storage._device
    hy, cy = empty((b, h), kd, dev), empty((b, h), kd, dev)
    ws = empty((b, 4 * h), kd, dev)
    check(
        U.gemm_fn("ec_lstm_cell", b * 4 * h * (i + h) * kd.itemsize, hy._storage._device)(
            kd.code,
            b,
            i,
            h,
            hy._ptr,
            cy._ptr,
            ws._ptr,
            x._ptr,
            x_rs,
            hh._ptr,
            h_rs,
            cc._ptr,
            c_rs,
            wi._ptr,
            wi_rs,
            wh._ptr,
            wh_rs,
            U.ptr(bi),
            U.ptr(bh),
        ),
        "lstm_cell",
    )
    return U.restore(hy, input._dtype), U.restore(cy, input._dtype), ws


@defop(method=False, composite=True)
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: hx = (h, c); returns (h', c').  Gates i, f, g, o."""
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise RuntimeError("lstm_cell: hx must be a pair of tensors (h, c)")
    hy, cy, _ = _lstm_cell(input, hx[0], hx[1], w_ih, w_hh, b_ih, b_hh)
    return hy, cy


@defop(
    method=False,
    differentiable=False,
)
def _lstm_cell_backward(
    grad_hy, grad_cy, input, hx, cx, w_ih, w_hh, workspace, cy, output_mask, grad_gates=None
):
    """(grad_input, grad_hx, grad_cx, grad_w_ih, grad_w_hh, grad_bias) of one
    LSTM step; grad_bias is the gradient of b_ih and of b_hh alike.  grad_gates:
    a contiguous (batch, 4 * hidden) tensor of the workspace's dtype that
    receives the gates' gradient (a recurrent layer sums the weight gradients
    of all its steps in one product from them, Note [Fused recurrent layers])."""
    b, i = input.shape
    h = w_hh.shape[1]
    kd = workspace._dtype
    mx, mh, mc, mwi, mwh, mb = (tuple(output_mask) + (True,) * 6)[:6]
    x, x_rs = _rows(input, kd)
    hh, h_rs = _rows(hx, kd)
    cc, c_rs = _rows(cx, kd)
    wi, wi_rs = _rows(w_ih, kd)
    wh, wh_rs = _rows(w_hh, kd)
    dev = x._storage._device
    gx = empty((b, i), kd, dev) if mx else None
    gh = empty((b, h), kd, dev) if mh else None
    gc = empty((b, h), kd, dev) if mc else None
    gwi = empty((4 * h, i), kd, dev) if mwi else None
    gwh = empty((4 * h, h), kd, dev) if mwh else None
    gb = empty((4 * h,), kd, dev) if mb else None
    if grad_gates is None:
        dg = empty((b, 4 * h), kd, dev)
    else:
        dg = grad_gates
        if (
            tuple(dg._shape) != (b, 4 * h)
            or dg._dtype is not kd
            or dg._storage._device is not dev
            or not dg.is_contiguous()
        ):
            raise ValueError(
                f"_lstm_cell_backward: grad_gates must be a contiguous ({b}, {4 * h}) "
                f"{kd.name} tensor on {dev}, got {list(dg._shape)} {dg._dtype.name}"
            )
    ghy = None if grad_hy is None else U.compute(grad_hy, kd)
    gcy = None if grad_cy is None else U.compute(grad_cy, kd)
    check(
        U.gemm_fn("ec_lstm_cell_backward", b * 4 * h * (i + h) * kd.itemsize, dg._storage._device)(
            kd.code,
            b,
            i,
            h,
            U.ptr(gx),
            U.ptr(gh),
            U.ptr(gc),
            U.ptr(gwi),
            U.ptr(gwh),
            U.ptr(gb),
            dg._ptr,
            U.ptr(ghy),
            U.ptr(gcy),
            workspace._ptr,
            cc._ptr,
            c_rs,
            U.compute(cy, kd)._ptr,
            x._ptr,
            x_rs,
            hh._ptr,
            h_rs,
            wi._ptr,
            wi_rs,
            wh._ptr,
            wh_rs,
        ),
        "lstm_cell_backward",
    )
    dt = input._dtype
    return tuple(None if t is None else U.restore(t, dt) for t in (gx, gh, gc, gwi, gwh, gb))


@defop(method=False)
def _gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """(hy, workspace): one GRU step; workspace holds r, z, n and W_hn h + b_hn."""
    b, i, h = _check_cell("gru_cell", input, hx, w_ih, w_hh, b_ih, b_hh, 3)
    kd = U.kernel_dtype(input._dtype)
    x, x_rs = _rows(input, kd)
    hh, h_rs = _rows(hx, kd)
    wi, wi_rs = _rows(w_ih, kd)
    wh, wh_rs = _rows(w_hh, kd)
    bi = None if b_ih is None else U.compute(b_ih, kd)
    bh = None if b_hh is None else U.compute(b_hh, kd)
    dev = x._storage._device
    hy = empty((b, h), kd, dev)
    ws = empty((b, 4 * h), kd, dev)
    check(
        U.gemm_fn("ec_gru_cell", b * 3 * h * (i + h) * kd.itemsize, hy._storage._device)(
            kd.code,
            b,
            i,
            h,
            hy._ptr,
            ws._ptr,
            x._ptr,
            x_rs,
            hh._ptr,
            h_rs,
            wi._ptr,
            wi_rs,
            wh._ptr,
            wh_rs,
            U.ptr(bi),
            U.ptr(bh),
        ),
        "gru_cell",
    )
    return U.restore(hy, input._dtype), ws


@defop(method=False, composite=True)
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step; returns h'.  Gates r, z, n (PyTorch's order and formula:
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h)."""
    return _gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh)[0]


@defop(
    method=False,
    differentiable=False,
)
def _gru_cell_backward(grad_hy, input, hx, w_ih, w_hh, workspace, output_mask):
    """(grad_input, grad_hx, grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh) of one
    GRU step."""
    b, i = input.shape
    h = w_hh.shape[1]
    kd = workspace._dtype
    mx, mh, mwi, mwh, mbi, mbh = (tuple(output_mask) + (True,) * 6)[:6]
    x, x_rs = _rows(input, kd)
    hh, h_rs = _rows(hx, kd)
    wi, wi_rs = _rows(w_ih, kd)
    wh, wh_rs = _rows(w_hh, kd)
    dev = x._storage._device
    gx = empty((b, i), kd, dev) if mx else None
    gh = empty((b, h), kd, dev) if mh else None
    gwi = empty((3 * h, i), kd, dev) if mwi else None
    gwh = empty((3 * h, h), kd, dev) if mwh else None
    gbi = empty((3 * h,), kd, dev) if mbi else None
    gbh = empty((3 * h,), kd, dev) if mbh else None
    dg = empty((b, 6 * h), kd, dev)
    check(
        U.gemm_fn("ec_gru_cell_backward", b * 3 * h * (i + h) * kd.itemsize, dg._storage._device)(
            kd.code,
            b,
            i,
            h,
            U.ptr(gx),
            U.ptr(gh),
            U.ptr(gwi),
            U.ptr(gwh),
            U.ptr(gbi),
            U.ptr(gbh),
            dg._ptr,
            U.compute(grad_hy, kd)._ptr,
            workspace._ptr,
            x._ptr,
            x_rs,
            hh._ptr,
            h_rs,
            wi._ptr,
            wi_rs,
            wh._ptr,
            wh_rs,
        ),
        "gru_cell_backward",
    )
    dt = input._dtype
    return tuple(None if t is None else U.restore(t, dt) for t in (gx, gh, gwi, gwh, gbi, gbh))


def _linear2(input, hx, w_ih, w_hh, b_ih, b_hh):
    a = addmm(b_ih, input, w_ih.t()) if b_ih is not None else matmul(input, w_ih.t())
    c = addmm(b_hh, hx, w_hh.t()) if b_hh is not None else matmul(hx, w_hh.t())
    return a + c


@defop(method=False, composite=True)
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """tanh(input @ w_ih^T + b_ih + hx @ w_hh^T + b_hh)."""
    _check_cell("rnn_tanh_cell", input, hx, w_ih, w_hh, b_ih, b_hh, 1)
    return _linear2(input, hx, w_ih, w_hh, b_ih, b_hh).tanh()


@defop(method=False, composite=True)
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """relu(input @ w_ih^T + b_ih + hx @ w_hh^T + b_hh)."""
    _check_cell("rnn_relu_cell", input, hx, w_ih, w_hh, b_ih, b_hh, 1)
    return _linear2(input, hx, w_ih, w_hh, b_ih, b_hh).relu()
