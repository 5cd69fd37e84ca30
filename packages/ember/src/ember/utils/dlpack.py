"""``torch.utils.dlpack``: DLPack capsules to and from tensors, CPU and CUDA
(ember_core._interop.dlpack; Note [DLPack], Note [DLPack streams])."""

from ember_core._interop.dlpack import DLDeviceType, from_dlpack, to_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]
