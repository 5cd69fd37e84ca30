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
 * overrides __getattribute__ gets what Python would give it.  The last type
 * found to qualify is remembered with its version tag, which CPython changes
 * whenever the type or a base is modified, so the lookup runs once per type
 * change, not once per read.  An unset slot goes through PyObject_GetAttr too,
 * which raises the usual AttributeError.
 */
#ifndef EMBER_AUTOGRAD_SLOTS_H
#define EMBER_AUTOGRAD_SLOTS_H

#include <Python.h>
#include <structmember.h>

typedef struct {
    PyObject* name;    /* interned */
    PyObject* descr;   /* the member descriptor found at setup (a strong reference) */
    Py_ssize_t offset; /* its offset in the object; -1: not a slot, always PyObject_GetAttr */
    PyTypeObject* ok;  /* the last type that qualified (compared, never dereferenced) */
    unsigned int ok_tag; /* ... and its tp_version_tag then */
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
    f->ok = NULL;
    f->ok_tag = 0;
    return 0;
}

/* Does type t resolve f's name to f's descriptor, with the generic lookup? */
static inline int slot_type_ok(SlotField* f, PyTypeObject* t) {
    if (t == f->ok && t->tp_version_tag == f->ok_tag &&
        PyType_HasFeature(t, Py_TPFLAGS_VALID_VERSION_TAG))
        return 1;
    if (t->tp_getattro != PyObject_GenericGetAttr || _PyType_Lookup(t, f->name) != f->descr)
        return 0;
    /* _PyType_Lookup gave t a valid tag if it could; remember it only then */
    if (PyType_HasFeature(t, Py_TPFLAGS_VALID_VERSION_TAG)) {
        f->ok = t;
        f->ok_tag = t->tp_version_tag;
    }
    return 1;
}

/* o.<name>, a new reference (NULL with an exception on error). */
static inline PyObject* slot_get(PyObject* o, SlotField* f) {
    if (f->offset >= 0 && slot_type_ok(f, Py_TYPE(o))) {
        PyObject* v = *(PyObject**)((char*)o + f->offset);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(o, f->name);
}

#endif
