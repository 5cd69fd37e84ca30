"""Backward formulas of the sampling ops of ember_core (_sampling: grid_sampler
and the CTC loss), registered into the same table as _derivatives.py.
affine_grid_generator and max_unpool are composites and need none.  As in
PyTorch, the backward ops are not differentiable again."""

import ember_core as ec
from ember_autograd._formula import derivative


@derivative("grid_sampler", inputs=("input", "grid"))
def _(grad, input, grid, interpolation_mode, padding_mode, align_corners, needs):
    gx, gg = ec._grid_sampler_backward(
        grad, input, grid, interpolation_mode, padding_mode, align_corners, needs
    )
    return (gx if needs[0] else None), (gg if needs[1] else None)


@derivative("_ctc_loss", inputs=("log_probs",), outputs=(0,))
def _(grad, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, result):
    return ec._ctc_loss_backward(
        grad,
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        result[0],
        result[1],
        blank,
        zero_infinity,
    )
