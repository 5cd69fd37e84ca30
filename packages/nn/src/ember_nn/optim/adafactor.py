"""Adafactor (Shazeer & Stern, 2018) as torch.optim.Adafactor: second moments of
matrices kept as row and column means (O(n + m) memory instead of O(n m)), a
relative step size, and update clipping; per-tensor ember ops, operation for
operation as PyTorch's single-tensor algorithm."""

from __future__ import annotations

import math

import numpy as np

import ember_core as ec
from ember_core import Tensor
from ember_nn.optim._typing import ParamsT
from ember_nn.optim.optimizer import Optimizer, grads_of, step_tensor


def _eps_of(dtype):
    return (
        float(np.finfo(np.float64 if dtype == ec.float64 else np.float32).eps)
        if (dtype in (ec.float32, ec.float64))
        else float(np.finfo(np.float16).eps)
        if dtype == ec.float16
        else 0.0078125
    )


class Adafactor(Optimizer):
    """Adafactor: lr is the maximal relative step (the step is
    min(lr, 1/sqrt(t)) times the parameter's RMS, at least eps[1]).

    >>> opt = Adafactor(model.parameters(), lr=1e-2)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        if isinstance(lr, ec.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not lr >= 0.0:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not beta2_decay <= 0.0:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not eps[0] >= 0.0:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not eps[1] >= 0.0:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not d >= 1.0:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(
            params,
            dict(
                lr=lr,
                beta2_decay=beta2_decay,
                eps=eps,
                d=d,
                weight_decay=weight_decay,
                foreach=foreach,
                maximize=maximize,
            ),
        )

    def _step_group(self, group):
        params, grads = grads_of(group)
        eps1, eps2 = group["eps"]
        lr = group["lr"].item() if isinstance(group["lr"], ec.Tensor) else group["lr"]
        d, weight_decay = group["d"], group["weight_decay"]
        for p, grad in zip(params, grads):
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            st = self.state[p]
            if not st:
                st["step"] = step_tensor()
                if grad.dim() > 1:
                    st["row_var"] = grad.new_zeros(tuple(grad.shape[:-1]) + (1,))
                    st["col_var"] = grad.new_zeros(
                        tuple(grad.shape[:-2]) + (1,) + tuple(grad.shape[-1:])
                    )
                else:
                    st["variance"] = ec.zeros_like(grad)
            if group["maximize"]:
                grad = -grad
            e1 = _eps_of(p.dtype) if eps1 is None else eps1
            st["step"].add_(1)
            t = float(st["step"].item())
            one_minus_beta2_t = t ** group["beta2_decay"]
            rho_t = min(lr, 1 / math.sqrt(t))
            alpha = max(eps2, p.norm(2).item() / math.sqrt(p.numel())) * rho_t
            if weight_decay != 0:
                p.mul_(1 - lr * weight_decay)
            if grad.dim() > 1:
                row_var, col_var = st["row_var"], st["col_var"]
                row_mean = ec.norm(grad, dim=-1, keepdim=True).square().div(grad.size(-1))
                row_var.lerp_(row_mean, one_minus_beta2_t)
                col_mean = ec.norm(grad, dim=-2, keepdim=True).square().div(grad.size(-2))
                col_var.lerp_(col_mean, one_minus_beta2_t)
                var_estimate = (row_var @ col_var).div(
                    row_var.mean(dim=-2, keepdim=True).clamp(min=e1)
                )
            else:
                variance = st["variance"]
                variance.lerp_(grad * grad, one_minus_beta2_t)
                var_estimate = variance.clone()
            update = var_estimate.clamp(min=e1 * e1).rsqrt().mul(grad)
            denom = max(1.0, update.norm(2).item() / (math.sqrt(update.numel()) * d))
            p.add_(update, alpha=-alpha / denom)
