"""The original, hook-based spectral normalisation (torch.nn.utils.spectral_norm).

``module.<name>`` is replaced by the parameter ``<name>_orig`` and two buffers,
``<name>_u`` and ``<name>_v``, the running left and right singular vectors.  A
forward pre-hook recomputes ``<name> = <name>_orig / sigma`` before every call,
with sigma = u^T W v estimated by power iteration (done in training mode only,
updating u and v in place).  New code uses ``parametrizations.spectral_norm``;
this one is what GAN scripts and their checkpoints (keys ``weight_orig``,
``weight_u``, ``weight_v``) expect.  The state-dict hooks record version 1 in
the metadata and convert version-0 checkpoints (which stored ``<name>`` and no
``<name>_v``) as PyTorch does.
"""

import ember_autograd as ag
import ember_core as ec
from ember_nn import functional as F
from ember_nn.modules.module import _Handle
from ember_nn.parameter import Parameter, UninitializedParameter

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]


class SpectralNorm:
    """The forward pre-hook; also what remove_spectral_norm looks for."""

    # version 1: <name>_v is stored; <name> is not (it is recomputed)
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        """`dim` first, everything else flattened: (size(dim), -1)."""
        mat = weight
        if self.dim != 0:
            order = [self.dim] + [d for d in range(mat.dim()) if d != self.dim]
            mat = mat.permute(*order)
        return mat.reshape(mat.size(0), -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            # u and v are updated in place so that the buffers carry the estimate
            # from one call to the next (and DataParallel replicas share it)
            with ag.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(ec.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(ec.mv(weight_mat, v), dim=0, eps=self.eps))
                # clones, so that the in-place updates of the next call do not
                # modify what this call's graph saved
                u = u.clone()
                v = v.clone()
        sigma = ec.dot(u, ec.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with ag.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        """A v with u^T W v = target_sigma, for checkpoints that stored no v."""
        v = ec.linalg.multi_dot(
            [weight_mat.t().mm(weight_mat).pinverse(), weight_mat.t(), u.unsqueeze(1)]
        ).squeeze(1)
        return v.mul_(target_sigma / ec.dot(u, ec.mv(weight_mat, v)))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}"
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError(
                "The module passed to `SpectralNorm` can't have uninitialized parameters. Make "
                "sure to run the dummy forward before applying spectral normalization"
            )
        with ag.no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # a plain attribute until the first forward recomputes it
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        # stored unwrapped (as PyTorch does) so that remove_spectral_norm can find them
        h = _Handle(module._state_dict_hooks)
        module._state_dict_hooks[h.id] = SpectralNormStateDictHook(fn)
        h = _Handle(module._load_state_dict_pre_hooks)
        module._load_state_dict_pre_hooks[h.id] = SpectralNormLoadStateDictPreHook(fn)
        return fn


class SpectralNormLoadStateDictPreHook:
    """Converts version-0 checkpoints (<name>, <name>_orig, <name>_u; no <name>_v)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(
        self,
        state_dict,
        prefix,
        local_metadata,
        strict,
        missing_keys,
        unexpected_keys,
        error_msgs,
    ):
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is not None and version >= 1:
            return
        weight_key = prefix + fn.name
        if (
            version is None
            and all(weight_key + s in state_dict for s in ("_orig", "_u", "_v"))
            and weight_key not in state_dict
        ):
            # a current-format state dict that lost its metadata
            return
        has_missing_keys = False
        for suffix in ("_orig", "", "_u"):
            key = weight_key + suffix
            if key not in state_dict:
                has_missing_keys = True
                if strict:
                    missing_keys.append(key)
        if has_missing_keys:
            return
        with ag.no_grad():
            weight_orig = state_dict[weight_key + "_orig"]
            weight = state_dict.pop(weight_key)
            sigma = (weight_orig / weight).mean()
            weight_mat = fn.reshape_weight_to_matrix(weight_orig)
            u = state_dict[weight_key + "_u"]
            state_dict[weight_key + "_v"] = fn._solve_v_and_rescale(weight_mat, u, sigma)


class SpectralNormStateDictHook:
    """Records the format version in the module's state-dict metadata."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        if "spectral_norm" not in local_metadata:
            local_metadata["spectral_norm"] = {}
        key = self.fn.name + ".version"
        if key in local_metadata["spectral_norm"]:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        local_metadata["spectral_norm"][key] = self.fn._version


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Rescale ``module.<name>`` by its largest singular value before every forward.

    >>> d = spectral_norm(nn.Conv2d(3, 64, 4, 2, 1))
    >>> sorted(d.state_dict())
    ['bias', 'weight_orig', 'weight_u', 'weight_v']
    """
    if dim is None:
        from ember_nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Fold the normalised weight back into one parameter ``<name>``."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for k, hook in list(module._state_dict_hooks.items()):
        if isinstance(hook, SpectralNormStateDictHook) and hook.fn.name == name:
            del module._state_dict_hooks[k]
            break
    for k, hook in list(module._load_state_dict_pre_hooks.items()):
        if isinstance(hook, SpectralNormLoadStateDictPreHook) and hook.fn.name == name:
            del module._load_state_dict_pre_hooks[k]
            break
    return module
