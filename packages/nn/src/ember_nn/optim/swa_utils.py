"""Stochastic weight averaging and EMA (torch.optim.swa_utils): a model whose
parameters are the running average of another's, the SWA learning-rate
schedule, and a pass that recomputes BatchNorm statistics for the average.

>>> swa_model = AveragedModel(model)
>>> swa_sched = SWALR(opt, swa_lr=0.05)
>>> for epoch in range(n):
...     train_one_epoch(model, opt)
...     if epoch >= swa_start:
...         swa_model.update_parameters(model)
...         swa_sched.step()
>>> update_bn(loader, swa_model)
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Iterable
from typing import Any

import ember_autograd as ag
import ember_core as ec
from ember_core import Tensor
from ember_nn.modules.module import Module
from ember_nn.modules.normalization import _BatchNorm
from ember_nn.optim._typing import AvgFn, MultiAvgFn
from ember_nn.optim.lr_scheduler import LRScheduler, _format_param
from ember_nn.optim.optimizer import Optimizer

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """In-place exponential moving average over lists of tensors:
    ``ema = ema + (1 - decay) * (current - ema)``."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with ag.no_grad():
            if ema_param_list[0].is_floating_point():
                for e, c in zip(ema_param_list, current_param_list):
                    e.lerp_(c, 1 - decay)
            else:
                for e, c in zip(ema_param_list, current_param_list):
                    e.copy_(e * decay + c * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """In-place running (equal-weight) average over lists of tensors."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with ag.no_grad():
            if averaged_param_list[0].is_floating_point():
                weight = 1 / (num_averaged + 1)
                weight = weight.item() if isinstance(weight, ec.Tensor) else weight
                for a, c in zip(averaged_param_list, current_param_list):
                    a.lerp_(c, weight)
            else:
                for a, c in zip(averaged_param_list, current_param_list):
                    a.add_((c - a) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """Exponential moving average of one tensor (returns the new average)."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with ag.no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """Running equal-weight average of one tensor (returns the new average)."""

    def swa_update(averaged_param, current_param, num_averaged):
        with ag.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` whose parameters (and, with ``use_buffers``, buffers)
    are averaged over the models passed to ``update_parameters`` — an equal-weight
    average by default, or ``avg_fn`` / ``multi_avg_fn`` (e.g. EMA). Without
    ``use_buffers`` the buffers are copied from the latest model."""

    def __init__(
        self,
        model: Module,
        device: str | ec.device | int | None = None,
        avg_fn: AvgFn | None = None,
        multi_avg_fn: MultiAvgFn | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", ec.tensor(0, dtype=ec.int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _averaged(self, model):
        if self.use_buffers:
            return (
                list(itertools.chain(self.module.parameters(), self.module.buffers())),
                list(itertools.chain(model.parameters(), model.buffers())),
            )
        return list(self.parameters()), list(model.parameters())

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters into the average."""
        with ag.no_grad():
            ours, theirs = self._averaged(model)
            ours = [p.detach() for p in ours]
            theirs = [p.detach().to(a.device) for a, p in zip(ours, theirs)]
            n = int(self.n_averaged.item())
            if n == 0:
                for a, p in zip(ours, theirs):
                    a.copy_(p)
            elif self.multi_avg_fn is not None:
                # tensors of one dtype go to the multi-tensor function together
                by_dtype: dict[Any, tuple[list[Tensor], list[Tensor]]] = {}
                for a, p in zip(ours, theirs):
                    group = by_dtype.setdefault(a.dtype, ([], []))
                    group[0].append(a)
                    group[1].append(p)
                for a_list, p_list in by_dtype.values():
                    self.multi_avg_fn(a_list, p_list, self.n_averaged)
            else:
                # PyTorch's CPU default: the one-tensor SWA average (exact division)
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for a, p in zip(ours, theirs):
                    a.copy_(avg_fn(a, p, self.n_averaged))
            if not self.use_buffers:
                for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                    b_avg.copy_(b_model.detach().to(b_avg.device))
            self.n_averaged.add_(1)


def update_bn(
    loader: Iterable[Any], model: Module, device: str | ec.device | int | None = None
) -> None:
    """Recompute every BatchNorm's running statistics with one pass over loader
    (a cumulative average over all its batches); the first element of a tuple or
    list batch is the input."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with ag.no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs``
    steps (cosine or linear), then hold it there."""

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | list[float],
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self) -> list[float]:
        self._warn_get_lr()
        # the group's lr may have been changed since the last step: recover the
        # schedule's starting lr from it, then take the next point of the schedule
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
