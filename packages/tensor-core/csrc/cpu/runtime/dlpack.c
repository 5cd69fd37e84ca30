/* DLPack capsules: export a tensor's memory to another library and import
 * another library's memory, without copying.
 *
 * This is the one C file of ember_core that uses the Python C API: a DLPack
 * capsule is a PyCapsule whose destructor, and the managed tensor's deleter,
 * run from arbitrary places (a consumer's dealloc, another thread, during
 * exception unwinding), so they must take the GIL and preserve any exception in
 * flight, which only C can do reliably.  cffi cannot pass PyObject*, so Python
 * reaches the two entry points below through ctypes.PyDLL (see _interop/dlpack.py);
 * the layout of the structs follows dlpack.h (DLPack 1.0), which ember does
 * not vendor.
 *
 * Like every kernel, these functions never raise: failures return None and a
 * status (message in ec_last_message()); Python turns it into BufferError.
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <stdlib.h>

#include "core.h"
#include "dlpack.h"

/* ----------------------------------------------------------- DLPack ABI */

enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };

typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
    void* data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t* shape;
    int64_t* strides; /* elements; NULL means compact row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void* manager_ctx;
    void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

typedef struct { uint32_t major, minor; } DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void* manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned* self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

static const char NAME_LEGACY[] = "dltensor";
static const char NAME_VERSIONED[] = "dltensor_versioned";
static const char NAME_LEGACY_USED[] = "used_dltensor";
static const char NAME_VERSIONED_USED[] = "used_dltensor_versioned";
static const char NAME_OWNER[] = "ember_core.dlpack_owner";

/* ------------------------------------------------------------- export */

/* What ember hands out: the managed tensor, then shape and strides. */
typedef struct {
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } m;
    int64_t dims[]; /* shape (ndim), then strides (ndim) */
} export_block;

static const struct { int code, bits; } DTYPE_TO_DL[EC_NUM_DTYPES] = {
    [EC_BOOL] = {kDLBool, 8},     [EC_UINT8] = {kDLUInt, 8},    [EC_INT8] = {kDLInt, 8},
    [EC_INT16] = {kDLInt, 16},    [EC_INT32] = {kDLInt, 32},    [EC_INT64] = {kDLInt, 64},
    [EC_FLOAT16] = {kDLFloat, 16}, [EC_BFLOAT16] = {kDLBfloat, 16},
    [EC_FLOAT32] = {kDLFloat, 32}, [EC_FLOAT64] = {kDLFloat, 64},
    [EC_UINT16] = {kDLUInt, 16},  [EC_UINT32] = {kDLUInt, 32},  [EC_UINT64] = {kDLUInt, 64},
    [EC_COMPLEX64] = {kDLComplex, 64}, [EC_COMPLEX128] = {kDLComplex, 128},
};

/* Drop the reference to the exporting tensor.  Deleters may be called from any
 * thread and while an exception is propagating. */
static void release_owner(void* owner) {
    if (!owner) return;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    Py_DecRef((PyObject*)owner);
    PyErr_Restore(type, value, tb);
    PyGILState_Release(g);
}

static void delete_legacy(DLManagedTensor* self) {
    release_owner(self->manager_ctx);
    free(self);
}

static void delete_versioned(DLManagedTensorVersioned* self) {
    release_owner(self->manager_ctx);
    free(self);
}

/* A capsule nobody consumed still owns its managed tensor. */
static void export_capsule_destructor(PyObject* capsule) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyCapsule_IsValid(capsule, NAME_VERSIONED)) {
        DLManagedTensorVersioned* m = PyCapsule_GetPointer(capsule, NAME_VERSIONED);
        if (m && m->deleter) m->deleter(m);
    } else if (PyCapsule_IsValid(capsule, NAME_LEGACY)) {
        DLManagedTensor* m = PyCapsule_GetPointer(capsule, NAME_LEGACY);
        if (m && m->deleter) m->deleter(m);
    }
    PyErr_Clear(); /* nothing above may leave one, but never leak it */
    PyErr_Restore(type, value, tb);
}

static PyObject* none_with(int* status, int st) {
    *status = st;
    Py_IncRef(Py_None);
    return Py_None;
}

PyObject* ec_dlpack_to_capsule(PyObject* owner, ec_ptr data, int ndim, const int64_t* shape,
                               const int64_t* strides, int dtype, int versioned, uint64_t flags,
                               int device_type, int device_id, int* status) {
    *status = EC_OK;
    if (!ec_valid_dtype(dtype) || ndim < 0 || ndim > EC_MAX_DIMS)
        return none_with(status, ec_fail(EC_ERR_INVALID, "bad dtype %d or ndim %d", dtype, ndim));
    size_t n = (size_t)(ndim > 0 ? ndim : 1);
    export_block* b = calloc(1, sizeof(export_block) + 2 * n * sizeof(int64_t));
    if (!b) return none_with(status, ec_fail(EC_ERR_NOMEM, "out of memory for a DLPack header"));
    int64_t* sh = b->dims;
    int64_t* st = b->dims + n;
    for (int d = 0; d < ndim; d++) {
        sh[d] = shape[d];
        st[d] = strides[d];
    }
    DLTensor* t = versioned ? &b->m.versioned.dl_tensor : &b->m.legacy.dl_tensor;
    t->data = (void*)data;
    t->device.device_type = device_type; /* kDLCPU, or kDLCUDA with the GPU's ordinal */
    t->device.device_id = device_id;
    t->ndim = ndim;
    t->dtype.code = (uint8_t)DTYPE_TO_DL[dtype].code;
    t->dtype.bits = (uint8_t)DTYPE_TO_DL[dtype].bits;
    t->dtype.lanes = 1;
    t->shape = sh;
    t->strides = st;
    t->byte_offset = 0;
    Py_IncRef(owner);
    PyObject* capsule;
    if (versioned) {
        b->m.versioned.version.major = EC_DLPACK_MAJOR;
        b->m.versioned.version.minor = EC_DLPACK_MINOR;
        b->m.versioned.manager_ctx = owner;
        b->m.versioned.deleter = delete_versioned;
        b->m.versioned.flags = flags;
        capsule = PyCapsule_New(&b->m.versioned, NAME_VERSIONED, export_capsule_destructor);
    } else {
        b->m.legacy.manager_ctx = owner;
        b->m.legacy.deleter = delete_legacy;
        capsule = PyCapsule_New(&b->m.legacy, NAME_LEGACY, export_capsule_destructor);
    }
    if (!capsule) {
        PyErr_Clear();
        Py_DecRef(owner);
        free(b);
        return none_with(status, ec_fail(EC_ERR_NOMEM, "could not create the DLPack capsule"));
    }
    return capsule;
}

/* ------------------------------------------------------------- import */

/* The owner of imported memory: a capsule holding the managed tensor, whose
 * destructor calls the producer's deleter when the last ember tensor viewing
 * the memory goes. */
static void owner_capsule_destructor(PyObject* capsule) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    void* m = PyCapsule_GetPointer(capsule, NAME_OWNER);
    int versioned = (int)(intptr_t)PyCapsule_GetContext(capsule);
    if (m) {
        if (versioned) {
            DLManagedTensorVersioned* v = m;
            if (v->deleter) v->deleter(v);
        } else {
            DLManagedTensor* l = m;
            if (l->deleter) l->deleter(l);
        }
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

PyObject* ec_dlpack_from_capsule(PyObject* capsule, int64_t* info, int64_t* shape,
                                 int64_t* strides, int* status) {
    *status = EC_OK;
    int versioned;
    void* m;
    DLTensor* t;
    uint64_t flags = 0;
    if (PyCapsule_IsValid(capsule, NAME_VERSIONED)) {
        versioned = 1;
        DLManagedTensorVersioned* v = PyCapsule_GetPointer(capsule, NAME_VERSIONED);
        if (!v) goto bad_capsule;
        if (v->version.major > EC_DLPACK_MAJOR)
            return none_with(status, ec_fail(EC_ERR_VALUE,
                                             "the capsule has DLPack version %u.%u; ember "
                                             "understands major version %d",
                                             v->version.major, v->version.minor, EC_DLPACK_MAJOR));
        m = v;
        t = &v->dl_tensor;
        flags = v->flags;
    } else if (PyCapsule_IsValid(capsule, NAME_LEGACY)) {
        versioned = 0;
        DLManagedTensor* l = PyCapsule_GetPointer(capsule, NAME_LEGACY);
        if (!l) goto bad_capsule;
        m = l;
        t = &l->dl_tensor;
    } else {
        goto bad_capsule;
    }
    if (t->ndim < 0 || t->ndim > EC_MAX_DIMS)
        return none_with(status, ec_fail(EC_ERR_VALUE, "a DLPack tensor with %d dims (ember "
                                         "supports at most %d)", (int)t->ndim, EC_MAX_DIMS));
    info[EC_DLPACK_DATA] = (int64_t)((uintptr_t)t->data + t->byte_offset);
    info[EC_DLPACK_DEVICE_TYPE] = t->device.device_type;
    info[EC_DLPACK_DEVICE_ID] = t->device.device_id;
    info[EC_DLPACK_NDIM] = t->ndim;
    info[EC_DLPACK_CODE] = t->dtype.code;
    info[EC_DLPACK_BITS] = t->dtype.bits;
    info[EC_DLPACK_LANES] = t->dtype.lanes;
    info[EC_DLPACK_FLAGS] = (int64_t)flags;
    info[EC_DLPACK_HAS_STRIDES] = t->strides != NULL;
    for (int d = 0; d < t->ndim; d++) {
        shape[d] = t->shape[d];
        strides[d] = t->strides ? t->strides[d] : 0;
    }
    /* Take ownership: the producer's capsule no longer frees the tensor. */
    PyObject* owner = PyCapsule_New(m, NAME_OWNER, owner_capsule_destructor);
    if (!owner) {
        PyErr_Clear();
        return none_with(status, ec_fail(EC_ERR_NOMEM, "could not take ownership of the capsule"));
    }
    PyCapsule_SetContext(owner, (void*)(intptr_t)versioned);
    if (PyCapsule_SetName(capsule, versioned ? NAME_VERSIONED_USED : NAME_LEGACY_USED) != 0) {
        PyErr_Clear();
        PyCapsule_SetDestructor(owner, NULL);
        Py_DecRef(owner);
        return none_with(status, ec_fail(EC_ERR_INVALID, "could not mark the capsule as used"));
    }
    return owner;

bad_capsule:
    PyErr_Clear();
    return none_with(status, ec_fail(EC_ERR_VALUE, "expected an unconsumed DLPack capsule "
                                     "('dltensor' or 'dltensor_versioned'); a capsule can be "
                                     "consumed only once"));
}
