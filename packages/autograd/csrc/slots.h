/* Reading __slots__ fields at their offsets (included by autograd.c).
 *
 * Note [Slot reads]
 * The handler reads a few fields of every tensor it records -- its _shape,
 * _dtype and _storage, the storage's _version and _device, the dtype's
 * differentiable flag -- and the op's impl.  Each is a __slots__ member of its
 * class, so its value sits at a fixed offset in the object; reading it there
 * skips what PyObject_GetAttr does for every read (the attribute lookup along
 * the type's MRO, then the member descriptor's call), which was a good part of
 * what recording an op cost.  A field is read at its offset only from an
 * object whose type resolves the name to the very member descriptor found at
 * setup (_PyType_Lookup, answered from CPython's type attribute cache) and
 * uses the generic attribute lookup, so a subclass that redefines the name or
 * overrides __getattribute__ gets what Python would give it.  An unset slot
 * goes through PyObject_GetAttr too, which raises the usual AttributeError.
 */
#ifndef EMBER_AUTOGRAD_SLOTS_H
#define EMBER_AUTOGRAD_SLOTS_H

#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject* name;    /* interned */
    PyObject* descr;   /* the member descriptor found at setup (a strong reference) */
    Py_ssize_t offset; /* its offset in the object; -1: not a slot, always PyObject_GetAttr */
} SlotField;

/* Find name's member descriptor in cls (0, or -1 with an exception).  A name
 * that is not an object slot there is read with PyObject_GetAttr. */
static int slot_field_init(SlotField* f, PyTypeObject* cls, PyObject* name) {
    PyObject* d = _PyType_Lookup(cls, name); /* borrowed */
    Py_ssize_t offset = -1;
    if (d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyMemberDef* m = ((PyMemberDescrObject*)d)->d_member;
        if (m->type == T_OBJECT_EX || m->type == T_OBJECT) offset = m->offset;
    }
    Py_XINCREF(d);
    Py_XSETREF(f->descr, d);
    f->name = name;
    f->offset = offset;
    return 0;
}

/* o.<name>, a new reference (NULL with an exception on error). */
static inline PyObject* slot_get(PyObject* o, const SlotField* f) {
    PyTypeObject* t = Py_TYPE(o);
    if (f->offset >= 0 && t->tp_getattro == PyObject_GenericGetAttr &&
        _PyType_Lookup(t, f->name) == f->descr) {
        PyObject* v = *(PyObject**)((char*)o + f->offset);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(o, f->name);
}

#endif
