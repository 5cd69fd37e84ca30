/* CPython-level fast paths of ember_core (the rest of csrc/ is plain C behind
 * cffi).
 *
 * Note [C empty]
 * Making the result tensor of a small op cost more than the op's kernel: two
 * Python frames (_tensor.empty, _storage.allocate), two objects and thirteen
 * slot assignments, about 0.9 us of a 2 us `a + b` on 4x4.  ``empty(shape,
 * dtype, dev=CPU)`` here does the same for the common case -- a CPU tensor from
 * the default host allocator (no allocator installed with set_allocator), a
 * tuple of non-negative ints -- writing the slots of the Python classes
 * (_tensor.Tensor, _storage._HostStorage) at their member descriptors' offsets.
 * Everything else (other devices, installed allocators, odd shapes, sizes past
 * what the Python path accepts) calls the Python version, _tensor._empty_py,
 * which stays the reference: the two must make the same tensor.  ec_py_install
 * adds ``configure`` and ``empty`` to the module ember_core._C once, at import
 * (_tensor/tensor.py calls configure with the classes and entry points). */

#include <Python.h>
#include <structmember.h> /* PyMemberDef, T_OBJECT_EX */
#include <stdint.h>

#include "ember_core.h"

typedef uintptr_t (*host_malloc_fn)(uint64_t);
typedef int (*host_free_fn)(uintptr_t);

static PyTypeObject *tensor_type, *storage_type;
static PyObject *cpu, *allocators, *strides_cache, *strides_fn, *oom_fn, *fallback, *s_itemsize, *zero;
static host_malloc_fn host_malloc;
static host_free_fn host_free;

/* slot offsets: Tensor's, then the storage's */
enum { T_STORAGE, T_SHAPE, T_STRIDE, T_OFFSET, T_DTYPE, T_PTR, T_NUMEL, T_CONTIG, T_N };
enum { S_PTR, S_NBYTES, S_VERSION, S_OWNER, S_DEVICE, S_N };
static const char* tensor_slots[T_N] = {"_storage", "_shape", "_stride", "_offset",
                                        "_dtype",   "_ptr",   "_numel",  "_contig"};
static const char* storage_slots[S_N] = {"_ptr", "_nbytes", "_version", "_owner", "_device"};
static Py_ssize_t tensor_off[T_N], storage_off[S_N];

#define MAX_BYTES ((int64_t)1 << 62) /* _storage._MAX_BYTES */

/* The offset of slot `name` of type t (a member descriptor of an object slot). */
static int slot_offset(PyTypeObject* t, const char* name, Py_ssize_t* off) {
    PyObject* d = PyObject_GetAttrString((PyObject*)t, name);
    if (d == NULL) return -1;
    int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) &&
             ((PyMemberDescrObject*)d)->d_member->type == T_OBJECT_EX;
    if (ok) *off = ((PyMemberDescrObject*)d)->d_member->offset;
    Py_DECREF(d);
    if (!ok) PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", t->tp_name, name);
    return ok ? 0 : -1;
}

/* A fresh object's slot (NULL until now) takes v, a new reference. */
static inline void put(PyObject* o, Py_ssize_t off, PyObject* v) {
    *(PyObject**)((char*)o + off) = v;
}

/* Note [Host storage finalizer]
 * A host storage's memory goes back to the default host allocator when the
 * storage goes.  Done by a Python __del__ this cost a frame and a cffi call on
 * every dead tensor (~0.15 us of a small op); configure installs this C
 * finalizer on _HostStorage instead (the class has no __del__).  A storage whose
 * class changes (share_memory_) is finalized by its new class. */
static void host_storage_finalize(PyObject* self) {
    PyObject* p = *(PyObject**)((char*)self + storage_off[S_PTR]);
    if (p == NULL) return; /* never given memory */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    uintptr_t ptr = (uintptr_t)PyLong_AsUnsignedLongLong(p);
    if (PyErr_Occurred()) PyErr_WriteUnraisable(self);
    else host_free(ptr);
    PyErr_Restore(type, value, tb);
}

/* configure(Tensor, HostStorage, cpu, allocators, (strides_cache, contiguous_strides),
 *           (host_malloc_address, host_free_address), oom, fallback):
 * ember_allocator's default host allocator's C entry points */
static PyObject* configure(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 8 || !PyType_Check(args[0]) || !PyType_Check(args[1]) ||
        !PyDict_Check(args[3]) || !PyTuple_Check(args[4]) || PyTuple_GET_SIZE(args[4]) != 2 ||
        !PyDict_Check(PyTuple_GET_ITEM(args[4], 0))) {
        PyErr_SetString(PyExc_TypeError, "configure: bad arguments");
        return NULL;
    }
    PyTypeObject *tt = (PyTypeObject*)args[0], *st = (PyTypeObject*)args[1];
    for (int i = 0; i < T_N; i++)
        if (slot_offset(tt, tensor_slots[i], &tensor_off[i]) < 0) return NULL;
    for (int i = 0; i < S_N; i++)
        if (slot_offset(st, storage_slots[i], &storage_off[i]) < 0) return NULL;
    if (!PyTuple_Check(args[5]) || PyTuple_GET_SIZE(args[5]) != 2) {
        PyErr_SetString(PyExc_TypeError, "configure: (malloc, free) addresses expected");
        return NULL;
    }
    uintptr_t m_address = (uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(args[5], 0));
    uintptr_t f_address = (uintptr_t)PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(args[5], 1));
    if (PyErr_Occurred()) return NULL;
    if (s_itemsize == NULL && (s_itemsize = PyUnicode_InternFromString("itemsize")) == NULL)
        return NULL;
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL) return NULL;
    PyObject** keep[] = {(PyObject**)&tensor_type, (PyObject**)&storage_type, &cpu, &allocators,
                         NULL, NULL, &oom_fn, &fallback};
    for (int i = 0; i < 8; i++) {
        if (keep[i] == NULL) continue;
        Py_INCREF(args[i]);
        Py_XSETREF(*keep[i], args[i]);
    }
    PyObject* sc = PyTuple_GET_ITEM(args[4], 0);
    PyObject* sf = PyTuple_GET_ITEM(args[4], 1);
    Py_INCREF(sc);
    Py_XSETREF(strides_cache, sc);
    Py_INCREF(sf);
    Py_XSETREF(strides_fn, sf);
    host_malloc = (host_malloc_fn)m_address;
    host_free = (host_free_fn)f_address;
    storage_type->tp_finalize = host_storage_finalize; /* Note [Host storage finalizer] */
    Py_RETURN_NONE;
}

static PyObject* call_fallback(PyObject* const* args, Py_ssize_t nargs) {
    return PyObject_Vectorcall(fallback, args, nargs, NULL);
}

/* empty(shape, dtype, dev=CPU): Note [C empty] */
static PyObject* empty(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ember_core._C.empty: not configured");
        return NULL;
    }
    if (nargs < 2 || nargs > 3 || (nargs == 3 && args[2] != cpu) ||
        PyDict_GET_SIZE(allocators) != 0 || !PyTuple_CheckExact(args[0]))
        return call_fallback(args, nargs);
    PyObject *shape = args[0], *dtype = args[1];
    int64_t numel = 1;
    Py_ssize_t nd = PyTuple_GET_SIZE(shape);
    for (Py_ssize_t i = 0; i < nd; i++) {
        PyObject* d = PyTuple_GET_ITEM(shape, i);
        if (!PyLong_CheckExact(d)) return call_fallback(args, nargs);
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(d, &overflow);
        if (overflow || v < 0 || __builtin_mul_overflow(numel, (int64_t)v, &numel))
            return call_fallback(args, nargs);
    }
    PyObject* isz = PyObject_GetAttr(dtype, s_itemsize);
    if (isz == NULL) return NULL;
    long itemsize = PyLong_AsLong(isz);
    Py_DECREF(isz);
    if (itemsize == -1 && PyErr_Occurred()) return NULL;
    int64_t nbytes;
    if (itemsize <= 0 || __builtin_mul_overflow(numel, (int64_t)itemsize, &nbytes) ||
        nbytes > MAX_BYTES)
        return call_fallback(args, nargs);
    /* _tensor's memo of contiguous strides, filled by contiguous_strides */
    PyObject* stride = PyDict_GetItemWithError(strides_cache, shape);
    if (stride != NULL) Py_INCREF(stride);
    else if (PyErr_Occurred() || (stride = PyObject_CallOneArg(strides_fn, shape)) == NULL)
        return NULL;
    PyObject* nbytes_obj = PyLong_FromLongLong(nbytes);
    PyObject* numel_obj = PyLong_FromLongLong(numel);
    /* the tensor first: one whose slots are unset may go; a storage may not
     * (its __del__ frees its _ptr) */
    PyObject* t = tensor_type->tp_alloc(tensor_type, 0);
    PyObject *ptr_obj = NULL, *storage = NULL;
    if (nbytes_obj == NULL || numel_obj == NULL || t == NULL) goto fail;
    uintptr_t ptr = host_malloc((uint64_t)nbytes);
    if (ptr == 0) { /* the failed malloc counted its OOM: only build the exception */
        PyObject* r = PyObject_CallOneArg(oom_fn, nbytes_obj); /* raises */
        Py_XDECREF(r);
        goto fail;
    }
    ptr_obj = PyLong_FromUnsignedLongLong(ptr);
    if (ptr_obj != NULL) storage = storage_type->tp_alloc(storage_type, 0);
    if (storage == NULL) {
        host_free(ptr);
        goto fail;
    }
    Py_INCREF(ptr_obj); /* the storage's and the tensor's _ptr: one int */
    put(storage, storage_off[S_PTR], ptr_obj);
    put(storage, storage_off[S_NBYTES], nbytes_obj);
    Py_INCREF(zero);
    put(storage, storage_off[S_VERSION], zero);
    Py_INCREF(Py_None);
    put(storage, storage_off[S_OWNER], Py_None);
    Py_INCREF(cpu);
    put(storage, storage_off[S_DEVICE], cpu);
    put(t, tensor_off[T_STORAGE], storage);
    Py_INCREF(shape);
    put(t, tensor_off[T_SHAPE], shape);
    put(t, tensor_off[T_STRIDE], stride);
    Py_INCREF(zero);
    put(t, tensor_off[T_OFFSET], zero);
    Py_INCREF(dtype);
    put(t, tensor_off[T_DTYPE], dtype);
    put(t, tensor_off[T_PTR], ptr_obj);
    put(t, tensor_off[T_NUMEL], numel_obj);
    Py_INCREF(Py_True);
    put(t, tensor_off[T_CONTIG], Py_True);
    return t;
fail:
    Py_XDECREF(t);
    Py_XDECREF(ptr_obj);
    Py_XDECREF(nbytes_obj);
    Py_XDECREF(numel_obj);
    Py_DECREF(stride);
    return NULL;
}

static PyMethodDef functions[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL,
     "configure(Tensor, HostStorage, cpu, allocators, (strides memo, contiguous_strides), "
     "(malloc, free) "
     "addresses, oom, fallback): what empty needs (Note [C empty])"},
    {"empty", (PyCFunction)(void (*)(void))empty, METH_FASTCALL,
     "empty(shape, dtype, dev=CPU): a contiguous uninitialised tensor (Note [C empty])"},
    {NULL},
};

int ec_py_install(void) {
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = -1;
    PyObject* m = PyImport_ImportModule("ember_core._C");
    PyObject* name = m ? PyModule_GetNameObject(m) : NULL;
    if (name != NULL) {
        rc = 0;
        for (PyMethodDef* f = functions; rc == 0 && f->ml_name != NULL; f++) {
            PyObject* fn = PyCFunction_NewEx(f, NULL, name);
            if (fn == NULL || PyModule_AddObject(m, f->ml_name, fn) < 0) {
                Py_XDECREF(fn);
                rc = -1;
            }
        }
    }
    if (rc < 0) PyErr_Print();
    Py_XDECREF(name);
    Py_XDECREF(m);
    PyGILState_Release(g);
    return rc;
}
