"""Rprop: resilient back-propagation (per-element step sizes driven by the sign
of successive gradients), as torch.optim.Rprop's single-tensor algorithm."""

from __future__ import annotations

import ember_core as ec
from ember_core import Tensor
from ember_nn.optim._typing import ParamsT
from ember_nn.optim.algorithms import _common_checks, _flags
from ember_nn.optim.optimizer import Optimizer, grads_of, step_tensor


class Rprop(Optimizer):
    """Rprop: each element's step grows by ``etas[1]`` while its gradient keeps its
    sign and shrinks by ``etas[0]`` when the sign flips (that step is skipped).

    >>> opt = Rprop(model.parameters(), lr=0.01)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _common_checks(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _flags(foreach, None, differentiable)
        super().__init__(
            params,
            dict(
                lr=lr,
                etas=etas,
                step_sizes=step_sizes,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                capturable=capturable,
            ),
        )

    def _step_group(self, group):
        params, grads = grads_of(group)
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        lr = group["lr"].item() if isinstance(group["lr"], ec.Tensor) else group["lr"]
        for p, g in zip(params, grads):
            st = self.state[p]
            if not st:
                st["step"] = step_tensor()
                st["prev"] = ec.zeros_like(p)
                st["step_size"] = ec.full_like(g, lr)
            if group["maximize"]:
                g = -g
            st["step"].add_(1)
            prev = st["prev"].clone() if group["differentiable"] else st["prev"]
            sign = g.mul(prev).sign()
            flipped = sign < 0
            factor = ec.where(
                sign > 0,
                ec.full_like(sign, etaplus),
                ec.where(flipped, ec.full_like(sign, etaminus), ec.ones_like(sign)),
            )
            step_size = st["step_size"]
            step_size.mul_(factor).clamp_(step_size_min, step_size_max)
            # where the gradient changed sign, skip this step (and forget the gradient)
            g = g.masked_fill(flipped, 0)
            p.addcmul_(g.sign(), step_size, value=-1)
            st["prev"].copy_(g)
