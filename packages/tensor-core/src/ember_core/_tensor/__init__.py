"""The Tensor and what it is made of: storage, dtype, device, views over the
same memory, copies and conversions, creation, and printing."""
