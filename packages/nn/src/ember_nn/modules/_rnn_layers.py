"""One LSTM or GRU layer (one direction) over a whole sequence as a single
autograd node.

Note [Fused recurrent layers]
Recorded step by step, a 35-step LSTM layer is 35 cell nodes whose weight
gradients the engine sums one at a time, plus 35 indexing nodes for the steps'
inputs.  Here the forward runs the fused cell kernel (ember_core._lstm_cell)
step after step without recording, keeping each step's workspace; the backward
walks the steps in reverse through the fused cell-backward kernel and sums the
weight gradients in place.  The arithmetic is the cell's own, so results equal
the step-by-step recording (to rounding: the LSTM's backward keeps every step's
gates gradient and makes the input's gradient and the weights' and bias's from
all of them at once, one deep product each instead of one thin product per
step).  When the backward must itself be differentiable
(create_graph=True), it re-runs the layer step by step with recording on and
differentiates that instead, so higher derivatives stay exact."""

import ember_autograd as ag
import ember_core as ec


def _steps(n, reverse):
    return range(n - 1, -1, -1) if reverse else range(n)


def _differentiable_backward(fn, inputs, outputs_grads):
    """Gradients of fn(*inputs) (recorded step by step) for create_graph=True."""
    with ag.enable_grad():
        outs = fn(*inputs)
    wanted = [t for t in inputs if isinstance(t, ec.Tensor) and t.requires_grad]
    pairs = [(o, g) for o, g in zip(outs, outputs_grads) if g is not None]
    grads = iter(
        ag.grad(
            [o for o, _ in pairs],
            wanted,
            [g for _, g in pairs],
            create_graph=True,
            allow_unused=True,
        )
    )
    return tuple(
        next(grads) if isinstance(t, ec.Tensor) and t.requires_grad else None for t in inputs
    )


def _lstm_steps(x, h, c, w_ih, w_hh, b_ih, b_hh, reverse):
    n = x.shape[0]
    hs = [None] * n
    for t in _steps(n, reverse):
        h, c = ec.lstm_cell(x[t], (h, c), w_ih, w_hh, b_ih, b_hh)
        hs[t] = h
    return ec.stack(hs, 0), h, c


def _gru_steps(x, h, w_ih, w_hh, b_ih, b_hh, reverse):
    n = x.shape[0]
    hs = [None] * n
    for t in _steps(n, reverse):
        h = ec.gru_cell(x[t], h, w_ih, w_hh, b_ih, b_hh)
        hs[t] = h
    return ec.stack(hs, 0), h


def _acc(total, part):
    if part is None:
        return total
    return part if total is None else total.add_(part)


class LSTMLayer(ag.Function):
    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse):
        xs = x.unbind(0)
        n = len(xs)
        hs, saved = [None] * n, [None] * n
        h, c = h0, c0
        for t in _steps(n, reverse):
            hy, cy, ws = ec._lstm_cell(xs[t], h, c, w_ih, w_hh, b_ih, b_hh)
            saved[t] = (h, c, ws, cy)
            hs[t] = h = hy
            c = cy
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, b_ih, b_hh)
        ctx.steps, ctx.xs, ctx.reverse, ctx.has_bias = saved, xs, reverse, b_ih is not None
        out = ec.stack(hs, 0) if n else ec.zeros((0,) + tuple(h0.shape), dtype=h0.dtype)
        return out, h, c

    @staticmethod
    def backward(ctx, g_out, g_hn, g_cn):
        x, h0, c0, w_ih, w_hh, b_ih, b_hh = ctx.saved_tensors
        if ag.is_grad_enabled():  # create_graph=True
            grads = _differentiable_backward(
                lambda *a: _lstm_steps(*a, ctx.reverse),
                (x, h0, c0, w_ih, w_hh, b_ih, b_hh),
                (g_out, g_hn, g_cn),
            )
            return grads + (None,)
        need = ctx.needs_input_grad
        mask = (need[0], True, True, need[3], need[4], ctx.has_bias and (need[5] or need[6]))
        n = len(ctx.steps)
        if n and ctx.steps[0][2].dtype == x.dtype:  # the kernels' own dtype (not half)
            return _lstm_backward_all_steps(ctx, x, w_ih, w_hh, g_out, g_hn, g_cn, mask)
        gxs = [None] * n
        gh, gc = g_hn, g_cn
        gwi = gwh = gb = None
        for t in _steps(n, not ctx.reverse):
            h_prev, c_prev, ws, cy = ctx.steps[t]
            ghy = g_out[t] if gh is None else g_out[t] + gh
            gx, gh, gc, gwi_t, gwh_t, gb_t = ec._lstm_cell_backward(
                ghy, gc, ctx.xs[t], h_prev, c_prev, w_ih, w_hh, ws, cy, mask
            )
            gxs[t] = gx
            gwi, gwh, gb = _acc(gwi, gwi_t), _acc(gwh, gwh_t), _acc(gb, gb_t)
        gx = ec.stack(gxs, 0) if need[0] and n else None
        # b_ih and b_hh enter the gates the same way: equal gradients (separate tensors)
        gbi = gb if need[5] else None
        gbh = (gb.clone() if need[5] else gb) if need[6] and gb is not None else None
        return gx, gh, gc, gwi, gwh, gbi, gbh, None


def _lstm_backward_all_steps(ctx, x, w_ih, w_hh, g_out, g_hn, g_cn, mask):
    """LSTMLayer.backward with the gates' gradients of every step kept: the
    steps run only what the recurrence needs (the gradients of h and c), then
    one product each gives the input's gradient and the weights' (sums over
    every step's rows), and one column sum the bias's."""
    n, b, i = x.shape
    g4 = w_hh.shape[0]
    need = ctx.needs_input_grad
    dgs = ec.empty((n, b, g4), dtype=x.dtype, device=x.device)
    step_mask = (False, True, True, False, False, False)
    gh, gc = g_hn, g_cn
    for t in _steps(n, not ctx.reverse):
        h_prev, c_prev, ws, cy = ctx.steps[t]
        ghy = g_out[t] if gh is None else g_out[t] + gh
        _, gh, gc, _, _, _ = ec._lstm_cell_backward(
            ghy, gc, ctx.xs[t], h_prev, c_prev, w_ih, w_hh, ws, cy, step_mask, dgs[t]
        )
    dg = dgs.view(n * b, g4)
    gx = (dg @ w_ih).view(n, b, i) if mask[0] else None
    gwi = dg.t() @ x.reshape(n * b, i) if mask[3] else None
    gwh = None
    if mask[4]:
        h_prevs = ec.stack([ctx.steps[t][0] for t in range(n)], 0)
        gwh = dg.t() @ h_prevs.view(n * b, -1)
    gb = dg.sum(0) if mask[5] else None
    # b_ih and b_hh enter the gates the same way: equal gradients (separate tensors)
    gbi = gb if need[5] else None
    gbh = (gb.clone() if need[5] else gb) if need[6] and gb is not None else None
    return gx, gh, gc, gwi, gwh, gbi, gbh, None


class GRULayer(ag.Function):
    @staticmethod
    def forward(ctx, x, h0, w_ih, w_hh, b_ih, b_hh, reverse):
        xs = x.unbind(0)
        n = len(xs)
        hs, saved = [None] * n, [None] * n
        h = h0
        for t in _steps(n, reverse):
            hy, ws = ec._gru_cell(xs[t], h, w_ih, w_hh, b_ih, b_hh)
            saved[t] = (h, ws)
            hs[t] = h = hy
        ctx.save_for_backward(x, h0, w_ih, w_hh, b_ih, b_hh)
        ctx.steps, ctx.xs, ctx.reverse, ctx.has_bias = saved, xs, reverse, b_ih is not None
        out = ec.stack(hs, 0) if n else ec.zeros((0,) + tuple(h0.shape), dtype=h0.dtype)
        return out, h

    @staticmethod
    def backward(ctx, g_out, g_hn):
        x, h0, w_ih, w_hh, b_ih, b_hh = ctx.saved_tensors
        if ag.is_grad_enabled():  # create_graph=True
            grads = _differentiable_backward(
                lambda *a: _gru_steps(*a, ctx.reverse),
                (x, h0, w_ih, w_hh, b_ih, b_hh),
                (g_out, g_hn),
            )
            return grads + (None,)
        need = ctx.needs_input_grad
        bias = ctx.has_bias
        mask = (need[0], True, need[2], need[3], bias and need[4], bias and need[5])
        n = len(ctx.steps)
        gxs = [None] * n
        gh = g_hn
        gwi = gwh = gbi = gbh = None
        for t in _steps(n, not ctx.reverse):
            h_prev, ws = ctx.steps[t]
            ghy = g_out[t] if gh is None else g_out[t] + gh
            gx, gh, gwi_t, gwh_t, gbi_t, gbh_t = ec._gru_cell_backward(
                ghy, ctx.xs[t], h_prev, w_ih, w_hh, ws, mask
            )
            gxs[t] = gx
            gwi, gwh = _acc(gwi, gwi_t), _acc(gwh, gwh_t)
            gbi, gbh = _acc(gbi, gbi_t), _acc(gbh, gbh_t)
        gx = ec.stack(gxs, 0) if need[0] and n else None
        return gx, gh, gwi, gwh, gbi, gbh, None
