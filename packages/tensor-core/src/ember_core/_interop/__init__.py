"""Zero-copy interop: DLPack and the CUDA Array Interface (dlpack), NumPy,
Python values and pickling (numpy)."""
