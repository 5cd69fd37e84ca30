"""Zero-copy interop: DLPack and the CUDA Array Interface (dlpack), NumPy,
Python values and pickling (numpy)."""


def __getattr__(name):
    # Tensors pickled before the core's modules were grouped name their rebuild
    # function ember_core._interop._rebuild; it lives in _interop.numpy now.
    if name == "_rebuild":
        from ember_core._interop.numpy import _rebuild

        return _rebuild
    raise AttributeError(f"module 'ember_core._interop' has no attribute {name!r}")
