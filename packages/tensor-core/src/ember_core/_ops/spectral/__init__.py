"""Spectral analysis: the short-time Fourier transform and window functions
(the FFTs are ember_core.fft)."""
