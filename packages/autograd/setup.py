# Metadata lives in pyproject.toml; setup.py only wires in the cffi extension.
from setuptools import setup

setup(cffi_modules=["csrc/build.py:ffibuilder"])
