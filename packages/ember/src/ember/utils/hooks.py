"""ember.utils.hooks (torch.utils.hooks): ``RemovableHandle``, the handle of a
hook kept in a dict under the handle's id, as PyTorch's is used by code that
keeps its own hook registries."""

import weakref

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """``handle = RemovableHandle(hooks); hooks[handle.id] = fn``; then
    ``handle.remove()`` (or leaving ``with handle:``) deletes the entry from
    ``hooks`` and from every dict in ``extra_dict``.  The dicts are held weakly."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = [] if extra_dict is None else extra_dict
        if isinstance(extras, dict):
            extras = [extras]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self):
        hooks = self.hooks_dict_ref()
        if hooks is not None and self.id in hooks:
            del hooks[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self):
        if self.extra_dict_ref is None:
            return (self.hooks_dict_ref(), self.id)
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        self.hooks_dict_ref = weakref.ref(state[0]) if state[0] is not None else (lambda: None)
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in state[2]) if len(state) > 2 else ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
