"""Type aliases of the optimizers' public signatures (torch.optim's names)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ember_core import Tensor

if TYPE_CHECKING:
    from ember_nn.modules.module import _Handle as RemovableHandle  # noqa: F401

# what an optimizer takes: tensors, (name, tensor) pairs, or parameter-group dicts
ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]
# swa_utils: avg_fn(averaged, current, num_averaged) -> the new average, and its
# in-place multi-tensor form
AvgFn = Callable[[Tensor, Tensor, Tensor | int], Tensor]
MultiAvgFn = Callable[[list[Tensor], list[Tensor], Tensor | int], None]
