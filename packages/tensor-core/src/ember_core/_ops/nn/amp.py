"""Mixed precision's device-side ops (PyTorch's names), which GradScaler
(ember.amp) is written with: the gradients' inf/NaN check and unscale
(a C kernel per device: one loop on the CPU, multi-tensor launches on CUDA,
Note [Multi-tensor launches]) and the scale's update, all without reading
a value back to the host, so a training step synchronises once at most
(GradScaler.step reads found_inf)."""

from ember_core._base.dispatch import defop
from ember_core._base.lib import check, ffi
from ember_core._ops.pointwise.elementwise import where
from ember_core._tensor import dtype as D
from ember_core._tensor.tensor import Tensor, written


def _scalar(op, t, name, dtype):
    if not isinstance(t, Tensor) or t._numel != 1 or t._dtype is not dtype:
        raise RuntimeError(f"{op}: {name} must be a one-element {dtype.name} tensor")


@defop(method=False, differentiable=False)
def _amp_foreach_non_finite_check_and_unscale_(self, found_inf, inv_scale):
    """Multiply every tensor of ``self`` by ``inv_scale`` in place and set
    ``found_inf`` to 1 if any element was inf or NaN (both float32 scalars on
    the tensors' device)."""
    op = "_amp_foreach_non_finite_check_and_unscale_"
    _scalar(op, found_inf, "found_inf", D.float32)
    _scalar(op, inv_scale, "inv_scale", D.float32)
    dev = found_inf._storage._device
    if inv_scale._storage._device is not dev:
        raise RuntimeError(f"{op}: found_inf and inv_scale must be on one device")
    groups = {}
    for t in self:
        if not isinstance(t, Tensor) or not t._dtype.is_floating_point:
            raise RuntimeError(f"{op}: expected floating point tensors")
        if t._storage._device is not dev:
            raise RuntimeError(
                f"{op}: a tensor on {t._storage._device} with found_inf on {dev} (one device per "
                "call, as PyTorch's)"
            )
        if not t.is_contiguous():
            raise RuntimeError(f"{op}: expected contiguous tensors")
        groups.setdefault(t._dtype, []).append(t)
    written(found_inf, op)
    for ts in groups.values():
        for t in ts:
            written(t, op)
    for dtype, ts in groups.items():
        check(
            dev._k.ec_amp_unscale(
                dtype.code,
                len(ts),
                ffi.new("uint64_t[]", [t._ptr for t in ts]),
                ffi.new("int64_t[]", [t._numel for t in ts]),
                found_inf._ptr,
                inv_scale._ptr,
            ),
            op,
        )


@defop(method=False, differentiable=False, composite=True)
def _amp_update_scale_(
    self, growth_tracker, found_inf, scale_growth_factor, scale_backoff_factor, growth_interval
):
    """GradScaler's update on the scale's device: after an overflow (found_inf
    > 0) the scale backs off and the tracker restarts; after growth_interval
    clean steps in a row it grows.  Returns ``self``."""
    found = found_inf > 0
    tracker = where(found, growth_tracker.new_zeros(()), growth_tracker + 1)
    grown = self * scale_growth_factor
    # a scale that would overflow stays (PyTorch's rule)
    grow = (tracker >= growth_interval).logical_and(grown.isfinite())
    self.copy_(where(found, self * scale_backoff_factor, where(grow, grown, self)))
    growth_tracker.copy_(where(tracker >= growth_interval, growth_tracker.new_zeros(()), tracker))
    return self
