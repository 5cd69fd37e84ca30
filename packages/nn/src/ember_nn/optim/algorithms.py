"""The optimizers: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam,
RAdam.  Each group steps through one fused C kernel, or with ``foreach=False``
through the per-tensor reference path (Note [Fused and reference steps] in
optimizer.py); both follow torch.optim's single-tensor algorithms operation
for operation."""

from __future__ import annotations

from typing import Any

import ember_core as ec
from ember_core import Tensor
from ember_nn._lib import check, ffi, lib
from ember_nn.optim._typing import ParamsT
from ember_nn.optim.optimizer import (
    Optimizer,
    addresses,
    fused_step,
    grads_of,
    kernel_dtype,
    mark_written,
    numels,
    scalar_code,
    step_tensor,
)


def _check(condition, message):
    if not condition:
        raise ValueError(message)


def _common_checks(lr, eps=None, weight_decay=None, betas=None):
    if isinstance(lr, ec.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    _check(float(lr) >= 0.0, f"Invalid learning rate: {lr}")
    if eps is not None:
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
    if betas is not None:
        _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    if weight_decay is not None:
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")


def _flags(foreach, fused, differentiable):
    # PyTorch's order of checks; differentiable steps take the reference path with
    # grad mode on (Note [Fused and reference steps])
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _zeros(p):
    return ec.zeros_like(p)


def _state(opt, p, **init):
    st = opt.state[p]
    if not st:
        for k, make in init.items():
            st[k] = make(p)
    return st


def _lr(group):
    lr = group["lr"]
    return lr.item() if isinstance(lr, ec.Tensor) else lr


def _lerp_weight(d, w):
    return ec.full((), w, dtype=d.dtype)


def _steps(states, key="step"):
    """(addresses, scalar dtype code) of the states' 0-d counters, or None if mixed."""
    tensors = [s[key] for s in states]
    code = scalar_code(tensors)
    return (addresses(tensors), code) if code is not None else None


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay.

    >>> opt = SGD(model.parameters(), lr=0.1, momentum=0.9)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _common_checks(lr, weight_decay=weight_decay)
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _flags(foreach, fused, differentiable)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(
            params,
            dict(
                lr=lr,
                momentum=momentum,
                dampening=dampening,
                weight_decay=weight_decay,
                nesterov=nesterov,
                maximize=maximize,
                foreach=foreach,
                differentiable=differentiable,
                fused=fused,
            ),
        )

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        momentum = group["momentum"]
        # as PyTorch, SGD keeps state (a momentum buffer) only with momentum
        states = [self.state[p] for p in params] if momentum != 0 else [None] * len(params)
        first = (
            [s.get("momentum_buffer") is None for s in states]
            if momentum != 0
            else [True] * len(params)
        )
        code = kernel_dtype(group, params, grads, "sgd")
        if code is None:
            self._reference(group, params, grads, states, first)
            return
        if momentum != 0:
            for p, s, f in zip(params, states, first):
                if f:
                    s["momentum_buffer"] = ec.empty_like(p)
        bufs = addresses([s["momentum_buffer"] for s in states]) if momentum != 0 else ffi.NULL
        fused_step(
            params,
            "sgd",
            "SGD.step",
            code,
            ec.get_num_threads(),
            len(params),
            addresses(params),
            addresses(grads),
            bufs,
            ffi.new("uint8_t[]", first),
            numels(params),
            _lr(group),
            momentum,
            group["dampening"],
            group["weight_decay"],
            group["nesterov"],
            group["maximize"],
        )
        mark_written(params, "SGD.step")

    @staticmethod
    def _reference(group, params, grads, states, first):
        lr, momentum, wd = _lr(group), group["momentum"], group["weight_decay"]
        for p, g, s, f in zip(params, grads, states, first):
            d = g if not group["maximize"] else -g
            if wd != 0:
                d = d.add(p, alpha=wd)
            if momentum != 0:
                if f:
                    buf = s["momentum_buffer"] = d.clone().detach()
                else:
                    buf = s["momentum_buffer"]
                    buf.mul_(momentum).add_(d, alpha=1 - group["dampening"])
                d = d.add(buf, alpha=momentum) if group["nesterov"] else buf
            p.add_(d, alpha=-lr)


class Adam(Optimizer):
    """Adam (with amsgrad, and decoupled weight decay as in AdamW)."""

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        _common_checks(lr, eps, weight_decay, betas)
        _flags(foreach, fused, differentiable)
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                amsgrad=amsgrad,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                differentiable=differentiable,
                fused=fused,
                decoupled_weight_decay=decoupled_weight_decay,
            ),
        )

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        amsgrad = group["amsgrad"]
        init = dict(step=lambda p: step_tensor(), exp_avg=_zeros, exp_avg_sq=_zeros)
        if amsgrad:
            init["max_exp_avg_sq"] = _zeros
        states = [_state(self, p, **init) for p in params]
        beta1, beta2 = group["betas"]
        code = kernel_dtype(group, params, grads, "adam")
        steps = _steps(states) if code is not None else None
        if steps is None:
            self._reference(group, params, grads, states)
            return
        maxs = addresses([s["max_exp_avg_sq"] for s in states]) if amsgrad else ffi.NULL
        fused_step(
            params,
            "adam",
            type(self).__name__ + ".step",
            code,
            ec.get_num_threads(),
            len(params),
            addresses(params),
            addresses(grads),
            addresses([s["exp_avg"] for s in states]),
            addresses([s["exp_avg_sq"] for s in states]),
            maxs,
            steps[0],
            steps[1],
            numels(params),
            _lr(group),
            beta1,
            beta2,
            group["eps"],
            group["weight_decay"],
            amsgrad,
            group["maximize"],
            group["decoupled_weight_decay"],
        )
        mark_written(params, type(self).__name__ + ".step")

    @staticmethod
    def _reference(group, params, grads, states):
        beta1, beta2 = group["betas"]
        lr, eps, wd = _lr(group), group["eps"], group["weight_decay"]
        for p, g, s in zip(params, grads, states):
            d = g if not group["maximize"] else -g
            s["step"].add_(1)
            if wd != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * wd)
                else:
                    d = d.add(p, alpha=wd)
            s["exp_avg"].lerp_(d, _lerp_weight(d, 1 - beta1))
            s["exp_avg_sq"].mul_(beta2).addcmul_(d, d, value=1 - beta2)
            diff = group["differentiable"]
            # PyTorch's differentiable path computes the corrections from the float32
            # step tensor; so does this one, to give the same values
            step = s["step"] if diff else s["step"].item()
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            step_size = lr / bias_correction1
            bc2_sqrt = bias_correction2**0.5
            if group["amsgrad"]:
                if diff:  # recorded by autograd: no out=, read a copy
                    s["max_exp_avg_sq"].copy_(
                        ec.maximum(s["max_exp_avg_sq"].clone(), s["exp_avg_sq"])
                    )
                else:
                    ec.maximum(s["max_exp_avg_sq"], s["exp_avg_sq"], out=s["max_exp_avg_sq"])
            sq = s["max_exp_avg_sq"] if group["amsgrad"] else s["exp_avg_sq"]
            if diff:
                neg = -step_size
                denom = (sq.sqrt() / (bc2_sqrt * neg)).add_(eps / neg)
                p.addcdiv_(s["exp_avg"].clone(), denom)
            else:
                denom = (sq.sqrt() / bc2_sqrt).add_(eps)
                p.addcdiv_(s["exp_avg"], denom, value=-step_size)


class AdamW(Adam):
    """Adam with weight decay decoupled from the gradient (default 1e-2)."""

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


class RMSprop(Optimizer):
    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _common_checks(lr, eps, weight_decay)
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check(alpha >= 0.0, f"Invalid alpha value: {alpha}")
        _flags(foreach, None, differentiable)
        super().__init__(
            params,
            dict(
                lr=lr,
                momentum=momentum,
                alpha=alpha,
                eps=eps,
                centered=centered,
                weight_decay=weight_decay,
                capturable=capturable,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
            ),
        )

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        init = dict(step=lambda p: step_tensor(), square_avg=_zeros)
        if group["momentum"] > 0:
            init["momentum_buffer"] = _zeros
        if group["centered"]:
            init["grad_avg"] = _zeros
        states = [_state(self, p, **init) for p in params]
        code = kernel_dtype(group, params, grads)
        steps = _steps(states) if code is not None else None
        if steps is None:
            self._reference(group, params, grads, states)
            return
        centered, momentum = group["centered"], group["momentum"]
        check(
            lib.en_rmsprop(
                code,
                ec.get_num_threads(),
                len(params),
                addresses(params),
                addresses(grads),
                addresses([s["square_avg"] for s in states]),
                addresses([s["grad_avg"] for s in states]) if centered else ffi.NULL,
                addresses([s["momentum_buffer"] for s in states]) if momentum > 0 else ffi.NULL,
                steps[0],
                steps[1],
                numels(params),
                _lr(group),
                group["alpha"],
                group["eps"],
                group["weight_decay"],
                momentum,
                centered,
                group["maximize"],
            ),
            "RMSprop.step",
        )
        mark_written(params, "RMSprop.step")

    @staticmethod
    def _reference(group, params, grads, states):
        alpha, eps, lr = group["alpha"], group["eps"], _lr(group)
        for p, g, s in zip(params, grads, states):
            d = g if not group["maximize"] else -g
            s["step"].add_(1)
            if group["weight_decay"] != 0:
                d = d.add(p, alpha=group["weight_decay"])
            sq = s["square_avg"]
            sq.mul_(alpha).addcmul_(d, d, value=1 - alpha)
            if group["centered"]:
                ga = s["grad_avg"]
                ga.lerp_(d, _lerp_weight(d, 1 - alpha))
                avg = sq.addcmul(ga, ga, value=-1).sqrt_()
            else:
                avg = sq.sqrt()
            avg = avg.add(eps) if group["differentiable"] else avg.add_(eps)
            if group["momentum"] > 0:
                buf = s["momentum_buffer"]
                buf.mul_(group["momentum"]).addcdiv_(d, avg)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(d, avg, value=-lr)


class Adagrad(Optimizer):
    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _common_checks(lr, eps, weight_decay)
        _check(lr_decay >= 0.0, f"Invalid lr_decay value: {lr_decay}")
        _check(
            initial_accumulator_value >= 0.0,
            f"Invalid initial_accumulator_value value: {initial_accumulator_value}",
        )
        _flags(foreach, fused, differentiable)
        super().__init__(
            params,
            dict(
                lr=lr,
                lr_decay=lr_decay,
                eps=eps,
                weight_decay=weight_decay,
                initial_accumulator_value=initial_accumulator_value,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                fused=fused,
            ),
        )
        # as PyTorch, Adagrad's state exists from the start
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state[p]
                st["step"] = step_tensor()
                st["sum"] = ec.full_like(p, group["initial_accumulator_value"])

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        states = [self.state[p] for p in params]
        code = kernel_dtype(group, params, grads)
        steps = _steps(states) if code is not None else None
        if steps is None:
            lr, lr_decay, eps, wd = (
                _lr(group),
                group["lr_decay"],
                group["eps"],
                group["weight_decay"],
            )
            for p, g, s in zip(params, grads, states):
                s["step"].add_(1)
                step = s["step"].item()
                d = g if not group["maximize"] else -g
                if wd != 0:
                    d = d.add(p, alpha=wd)
                clr = lr / (1 + (step - 1) * lr_decay)
                s["sum"].addcmul_(d, d, value=1)
                std = s["sum"].sqrt()
                std = std + eps if group["differentiable"] else std.add_(eps)
                p.addcdiv_(d, std, value=-clr)
            return
        check(
            lib.en_adagrad(
                code,
                ec.get_num_threads(),
                len(params),
                addresses(params),
                addresses(grads),
                addresses([s["sum"] for s in states]),
                steps[0],
                steps[1],
                numels(params),
                _lr(group),
                group["lr_decay"],
                group["weight_decay"],
                group["eps"],
                group["maximize"],
            ),
            "Adagrad.step",
        )
        mark_written(params, "Adagrad.step")


class Adadelta(Optimizer):
    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _common_checks(lr, eps, weight_decay)
        _check(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        _flags(foreach, None, differentiable)
        super().__init__(
            params,
            dict(
                lr=lr,
                rho=rho,
                eps=eps,
                weight_decay=weight_decay,
                maximize=maximize,
                capturable=capturable,
                foreach=foreach,
                differentiable=differentiable,
            ),
        )

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        states = [
            _state(self, p, step=lambda p: step_tensor(), square_avg=_zeros, acc_delta=_zeros)
            for p in params
        ]
        code = kernel_dtype(group, params, grads)
        steps = _steps(states) if code is not None else None
        rho, eps, lr, wd = group["rho"], group["eps"], _lr(group), group["weight_decay"]
        if steps is None:
            for p, g, s in zip(params, grads, states):
                s["step"].add_(1)
                d = g if not group["maximize"] else -g
                if wd != 0:
                    d = d.add(p, alpha=wd)
                s["square_avg"].mul_(rho).addcmul_(d, d, value=1 - rho)
                std = s["square_avg"].add(eps).sqrt_()
                delta = s["acc_delta"].add(eps).sqrt_()
                if group["differentiable"]:
                    delta = delta.clone()
                delta.div_(std).mul_(d)
                s["acc_delta"].mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
            return
        check(
            lib.en_adadelta(
                code,
                ec.get_num_threads(),
                len(params),
                addresses(params),
                addresses(grads),
                addresses([s["square_avg"] for s in states]),
                addresses([s["acc_delta"] for s in states]),
                steps[0],
                steps[1],
                numels(params),
                lr,
                rho,
                eps,
                wd,
                group["maximize"],
            ),
            "Adadelta.step",
        )
        mark_written(params, "Adadelta.step")


class Adamax(Optimizer):
    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 2e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        _common_checks(lr, eps, weight_decay, betas)
        _flags(foreach, None, differentiable)
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                foreach=foreach,
                maximize=maximize,
                differentiable=differentiable,
                capturable=capturable,
            ),
        )

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        states = [
            _state(self, p, step=lambda p: step_tensor(), exp_avg=_zeros, exp_inf=_zeros)
            for p in params
        ]
        beta1, beta2 = group["betas"]
        code = kernel_dtype(group, params, grads)
        steps = _steps(states) if code is not None else None
        lr, eps, wd = _lr(group), group["eps"], group["weight_decay"]
        if steps is None:
            for p, g, s in zip(params, grads, states):
                s["step"].add_(1)
                d = g if not group["maximize"] else -g
                if wd != 0:
                    d = d.add(p, alpha=wd)
                s["exp_avg"].lerp_(d, _lerp_weight(d, 1 - beta1))
                norm_buf = ec.cat(
                    [s["exp_inf"].mul_(beta2).unsqueeze(0), d.abs().add_(eps).unsqueeze(0)], 0
                )
                s["exp_inf"].copy_(ec.amax(norm_buf, 0, keepdim=False))
                clr = lr / (1 - beta1 ** s["step"].item())
                p.addcdiv_(s["exp_avg"], s["exp_inf"], value=-clr)
            return
        check(
            lib.en_adamax(
                code,
                ec.get_num_threads(),
                len(params),
                addresses(params),
                addresses(grads),
                addresses([s["exp_avg"] for s in states]),
                addresses([s["exp_inf"] for s in states]),
                steps[0],
                steps[1],
                numels(params),
                lr,
                beta1,
                beta2,
                eps,
                wd,
                group["maximize"],
            ),
            "Adamax.step",
        )
        mark_written(params, "Adamax.step")


class NAdam(Optimizer):
    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 2e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _common_checks(lr, eps, weight_decay, betas)
        _check(momentum_decay >= 0.0, f"Invalid momentum_decay value: {momentum_decay}")
        _flags(foreach, None, differentiable)
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                momentum_decay=momentum_decay,
                decoupled_weight_decay=decoupled_weight_decay,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                differentiable=differentiable,
            ),
        )

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        states = [
            _state(
                self,
                p,
                step=lambda p: step_tensor(),
                mu_product=lambda p: step_tensor().fill_(1.0),
                exp_avg=_zeros,
                exp_avg_sq=_zeros,
            )
            for p in params
        ]
        beta1, beta2 = group["betas"]
        lr, eps, wd, md = _lr(group), group["eps"], group["weight_decay"], group["momentum_decay"]
        code = kernel_dtype(group, params, grads)
        steps = _steps(states) if code is not None else None
        mus = _steps(states, "mu_product") if steps is not None else None
        if steps is None or mus is None or mus[1] != steps[1]:
            for p, g, s in zip(params, grads, states):
                d = g if not group["maximize"] else -g
                s["step"].add_(1)
                step = s["step"].item()
                bias_correction2 = 1 - beta2**step
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        d = d.add(p, alpha=wd)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * md)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
                s["mu_product"].mul_(mu)
                s["exp_avg"].lerp_(d, _lerp_weight(d, 1 - beta1))
                s["exp_avg_sq"].mul_(beta2).addcmul_(d, d, value=1 - beta2)
                denom = s["exp_avg_sq"].div(bias_correction2).sqrt()
                mu_product = s["mu_product"].item()
                mu_product_next = mu_product * mu_next
                if group["differentiable"]:  # PyTorch's differentiable form
                    denom = denom.add(eps)
                    p.addcdiv_(d * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
                    scaled = s["exp_avg"] * (-lr * mu_next / (1.0 - mu_product_next))
                    p.addcdiv_(scaled, denom)
                    continue
                denom.add_(eps)
                p.addcdiv_(d, denom, value=(-lr * (1.0 - mu) / (1.0 - mu_product)))
                p.addcdiv_(s["exp_avg"], denom, value=(-lr * mu_next) / (1.0 - mu_product_next))
            return
        check(
            lib.en_nadam(
                code,
                ec.get_num_threads(),
                len(params),
                addresses(params),
                addresses(grads),
                addresses([s["exp_avg"] for s in states]),
                addresses([s["exp_avg_sq"] for s in states]),
                mus[0],
                steps[0],
                steps[1],
                numels(params),
                lr,
                beta1,
                beta2,
                eps,
                wd,
                md,
                group["decoupled_weight_decay"],
                group["maximize"],
            ),
            "NAdam.step",
        )
        mark_written(params, "NAdam.step")


class RAdam(Optimizer):
    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _common_checks(lr, eps, weight_decay, betas)
        _flags(foreach, None, differentiable)
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                decoupled_weight_decay=decoupled_weight_decay,
                differentiable=differentiable,
            ),
        )

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        states = [
            _state(self, p, step=lambda p: step_tensor(), exp_avg=_zeros, exp_avg_sq=_zeros)
            for p in params
        ]
        beta1, beta2 = group["betas"]
        lr, eps, wd = _lr(group), group["eps"], group["weight_decay"]
        code = kernel_dtype(group, params, grads)
        steps = _steps(states) if code is not None else None
        if steps is None:
            for p, g, s in zip(params, grads, states):
                d = g if not group["maximize"] else -g
                s["step"].add_(1)
                step = s["step"].item()
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        d = d.add(p, alpha=wd)
                s["exp_avg"].lerp_(d, _lerp_weight(d, 1 - beta1))
                s["exp_avg_sq"].mul_(beta2).addcmul_(d, d, value=1 - beta2)
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                corrected = s["exp_avg"] / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
                if rho_t > 5.0:
                    rect = (
                        (rho_t - 4)
                        * (rho_t - 2)
                        * rho_inf
                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                    ) ** 0.5
                    root = s["exp_avg_sq"].sqrt()
                    root = root.add(eps) if group["differentiable"] else root.add_(eps)
                    adaptive = (bias_correction2**0.5) / root
                    p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
                else:
                    p.add_(corrected * lr, alpha=-1.0)
            return
        check(
            lib.en_radam(
                code,
                ec.get_num_threads(),
                len(params),
                addresses(params),
                addresses(grads),
                addresses([s["exp_avg"] for s in states]),
                addresses([s["exp_avg_sq"] for s in states]),
                steps[0],
                steps[1],
                numels(params),
                lr,
                beta1,
                beta2,
                eps,
                wd,
                group["decoupled_weight_decay"],
                group["maximize"],
            ),
            "RAdam.step",
        )
        mark_written(params, "RAdam.step")
