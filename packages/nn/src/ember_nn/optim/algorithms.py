"""The optimizers.  Each step runs one fused C kernel per parameter group
(``fused=None``, the default, uses it whenever dtypes allow; ``fused=False``
forces the per-tensor reference path written with ember ops, which the tests
compare the kernels against)."""

import math

import ember_core as ec

from ember_nn._lib import check, ffi, lib
from ember_nn.optim.optimizer import (
    Optimizer,
    addresses,
    fused_dtype,
    grads_of,
    mark_written,
    numels,
    required,
    step_tensor,
)


def _check(condition, message):
    if not condition:
        raise ValueError(message)


def _state(opt, p, **init):
    st = opt.state[p]
    if not st:
        for k, make in init.items():
            st[k] = make(p)
    return st


def _zeros(p):
    return ec.zeros_like(p)


def _steps(states):
    return addresses([s["step"] for s in states])


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov, weight decay."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check(lr is required or lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        momentum = group["momentum"]
        states = [self.state[p] for p in params]
        first = [("momentum_buffer" not in s or s["momentum_buffer"] is None) for s in states]
        if momentum != 0:
            for p, s in zip(params, states):
                if s.get("momentum_buffer") is None:
                    s["momentum_buffer"] = ec.empty_like(p)
        code = fused_dtype(params, grads, group["fused"])
        if code is None:
            self._reference(group, params, grads, states, first)
            return
        bufs = addresses([s["momentum_buffer"] for s in states]) if momentum != 0 else ffi.NULL
        check(
            lib.en_sgd(code, len(params), addresses(params), addresses(grads), bufs,
                       ffi.new("uint8_t[]", first), numels(params), group["lr"], momentum,
                       group["dampening"], group["weight_decay"], group["nesterov"], group["maximize"]),
            "SGD.step",
        )
        mark_written(params, "SGD.step")
        if momentum != 0:
            mark_written([s["momentum_buffer"] for s in states], "SGD.step")

    def _reference(self, group, params, grads, states, first):
        for p, g, s, f in zip(params, grads, states, first):
            d = -g if group["maximize"] else g
            if group["weight_decay"]:
                d = d.add(p, alpha=group["weight_decay"])
            if group["momentum"]:
                buf = s["momentum_buffer"]
                if f:
                    buf.copy_(d)
                else:
                    buf.mul_(group["momentum"]).add_(d, alpha=1 - group["dampening"])
                d = d.add(buf, alpha=group["momentum"]) if group["nesterov"] else buf
            p.add_(d, alpha=-group["lr"])


class Adam(Optimizer):
    """Adam (amsgrad optional); AdamW is Adam with decoupled weight decay."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused))

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
        code = fused_dtype(params, grads, group["fused"])
        if code is None:
            self._reference(group, params, grads, states)
            return
        maxs = addresses([s["max_exp_avg_sq"] for s in states]) if amsgrad else ffi.NULL
        check(
            lib.en_adam(code, len(params), addresses(params), addresses(grads),
                        addresses([s["exp_avg"] for s in states]), addresses([s["exp_avg_sq"] for s in states]),
                        maxs, _steps(states), numels(params), group["lr"], beta1, beta2, group["eps"],
                        group["weight_decay"], amsgrad, group["maximize"], self._decoupled),
            type(self).__name__ + ".step",
        )
        mark_written(params, "Adam.step")

    def _reference(self, group, params, grads, states):
        beta1, beta2 = group["betas"]
        lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
        for p, g, s in zip(params, grads, states):
            d = -g if group["maximize"] else g
            s["step"].add_(1)
            step = s["step"].item()
            if wd:
                if self._decoupled:
                    p.mul_(1 - lr * wd)
                else:
                    d = d.add(p, alpha=wd)
            s["exp_avg"].lerp_(d, ec.full((), 1 - beta1, dtype=d.dtype))
            s["exp_avg_sq"].mul_(beta2).addcmul_(d, d, value=1 - beta2)
            bc1 = 1 - beta1**step
            bc2 = 1 - beta2**step
            v = s["exp_avg_sq"]
            if group["amsgrad"]:
                ec.maximum(s["max_exp_avg_sq"], v, out=s["max_exp_avg_sq"])
                v = s["max_exp_avg_sq"]
            denom = (v.sqrt() / math.sqrt(bc2)).add_(eps)
            p.addcdiv_(s["exp_avg"], denom, value=-lr / bc1)


class AdamW(Adam):
    """Adam with weight decay decoupled from the gradient (default 1e-2)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused)


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False, fused=None):
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        _check(alpha >= 0.0, f"Invalid alpha value: {alpha}")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                                      weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))

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
        code = fused_dtype(params, grads, group["fused"])
        if code is None:
            self._reference(group, params, grads, states)
            return
        centered, momentum = group["centered"], group["momentum"]
        check(
            lib.en_rmsprop(code, len(params), addresses(params), addresses(grads),
                           addresses([s["square_avg"] for s in states]),
                           addresses([s["grad_avg"] for s in states]) if centered else ffi.NULL,
                           addresses([s["momentum_buffer"] for s in states]) if momentum > 0 else ffi.NULL,
                           _steps(states), numels(params), group["lr"], group["alpha"], group["eps"],
                           group["weight_decay"], momentum, centered, group["maximize"]),
            "RMSprop.step",
        )
        mark_written(params, "RMSprop.step")

    def _reference(self, group, params, grads, states):
        alpha, eps, lr = group["alpha"], group["eps"], group["lr"]
        for p, g, s in zip(params, grads, states):
            d = -g if group["maximize"] else g
            s["step"].add_(1)
            if group["weight_decay"]:
                d = d.add(p, alpha=group["weight_decay"])
            sq = s["square_avg"]
            sq.mul_(alpha).addcmul_(d, d, value=1 - alpha)
            if group["centered"]:
                ga = s["grad_avg"]
                ga.lerp_(d, ec.full((), 1 - alpha, dtype=d.dtype))
                avg = sq.addcmul(ga, ga, value=-1).sqrt_().add_(eps)
            else:
                avg = sq.sqrt().add_(eps)
            if group["momentum"] > 0:
                buf = s["momentum_buffer"]
                buf.mul_(group["momentum"]).addcdiv_(d, avg)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(d, avg, value=-lr)


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(lr_decay >= 0.0, f"Invalid lr_decay value: {lr_decay}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        _check(initial_accumulator_value >= 0.0, f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))
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
        code = fused_dtype(params, grads, group["fused"])
        if code is None:
            for p, g, s in zip(params, grads, states):
                d = -g if group["maximize"] else g
                s["step"].add_(1)
                step = s["step"].item()
                if group["weight_decay"]:
                    d = d.add(p, alpha=group["weight_decay"])
                clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
                s["sum"].addcmul_(d, d, value=1)
                p.addcdiv_(d, s["sum"].sqrt().add_(group["eps"]), value=-clr)
            return
        check(
            lib.en_adagrad(code, len(params), addresses(params), addresses(grads),
                           addresses([s["sum"] for s in states]), _steps(states), numels(params), group["lr"],
                           group["lr_decay"], group["weight_decay"], group["eps"], group["maximize"]),
            "Adagrad.step",
        )
        mark_written(params, "Adagrad.step")


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False, fused=None):
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      capturable=capturable, foreach=foreach, differentiable=differentiable,
                                      fused=fused))

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        states = [_state(self, p, step=lambda p: step_tensor(), square_avg=_zeros, acc_delta=_zeros) for p in params]
        code = fused_dtype(params, grads, group["fused"])
        rho, eps = group["rho"], group["eps"]
        if code is None:
            for p, g, s in zip(params, grads, states):
                d = -g if group["maximize"] else g
                s["step"].add_(1)
                if group["weight_decay"]:
                    d = d.add(p, alpha=group["weight_decay"])
                s["square_avg"].mul_(rho).addcmul_(d, d, value=1 - rho)
                std = s["square_avg"].add(eps).sqrt_()
                delta = s["acc_delta"].add(eps).sqrt_().div_(std).mul_(d)
                s["acc_delta"].mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-group["lr"])
            return
        check(
            lib.en_adadelta(code, len(params), addresses(params), addresses(grads),
                            addresses([s["square_avg"] for s in states]), addresses([s["acc_delta"] for s in states]),
                            _steps(states), numels(params), group["lr"], rho, eps, group["weight_decay"],
                            group["maximize"]),
            "Adadelta.step",
        )
        mark_written(params, "Adadelta.step")


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False, fused=None):
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable,
                                      fused=fused))

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        states = [_state(self, p, step=lambda p: step_tensor(), exp_avg=_zeros, exp_inf=_zeros) for p in params]
        beta1, beta2 = group["betas"]
        code = fused_dtype(params, grads, group["fused"])
        if code is None:
            for p, g, s in zip(params, grads, states):
                d = -g if group["maximize"] else g
                s["step"].add_(1)
                step = s["step"].item()
                if group["weight_decay"]:
                    d = d.add(p, alpha=group["weight_decay"])
                s["exp_avg"].lerp_(d, ec.full((), 1 - beta1, dtype=d.dtype))
                norm = ec.maximum(s["exp_inf"] * beta2, d.abs().add_(group["eps"]))
                s["exp_inf"].copy_(norm)
                p.addcdiv_(s["exp_avg"], s["exp_inf"], value=-group["lr"] / (1 - beta1**step))
            return
        check(
            lib.en_adamax(code, len(params), addresses(params), addresses(grads),
                          addresses([s["exp_avg"] for s in states]), addresses([s["exp_inf"] for s in states]),
                          _steps(states), numels(params), group["lr"], beta1, beta2, group["eps"],
                          group["weight_decay"], group["maximize"]),
            "Adamax.step",
        )
        mark_written(params, "Adamax.step")


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        _check(momentum_decay >= 0.0, f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused))

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        states = [
            _state(self, p, step=lambda p: step_tensor(), mu_product=lambda p: ec.ones((), dtype=ec.float32),
                   exp_avg=_zeros, exp_avg_sq=_zeros)
            for p in params
        ]
        beta1, beta2 = group["betas"]
        code = fused_dtype(params, grads, group["fused"])
        if code is None:
            lr, eps, wd, md = group["lr"], group["eps"], group["weight_decay"], group["momentum_decay"]
            for p, g, s in zip(params, grads, states):
                d = -g if group["maximize"] else g
                s["step"].add_(1)
                step = s["step"].item()
                if wd:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        d = d.add(p, alpha=wd)
                bc2 = 1 - beta2**step
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * md))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
                s["mu_product"].mul_(mu)
                mp = s["mu_product"].item()
                s["exp_avg"].lerp_(d, ec.full((), 1 - beta1, dtype=d.dtype))
                s["exp_avg_sq"].mul_(beta2).addcmul_(d, d, value=1 - beta2)
                denom = s["exp_avg_sq"].div(bc2).sqrt().add_(eps)
                p.addcdiv_(d, denom, value=-lr * (1.0 - mu) / (1.0 - mp))
                p.addcdiv_(s["exp_avg"], denom, value=-lr * mu_next / (1.0 - mp * mu_next))
            return
        check(
            lib.en_nadam(code, len(params), addresses(params), addresses(grads),
                         addresses([s["exp_avg"] for s in states]), addresses([s["exp_avg_sq"] for s in states]),
                         addresses([s["mu_product"] for s in states]), _steps(states), numels(params), group["lr"],
                         beta1, beta2, group["eps"], group["weight_decay"], group["momentum_decay"],
                         group["decoupled_weight_decay"], group["maximize"]),
            "NAdam.step",
        )
        mark_written(params, "NAdam.step")


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable, differentiable=differentiable,
                                      fused=fused))

    def _step_group(self, group):
        params, grads = grads_of(group)
        if not params:
            return
        states = [_state(self, p, step=lambda p: step_tensor(), exp_avg=_zeros, exp_avg_sq=_zeros) for p in params]
        beta1, beta2 = group["betas"]
        code = fused_dtype(params, grads, group["fused"])
        if code is None:
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            for p, g, s in zip(params, grads, states):
                d = -g if group["maximize"] else g
                s["step"].add_(1)
                step = s["step"].item()
                if wd:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        d = d.add(p, alpha=wd)
                s["exp_avg"].lerp_(d, ec.full((), 1 - beta1, dtype=d.dtype))
                s["exp_avg_sq"].mul_(beta2).addcmul_(d, d, value=1 - beta2)
                bc1 = 1 - beta1**step
                bc2 = 1 - beta2**step
                corrected = s["exp_avg"] / bc1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2**step) / bc2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive = math.sqrt(bc2) / s["exp_avg_sq"].sqrt().add_(eps)
                    p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
                else:
                    p.add_(corrected * lr, alpha=-1.0)
            return
        check(
            lib.en_radam(code, len(params), addresses(params), addresses(grads),
                         addresses([s["exp_avg"] for s in states]), addresses([s["exp_avg_sq"] for s in states]),
                         _steps(states), numels(params), group["lr"], beta1, beta2, group["eps"],
                         group["weight_decay"], group["decoupled_weight_decay"], group["maximize"]),
            "RAdam.step",
        )
        mark_written(params, "RAdam.step")
