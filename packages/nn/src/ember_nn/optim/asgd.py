"""ASGD: averaged stochastic gradient descent (Polyak-Ruppert averaging in the
state's ``ax``), as torch.optim.ASGD's single-tensor algorithm."""

from __future__ import annotations

import ember_core as ec
from ember_core import Tensor
from ember_nn.optim._typing import ParamsT
from ember_nn.optim.algorithms import _common_checks, _flags
from ember_nn.optim.optimizer import Optimizer, _scalar_dtype, grads_of, step_tensor


class ASGD(Optimizer):
    """Averaged SGD: decaying step ``eta = lr / (1 + lambd*lr*t)**alpha``; after
    step ``t0`` the state's ``ax`` holds the running average of the iterates.

    >>> opt = ASGD(model.parameters(), lr=0.01, t0=100)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        _common_checks(lr, weight_decay=weight_decay)
        _flags(foreach, None, differentiable)
        super().__init__(
            params,
            dict(
                lr=lr,
                lambd=lambd,
                alpha=alpha,
                t0=t0,
                weight_decay=weight_decay,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                capturable=capturable,
            ),
        )

    def _step_group(self, group):
        params, grads = grads_of(group)
        lr = group["lr"].item() if isinstance(group["lr"], ec.Tensor) else group["lr"]
        lambd, alpha, t0, wd = group["lambd"], group["alpha"], group["t0"], group["weight_decay"]
        for p, g in zip(params, grads):
            st = self.state[p]
            if not st:
                st["step"] = step_tensor()
                st["eta"] = ec.tensor(lr, dtype=_scalar_dtype())
                st["mu"] = ec.ones((), dtype=_scalar_dtype())
                st["ax"] = ec.zeros_like(p)
            if group["maximize"]:
                g = -g
            st["step"].add_(1)
            if wd != 0:
                g = g.add(p, alpha=wd)
            # eta and mu are read back from their (float32) state, as PyTorch does
            eta = st["eta"].item()
            p.mul_(1 - lambd * eta)
            p.add_(g, alpha=-eta)
            ax = st["ax"]
            if st["mu"].item() != 1:
                ax.add_(p.sub(ax).mul_(st["mu"].item()))
            else:
                ax.copy_(p)
            step = st["step"].item()
            st["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
            st["mu"].fill_(1 / max(1, step - t0))
