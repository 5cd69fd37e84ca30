/* The DLPack entry points of dlpack.c.  They take and return Python objects,
 * which cffi cannot express, so they are not part of the cdef: ember_core._interop.dlpack
 * calls them through ctypes.PyDLL.  Their constants (EC_DLPACK_*) are in
 * ember_core.h, where Python reads them. */
#ifndef EMBER_CORE_DLPACK_H
#define EMBER_CORE_DLPACK_H

#include <Python.h>
#include <stdint.h>

#include "ember_core.h"

/* A new DLPack capsule ("dltensor_versioned" or legacy "dltensor") over `data`
 * (strides in elements, any sign) on DLPack device (device_type, device_id),
 * holding a reference to `owner` until the consumer's deleter runs.  On
 * failure: None and *status set. */
PyObject* ec_dlpack_to_capsule(PyObject* owner, ec_ptr data, int ndim, const int64_t* shape,
                               const int64_t* strides, int dtype, int versioned, uint64_t flags,
                               int device_type, int device_id, int* status);

/* Consume a producer's capsule: fill info[EC_DLPACK_INFO_SIZE] (indices
 * EC_DLPACK_*), shape and strides (EC_MAX_DIMS each), rename the capsule as used
 * and return an owner object that calls the producer's deleter when it dies.
 * On failure (capsule left untouched): None and *status set. */
PyObject* ec_dlpack_from_capsule(PyObject* capsule, int64_t* info, int64_t* shape,
                                 int64_t* strides, int* status);

#endif
