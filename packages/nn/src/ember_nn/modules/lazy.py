"""Lazy modules: parameters whose shapes are decided by the first input.

A lazy module holds UninitializedParameter (and UninitializedBuffer) values.
Its first forward call materializes them from the input (initialize_parameters)
and then turns the module into its regular class (cls_to_become, e.g.
LazyLinear -> Linear); loading a state dict materializes them from the
checkpoint's shapes instead.  As torch.nn.modules.lazy.LazyModuleMixin."""

import itertools

import ember_autograd as ag
from ember_nn.parameter import is_lazy


class LazyModuleMixin:
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(
            self._infer_parameters, with_kwargs=True
        )

    def _lazy_load_hook(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if (
                key in state_dict
                and param is not None
                and is_lazy(param)
                and not is_lazy(state_dict[key])
            ):
                with ag.no_grad():
                    param.materialize(state_dict[key].shape)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}"
        )

    def has_uninitialized_params(self):
        return any(
            is_lazy(p) for p in itertools.chain(self._parameters.values(), self._buffers.values())
        )

    @staticmethod
    def _infer_parameters(module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError(
            "Modules with uninitialized parameters can't be used with `DataParallel`."
        )
