"""ember's namespace for the Python array API standard (2024.12), returned by
``Tensor.__array_namespace__()``: code written against the standard runs on
ember tensors.

>>> import ember_core as ec
>>> xp = ec.ones(3).__array_namespace__()
>>> xp.sum(xp.arange(4)).item()
6

As far as ember's ops reach, checked against array-api-strict by
tests/test_array_api_conformance.py.  What cannot conform:

- complex64/complex128 and uint16/32/64 are there; the wide unsigned integers
  have the few kernels PyTorch has for them (mul, ==, !=, bitwise and/or/xor,
  sort), so most arithmetic on them raises; the ``fft`` extension is
  ember_core.fft's; the ``linalg`` extension covers real floating dtypes;
- the array object is ember's PyTorch-compatible Tensor, so where PyTorch
  and the standard part ways it follows PyTorch: ``size`` is a method rather
  than an attribute; an operator between an array and a 0-d array of another
  dtype promotes by PyTorch's rules (this namespace's functions follow the
  standard's); ``x[::-1]`` (negative slice steps) raises ValueError; there is
  no ``@=``; ``%`` gives a zero the dividend's sign (``remainder`` here gives
  it the divisor's); ``operator.index`` accepts a 0-d bool array.
"""

import math as _math

from ember_core._tensor import dtype as _D
from ember_core.array_api import fft as fft
from ember_core.array_api import linalg as linalg
from ember_core.array_api._creation import *  # noqa: F403
from ember_core.array_api._creation import __all__ as _creation
from ember_core.array_api._data_types import *  # noqa: F403
from ember_core.array_api._data_types import __all__ as _data_types
from ember_core.array_api._elementwise import *  # noqa: F403
from ember_core.array_api._elementwise import __all__ as _elementwise
from ember_core.array_api._info import __array_namespace_info__ as __array_namespace_info__
from ember_core.array_api._linalg import *  # noqa: F403
from ember_core.array_api._linalg import __all__ as _linalg
from ember_core.array_api._manipulation import *  # noqa: F403
from ember_core.array_api._manipulation import __all__ as _manipulation
from ember_core.array_api._reductions import *  # noqa: F403
from ember_core.array_api._reductions import __all__ as _reductions
from ember_core.array_api._searching import *  # noqa: F403
from ember_core.array_api._searching import __all__ as _searching

# versions of the standard this namespace can stand in for (all but 2024.12
# are subsets of it)
SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

__array_api_version__ = "2024.12"

# data types
bool = _D.bool_  # noqa: A001 - the standard's name
int8 = _D.int8
int16 = _D.int16
int32 = _D.int32
int64 = _D.int64
uint8 = _D.uint8
uint16 = _D.uint16
uint32 = _D.uint32
uint64 = _D.uint64
float32 = _D.float32
float64 = _D.float64
complex64 = _D.complex64
complex128 = _D.complex128

# constants
e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

__all__ = sorted(
    [
        "__array_api_version__",
        "__array_namespace_info__",
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "complex64",
        "complex128",
        "e",
        "inf",
        "nan",
        "pi",
        "newaxis",
        "fft",
        "linalg",
    ]
    + _creation
    + _data_types
    + _elementwise
    + _linalg
    + _manipulation
    + _reductions
    + _searching
)
