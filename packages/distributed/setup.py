# Metadata lives in pyproject.toml; setup.py wires in the cffi extension (the MPI
# fast path) and adds the version, the pins between
# ember packages and the classifiers (Note [One version], ember_release.py).
import pathlib
import sys

from setuptools import setup

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import ember_release  # noqa: E402

setup(cffi_modules=["csrc/build.py:ffibuilder"], **ember_release.setup_kwargs(HERE))
