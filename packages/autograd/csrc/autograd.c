/* ember_autograd's hot paths in C.
 *
 * Note [C extension]
 * The handler runs for every op while ember_autograd is imported, and the
 * engine for every node of every backward, so what they cost per call is paid
 * millions of times.  Their work is on Python objects (tensors, nodes, tuples),
 * which cffi cannot pass, so this file uses the CPython API: the module is built
 * by cffi like the other packages' (csrc/build.py), and its one cffi function,
 * ea_install(), adds the types and functions below to the module object
 * ember_autograd._C when the package is imported.  What they do is described
 * where the Python code uses them; the Python code stays the reference for
 * every case the fast paths hand back to it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <structmember.h>

#include "ember_autograd.h"
#include "slots.h"

static char message[256];

const char* ea_last_message(void) { return message; }

/* ------------------------------------------------------------ thread state */

/* Note [Thread state]
 * Grad modes are per thread (PyTorch's rule).  A threading.local costs a
 * dictionary lookup per attribute read; the handler reads several per op, so
 * the state lives in C thread-local storage and ThreadState's attributes read
 * and write it directly.  Every ThreadState object shows the calling thread's
 * state; ember_autograd uses one (_grad_mode.state). */
typedef struct {
    int init;
    int enabled;           /* record graphs */
    int inference;         /* inference_mode */
    long below;            /* > 0 while an op's implementation runs under the handler */
    int anomaly;           /* detect_anomaly */
    int anomaly_check_nan; /* detect_anomaly(check_nan=...) */
    long fw_level;         /* forward-mode AD: the innermost open dual level */
    int multithreading;    /* set_multithreading_enabled (recorded only) */
} ThreadVars;

static _Thread_local ThreadVars tvars;

static inline ThreadVars* tv(void) {
    ThreadVars* t = &tvars;
    if (!t->init) {
        t->init = 1;
        t->enabled = 1;
        t->inference = 0;
        t->below = 0;
        t->anomaly = 0;
        t->anomaly_check_nan = 1;
        t->fw_level = -1;
        t->multithreading = 1;
    }
    return t;
}

typedef struct {
    PyObject_HEAD
} ThreadStateObject;

#define FLAG_ACCESSORS(field)                                                      \
    static PyObject* ts_get_##field(PyObject* self, void* c) {                     \
        return PyBool_FromLong(tv()->field);                                       \
    }                                                                              \
    static int ts_set_##field(PyObject* self, PyObject* v, void* c) {              \
        if (v == NULL) {                                                           \
            PyErr_SetString(PyExc_AttributeError, "cannot delete " #field);        \
            return -1;                                                             \
        }                                                                          \
        int b = PyObject_IsTrue(v);                                                \
        if (b < 0) return -1;                                                      \
        tv()->field = b;                                                           \
        return 0;                                                                  \
    }

#define INT_ACCESSORS(field)                                                       \
    static PyObject* ts_get_##field(PyObject* self, void* c) {                     \
        return PyLong_FromLong(tv()->field);                                       \
    }                                                                              \
    static int ts_set_##field(PyObject* self, PyObject* v, void* c) {              \
        if (v == NULL) {                                                           \
            PyErr_SetString(PyExc_AttributeError, "cannot delete " #field);        \
            return -1;                                                             \
        }                                                                          \
        long x = PyLong_AsLong(v);                                                 \
        if (x == -1 && PyErr_Occurred()) return -1;                                \
        tv()->field = x;                                                           \
        return 0;                                                                  \
    }

FLAG_ACCESSORS(enabled)
FLAG_ACCESSORS(inference)
FLAG_ACCESSORS(anomaly)
FLAG_ACCESSORS(anomaly_check_nan)
FLAG_ACCESSORS(multithreading)
INT_ACCESSORS(below)
INT_ACCESSORS(fw_level)

#define GETSET(field, doc) {#field, ts_get_##field, ts_set_##field, doc, NULL}

static PyGetSetDef ts_getset[] = {
    GETSET(enabled, "grad mode: record graphs"),
    GETSET(inference, "inference_mode is on"),
    GETSET(below, "> 0 while an op's implementation runs under the handler"),
    GETSET(anomaly, "anomaly detection is on"),
    GETSET(anomaly_check_nan, "anomaly detection checks for NaN"),
    GETSET(fw_level, "forward-mode AD: the innermost open dual level"),
    GETSET(multithreading, "set_multithreading_enabled's flag"),
    {NULL},
};

static PyTypeObject ThreadStateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember_autograd._C.ThreadState",
    .tp_basicsize = sizeof(ThreadStateObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The calling thread's grad-mode state (Note [Thread state]).",
    .tp_getset = ts_getset,
    .tp_new = PyType_GenericNew,
};

/* ----------------------------------------------------------- Python refs */

/* Interned attribute names. */
static PyObject *s__rg, *s_grad_fn, *s__output_nr, *s__base, *s__inference, *s__storage,
    *s__version, *s__shape, *s__dtype, *s__stride, *s__offset, *s__device,
    *s_differentiable, *s__vv, *s__acc, *s_impl, *s_result, *s__unpack_slow, *s_fn,
    *s_wants_needs, *s_multi_grad, *s_needs, *s_name, *s_to, *s_apply, *s_release, *s__ctx,
    *s__hooks, *s__post_acc_hooks, *s__grad, *s_post_hooks, *s_clone, *s__custom_view;

/* Fields read at their offsets (Note [Slot reads] in slots.h): names set by
 * install(), descriptors and offsets by setup() from the classes it is given. */
static SlotField F_shape = {.offset = -1}, F_dtype = {.offset = -1}, F_storage = {.offset = -1},
                 F_stride = {.offset = -1}, F_offset = {.offset = -1}, F_version = {.offset = -1},
                 F_device = {.offset = -1}, F_differentiable = {.offset = -1},
                 F_impl = {.offset = -1};

/* Set once by setup() (_handler.py): the Python side of the fast paths. */
static PyTypeObject* TensorType;
static PyObject* infos;           /* op -> OpInfo */
static PyObject* py_info;         /* _handler._info(op): makes and registers an OpInfo */
static PyObject* py_record;       /* _handler._record(op, info, args, call) */
static PyObject* py_record_checked;
static PyObject* py_handle_inplace;
static PyObject* py_edge;         /* _handler._edge(t) */
static PyObject* py_accumulator;  /* _node.accumulator(t) */
static PyObject* py_alias;        /* ember_core._tensor.tensor.alias(t) */
static PyObject* py_saved_result; /* _handler._saved_result(result, diff, name, keep) */
static PyObject* hooks_stack;     /* _node.hooks_stack */
static PyObject* call_impl;       /* ember_core's Op.call_impl (the end of the handler chain) */
static PyTypeObject* SavedCls;    /* _node.SavedTensor (a subclass of SavedTensorBase) */
static PyTypeObject* AccCls;      /* _node.AccumulateGrad (a subclass of AccumulateGradBase) */
static PyObject* no_edge;         /* (None, 0) */
static PyObject* one;             /* 1 */
static PyObject* no_kwargs;       /* {} (handlers get an empty kwargs dict) */
static PyObject* last_write;      /* _node.last_write: storage -> (version, op name, location) */
static PyObject* last_write_data; /* its dict (weak references -> records) */
static char** own_dirs;           /* ember's package directories (Note [Write notes]) */
static Py_ssize_t n_own_dirs;
/* set by setup_engine() (_engine.py) */
static PyTypeObject* OpNodeCls;   /* _formula.OpNode */
static PyObject* py_sum_to;       /* _formula.sum_to(g, shape) */
static PyObject* py_real_grad;    /* _formula.real_grad(g, dtype): Note [Complex gradients] */
static PyObject* py_zeros_for_missing;
static PyObject* py_pre_hooks;    /* _engine._pre_hooks(node, extra, grads) */
static PyObject* py_post_hooks;   /* _engine._post_hooks(extra, result, grads_in) */
static PyObject* py_accumulate;   /* _engine._accumulate(var, g, create_graph, owned) */
static PyObject* py_post_accumulate; /* _engine._post_accumulate_hooks(var) */
static PyObject* add_impl;        /* add_'s implementation: add_(input, other, alpha) */
static PyObject* py_run_node;     /* _anomaly.run_node(node, grads): apply, checked */

static inline int is_tensor(PyObject* o) {
    if (Py_TYPE(o) == TensorType) return 1;
    return PyObject_TypeCheck(o, TensorType);
}

/* A flag attribute (requires_grad, _inference ...) as a C truth value; -1 on error. */
static inline int flag(PyObject* o, PyObject* name) {
    PyObject* v = PyObject_GetAttr(o, name);
    if (v == NULL) return -1;
    int r = v == Py_True ? 1 : v == Py_False ? 0 : PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* t._storage._version as a C integer (-1 with an exception on error). */
static long long storage_version(PyObject* t) {
    PyObject* st = slot_get(t, &F_storage);
    if (st == NULL) return -1;
    PyObject* v = slot_get(st, &F_version);
    Py_DECREF(st);
    if (v == NULL) return -1;
    long long x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return x;
}

/* -------------------------------------------------------------- nodes */

/* Note [C nodes]
 * Every node's fields live in one C struct (_C.NodeBase): what the engine
 * reads (next_functions, the sequence number, the number of outputs, the
 * output metadata, the rare extras) and what a derivative-table node keeps
 * (its formula, the values its formula reads, its inputs' metadata).  The
 * Python classes (_node.Node and its subclasses) add behaviour and, where they
 * need more, their own __slots__.  A node's sequence number is given when it
 * is allocated (Note [Execution order] in _engine.py). */
typedef struct {
    PyObject_HEAD
    PyObject* next_functions;
    long long seq;
    Py_ssize_t n_outputs;
    PyObject* out_meta;
    PyObject* extra;
    PyObject* formula;
    PyObject* values;
    PyObject* in_meta;
    PyObject* weakreflist;
} NodeObject;

static long long next_seq = 0;

static PyObject* node_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
    NodeObject* n = (NodeObject*)type->tp_alloc(type, 0);
    if (n == NULL) return NULL;
    n->seq = next_seq++;
    n->n_outputs = 1;
    return (PyObject*)n;
}

static int node_traverse(NodeObject* n, visitproc visit, void* arg) {
    Py_VISIT(n->next_functions);
    Py_VISIT(n->out_meta);
    Py_VISIT(n->extra);
    Py_VISIT(n->formula);
    Py_VISIT(n->values);
    Py_VISIT(n->in_meta);
    return 0;
}

static int node_clear(NodeObject* n) {
    Py_CLEAR(n->next_functions);
    Py_CLEAR(n->out_meta);
    Py_CLEAR(n->extra);
    Py_CLEAR(n->formula);
    Py_CLEAR(n->values);
    Py_CLEAR(n->in_meta);
    return 0;
}

static void node_dealloc(NodeObject* n) {
    PyObject_GC_UnTrack(n);
    Py_TRASHCAN_BEGIN(n, node_dealloc)
    if (n->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject*)n);
    node_clear(n);
    Py_TYPE(n)->tp_free((PyObject*)n);
    Py_TRASHCAN_END
}

static PyMemberDef node_members[] = {
    {"next_functions", T_OBJECT, offsetof(NodeObject, next_functions), 0,
     "(node, input_nr) per input: where each input's gradient goes"},
    {"_seq", T_LONGLONG, offsetof(NodeObject, seq), 0, "creation order"},
    {"_n_outputs", T_PYSSIZET, offsetof(NodeObject, n_outputs), 0, NULL},
    {"_out_meta", T_OBJECT, offsetof(NodeObject, out_meta), 0, NULL},
    {"_extra", T_OBJECT, offsetof(NodeObject, extra), 0, NULL},
    {"_formula", T_OBJECT, offsetof(NodeObject, formula), 0, NULL},
    {"_values", T_OBJECT, offsetof(NodeObject, values), 0, NULL},
    {"_in_meta", T_OBJECT, offsetof(NodeObject, in_meta), 0, NULL},
    {NULL},
};

/* -------------------------------------------------------- saved tensors */

/* The fields of _node.SavedTensor (Note [Saved tensors] in _node.py): the
 * tensor (None once freed; for a hooked one, (packed,)), the storage version
 * at save time, the name of the op that saved it, its output number when it is
 * an output of the node that keeps it (-1 otherwise), and what saved-tensor
 * hooks need (None without hooks).  unpack() is here for the common case; the
 * Python class handles the others (_unpack_slow). */
typedef struct {
    PyObject_HEAD
    PyObject* t;
    long long version;
    PyObject* saved_by;
    Py_ssize_t output_nr;
    PyObject* hooked;
} SavedObject;

static int saved_traverse(SavedObject* s, visitproc visit, void* arg) {
    Py_VISIT(s->t);
    Py_VISIT(s->saved_by);
    Py_VISIT(s->hooked);
    return 0;
}

static int saved_clear(SavedObject* s) {
    Py_CLEAR(s->t);
    Py_CLEAR(s->saved_by);
    Py_CLEAR(s->hooked);
    return 0;
}

static void saved_dealloc(SavedObject* s) {
    PyObject_GC_UnTrack(s);
    saved_clear(s);
    Py_TYPE(s)->tp_free((PyObject*)s);
}

/* The saved tensor, as the node that keeps it reads it. */
static PyObject* saved_unpack_impl(SavedObject* s, PyObject* node) {
    PyObject* t = s->t;
    if (t == NULL || t == Py_None || (s->hooked != NULL && s->hooked != Py_None))
        return PyObject_CallMethodOneArg((PyObject*)s, s__unpack_slow, node);
    long long v = storage_version(t);
    if (v == -1 && PyErr_Occurred()) return NULL;
    if (v != s->version) return PyObject_CallMethodOneArg((PyObject*)s, s__unpack_slow, node);
    if (s->output_nr < 0) {
        Py_INCREF(t);
        return t;
    }
    /* an output of the node: an alias linked to it (Note [Saved tensors]) */
    PyObject* u = PyObject_CallOneArg(py_alias, t);
    if (u == NULL) return NULL;
    PyObject* nr = PyLong_FromSsize_t(s->output_nr);
    if (nr == NULL || PyObject_SetAttr(u, s__rg, Py_True) < 0 ||
        PyObject_SetAttr(u, s_grad_fn, node) < 0 || PyObject_SetAttr(u, s__output_nr, nr) < 0) {
        Py_XDECREF(nr);
        Py_DECREF(u);
        return NULL;
    }
    Py_DECREF(nr);
    return u;
}

static PyObject* saved_unpack(SavedObject* s, PyObject* node) {
    return saved_unpack_impl(s, node);
}

static PyMethodDef saved_methods[] = {
    {"unpack", (PyCFunction)saved_unpack, METH_O,
     "unpack(node): the saved tensor, checked against in-place writes since it was saved"},
    {NULL},
};

static PyMemberDef saved_members[] = {
    {"_t", T_OBJECT, offsetof(SavedObject, t), 0, NULL},
    {"_version", T_LONGLONG, offsetof(SavedObject, version), 0, NULL},
    {"_saved_by", T_OBJECT, offsetof(SavedObject, saved_by), 0, NULL},
    {"_output_nr", T_PYSSIZET, offsetof(SavedObject, output_nr), 0, NULL},
    {"_hooked", T_OBJECT, offsetof(SavedObject, hooked), 0, NULL},
    {NULL},
};

static PyTypeObject SavedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember_autograd._C.SavedTensorBase",
    .tp_basicsize = sizeof(SavedObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The fields of a saved tensor; _node.SavedTensor adds the rest.",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)saved_dealloc,
    .tp_traverse = (traverseproc)saved_traverse,
    .tp_clear = (inquiry)saved_clear,
    .tp_members = saved_members,
    .tp_methods = saved_methods,
};

/* A SavedTensor of input t (no saved-tensor hooks active). */
static PyObject* make_saved(PyObject* t, PyObject* saved_by) {
    long long v = storage_version(t);
    if (v == -1 && PyErr_Occurred()) return NULL;
    SavedObject* s = (SavedObject*)SavedCls->tp_alloc(SavedCls, 0);
    if (s == NULL) return NULL;
    Py_INCREF(t);
    s->t = t;
    s->version = v;
    Py_INCREF(saved_by);
    s->saved_by = saved_by;
    s->output_nr = -1;
    return (PyObject*)s;
}

/* ------------------------------------------------- derivative-table nodes */

/* _formula.OpNode.apply(grads): the gradients of the node's inputs from those
 * of its outputs -- the formula called with the values it saved, each
 * gradient then summed to its input's shape and cast to its dtype (the
 * reference is the docstring of _formula.py). */
static PyObject* unpack_value(PyObject* v, PyObject* node) {
    if (Py_TYPE(v) == SavedCls) return saved_unpack_impl((SavedObject*)v, node);
    int is_list = PyList_CheckExact(v);
    if ((is_list || PyTuple_CheckExact(v)) && PySequence_Fast_GET_SIZE(v) > 0) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        int any = 0;
        for (Py_ssize_t i = 0; i < n && !any; i++)
            any = Py_TYPE(PySequence_Fast_GET_ITEM(v, i)) == SavedCls;
        if (any) {
            PyObject* out = is_list ? PyList_New(n) : PyTuple_New(n);
            if (out == NULL) return NULL;
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject* x = PySequence_Fast_GET_ITEM(v, i);
                PyObject* u;
                if (Py_TYPE(x) == SavedCls) {
                    u = saved_unpack_impl((SavedObject*)x, node);
                    if (u == NULL) {
                        Py_DECREF(out);
                        return NULL;
                    }
                } else {
                    u = x;
                    Py_INCREF(u);
                }
                if (is_list) PyList_SET_ITEM(out, i, u);
                else PyTuple_SET_ITEM(out, i, u);
            }
            return out;
        }
    }
    Py_INCREF(v);
    return v;
}

/* A type's __name__ (tp_name without a module prefix). */
static const char* short_name(PyTypeObject* t) {
    const char* dot = strrchr(t->tp_name, '.');
    return dot ? dot + 1 : t->tp_name;
}

static PyObject* node_error(PyObject* node, const char* what, const char* arg) {
    PyObject* name = PyObject_CallMethodNoArgs(node, s_name);
    if (name != NULL) {
        PyErr_Format(PyExc_RuntimeError, what, name, arg);
        Py_DECREF(name);
    }
    return NULL;
}

static PyObject* formula_apply(NodeObject* node, PyObject* grads) {
    PyObject *f = node->formula, *values = node->values, *edges = node->next_functions;
    if (f == NULL || values == NULL || edges == NULL || node->in_meta == NULL ||
        !PyDict_Check(values) || !PyTuple_Check(edges)) {
        PyErr_SetString(PyExc_RuntimeError, "apply: not a derivative-table node");
        return NULL;
    }
    PyObject *kwargs = NULL, *fn = NULL, *gseq = NULL, *garg = NULL, *out = NULL, *result = NULL,
             *metas = NULL;
    kwargs = PyDict_New();
    if (kwargs == NULL) return NULL;
    Py_ssize_t pos = 0;
    PyObject *name, *v;
    while (PyDict_Next(values, &pos, &name, &v)) {
        PyObject* u = unpack_value(v, (PyObject*)node);
        if (u == NULL) goto done;
        int rc = PyDict_SetItem(kwargs, name, u);
        Py_DECREF(u);
        if (rc < 0) goto done;
    }
    int wants = flag(f, s_wants_needs);
    if (wants < 0) goto done;
    if (wants) {
        Py_ssize_t n = PyTuple_GET_SIZE(edges);
        PyObject* needs = PyTuple_New(n);
        if (needs == NULL) goto done;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject* e = PyTuple_GET_ITEM(edges, i);
            PyObject* b = PyTuple_Check(e) && PyTuple_GET_SIZE(e) > 0 &&
                                  PyTuple_GET_ITEM(e, 0) != Py_None
                              ? Py_True
                              : Py_False;
            Py_INCREF(b);
            PyTuple_SET_ITEM(needs, i, b);
        }
        int rc = PyDict_SetItem(kwargs, s_needs, needs);
        Py_DECREF(needs);
        if (rc < 0) goto done;
    }
    int multi = flag(f, s_multi_grad);
    if (multi < 0) goto done;
    gseq = PySequence_Tuple(grads);
    if (gseq == NULL) goto done;
    if (multi) {
        garg = gseq;
        Py_INCREF(garg);
    } else {
        if (PyTuple_GET_SIZE(gseq) < 1) {
            PyErr_SetString(PyExc_IndexError, "apply: no gradient");
            goto done;
        }
        garg = PyTuple_GET_ITEM(gseq, 0);
        Py_INCREF(garg);
    }
    fn = PyObject_GetAttr(f, s_fn);
    if (fn == NULL) goto done;
    PyObject* pargs = PyTuple_Pack(1, garg);
    if (pargs == NULL) goto done;
    out = PyObject_Call(fn, pargs, kwargs);
    Py_DECREF(pargs);
    if (out == NULL) goto done;
    if (!PyTuple_CheckExact(out)) Py_SETREF(out, PyTuple_Pack(1, out));
    if (out == NULL) goto done;
    Py_ssize_t n = PyTuple_GET_SIZE(edges);
    if (PyTuple_GET_SIZE(out) != n) {
        PyObject* counts = Py_BuildValue("(nn)", PyTuple_GET_SIZE(out), n);
        if (counts != NULL) {
            PyObject* name = PyObject_CallMethodNoArgs((PyObject*)node, s_name);
            if (name != NULL)
                PyErr_Format(PyExc_RuntimeError, "%S: formula returned %zd gradients for %zd inputs",
                             name, PyTuple_GET_SIZE(out), n);
            Py_XDECREF(name);
            Py_DECREF(counts);
        }
        goto done;
    }
    metas = PySequence_Fast(node->in_meta, "in_meta");
    if (metas == NULL) goto done;
    if (PySequence_Fast_GET_SIZE(metas) < n) n = PySequence_Fast_GET_SIZE(metas); /* zip */
    result = PyList_New(n);
    if (result == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject* g = PyTuple_GET_ITEM(out, i);
        PyObject* e = PyTuple_GET_ITEM(edges, i);
        if (g == Py_None || PyTuple_GET_ITEM(e, 0) == Py_None) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(result, i, Py_None);
            continue;
        }
        if (!is_tensor(g)) {
            node_error((PyObject*)node, "%S: formula returned %s, not a Tensor",
                       short_name(Py_TYPE(g)));
            goto done;
        }
        PyObject* meta = PySequence_Fast_GET_ITEM(metas, i);
        PyObject *shape = PyTuple_GET_ITEM(meta, 0), *dtype = PyTuple_GET_ITEM(meta, 1);
        Py_INCREF(g);
        PyObject* gs = slot_get(g, &F_shape);
        if (gs == NULL) {
            Py_DECREF(g);
            goto done;
        }
        int same = gs == shape ? 1 : PyObject_RichCompareBool(gs, shape, Py_EQ);
        Py_DECREF(gs);
        if (same < 0) {
            Py_DECREF(g);
            goto done;
        }
        if (!same) { /* undo broadcasting */
            PyObject* a2[2] = {g, shape};
            Py_SETREF(g, PyObject_Vectorcall(py_sum_to, a2, 2, NULL));
            if (g == NULL) goto done;
        }
        PyObject* gd = slot_get(g, &F_dtype);
        if (gd == NULL) {
            Py_DECREF(g);
            goto done;
        }
        Py_DECREF(gd); /* dtypes are singletons: identity is the test */
        if (gd != dtype) { /* the input's dtype (a complex gradient of a real input: its real part) */
            PyObject* a2[2] = {g, dtype};
            Py_SETREF(g, PyObject_Vectorcall(py_real_grad, a2, 2, NULL));
            if (g == NULL) goto done;
        }
        PyList_SET_ITEM(result, i, g);
    }
    Py_DECREF(kwargs);
    Py_XDECREF(fn);
    Py_XDECREF(gseq);
    Py_XDECREF(garg);
    Py_XDECREF(out);
    Py_XDECREF(metas);
    return result;
done:
    Py_XDECREF(kwargs);
    Py_XDECREF(fn);
    Py_XDECREF(gseq);
    Py_XDECREF(garg);
    Py_XDECREF(out);
    Py_XDECREF(metas);
    Py_XDECREF(result);
    return NULL;
}

static void saved_free(PyObject* v) {
    SavedObject* s = (SavedObject*)v;
    Py_INCREF(Py_None);
    Py_XSETREF(s->t, Py_None);
}

/* _formula.OpNode.release(): free the saved tensors after a backward without
 * retain_graph. */
static int formula_release(NodeObject* node) {
    PyObject* values = node->values;
    if (values == NULL || !PyDict_Check(values)) return 0;
    Py_ssize_t pos = 0;
    PyObject *name, *v;
    while (PyDict_Next(values, &pos, &name, &v)) {
        if (PyObject_TypeCheck(v, &SavedType)) {
            saved_free(v);
        } else if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
            for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(v); i++) {
                PyObject* x = PySequence_Fast_GET_ITEM(v, i);
                if (PyObject_TypeCheck(x, &SavedType)) saved_free(x);
            }
        }
    }
    return 0;
}

static PyObject* node_apply_formula(NodeObject* node, PyObject* grads) {
    return formula_apply(node, grads);
}

static PyObject* node_release_formula(NodeObject* node, PyObject* unused) {
    formula_release(node);
    Py_RETURN_NONE;
}

static PyMethodDef node_methods[] = {
    {"_apply_formula", (PyCFunction)node_apply_formula, METH_O,
     "OpNode.apply: the formula's gradients, summed to the inputs' shapes and dtypes"},
    {"_release_formula", (PyCFunction)node_release_formula, METH_NOARGS,
     "OpNode.release: free the saved tensors"},
    {NULL},
};

static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember_autograd._C.NodeBase",
    .tp_basicsize = sizeof(NodeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The fields of a graph node (Note [C nodes]); _node.Node adds the behaviour.",
    .tp_new = node_new,
    .tp_dealloc = (destructor)node_dealloc,
    .tp_traverse = (traverseproc)node_traverse,
    .tp_clear = (inquiry)node_clear,
    .tp_weaklistoffset = offsetof(NodeObject, weakreflist),
    .tp_members = node_members,
    .tp_methods = node_methods,
};

/* The sink of a leaf (_node.AccumulateGrad): a node with the leaf tensor it
 * accumulates into.  A leaf holds its AccumulateGrad weakly (``_acc``), as in
 * PyTorch, so a new one is made for each graph that uses the leaf: cheaply, by
 * accumulator() below (Note [Accumulator refs]). */
typedef struct {
    NodeObject node;
    PyObject* variable;
    PyObject* ref; /* the AccRef that points to this node, or NULL */
} AccObject;

/* Note [Accumulator refs]
 * A leaf used in an op while no graph holds its AccumulateGrad gets a new one
 * -- in a training loop, once per leaf per step, and in a loop of small ops on
 * leaves, once per op.  Held through a weakref.ref in the leaf's ``_acc``, each
 * new node cost a weak reference made, one freed and a dict write.  Instead
 * ``_acc`` holds an AccRef: a weak reference that can be re-aimed.  The node
 * it points to keeps it alive and, when cleared or freed, empties it; the next
 * node of the same leaf reuses it, with no allocation and no dict write.
 * Called, an AccRef returns its node or None, as a weakref.ref does, so Python
 * code reading ``_acc`` (which may also hold a weakref.ref there) needs no
 * case of its own.  Only the leaf an AccRef was made for re-aims it: one
 * found in another tensor's ``_acc`` (its dict copied) is only read. */
typedef struct {
    PyObject_HEAD
    AccObject* acc; /* borrowed: the node empties it before it goes */
    void* owner;    /* the leaf whose ``_acc`` it is (compared, never dereferenced) */
} AccRefObject;

static PyObject* accref_call(AccRefObject* r, PyObject* args, PyObject* kw) {
    if (PyTuple_GET_SIZE(args) || (kw != NULL && PyDict_GET_SIZE(kw))) {
        PyErr_SetString(PyExc_TypeError, "AccRef() takes no arguments");
        return NULL;
    }
    PyObject* o = r->acc != NULL ? (PyObject*)r->acc : Py_None;
    Py_INCREF(o);
    return o;
}

static PyTypeObject AccRefType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember_autograd._C.AccRef",
    .tp_basicsize = sizeof(AccRefObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A leaf's weak reference to its AccumulateGrad node (Note [Accumulator refs]).",
    .tp_call = (ternaryfunc)accref_call,
};

/* Aim ref (an AccRef) at acc. */
static void accref_aim(PyObject* ref, AccObject* acc) {
    AccRefObject* r = (AccRefObject*)ref;
    r->acc = acc;
    Py_INCREF(ref);
    Py_XSETREF(acc->ref, ref);
}

static int acc_traverse(AccObject* n, visitproc visit, void* arg) {
    Py_VISIT(n->variable);
    return node_traverse(&n->node, visit, arg);
}

static int acc_clear(AccObject* n) {
    if (n->ref != NULL) { /* empty the leaf's reference to this node */
        AccRefObject* r = (AccRefObject*)n->ref;
        if (r->acc == n) r->acc = NULL;
        Py_CLEAR(n->ref);
    }
    Py_CLEAR(n->variable);
    return node_clear(&n->node);
}

static void acc_dealloc(AccObject* n) {
    PyObject_GC_UnTrack(n);
    if (n->node.weakreflist != NULL) PyObject_ClearWeakRefs((PyObject*)n);
    acc_clear(n);
    Py_TYPE(n)->tp_free((PyObject*)n);
}

static PyMemberDef acc_members[] = {
    {"variable", T_OBJECT, offsetof(AccObject, variable), 0, "the leaf tensor"},
    {NULL},
};

static PyTypeObject AccType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember_autograd._C.AccumulateGradBase",
    .tp_basicsize = sizeof(AccObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The fields of an AccumulateGrad node.",
    .tp_base = &NodeType,
    .tp_new = node_new,
    .tp_dealloc = (destructor)acc_dealloc,
    .tp_traverse = (traverseproc)acc_traverse,
    .tp_clear = (inquiry)acc_clear,
    .tp_members = acc_members,
};

/* -------------------------------------------------------------- op infos */

/* What the handler knows about an op, computed once (_handler._info): its
 * kind, which parameters may carry gradients, and the recording plan of its
 * formula (Note [Recording plan] in _handler.py). */
typedef struct {
    PyObject_HEAD
    PyObject* formula;
    PyObject* name;
    PyObject* candidates;   /* tuple of parameter indices that may require grad */
    PyObject* in_idx;       /* the formula's inputs: tuple of parameter indices */
    PyObject* uses;         /* tuple of (name, index, needers or None) */
    PyObject* shape_uses;   /* tuple of (name, index, kind): 0 shape, 1 geometry, 2 device */
    PyObject* node_cls;
    PyObject* node_cls_for;
    PyObject* saved_outputs;
    char inplace, view, differentiable, detach, fast, uses_result;
    int out_idx, out0;
} InfoObject;

static int info_traverse(InfoObject* o, visitproc visit, void* arg) {
    Py_VISIT(o->formula);
    Py_VISIT(o->name);
    Py_VISIT(o->candidates);
    Py_VISIT(o->in_idx);
    Py_VISIT(o->uses);
    Py_VISIT(o->shape_uses);
    Py_VISIT(o->node_cls);
    Py_VISIT(o->node_cls_for);
    Py_VISIT(o->saved_outputs);
    return 0;
}

static int info_clear(InfoObject* o) {
    Py_CLEAR(o->formula);
    Py_CLEAR(o->name);
    Py_CLEAR(o->candidates);
    Py_CLEAR(o->in_idx);
    Py_CLEAR(o->uses);
    Py_CLEAR(o->shape_uses);
    Py_CLEAR(o->node_cls);
    Py_CLEAR(o->node_cls_for);
    Py_CLEAR(o->saved_outputs);
    return 0;
}

static void info_dealloc(InfoObject* o) {
    PyObject_GC_UnTrack(o);
    info_clear(o);
    Py_TYPE(o)->tp_free((PyObject*)o);
}

#define INFO_OBJ(name, field) {name, T_OBJECT, offsetof(InfoObject, field), 0, NULL}
#define INFO_BOOL(name, field) {name, T_BOOL, offsetof(InfoObject, field), 0, NULL}
static PyMemberDef info_members[] = {
    INFO_OBJ("formula", formula),
    INFO_OBJ("name", name),
    INFO_OBJ("candidates", candidates),
    INFO_OBJ("in_idx", in_idx),
    INFO_OBJ("uses", uses),
    INFO_OBJ("shape_uses", shape_uses),
    INFO_OBJ("node_cls", node_cls),
    INFO_OBJ("node_cls_for", node_cls_for),
    INFO_OBJ("saved_outputs", saved_outputs),
    INFO_BOOL("inplace", inplace),
    INFO_BOOL("view", view),
    INFO_BOOL("differentiable", differentiable),
    INFO_BOOL("detach", detach),
    INFO_BOOL("fast", fast),
    INFO_BOOL("uses_result", uses_result),
    {"out_idx", T_INT, offsetof(InfoObject, out_idx), 0, NULL},
    {"out0", T_INT, offsetof(InfoObject, out0), 0, NULL},
    {NULL},
};

static PyTypeObject InfoType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember_autograd._C.OpInfo",
    .tp_basicsize = sizeof(InfoObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "What the handler needs to know about an op, computed once per op.",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)info_dealloc,
    .tp_traverse = (traverseproc)info_traverse,
    .tp_clear = (inquiry)info_clear,
    .tp_members = info_members,
};

/* ------------------------------------------------------------- handler */

/* call(args, kwargs): the next handler down, or -- when it is the end of the
 * chain, op.call_impl -- the implementation itself, without the extra frame. */
static PyObject* call_down(PyObject* op, PyObject* call, PyObject* args, PyObject* kwargs) {
    if (call == NULL || (PyMethod_Check(call) && PyMethod_GET_FUNCTION(call) == call_impl &&
                         PyMethod_GET_SELF(call) == op && PyTuple_CheckExact(args))) {
        PyObject* impl = slot_get(op, &F_impl);
        if (impl == NULL) return NULL;
        PyObject* r = PyObject_Call(impl, args, NULL);
        Py_DECREF(impl);
        return r;
    }
    PyObject* a[2] = {args, kwargs};
    return PyObject_Vectorcall(call, a, 2, NULL);
}

/* f(op, info, args, call) for a Python part of the handler; call NULL stands
 * for op.call_impl (the handler called through dispatch(), below). */
static PyObject* to_python(PyObject* f, PyObject* op, PyObject* info, PyObject* args,
                           PyObject* call) {
    PyObject* bound = call == NULL ? PyMethod_New(call_impl, op) : NULL;
    if (call == NULL && bound == NULL) return NULL;
    PyObject* v[4] = {op, info, args, call ? call : bound};
    PyObject* r = PyObject_Vectorcall(f, v, 4, NULL);
    Py_XDECREF(bound);
    return r;
}

static PyObject* call_below(PyObject* op, PyObject* call, PyObject* args) {
    ThreadVars* t = tv();
    t->below++;
    PyObject* r = call_down(op, call, args, Py_None);
    t->below--;
    return r;
}

static int mark_inference(PyObject* result) {
    if (is_tensor(result)) return PyObject_SetAttr(result, s__inference, Py_True);
    if (PyTuple_Check(result)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(result); i++) {
            PyObject* r = PyTuple_GET_ITEM(result, i);
            if (is_tensor(r) && PyObject_SetAttr(r, s__inference, Py_True) < 0) return -1;
        }
    }
    return 0;
}

/* Does a candidate input require grad?  1, 0, or -1 on error. */
static int requires(InfoObject* info, PyObject* args) {
    PyObject* cands = info->candidates;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(cands); k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(cands, k));
        if (i < 0 || i >= nargs) continue;
        PyObject* a = PyTuple_GET_ITEM(args, i);
        if (is_tensor(a)) {
            int r = flag(a, s__rg);
            if (r != 0) return r;
        } else if (PyList_Check(a) || PyTuple_Check(a)) {
            PyObject* seq = PySequence_Fast(a, "");
            if (seq == NULL) return -1;
            for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++) {
                PyObject* x = PySequence_Fast_GET_ITEM(seq, j);
                if (is_tensor(x)) {
                    int r = flag(x, s__rg);
                    if (r != 0) {
                        Py_DECREF(seq);
                        return r;
                    }
                }
            }
            Py_DECREF(seq);
        }
    }
    return 0;
}

/* Note [Write notes]
 * Every in-place write notes, for the error of a stale saved tensor, which op
 * wrote into the storage and from which source line (the first frame outside
 * ember's packages): _node.last_write[storage] = (version after the write,
 * op name, (file, line)).  last_write is a WeakKeyDictionary; a storage
 * written before keeps its entry, whose value is replaced without making a
 * new weak reference. */
static PyObject* location(void) {
    PyFrameObject* f = PyEval_GetFrame(); /* borrowed */
    Py_XINCREF(f);
    while (f != NULL) {
        PyCodeObject* code = PyFrame_GetCode(f);
        const char* file = PyUnicode_AsUTF8(code->co_filename);
        int own = 0;
        for (Py_ssize_t i = 0; file != NULL && i < n_own_dirs && !own; i++)
            own = strncmp(file, own_dirs[i], strlen(own_dirs[i])) == 0;
        if (file == NULL) {
            Py_DECREF(code);
            Py_DECREF(f);
            return NULL;
        }
        if (!own) {
            PyObject* r = Py_BuildValue("(Oi)", code->co_filename, PyFrame_GetLineNumber(f));
            Py_DECREF(code);
            Py_DECREF(f);
            return r;
        }
        Py_DECREF(code);
        PyFrameObject* back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    Py_RETURN_NONE;
}

static int note_write(PyObject* op_name, PyObject* t) {
    PyObject* storage = slot_get(t, &F_storage);
    if (storage == NULL) return -1;
    PyObject *v = NULL, *next = NULL, *where = NULL, *rec = NULL, *ref = NULL;
    int rc = -1;
    v = slot_get(storage, &F_version);
    if (v == NULL) goto out;
    next = PyNumber_Add(v, one);
    if (next == NULL) goto out;
    where = location();
    if (where == NULL) goto out;
    rec = PyTuple_Pack(3, next, op_name, where);
    if (rec == NULL) goto out;
    ref = PyWeakref_NewRef(storage, NULL);
    if (ref == NULL) goto out;
    int known = PyDict_Contains(last_write_data, ref);
    if (known < 0) goto out;
    /* a known storage keeps its key (the weak reference with the dict's
     * callback); a new one goes through WeakKeyDictionary.__setitem__ */
    rc = known ? PyDict_SetItem(last_write_data, ref, rec)
               : PyObject_SetItem(last_write, storage, rec);
out:
    Py_DECREF(storage);
    Py_XDECREF(v);
    Py_XDECREF(next);
    Py_XDECREF(where);
    Py_XDECREF(rec);
    Py_XDECREF(ref);
    return rc;
}

static PyObject* note_write_fn(PyObject* self, PyObject* const* a, Py_ssize_t n) {
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "note_write(op, tensor)");
        return NULL;
    }
    PyObject* name = PyObject_GetAttr(a[0], s_name);
    if (name == NULL) return NULL;
    int rc = note_write(name, a[1]);
    Py_DECREF(name);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject* record(PyObject* op, InfoObject* info, PyObject* args, PyObject* call);

/* A recorded in-place write record() takes (1, 0, -1 on error): with a
 * formula of one output, into a tensor that is not a view, nor a leaf that
 * requires grad, nor a custom Function's output view (those errors and the
 * views' rebasing are _handler._handle_inplace's), in grad mode, outside
 * inference-tensor errors. */
static int simple_inplace(InfoObject* info, PyObject* target) {
    ThreadVars* t = tv();
    if (!t->enabled || info->detach || info->formula == NULL || info->formula == Py_None ||
        !info->fast || info->out0 != 0)
        return 0;
    int inf = flag(target, s__inference);
    if (inf != 0) return inf < 0 ? -1 : 0;
    PyObject* base = PyObject_GetAttr(target, s__base);
    if (base == NULL) return -1;
    Py_DECREF(base);
    if (base != Py_None) return 0;
    PyObject* cv = PyObject_GetAttr(target, s__custom_view);
    if (cv == NULL) return -1;
    Py_DECREF(cv);
    if (cv != Py_None) return 0;
    int rg = flag(target, s__rg);
    if (rg <= 0) return rg < 0 ? -1 : 1;
    PyObject* fn = PyObject_GetAttr(target, s_grad_fn);
    if (fn == NULL) return -1;
    Py_DECREF(fn);
    return fn != Py_None; /* a leaf that requires grad: an error */
}

/* _handler._handle_inplace for the writes autograd does not record: to a
 * tensor that neither requires grad nor views one that does, from inputs that
 * do not require grad, or under no_grad.  The rest (errors, detach_, the
 * recorded writes) is the Python function's. */
static PyObject* handle_inplace(PyObject* op, InfoObject* info, PyObject* args, PyObject* call) {
    ThreadVars* t = tv();
    PyObject* target = PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL;
    if (target == NULL || !is_tensor(target)) return call_below(op, call, args);
    int inf = flag(target, s__inference);
    if (inf < 0) return NULL;
    int plain = !(inf && !t->inference) && !info->detach;
    if (plain && t->enabled) {
        int r = requires(info, args);
        if (r < 0) return NULL;
        if (!r) r = flag(target, s__rg);
        if (r < 0) return NULL;
        if (!r) {
            PyObject* base = PyObject_GetAttr(target, s__base);
            if (base == NULL) return NULL;
            r = base != Py_None ? flag(base, s__rg) : 0;
            Py_DECREF(base);
            if (r < 0) return NULL;
        }
        plain = !r;
    }
    if (!plain) {
        int simple = simple_inplace(info, target);
        if (simple < 0) return NULL;
        if (simple) return record(op, info, args, call);
        return to_python(py_handle_inplace, op, (PyObject*)info, args, call);
    }
    if (note_write(info->name, target) < 0) return NULL;
    return t->enabled ? call_below(op, call, args) : call_down(op, call, args, Py_None);
}

static PyObject* record(PyObject* op, InfoObject* info, PyObject* args, PyObject* call);

/* Note [Dispatch] in ember_core: handle(op, args, kwargs, call), the handler
 * autograd registers.  The same steps as its Python description in
 * _handler.py, which keeps the rare cases. */
static PyObject* handle_impl(PyObject* op, PyObject* args, PyObject* kwargs, PyObject* call) {
    ThreadVars* t = tv();
    if (t->below) return call_down(op, call, args, kwargs);
    PyObject* info = PyDict_GetItemWithError(infos, op); /* borrowed */
    PyObject* owned = NULL;
    if (info == NULL) {
        if (PyErr_Occurred()) return NULL;
        info = owned = PyObject_CallOneArg(py_info, op);
        if (info == NULL) return NULL;
    }
    if (!PyObject_TypeCheck(info, &InfoType) || !PyTuple_Check(args)) {
        Py_XDECREF(owned);
        PyErr_SetString(PyExc_TypeError, "handle: bad op info or args");
        return NULL;
    }
    InfoObject* inf = (InfoObject*)info;
    PyObject* result;
    if (inf->inplace) {
        result = handle_inplace(op, inf, args, call);
        Py_XDECREF(owned);
        return result;
    }
    if (t->enabled) {
        int r = requires(inf, args);
        if (r < 0) {
            Py_XDECREF(owned);
            return NULL;
        }
        if (r) {
            if ((inf->out_idx >= 0 && inf->out_idx < PyTuple_GET_SIZE(args) &&
                 PyTuple_GET_ITEM(args, inf->out_idx) != Py_None) ||
                !inf->differentiable) {
                result = to_python(py_record_checked, op, info, args, call);
            } else {
                result = record(op, inf, args, call);
            }
            Py_XDECREF(owned);
            return result;
        }
    }
    /* nothing to record: nested ops see inputs without grad, so no guard needed */
    result = call_down(op, call, args, kwargs);
    if (result == NULL) goto done;
    if (t->inference) {
        if (mark_inference(result) < 0) Py_CLEAR(result);
    } else if (inf->view && PyTuple_GET_SIZE(args) > 0) {
        int r = flag(PyTuple_GET_ITEM(args, 0), s__inference);
        if (r < 0 || (r && PyObject_SetAttr(result, s__inference, Py_True) < 0)) Py_CLEAR(result);
    }
done:
    Py_XDECREF(owned);
    return result;
}

static PyObject* handle(PyObject* self, PyObject* const* a, Py_ssize_t n) {
    if (n != 4) {
        PyErr_SetString(PyExc_TypeError, "handle(op, args, kwargs, call)");
        return NULL;
    }
    return handle_impl(a[0], a[1], a[2], a[3]);
}

/* dispatch(op, args): what ember_core's dispatch() does while this handler is
 * the only one -- handle(op, args, {}, op.call_impl) -- without its Python
 * frame (ember_core binds it with register_handler(..., sole_dispatch=)). */
static PyObject* dispatch(PyObject* self, PyObject* const* a, Py_ssize_t n) {
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "dispatch(op, args)");
        return NULL;
    }
    return handle_impl(a[0], a[1], no_kwargs, NULL);
}

/* ------------------------------------------------------------ recording */

/* _handler._holds_tensors: a list/tuple argument that holds tensors (an index
 * tuple may start with None); 1, 0 or -1 on error. */
static int holds_tensors(PyObject* a) {
    if (!(PyList_Check(a) || PyTuple_Check(a))) return 0;
    PyObject* seq = PySequence_Fast(a, "");
    if (seq == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int r = 0;
    if (n > 0) {
        PyObject* first = PySequence_Fast_GET_ITEM(seq, 0);
        if (is_tensor(first)) r = 1;
        else if (first == Py_None)
            for (Py_ssize_t i = 1; i < n && !r; i++) r = is_tensor(PySequence_Fast_GET_ITEM(seq, i));
    }
    Py_DECREF(seq);
    return r;
}

/* Can record() take this call?  Everything that makes it hand over to the
 * Python _record is checked here, before anything happens: tensor lists,
 * inference tensors to save, shapes asked of non-tensors. */
static int fast_case(InfoObject* info, PyObject* args) {
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    PyObject* idx = info->in_idx;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(idx); k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(idx, k));
        if (i < 0 || i >= nargs) return 0;
    }
    PyObject* uses = info->uses;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(uses); k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(PyTuple_GET_ITEM(uses, k), 1));
        if (i < 0 || i >= nargs) return 0;
        PyObject* a = PyTuple_GET_ITEM(args, i);
        if (is_tensor(a)) {
            int r = flag(a, s__inference); /* _record refuses to save it */
            if (r != 0) return r < 0 ? -1 : 0;
        } else if (PyList_Check(a) || PyTuple_Check(a)) {
            int h = holds_tensors(a);
            if (h <= 0) {
                if (h < 0) return -1;
                continue;
            }
            PyObject* seq = PySequence_Fast(a, "");
            if (seq == NULL) return -1;
            int r = 0;
            for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq) && r == 0; j++) {
                PyObject* x = PySequence_Fast_GET_ITEM(seq, j);
                if (is_tensor(x)) r = flag(x, s__inference);
            }
            Py_DECREF(seq);
            if (r != 0) return r < 0 ? -1 : 0;
        }
    }
    PyObject* su = info->shape_uses;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(su); k++) {
        PyObject* e = PyTuple_GET_ITEM(su, k);
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 1));
        if (i < 0 || i >= nargs) return 0;
        PyObject* a = PyTuple_GET_ITEM(args, i);
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(e, 2));
        if (is_tensor(a)) continue;
        if (kind == 1 || kind == 2 || !(PyList_Check(a) || PyTuple_Check(a))) return 0;
        PyObject* seq = PySequence_Fast(a, ""); /* shapes of a tensor list */
        if (seq == NULL) return -1;
        int all = 1;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq) && all; j++)
            all = is_tensor(PySequence_Fast_GET_ITEM(seq, j));
        Py_DECREF(seq);
        if (!all) return 0;
    }
    return 1;
}

/* The (shared) AccumulateGrad node of leaf t (_node.accumulator): the one t
 * holds weakly, or a new one (Note [Accumulator refs]). */
static PyObject* accumulator(PyObject* t) {
    if (tv()->anomaly) return PyObject_CallOneArg(py_accumulator, t); /* records a trace */
    PyObject* d = PyObject_GenericGetDict(t, NULL);
    if (d == NULL) return NULL;
    PyObject* ref = PyDict_GetItemWithError(d, s__acc); /* borrowed */
    PyObject* reuse = NULL; /* an empty AccRef to aim at the new node */
    if (ref != NULL && Py_IS_TYPE(ref, &AccRefType)) {
        AccObject* live = ((AccRefObject*)ref)->acc;
        if (live != NULL) {
            Py_INCREF(live);
            Py_DECREF(d);
            return (PyObject*)live;
        }
        if (((AccRefObject*)ref)->owner == (void*)t) reuse = ref;
    } else if (ref != NULL && PyWeakref_Check(ref)) { /* set by Python code */
        PyObject* acc = PyWeakref_GetObject(ref); /* borrowed */
        if (acc != Py_None) {
            Py_INCREF(acc);
            Py_DECREF(d);
            return acc;
        }
    } else if (ref == NULL && PyErr_Occurred()) {
        Py_DECREF(d);
        return NULL;
    }
    AccObject* acc = (AccObject*)node_new(AccCls, NULL, NULL);
    if (acc == NULL) {
        Py_DECREF(d);
        return NULL;
    }
    acc->node.next_functions = PyTuple_New(0);
    Py_INCREF(t);
    acc->variable = t;
    int rc = acc->node.next_functions == NULL ? -1 : 0;
    if (rc == 0 && reuse != NULL) {
        accref_aim(reuse, acc);
    } else if (rc == 0) {
        PyObject* r = (PyObject*)PyObject_New(AccRefObject, &AccRefType);
        if (r == NULL) {
            rc = -1;
        } else {
            ((AccRefObject*)r)->owner = (void*)t;
            accref_aim(r, acc);
            rc = PyDict_SetItem(d, s__acc, r);
            Py_DECREF(r);
        }
    }
    Py_DECREF(d);
    if (rc < 0) {
        Py_DECREF(acc);
        return NULL;
    }
    return (PyObject*)acc;
}

static PyObject* accumulator_fn(PyObject* self, PyObject* t) { return accumulator(t); }

/* The gradient edge of input a (which requires grad). */
static PyObject* input_edge(PyObject* a) {
    PyObject* base = PyObject_GetAttr(a, s__base);
    if (base == NULL) return NULL;
    int view = base != Py_None;
    Py_DECREF(base);
    if (view) return PyObject_CallOneArg(py_edge, a);
    PyObject* fn = PyObject_GetAttr(a, s_grad_fn);
    if (fn == NULL) return NULL;
    if (fn != Py_None) {
        PyObject* nr = PyObject_GetAttr(a, s__output_nr);
        if (nr == NULL) {
            Py_DECREF(fn);
            return NULL;
        }
        PyObject* e = PyTuple_Pack(2, fn, nr);
        Py_DECREF(fn);
        Py_DECREF(nr);
        return e;
    }
    Py_DECREF(fn);
    /* a leaf: its (shared) AccumulateGrad */
    PyObject* acc = accumulator(a);
    if (acc == NULL) return NULL;
    PyObject* zero = PyLong_FromLong(0);
    PyObject* e = PyTuple_Pack(2, acc, zero);
    Py_DECREF(acc);
    Py_DECREF(zero);
    return e;
}

/* An input's meta, (shape, dtype); an output's, (shape, dtype, device): the
 * engine makes a missing output gradient's zeros on the output's device. */
static PyObject* meta_of(PyObject* a, int with_device) {
    PyObject* shape = slot_get(a, &F_shape);
    if (shape == NULL) return NULL;
    PyObject* dtype = slot_get(a, &F_dtype);
    if (dtype == NULL) {
        Py_DECREF(shape);
        return NULL;
    }
    PyObject *m = NULL, *device = NULL;
    if (with_device) {
        PyObject* st = slot_get(a, &F_storage);
        if (st != NULL) {
            device = slot_get(st, &F_device);
            Py_DECREF(st);
        }
        if (device != NULL) m = PyTuple_Pack(3, shape, dtype, device);
        Py_XDECREF(device);
    } else {
        m = PyTuple_Pack(2, shape, dtype);
    }
    Py_DECREF(shape);
    Py_DECREF(dtype);
    return m;
}

static PyObject* shape_value(PyObject* a, long kind) {
    if (kind == 0 || kind == 3) {
        if (is_tensor(a)) return slot_get(a, &F_shape);
        PyObject* seq = PySequence_Fast(a, "");
        if (seq == NULL) return NULL;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        PyObject* out = PyList_New(n);
        for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
            PyObject* v = PyObject_GetAttr(PySequence_Fast_GET_ITEM(seq, i), s__shape);
            if (v == NULL) Py_CLEAR(out);
            else PyList_SET_ITEM(out, i, v);
        }
        Py_DECREF(seq);
        return out;
    }
    if (kind == 2) {
        PyObject* st = slot_get(a, &F_storage);
        if (st == NULL) return NULL;
        PyObject* d = slot_get(st, &F_device);
        Py_DECREF(st);
        return d;
    }
    PyObject *shape = slot_get(a, &F_shape), *stride = NULL, *offset = NULL, *r = NULL;
    if (shape == NULL) return NULL;
    stride = slot_get(a, &F_stride);
    if (stride != NULL) offset = slot_get(a, &F_offset);
    if (offset != NULL) r = PyTuple_Pack(3, shape, stride, offset);
    Py_DECREF(shape);
    Py_XDECREF(stride);
    Py_XDECREF(offset);
    return r;
}

/* Append input a's gradient edge(s) and metadata: one for a tensor, one per
 * element for a tensor list (None holes get no edge), none-edges otherwise. */
static int add_one(PyObject* edges, PyObject* metas, PyObject* a) {
    PyObject *e, *m;
    if (is_tensor(a)) {
        int rg = flag(a, s__rg);
        if (rg < 0) return -1;
        if (rg) {
            e = input_edge(a);
            if (e == NULL) return -1;
        } else {
            e = no_edge;
            Py_INCREF(e);
        }
        m = meta_of(a, 0);
        if (m == NULL) {
            Py_DECREF(e);
            return -1;
        }
    } else {
        e = no_edge;
        Py_INCREF(e);
        m = Py_None;
        Py_INCREF(m);
    }
    int rc = PyList_Append(edges, e) < 0 || PyList_Append(metas, m) < 0 ? -1 : 0;
    Py_DECREF(e);
    Py_DECREF(m);
    return rc;
}

static int add_input(PyObject* edges, PyObject* metas, PyObject* a) {
    int h = is_tensor(a) ? 0 : holds_tensors(a);
    if (h < 0) return -1;
    if (!h) return add_one(edges, metas, a);
    PyObject* seq = PySequence_Fast(a, "");
    if (seq == NULL) return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++)
        if (add_one(edges, metas, PySequence_Fast_GET_ITEM(seq, i)) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    Py_DECREF(seq);
    return 0;
}

/* What the node keeps of parameter value a: a SavedTensor for a tensor, a
 * list (tuple) with the tensors saved for a tensor list, a as it is otherwise. */
static PyObject* saved_value(PyObject* a, PyObject* saved_by) {
    if (is_tensor(a)) return make_saved(a, saved_by);
    int h = holds_tensors(a);
    if (h <= 0) {
        if (h == 0) Py_INCREF(a);
        return h == 0 ? a : NULL;
    }
    PyObject* seq = PySequence_Fast(a, "");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject* out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject* x = PySequence_Fast_GET_ITEM(seq, i);
        PyObject* v;
        if (is_tensor(x)) {
            v = make_saved(x, saved_by);
        } else {
            v = x;
            Py_INCREF(v);
        }
        if (v == NULL) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, v);
    }
    Py_DECREF(seq);
    if (out != NULL && !PyList_CheckExact(a)) Py_SETREF(out, PyList_AsTuple(out));
    return out;
}

/* Is o a tensor of a differentiable dtype (floating or complex)? 1, 0, -1 on error. */
static int floating_tensor(PyObject* o) {
    if (!is_tensor(o)) return 0;
    PyObject* dt = slot_get(o, &F_dtype);
    if (dt == NULL) return -1;
    PyObject* df = slot_get(dt, &F_differentiable);
    int r = df == NULL ? -1 : df == Py_True ? 1 : df == Py_False ? 0 : PyObject_IsTrue(df);
    Py_XDECREF(df);
    Py_DECREF(dt);
    return r;
}

/* Note [Recording plan] in _handler.py: run op below autograd and give its
 * output a node of its formula -- for the common case (one differentiable
 * output, not in place, no saved-tensor hooks, no anomaly mode); the rest goes
 * to _handler._record, the reference. */
static PyObject* record(PyObject* op, InfoObject* info, PyObject* args, PyObject* call) {
    ThreadVars* tvs = tv();
    int inplace = info->inplace;
    int fast = info->fast && !tvs->anomaly && PyList_GET_SIZE(hooks_stack) == 0;
    if (fast) {
        fast = fast_case(info, args);
        if (fast < 0) return NULL;
    }
    if (!fast) {
        return to_python(py_record, op, (PyObject*)info, args, call);
    }
    PyObject *edges = NULL, *metas = NULL, *values = NULL, *result = NULL, *node = NULL;
    PyObject* idx = info->in_idx;
    Py_ssize_t nin = PyTuple_GET_SIZE(idx);
    PyObject* elist = PyList_New(0);
    metas = PyList_New(0);
    values = PyDict_New();
    if (elist == NULL || metas == NULL || values == NULL) {
        Py_XDECREF(elist);
        goto fail;
    }
    for (Py_ssize_t k = 0; k < nin; k++) {
        PyObject* a = PyTuple_GET_ITEM(args, PyLong_AsSsize_t(PyTuple_GET_ITEM(idx, k)));
        if (add_input(elist, metas, a) < 0) { /* (a tensor list: one edge each) */
            Py_DECREF(elist);
            goto fail;
        }
    }
    edges = PyList_AsTuple(elist);
    Py_DECREF(elist);
    if (edges == NULL) goto fail;
    PyObject* uses = info->uses;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(uses); k++) {
        PyObject* u = PyTuple_GET_ITEM(uses, k);
        PyObject* name = PyTuple_GET_ITEM(u, 0);
        PyObject* a = PyTuple_GET_ITEM(args, PyLong_AsSsize_t(PyTuple_GET_ITEM(u, 1)));
        PyObject* needers = PyTuple_GET_ITEM(u, 2);
        PyObject* v;
        if (needers != Py_None) {
            int needed = 0;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(needers) && !needed; j++) {
                Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(needers, j));
                needed = i < PyTuple_GET_SIZE(edges) &&
                         PyTuple_GET_ITEM(PyTuple_GET_ITEM(edges, i), 0) != Py_None;
            }
            if (!needed) { /* no gradient that reads it will be computed */
                if (PyDict_SetItem(values, name, Py_None) < 0) goto fail;
                continue;
            }
        }
        if (inplace && is_tensor(a) && PyLong_AsSsize_t(PyTuple_GET_ITEM(u, 1)) == 0) {
            /* the value before the write, itself recorded so that double
             * backward reaches the target's old history */
            PyObject* c = PyObject_CallMethodNoArgs(a, s_clone);
            if (c == NULL) goto fail;
            v = make_saved(c, info->name);
            Py_DECREF(c);
        } else {
            v = saved_value(a, info->name);
        }
        if (v == NULL) goto fail;
        int rc = PyDict_SetItem(values, name, v);
        Py_DECREF(v);
        if (rc < 0) goto fail;
    }
    PyObject* su = info->shape_uses;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(su); k++) {
        PyObject* e = PyTuple_GET_ITEM(su, k);
        PyObject* a = PyTuple_GET_ITEM(args, PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 1)));
        PyObject* v = shape_value(a, PyLong_AsLong(PyTuple_GET_ITEM(e, 2)));
        if (v == NULL) goto fail;
        int rc = PyDict_SetItem(values, PyTuple_GET_ITEM(e, 0), v);
        Py_DECREF(v);
        if (rc < 0) goto fail;
    }

    PyObject* first = PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL;
    if (inplace && note_write(info->name, first) < 0) goto fail;
    result = call_below(op, call, args);
    if (result == NULL) goto fail;
    if (inplace) {
        int fl = floating_tensor(first);
        if (fl < 0) goto fail;
        if (!fl) goto done;
        if (!PyType_Check(info->node_cls) ||
            !PyType_IsSubtype((PyTypeObject*)info->node_cls, &NodeType)) {
            PyErr_SetString(PyExc_TypeError, "record: the node class is not a Node");
            goto fail;
        }
        node = node_new((PyTypeObject*)info->node_cls, NULL, NULL);
        if (node == NULL) goto fail;
        NodeObject* nd = (NodeObject*)node;
        nd->next_functions = edges;
        edges = NULL;
        Py_INCREF(info->formula);
        nd->formula = info->formula;
        Py_INCREF(values);
        nd->values = values;
        nd->in_meta = metas;
        metas = NULL;
        PyObject* m = meta_of(first, 1);
        if (m == NULL) goto fail;
        nd->out_meta = PyList_New(1);
        if (nd->out_meta == NULL) {
            Py_DECREF(m);
            goto fail;
        }
        PyList_SET_ITEM(nd->out_meta, 0, m);
        if (info->uses_result) {
            PyObject* al = PyObject_CallOneArg(py_alias, first);
            if (al == NULL) goto fail;
            PyObject* sr = make_saved(first, info->name);
            if (sr == NULL) {
                Py_DECREF(al);
                goto fail;
            }
            Py_SETREF(((SavedObject*)sr)->t, al);
            ((SavedObject*)sr)->output_nr = 0;
            int rc = PyDict_SetItem(values, s_result, sr);
            Py_DECREF(sr);
            if (rc < 0) goto fail;
        }
        PyObject* zero = PyLong_FromLong(0);
        int rc = zero == NULL || PyObject_SetAttr(first, s__rg, Py_True) < 0 ||
                 PyObject_SetAttr(first, s_grad_fn, node) < 0 ||
                 PyObject_SetAttr(first, s__output_nr, zero) < 0;
        Py_XDECREF(zero);
        if (rc) goto fail;
        goto done;
    }
    PyObject* o = result;
    if (PyTuple_Check(result)) {
        if (info->out0 >= PyTuple_GET_SIZE(result)) {
            PyErr_SetString(PyExc_IndexError, "tuple index out of range");
            goto fail;
        }
        o = PyTuple_GET_ITEM(result, info->out0);
    }
    int fl = floating_tensor(o);
    if (fl < 0) goto fail;
    if (!fl || o == first) goto done; /* not differentiable, or contiguous()/to() returning the input */

    PyObject* cls = info->node_cls;
    PyObject* chosen = NULL;
    if (info->node_cls_for != Py_None && info->node_cls_for != NULL) {
        chosen = cls = PyObject_CallOneArg(info->node_cls_for, args);
        if (cls == NULL) goto fail;
    }
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &NodeType)) {
        Py_XDECREF(chosen);
        PyErr_SetString(PyExc_TypeError, "record: the node class is not a Node");
        goto fail;
    }
    node = node_new((PyTypeObject*)cls, NULL, NULL);
    Py_XDECREF(chosen);
    if (node == NULL) goto fail;
    NodeObject* nd = (NodeObject*)node;
    nd->next_functions = edges;
    edges = NULL;
    Py_INCREF(info->formula);
    nd->formula = info->formula;
    Py_INCREF(values);
    nd->values = values;
    nd->in_meta = metas;
    metas = NULL;
    if (info->uses_result) {
        PyObject* sr;
        if (PyTuple_Check(result)) {
            PyObject* diff = Py_BuildValue("((iO))", 0, o);
            if (diff == NULL) goto fail;
            PyObject* v[4] = {result, diff, info->name, info->saved_outputs};
            sr = PyObject_Vectorcall(py_saved_result, v, 4, NULL);
            Py_DECREF(diff);
        } else {
            PyObject* al = PyObject_CallOneArg(py_alias, result);
            if (al == NULL) goto fail;
            sr = make_saved(result, info->name);
            if (sr != NULL) {
                SavedObject* s = (SavedObject*)sr;
                Py_SETREF(s->t, al);
                s->output_nr = 0;
            } else {
                Py_DECREF(al);
            }
        }
        if (sr == NULL) goto fail;
        int rc = PyDict_SetItem(values, s_result, sr);
        Py_DECREF(sr);
        if (rc < 0) goto fail;
    }
    if (PyObject_SetAttr(o, s__rg, Py_True) < 0 || PyObject_SetAttr(o, s_grad_fn, node) < 0)
        goto fail;
    PyObject* base = PyObject_GetAttr(o, s__base);
    if (base == NULL) goto fail;
    int view = base != Py_None;
    Py_DECREF(base);
    if (view) { /* its grad_fn is current (Note [In-place ops and views]) */
        long long ver = storage_version(o);
        if (ver == -1 && PyErr_Occurred()) goto fail;
        PyObject* pv = PyLong_FromLongLong(ver);
        if (pv == NULL) goto fail;
        int rc = PyObject_SetAttr(o, s__vv, pv);
        Py_DECREF(pv);
        if (rc < 0) goto fail;
        int inf = first ? flag(first, s__inference) : 0;
        if (inf < 0 || (inf && PyObject_SetAttr(o, s__inference, Py_True) < 0)) goto fail;
    }
done:
    Py_XDECREF(node);
    Py_XDECREF(edges);
    Py_XDECREF(metas);
    Py_XDECREF(values);
    return result;
fail:
    Py_XDECREF(result);
    result = NULL;
    goto done;
}

/* ---------------------------------------------------------------- engine */

/* Note [C engine]
 * The backward engine's loop (_engine.run_backward sets it up): nodes run in
 * decreasing sequence number (Note [Execution order] in _engine.py) off a
 * heap; gradients wait for their node in one dict, summed as they arrive.  Per
 * node, in PyTorch's order: tensor hooks, retain_grad and Node pre-hooks
 * (_engine._pre_hooks), with ``inputs`` the capture of the gradients reaching
 * them, then the backward function -- for a leaf the accumulation into .grad
 * (here for the steady state of training, _engine._accumulate otherwise) --,
 * Node post-hooks, and the release of the saved tensors unless retain_graph.
 * A gradient that reaches one leaf only, was never shown to a hook and is not
 * the caller's own tensor may become that leaf's .grad without a copy;
 * ``shared`` and ``foreign`` say which may not.  With ``inputs`` only the nodes
 * on a path from the roots to an input run; in anomaly mode each backward
 * function runs through _anomaly.run_node. */
typedef struct {
    long long seq;
    PyObject* node;
} HeapItem;

typedef struct {
    HeapItem* items;
    Py_ssize_t n, cap;
} Heap;

static int heap_push(Heap* h, PyObject* node) {
    if (h->n == h->cap) {
        Py_ssize_t cap = h->cap ? 2 * h->cap : 64;
        HeapItem* items = PyMem_Realloc(h->items, cap * sizeof(HeapItem));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        h->items = items;
        h->cap = cap;
    }
    long long seq = ((NodeObject*)node)->seq;
    Py_ssize_t i = h->n++;
    while (i > 0) { /* a max-heap: the newest node first */
        Py_ssize_t parent = (i - 1) / 2;
        if (h->items[parent].seq >= seq) break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    Py_INCREF(node);
    h->items[i].seq = seq;
    h->items[i].node = node;
    return 0;
}

static PyObject* heap_pop(Heap* h) { /* a new reference */
    PyObject* top = h->items[0].node;
    HeapItem last = h->items[--h->n];
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->items[c + 1].seq > h->items[c].seq) c++;
        if (h->items[c].seq <= last.seq) break;
        h->items[i] = h->items[c];
        i = c;
    }
    if (h->n > 0) h->items[i] = last;
    return top;
}

static void heap_free(Heap* h) {
    for (Py_ssize_t i = 0; i < h->n; i++) Py_DECREF(h->items[i].node);
    PyMem_Free(h->items);
}

typedef struct {
    Heap heap;
    PyObject* buffers; /* node -> list of gradients */
    PyObject* placed;  /* ids of gradients handed to a leaf */
    PyObject* shared;  /* ... handed to more than one (none may steal them) */
    PyObject* foreign; /* ids of the caller's gradients and of those hooks saw */
    int retain_graph, create_graph, anomaly, accumulate;
    /* with ``inputs`` (grad(), backward(inputs=...)), else NULL: */
    PyObject* targets;     /* (node, nr) -> indices into inputs */
    PyObject* needed;      /* the nodes on a path from the roots to an input */
    PyObject* input_nodes; /* the inputs' nodes */
    PyObject* inputs;      /* the input tensors */
    PyObject* captured;    /* list: the gradient reaching each input */
} Engine;

/* Is node among the needed ones (always, without inputs)?  1, 0, -1. */
static inline int is_needed(Engine* e, PyObject* node) {
    return e->needed == NULL ? 1 : PySet_Contains(e->needed, node);
}

/* With inputs: keep the gradients that reach an input's (node, nr); a non-leaf
 * input given to backward(inputs=...) accumulates it into its .grad. */
static int capture(Engine* e, PyObject* node, PyObject* grads) {
    PyObject* seq = PySequence_Fast(grads, "gradients");
    if (seq == NULL) return -1;
    int rc = -1;
    for (Py_ssize_t nr = 0; nr < PySequence_Fast_GET_SIZE(seq); nr++) {
        PyObject* g = PySequence_Fast_GET_ITEM(seq, nr);
        PyObject* key = Py_BuildValue("(On)", node, nr);
        if (key == NULL) goto out;
        PyObject* idxs = PyDict_GetItemWithError(e->targets, key); /* borrowed */
        Py_DECREF(key);
        if (idxs == NULL) {
            if (PyErr_Occurred()) goto out;
            continue;
        }
        PyObject* iseq = PySequence_Fast(idxs, "indices");
        if (iseq == NULL) goto out;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(iseq); j++) {
            Py_ssize_t i = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(iseq, j));
            if (i < 0 || i >= PyList_GET_SIZE(e->captured)) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "capture: bad index");
                Py_DECREF(iseq);
                goto out;
            }
            Py_INCREF(g);
            PyList_SetItem(e->captured, i, g);
            if (!e->accumulate || g == Py_None) continue;
            PyObject* t = PySequence_GetItem(e->inputs, i);
            if (t == NULL) {
                Py_DECREF(iseq);
                goto out;
            }
            PyObject* fn = PyObject_GetAttr(t, s_grad_fn);
            PyObject* r = NULL;
            if (fn != NULL && fn != Py_None) { /* backward(inputs=[non-leaf]): into its .grad */
                PyObject* a[4] = {t, g, e->create_graph ? Py_True : Py_False, Py_False};
                r = PyObject_Vectorcall(py_accumulate, a, 4, NULL);
            } else if (fn != NULL) {
                r = Py_None;
                Py_INCREF(r);
            }
            Py_XDECREF(fn);
            Py_DECREF(t);
            if (r == NULL) {
                Py_DECREF(iseq);
                goto out;
            }
            Py_DECREF(r);
        }
        Py_DECREF(iseq);
    }
    rc = 0;
out:
    Py_DECREF(seq);
    return rc;
}

static int set_add_id(PyObject* set, PyObject* o) {
    PyObject* id = PyLong_FromVoidPtr(o);
    if (id == NULL) return -1;
    int rc = PySet_Add(set, id);
    Py_DECREF(id);
    return rc;
}

static int set_has_id(PyObject* set, PyObject* o) {
    PyObject* id = PyLong_FromVoidPtr(o);
    if (id == NULL) return -1;
    int rc = PySet_Contains(set, id);
    Py_DECREF(id);
    return rc;
}

/* Gradients headed for leaves: one that reaches two may be stolen by neither. */
static int track(Engine* e, PyObject* g) {
    int in = set_has_id(e->placed, g);
    if (in < 0) return -1;
    return set_add_id(in ? e->shared : e->placed, g);
}

/* Hand gradient g to input nr of node, summing with what is there; queue the
 * node with its first gradient. */
static int put(Engine* e, PyObject* node, Py_ssize_t nr, PyObject* g) {
    PyObject* buf = PyDict_GetItemWithError(e->buffers, node); /* borrowed */
    if (buf == NULL) {
        if (PyErr_Occurred()) return -1;
        Py_ssize_t n = ((NodeObject*)node)->n_outputs;
        if (n < nr + 1) n = nr + 1;
        buf = PyList_New(n);
        if (buf == NULL) return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(buf, i, Py_None);
        }
        int rc = PyDict_SetItem(e->buffers, node, buf);
        Py_DECREF(buf); /* the dict holds it */
        if (rc < 0 || heap_push(&e->heap, node) < 0) return -1;
    }
    while (PyList_GET_SIZE(buf) <= nr)
        if (PyList_Append(buf, Py_None) < 0) return -1;
    PyObject* old = PyList_GET_ITEM(buf, nr);
    if (old != Py_None) {
        g = PyNumber_Add(old, g);
        if (g == NULL) return -1;
    } else {
        Py_INCREF(g);
    }
    PyList_SetItem(buf, nr, g); /* steals g */
    if (Py_TYPE(node) == AccCls && track(e, g) < 0) return -1;
    return 0;
}

/* var.grad += g in the steady state of training (in place, unrecorded);
 * _engine._accumulate for everything else. */
static int accumulate(PyObject* var, PyObject* g, int create_graph, int owned) {
    int rg = flag(var, s__rg);
    if (rg <= 0) return rg; /* frozen after the graph was built: nothing */
    PyObject* old = PyObject_GetAttr(var, s__grad);
    if (old == NULL) return -1;
    int steady = 0;
    if (old != Py_None && !create_graph) {
        int org = flag(old, s__rg);
        if (org < 0) goto fail;
        if (!org) {
            PyObject *gs = slot_get(g, &F_shape), *vs = slot_get(var, &F_shape);
            PyObject *gd = slot_get(g, &F_dtype), *vd = slot_get(var, &F_dtype);
            int same = gs && vs && gd && vd
                           ? (gs == vs ? 1 : PyObject_RichCompareBool(gs, vs, Py_EQ))
                           : -1;
            steady = same > 0 && gd == vd;
            Py_XDECREF(gs);
            Py_XDECREF(vs);
            Py_XDECREF(gd);
            Py_XDECREF(vd);
            if (same < 0) goto fail;
        }
    }
    if (!steady) {
        Py_DECREF(old);
        PyObject* a[4] = {var, g, create_graph ? Py_True : Py_False, owned ? Py_True : Py_False};
        PyObject* r = PyObject_Vectorcall(py_accumulate, a, 4, NULL);
        Py_XDECREF(r);
        return r == NULL ? -1 : 0;
    }
    PyObject* one = PyLong_FromLong(1);
    PyObject* a[3] = {old, g, one};
    PyObject* r = one ? PyObject_Vectorcall(add_impl, a, 3, NULL) : NULL;
    Py_XDECREF(one);
    Py_DECREF(old);
    if (r == NULL) return -1;
    Py_DECREF(r);
    PyObject* d = PyObject_GenericGetDict(var, NULL);
    if (d == NULL) return -1;
    PyObject* hooks = PyDict_GetItemWithError(d, s__post_acc_hooks);
    int has = hooks ? PyObject_IsTrue(hooks) : (PyErr_Occurred() ? -1 : 0);
    Py_DECREF(d);
    if (has <= 0) return has;
    r = PyObject_CallOneArg(py_post_accumulate, var);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
fail:
    Py_DECREF(old);
    return -1;
}

/* Does the leaf tensor var have gradient hooks (Tensor.register_hook)? */
static int leaf_hooks(PyObject* var) {
    PyObject* d = PyObject_GenericGetDict(var, NULL);
    if (d == NULL) return -1;
    PyObject* hooks = PyDict_GetItemWithError(d, s__hooks);
    int has = hooks ? PyObject_IsTrue(hooks) : (PyErr_Occurred() ? -1 : 0);
    Py_DECREF(d);
    return has;
}

/* extra.post_hooks is not empty (extra is not None). */
static int has_post_hooks(PyObject* extra) {
    PyObject* h = PyObject_GetAttr(extra, s_post_hooks);
    if (h == NULL) return -1;
    int r = PyObject_IsTrue(h);
    Py_DECREF(h);
    return r;
}

static PyObject* apply_descr;   /* NodeBase._apply_formula */
static PyObject* release_descr; /* NodeBase._release_formula */

/* Is the class attribute `name` of node's type the method descriptor d? */
static int type_attr_is(PyObject* node, PyObject* name, PyObject* d) {
    PyObject* v = PyObject_GetAttr((PyObject*)Py_TYPE(node), name);
    if (v == NULL) return -1;
    Py_DECREF(v);
    return v == d;
}

/* One node off the heap: hooks, its backward (or the accumulation of a leaf),
 * its gradients handed on. */
static int run_node(Engine* e, PyObject* node) {
    int retain_graph = e->retain_graph, create_graph = e->create_graph;
    NodeObject* nd = (NodeObject*)node;
    PyObject* grads = PyDict_GetItemWithError(e->buffers, node);
    if (grads == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "engine: a node without buffer");
        return -1;
    }
    Py_INCREF(grads);
    if (PyDict_DelItem(e->buffers, node) < 0) {
        Py_DECREF(grads);
        return -1;
    }
    PyObject* result = NULL;
    int rc = -1;
    PyObject* extra = nd->extra != NULL && nd->extra != Py_None ? nd->extra : NULL;
    int is_leaf = Py_TYPE(node) == AccCls;
    int hooked = extra != NULL;
    if (!hooked && is_leaf) {
        PyObject* var = ((AccObject*)node)->variable;
        hooked = var != NULL && var != Py_None ? leaf_hooks(var) : 0;
        if (hooked < 0) goto out;
    }
    if (hooked) {
        PyObject* a[3] = {node, extra ? extra : Py_None, grads};
        Py_SETREF(grads, PyObject_Vectorcall(py_pre_hooks, a, 3, NULL));
        if (grads == NULL) goto out;
        PyObject* seq = PySequence_Fast(grads, "hooks' gradients");
        if (seq == NULL) goto out;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) /* a hook may keep them */
            if (set_add_id(e->foreign, PySequence_Fast_GET_ITEM(seq, i)) < 0) {
                Py_DECREF(seq);
                goto out;
            }
        Py_DECREF(seq);
    }
    if (e->targets != NULL && capture(e, node, grads) < 0) goto out;
    if (is_leaf) {
        PyObject* g = PySequence_GetItem(grads, 0);
        if (g == NULL) goto out;
        int wanted = e->accumulate && g != Py_None;
        if (wanted && e->input_nodes != NULL) wanted = PySet_Contains(e->input_nodes, node);
        if (wanted < 0) {
            Py_DECREF(g);
            goto out;
        }
        if (wanted) {
            int sh = set_has_id(e->shared, g), fo = sh ? 0 : set_has_id(e->foreign, g);
            int r = sh < 0 || fo < 0
                        ? -1
                        : accumulate(((AccObject*)node)->variable, g, create_graph, !sh && !fo);
            if (r < 0) {
                Py_DECREF(g);
                goto out;
            }
        }
        Py_DECREF(g);
        if (extra != NULL) {
            int ph = has_post_hooks(extra);
            if (ph < 0) goto out;
            if (ph) {
                PyObject* empty = PyTuple_New(0);
                PyObject* a[3] = {extra, empty, grads};
                PyObject* r = empty ? PyObject_Vectorcall(py_post_hooks, a, 3, NULL) : NULL;
                Py_XDECREF(empty);
                if (r == NULL) goto out;
                Py_DECREF(r);
            }
        }
        rc = 0;
        goto out;
    }
    if (e->input_nodes != NULL) { /* an input's own node: is anything beyond it needed? */
        PyObject* edges = nd->next_functions;
        int any = 0;
        for (Py_ssize_t i = 0; edges != NULL && PyTuple_Check(edges) && i < PyTuple_GET_SIZE(edges) && !any; i++) {
            PyObject* edge = PyTuple_GET_ITEM(edges, i);
            if (PyTuple_Check(edge) && PyTuple_GET_SIZE(edge) > 0)
                any = PySet_Contains(e->needed, PyTuple_GET_ITEM(edge, 0));
        }
        if (any < 0) goto out;
        if (!any) {
            rc = 0;
            goto out;
        }
    }
    if (nd->out_meta != NULL && nd->out_meta != Py_None) {
        PyObject* ctx = PyObject_GetAttr(node, s__ctx);
        if (ctx == NULL) goto out;
        Py_DECREF(ctx);
        if (ctx == Py_None) {
            int missing = 0;
            for (Py_ssize_t i = 0; i < PySequence_Size(grads) && !missing; i++) {
                PyObject* g = PySequence_GetItem(grads, i);
                if (g == NULL) goto out;
                missing = g == Py_None;
                Py_DECREF(g);
            }
            if (missing) { /* derivative-table formulas always get tensors */
                PyObject* a[2] = {node, grads};
                Py_SETREF(grads, PyObject_Vectorcall(py_zeros_for_missing, a, 2, NULL));
                if (grads == NULL) goto out;
            }
        }
    }
    int is_op = PyObject_TypeCheck(node, OpNodeCls);
    int own_apply = is_op ? type_attr_is(node, s_apply, apply_descr) : 0;
    if (own_apply < 0) goto out;
    if (e->anomaly) {
        PyObject* a[2] = {node, grads};
        result = PyObject_Vectorcall(py_run_node, a, 2, NULL);
    } else if (!create_graph && is_op) {
        /* our own formulas, nothing recorded: their ops skip the handler */
        ThreadVars* t = tv();
        t->below = 1;
        result = own_apply ? formula_apply(nd, grads)
                           : PyObject_CallMethodOneArg(node, s_apply, grads);
        t->below = 0;
    } else {
        result = own_apply ? formula_apply(nd, grads)
                           : PyObject_CallMethodOneArg(node, s_apply, grads);
    }
    if (result == NULL) goto out;
    if (extra != NULL) {
        int ph = has_post_hooks(extra);
        if (ph < 0) goto out;
        if (ph) {
            PyObject* a[3] = {extra, result, grads};
            Py_SETREF(result, PyObject_Vectorcall(py_post_hooks, a, 3, NULL));
            if (result == NULL) goto out;
        }
    }
    if (!retain_graph) {
        int own_release = is_op ? type_attr_is(node, s_release, release_descr) : 0;
        if (own_release < 0) goto out;
        if (own_release) {
            formula_release(nd);
        } else {
            PyObject* r = PyObject_CallMethodNoArgs(node, s_release);
            if (r == NULL) goto out;
            Py_DECREF(r);
        }
    }
    PyObject* edges = nd->next_functions;
    PyObject* res = PySequence_Fast(result, "a node's gradients");
    if (res == NULL) goto out;
    Py_SETREF(result, res);
    Py_ssize_t n = edges != NULL && PyTuple_Check(edges) ? PyTuple_GET_SIZE(edges) : 0;
    if (PySequence_Fast_GET_SIZE(result) < n) n = PySequence_Fast_GET_SIZE(result);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject* g = PySequence_Fast_GET_ITEM(result, i);
        PyObject* edge = PyTuple_GET_ITEM(edges, i);
        if (g == Py_None || !PyTuple_Check(edge) || PyTuple_GET_SIZE(edge) != 2) continue;
        PyObject* child = PyTuple_GET_ITEM(edge, 0);
        if (child == Py_None) continue;
        if (!PyObject_TypeCheck(child, &NodeType)) {
            PyErr_SetString(PyExc_TypeError, "engine: next_functions holds a non-node");
            goto out;
        }
        Py_ssize_t nr = PyLong_AsSsize_t(PyTuple_GET_ITEM(edge, 1));
        if (nr < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "engine: negative input_nr");
            goto out;
        }
        int need = is_needed(e, child);
        if (need < 0) goto out;
        if (need && put(e, child, nr, g) < 0) goto out;
    }
    rc = 0;
out:
    Py_XDECREF(grads);
    Py_XDECREF(result);
    return rc;
}

/* execute(root_edges, grads, retain_graph, create_graph, anomaly, accumulate,
 *         targets, needed, input_nodes, inputs, captured): Note [C engine].
 * root_edges: [(node, nr)]; grads: [(gradient or None, owned)]; the last five
 * are None without inputs. */
static PyObject* execute(PyObject* self, PyObject* const* a, Py_ssize_t nargs) {
    if (nargs != 11 || !PyList_Check(a[0]) || !PyList_Check(a[1]) ||
        (a[6] != Py_None && !PyDict_Check(a[6])) || (a[7] != Py_None && !PyAnySet_Check(a[7])) ||
        (a[8] != Py_None && !PyAnySet_Check(a[8])) || (a[10] != Py_None && !PyList_Check(a[10])) ||
        (a[6] == Py_None) != (a[7] == Py_None) || (a[6] == Py_None) != (a[8] == Py_None) ||
        (a[6] == Py_None) != (a[10] == Py_None)) {
        PyErr_SetString(PyExc_TypeError,
                        "execute(root_edges, grads, retain_graph, create_graph, anomaly, accumulate, "
                        "targets, needed, input_nodes, inputs, captured)");
        return NULL;
    }
    Engine e = {.buffers = PyDict_New(),
                .placed = PySet_New(NULL),
                .shared = PySet_New(NULL),
                .foreign = PySet_New(NULL)};
    int rc = -1;
    if (!e.buffers || !e.placed || !e.shared || !e.foreign) goto out;
    if ((e.retain_graph = PyObject_IsTrue(a[2])) < 0 || (e.create_graph = PyObject_IsTrue(a[3])) < 0 ||
        (e.anomaly = PyObject_IsTrue(a[4])) < 0 || (e.accumulate = PyObject_IsTrue(a[5])) < 0)
        goto out;
    if (a[6] != Py_None) {
        e.targets = a[6];
        e.needed = a[7];
        e.input_nodes = a[8];
        e.inputs = a[9];
        e.captured = a[10];
    }
    Py_ssize_t n = PyList_GET_SIZE(a[0]);
    if (PyList_GET_SIZE(a[1]) < n) n = PyList_GET_SIZE(a[1]);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *edge = PyList_GET_ITEM(a[0], i), *go = PyList_GET_ITEM(a[1], i);
        if (!PyTuple_Check(edge) || PyTuple_GET_SIZE(edge) != 2 || !PyTuple_Check(go) ||
            PyTuple_GET_SIZE(go) != 2 || !PyObject_TypeCheck(PyTuple_GET_ITEM(edge, 0), &NodeType)) {
            PyErr_SetString(PyExc_TypeError, "execute: bad root edge or gradient");
            goto out;
        }
        PyObject *g = PyTuple_GET_ITEM(go, 0), *node = PyTuple_GET_ITEM(edge, 0);
        if (g == Py_None) continue;
        int need = is_needed(&e, node);
        if (need < 0) goto out;
        if (!need) continue;
        Py_ssize_t nr = PyLong_AsSsize_t(PyTuple_GET_ITEM(edge, 1));
        if (nr < 0 && PyErr_Occurred()) goto out;
        if (put(&e, node, nr, g) < 0) goto out;
        int owned = PyObject_IsTrue(PyTuple_GET_ITEM(go, 1));
        if (owned < 0 || (!owned && set_add_id(e.foreign, g) < 0)) goto out;
    }
    while (e.heap.n > 0) {
        PyObject* node = heap_pop(&e.heap);
        int r = run_node(&e, node);
        Py_DECREF(node);
        if (r < 0) goto out;
    }
    rc = 0;
out:
    heap_free(&e.heap);
    Py_XDECREF(e.buffers);
    Py_XDECREF(e.placed);
    Py_XDECREF(e.shared);
    Py_XDECREF(e.foreign);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject** const engine_slots[] = {
    (PyObject**)&OpNodeCls, &py_sum_to, &py_real_grad, &py_zeros_for_missing, &py_pre_hooks,
    &py_post_hooks, &py_accumulate, &py_post_accumulate, &add_impl, &py_run_node,
};
static const char* const engine_names[] = {
    "OpNode", "sum_to", "real_grad", "zeros_for_missing", "pre_hooks", "post_hooks",
    "accumulate", "post_accumulate", "add_impl", "run_node",
};

static PyObject* setup_engine(PyObject* self, PyObject* args, PyObject* kw) {
    size_t n = sizeof engine_names / sizeof engine_names[0];
    if (PyTuple_GET_SIZE(args) || kw == NULL) {
        PyErr_SetString(PyExc_TypeError, "setup_engine(**objects): keywords only");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (PyDict_GetItemString(kw, engine_names[i]) == NULL) {
            PyErr_Format(PyExc_TypeError, "setup_engine: missing %s", engine_names[i]);
            return NULL;
        }
    PyObject* cls = PyDict_GetItemString(kw, "OpNode");
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &NodeType)) {
        PyErr_SetString(PyExc_TypeError, "setup_engine: OpNode is not a node class");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        PyObject* v = PyDict_GetItemString(kw, engine_names[i]);
        Py_INCREF(v);
        Py_XSETREF(*engine_slots[i], v);
    }
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- setup */

static PyObject** const setup_slots[] = {
    (PyObject**)&TensorType, &infos, &py_info, &py_record, &py_record_checked,
    &py_handle_inplace, &py_edge, &py_accumulator, &py_alias, &py_saved_result,
    &hooks_stack, &call_impl, (PyObject**)&SavedCls, (PyObject**)&AccCls, &last_write,
};
static const char* const setup_names[] = {
    "Tensor", "infos", "info", "record", "record_checked", "handle_inplace", "edge",
    "accumulator", "alias", "saved_result", "hooks_stack", "call_impl", "SavedTensor",
    "AccumulateGrad", "last_write",
};
#define N_SETUP (sizeof setup_names / sizeof setup_names[0])

/* The classes whose slots are read at their offsets (Note [Slot reads]):
 * Tensor, and optionally Storage (any storage class), dtype and Op. */
static int setup_slot_fields(PyObject* kw) {
    struct {
        const char* cls;
        SlotField* f;
    } fields[] = {
        {"Tensor", &F_shape},   {"Tensor", &F_dtype},  {"Tensor", &F_storage},
        {"Tensor", &F_stride},  {"Tensor", &F_offset}, {"Storage", &F_version},
        {"Storage", &F_device}, {"dtype", &F_differentiable}, {"Op", &F_impl},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        PyObject* cls = PyDict_GetItemString(kw, fields[i].cls);
        if (cls == NULL) continue; /* read with PyObject_GetAttr */
        if (!PyType_Check(cls)) {
            PyErr_Format(PyExc_TypeError, "setup: %s must be a class", fields[i].cls);
            return -1;
        }
        if (slot_field_init(fields[i].f, (PyTypeObject*)cls, fields[i].f->name) < 0) return -1;
    }
    return 0;
}

static PyObject* setup(PyObject* self, PyObject* args, PyObject* kw) {
    if (PyTuple_GET_SIZE(args) || kw == NULL) {
        PyErr_SetString(PyExc_TypeError, "setup(**objects): keywords only");
        return NULL;
    }
    for (size_t i = 0; i < N_SETUP; i++) {
        PyObject* v = PyDict_GetItemString(kw, setup_names[i]);
        if (v == NULL) {
            PyErr_Format(PyExc_TypeError, "setup: missing %s", setup_names[i]);
            return NULL;
        }
    }
    if (!PyType_Check(PyDict_GetItemString(kw, "Tensor")) ||
        !PyType_Check(PyDict_GetItemString(kw, "SavedTensor")) ||
        !PyType_IsSubtype((PyTypeObject*)PyDict_GetItemString(kw, "SavedTensor"), &SavedType) ||
        !PyType_Check(PyDict_GetItemString(kw, "AccumulateGrad")) ||
        !PyType_IsSubtype((PyTypeObject*)PyDict_GetItemString(kw, "AccumulateGrad"), &AccType) ||
        !PyDict_Check(PyDict_GetItemString(kw, "infos")) ||
        !PyList_Check(PyDict_GetItemString(kw, "hooks_stack"))) {
        PyErr_SetString(PyExc_TypeError, "setup: wrong kinds of objects");
        return NULL;
    }
    PyObject* dirs = PyDict_GetItemString(kw, "own_dirs");
    if (dirs == NULL || !PyTuple_Check(dirs)) {
        PyErr_SetString(PyExc_TypeError, "setup: own_dirs must be a tuple of str");
        return NULL;
    }
    PyObject* data = PyObject_GetAttrString(PyDict_GetItemString(kw, "last_write"), "data");
    if (data == NULL) return NULL;
    if (!PyDict_Check(data)) {
        Py_DECREF(data);
        PyErr_SetString(PyExc_TypeError, "setup: last_write must be a WeakKeyDictionary");
        return NULL;
    }
    Py_ssize_t nd = PyTuple_GET_SIZE(dirs);
    char** copies = PyMem_Calloc(nd ? nd : 1, sizeof(char*));
    if (copies == NULL) {
        Py_DECREF(data);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < nd; i++) {
        const char* d = PyUnicode_AsUTF8(PyTuple_GET_ITEM(dirs, i));
        copies[i] = d ? PyMem_Malloc(strlen(d) + 1) : NULL;
        if (copies[i] == NULL) {
            for (Py_ssize_t j = 0; j < i; j++) PyMem_Free(copies[j]);
            PyMem_Free(copies);
            Py_DECREF(data);
            return d ? PyErr_NoMemory() : NULL;
        }
        strcpy(copies[i], d);
    }
    for (Py_ssize_t i = 0; i < n_own_dirs; i++) PyMem_Free(own_dirs[i]);
    PyMem_Free(own_dirs);
    own_dirs = copies;
    n_own_dirs = nd;
    Py_XSETREF(last_write_data, data);
    if (setup_slot_fields(kw) < 0) return NULL;
    for (size_t i = 0; i < N_SETUP; i++) {
        PyObject* v = PyDict_GetItemString(kw, setup_names[i]);
        Py_INCREF(v);
        Py_XSETREF(*setup_slots[i], v);
    }
    Py_RETURN_NONE;
}

static PyMethodDef functions[] = {
    {"setup", (PyCFunction)(void (*)(void))setup, METH_VARARGS | METH_KEYWORDS,
     "setup(**objects): the Python side of the fast paths (_handler.py)"},
    {"setup_engine", (PyCFunction)(void (*)(void))setup_engine, METH_VARARGS | METH_KEYWORDS,
     "setup_engine(**objects): the Python side of the engine's loop (_engine.py)"},
    {"execute", (PyCFunction)(void (*)(void))execute, METH_FASTCALL,
     "execute(root_edges, grads, ...): the engine's loop (Note [C engine])"},
    {"note_write", (PyCFunction)(void (*)(void))note_write_fn, METH_FASTCALL,
     "note_write(op, tensor): note an in-place write into tensor's storage (Note [Write notes])"},
    {"accumulator", (PyCFunction)accumulator_fn, METH_O,
     "accumulator(t): the (shared) AccumulateGrad node of leaf t"},
    {"dispatch", (PyCFunction)(void (*)(void))dispatch, METH_FASTCALL,
     "dispatch(op, args): handle(op, args, {}, op.call_impl), for ember_core's generated functions"},
    {"handle", (PyCFunction)(void (*)(void))handle, METH_FASTCALL,
     "handle(op, args, kwargs, call): autograd's dispatch handler (Note [Dispatch])"},
    {NULL},
};

/* ------------------------------------------------------------- install */

static int add_type(PyObject* m, PyTypeObject* t, const char* name) {
    if (PyType_Ready(t) < 0) return -1;
    Py_INCREF(t);
    if (PyModule_AddObject(m, name, (PyObject*)t) < 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}

static int intern(PyObject** s, const char* text) {
    *s = PyUnicode_InternFromString(text);
    return *s == NULL ? -1 : 0;
}

static int install(void) {
    if (intern(&s__rg, "_rg") || intern(&s_grad_fn, "grad_fn") ||
        intern(&s__output_nr, "_output_nr") || intern(&s__base, "_base") ||
        intern(&s__inference, "_inference") || intern(&s__storage, "_storage") ||
        intern(&s__version, "_version") || intern(&s__shape, "_shape") ||
        intern(&s__dtype, "_dtype") || intern(&s__stride, "_stride") ||
        intern(&s__offset, "_offset") || intern(&s__device, "_device") ||
        intern(&s_differentiable, "differentiable") || intern(&s__vv, "_vv") ||
        intern(&s__acc, "_acc") || intern(&s_impl, "impl") || intern(&s_result, "result") ||
        intern(&s__unpack_slow, "_unpack_slow") || intern(&s_fn, "fn") ||
        intern(&s_wants_needs, "wants_needs") || intern(&s_multi_grad, "multi_grad") ||
        intern(&s_needs, "needs") || intern(&s_name, "name") || intern(&s_to, "to") ||
        intern(&s_apply, "apply") || intern(&s_release, "release") || intern(&s__ctx, "_ctx") ||
        intern(&s__hooks, "_hooks") || intern(&s__post_acc_hooks, "_post_acc_hooks") ||
        intern(&s__grad, "_grad") || intern(&s_post_hooks, "post_hooks") ||
        intern(&s_clone, "clone") || intern(&s__custom_view, "_custom_view"))
        return -1;
    F_shape.name = s__shape;
    F_dtype.name = s__dtype;
    F_storage.name = s__storage;
    F_stride.name = s__stride;
    F_offset.name = s__offset;
    F_version.name = s__version;
    F_device.name = s__device;
    F_differentiable.name = s_differentiable;
    F_impl.name = s_impl;
    one = PyLong_FromLong(1);
    no_kwargs = PyDict_New();
    if (one == NULL || no_kwargs == NULL) return -1;
    no_edge = Py_BuildValue("(Oi)", Py_None, 0);
    if (no_edge == NULL) return -1;
    PyObject* m = PyImport_ImportModule("ember_autograd._C");
    if (m == NULL) return -1;
    int rc = -1;
    if (add_type(m, &ThreadStateType, "ThreadState") || add_type(m, &NodeType, "NodeBase") ||
        add_type(m, &AccType, "AccumulateGradBase") ||
        add_type(m, &SavedType, "SavedTensorBase") || add_type(m, &InfoType, "OpInfo") ||
        add_type(m, &AccRefType, "AccRef"))
        goto out;
    apply_descr = PyDict_GetItemString(NodeType.tp_dict, "_apply_formula");
    release_descr = PyDict_GetItemString(NodeType.tp_dict, "_release_formula");
    if (apply_descr == NULL || release_descr == NULL) goto out;
    Py_INCREF(apply_descr);
    Py_INCREF(release_descr);
    PyObject* modname = PyModule_GetNameObject(m);
    if (modname == NULL) goto out;
    for (PyMethodDef* f = functions; f->ml_name != NULL; f++) {
        PyObject* fn = PyCFunction_NewEx(f, NULL, modname);
        if (fn == NULL || PyModule_AddObject(m, f->ml_name, fn) < 0) {
            Py_XDECREF(fn);
            Py_DECREF(modname);
            goto out;
        }
    }
    Py_DECREF(modname);
    rc = 0;
out:
    Py_DECREF(m);
    return rc;
}

int ea_install(void) {
    /* cffi releases the GIL around its calls */
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = install();
    if (rc < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject* s = value ? PyObject_Str(value) : NULL;
        const char* text = s ? PyUnicode_AsUTF8(s) : NULL;
        snprintf(message, sizeof message, "ea_install: %s", text ? text : "failed");
        PyErr_Clear();
        Py_XDECREF(s);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    }
    PyGILState_Release(g);
    return rc;
}
