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
#include <structmember.h>

#include "ember_autograd.h"

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
    *s_is_floating_point, *s__vv, *s__acc, *s_impl, *s_result, *s__unpack_slow;

/* Set once by setup() (_handler.py): the Python side of the fast paths. */
static PyTypeObject* TensorType;
static PyObject* infos;           /* op -> OpInfo */
static PyObject* py_info;         /* _handler._info(op): makes and registers an OpInfo */
static PyObject* py_record;       /* _handler._record(op, info, args, call) */
static PyObject* py_record_checked;
static PyObject* py_handle_inplace;
static PyObject* py_edge;         /* _handler._edge(t) */
static PyObject* py_accumulator;  /* _node.accumulator(t) */
static PyObject* py_alias;        /* ember_core._tensor.alias(t) */
static PyObject* py_saved_result; /* _handler._saved_result(result, diff, name, keep) */
static PyObject* hooks_stack;     /* _node.hooks_stack */
static PyObject* call_impl;       /* ember_core's Op.call_impl (the end of the handler chain) */
static PyTypeObject* SavedCls;    /* _node.SavedTensor (a subclass of SavedTensorBase) */
static PyTypeObject* AccCls;      /* _node.AccumulateGrad (a subclass of AccumulateGradBase) */
static PyObject* no_edge;         /* (None, 0) */

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
    PyObject* st = PyObject_GetAttr(t, s__storage);
    if (st == NULL) return -1;
    PyObject* v = PyObject_GetAttr(st, s__version);
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
};

/* The sink of a leaf (_node.AccumulateGrad): a node with the leaf tensor it
 * accumulates into.  A leaf holds its AccumulateGrad weakly (``_acc``), as in
 * PyTorch, so a new one is made for each graph that uses the leaf: cheaply, by
 * accumulator() below. */
typedef struct {
    NodeObject node;
    PyObject* variable;
} AccObject;

static int acc_traverse(AccObject* n, visitproc visit, void* arg) {
    Py_VISIT(n->variable);
    return node_traverse(&n->node, visit, arg);
}

static int acc_clear(AccObject* n) {
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
    if (PyMethod_Check(call) && PyMethod_GET_FUNCTION(call) == call_impl &&
        PyMethod_GET_SELF(call) == op && PyTuple_CheckExact(args)) {
        PyObject* impl = PyObject_GetAttr(op, s_impl);
        if (impl == NULL) return NULL;
        PyObject* r = PyObject_Call(impl, args, NULL);
        Py_DECREF(impl);
        return r;
    }
    PyObject* a[2] = {args, kwargs};
    return PyObject_Vectorcall(call, a, 2, NULL);
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

static PyObject* record(PyObject* op, InfoObject* info, PyObject* args, PyObject* call);

/* Note [Dispatch] in ember_core: handle(op, args, kwargs, call), the handler
 * autograd registers.  The same steps as its Python description in
 * _handler.py, which keeps the rare cases. */
static PyObject* handle(PyObject* self, PyObject* const* a, Py_ssize_t n) {
    if (n != 4) {
        PyErr_SetString(PyExc_TypeError, "handle(op, args, kwargs, call)");
        return NULL;
    }
    PyObject *op = a[0], *args = a[1], *kwargs = a[2], *call = a[3];
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
        PyObject* v[4] = {op, info, args, call};
        result = PyObject_Vectorcall(py_handle_inplace, v, 4, NULL);
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
                PyObject* v[4] = {op, info, args, call};
                result = PyObject_Vectorcall(py_record_checked, v, 4, NULL);
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

/* ------------------------------------------------------------ recording */

/* Can record() take this call?  Everything that makes it hand over to the
 * Python _record is checked here, before anything happens: tensor lists,
 * inference tensors to save, shapes asked of non-tensors. */
static int fast_case(InfoObject* info, PyObject* args) {
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    PyObject* idx = info->in_idx;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(idx); k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(idx, k));
        if (i < 0 || i >= nargs) return 0;
        PyObject* a = PyTuple_GET_ITEM(args, i);
        if (PyList_Check(a) || PyTuple_Check(a)) return 0;
    }
    PyObject* uses = info->uses;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(uses); k++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(PyTuple_GET_ITEM(uses, k), 1));
        if (i < 0 || i >= nargs) return 0;
        PyObject* a = PyTuple_GET_ITEM(args, i);
        if (PyList_Check(a) || PyTuple_Check(a)) return 0;
        if (is_tensor(a)) {
            int r = flag(a, s__inference);
            if (r != 0) return r < 0 ? -1 : 0;
        }
    }
    PyObject* su = info->shape_uses;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(su); k++) {
        PyObject* e = PyTuple_GET_ITEM(su, k);
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 1));
        if (i < 0 || i >= nargs || !is_tensor(PyTuple_GET_ITEM(args, i))) return 0;
        if (PyLong_AsLong(PyTuple_GET_ITEM(e, 2)) > 2) return 0;
    }
    return 1;
}

/* The (shared) AccumulateGrad node of leaf t (_node.accumulator): the one t
 * holds weakly, or a new one. */
static PyObject* accumulator(PyObject* t) {
    if (tv()->anomaly) return PyObject_CallOneArg(py_accumulator, t); /* records a trace */
    PyObject* d = PyObject_GenericGetDict(t, NULL);
    if (d == NULL) return NULL;
    PyObject* ref = PyDict_GetItemWithError(d, s__acc); /* borrowed */
    if (ref != NULL && PyWeakref_Check(ref)) {
        PyObject* acc = PyWeakref_GetObject(ref); /* borrowed */
        if (acc != Py_None) {
            Py_INCREF(acc);
            Py_DECREF(d);
            return acc;
        }
    } else if (PyErr_Occurred()) {
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
    PyObject* w = acc->node.next_functions ? PyWeakref_NewRef((PyObject*)acc, NULL) : NULL;
    int rc = w == NULL ? -1 : PyDict_SetItem(d, s__acc, w);
    Py_XDECREF(w);
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

static PyObject* meta_of(PyObject* a) {
    PyObject* shape = PyObject_GetAttr(a, s__shape);
    if (shape == NULL) return NULL;
    PyObject* dtype = PyObject_GetAttr(a, s__dtype);
    if (dtype == NULL) {
        Py_DECREF(shape);
        return NULL;
    }
    PyObject* m = PyTuple_Pack(2, shape, dtype);
    Py_DECREF(shape);
    Py_DECREF(dtype);
    return m;
}

static PyObject* shape_value(PyObject* a, long kind) {
    if (kind == 0) return PyObject_GetAttr(a, s__shape);
    if (kind == 2) {
        PyObject* st = PyObject_GetAttr(a, s__storage);
        if (st == NULL) return NULL;
        PyObject* d = PyObject_GetAttr(st, s__device);
        Py_DECREF(st);
        return d;
    }
    PyObject *shape = PyObject_GetAttr(a, s__shape), *stride = NULL, *offset = NULL, *r = NULL;
    if (shape == NULL) return NULL;
    stride = PyObject_GetAttr(a, s__stride);
    if (stride != NULL) offset = PyObject_GetAttr(a, s__offset);
    if (offset != NULL) r = PyTuple_Pack(3, shape, stride, offset);
    Py_DECREF(shape);
    Py_XDECREF(stride);
    Py_XDECREF(offset);
    return r;
}

/* Is o a floating tensor? 1, 0, -1 on error. */
static int floating_tensor(PyObject* o) {
    if (!is_tensor(o)) return 0;
    PyObject* dt = PyObject_GetAttr(o, s__dtype);
    if (dt == NULL) return -1;
    int r = flag(dt, s_is_floating_point);
    Py_DECREF(dt);
    return r;
}

/* Note [Recording plan] in _handler.py: run op below autograd and give its
 * output a node of its formula -- for the common case (one differentiable
 * output, not in place, no saved-tensor hooks, no anomaly mode); the rest goes
 * to _handler._record, the reference. */
static PyObject* record(PyObject* op, InfoObject* info, PyObject* args, PyObject* call) {
    ThreadVars* tvs = tv();
    int fast = info->fast && !tvs->anomaly && PyList_GET_SIZE(hooks_stack) == 0;
    if (fast) {
        fast = fast_case(info, args);
        if (fast < 0) return NULL;
    }
    if (!fast) {
        PyObject* v[4] = {op, (PyObject*)info, args, call};
        return PyObject_Vectorcall(py_record, v, 4, NULL);
    }
    PyObject *edges = NULL, *metas = NULL, *values = NULL, *result = NULL, *node = NULL;
    PyObject* idx = info->in_idx;
    Py_ssize_t nin = PyTuple_GET_SIZE(idx);
    edges = PyTuple_New(nin);
    metas = PyList_New(nin);
    values = PyDict_New();
    if (edges == NULL || metas == NULL || values == NULL) goto fail;
    for (Py_ssize_t k = 0; k < nin; k++) {
        PyObject* a = PyTuple_GET_ITEM(args, PyLong_AsSsize_t(PyTuple_GET_ITEM(idx, k)));
        PyObject *e, *m;
        if (is_tensor(a)) {
            int rg = flag(a, s__rg);
            if (rg < 0) goto fail;
            if (rg) {
                e = input_edge(a);
                if (e == NULL) goto fail;
            } else {
                e = no_edge;
                Py_INCREF(e);
            }
            m = meta_of(a);
            if (m == NULL) {
                Py_DECREF(e);
                goto fail;
            }
        } else {
            e = no_edge;
            Py_INCREF(e);
            m = Py_None;
            Py_INCREF(m);
        }
        PyTuple_SET_ITEM(edges, k, e);
        PyList_SET_ITEM(metas, k, m);
    }
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
                needed = PyTuple_GET_ITEM(PyTuple_GET_ITEM(edges, i), 0) != Py_None;
            }
            if (!needed) {  /* no gradient that reads it will be computed */
                if (PyDict_SetItem(values, name, Py_None) < 0) goto fail;
                continue;
            }
        }
        if (is_tensor(a)) {
            v = make_saved(a, info->name);
            if (v == NULL) goto fail;
        } else {
            v = a;
            Py_INCREF(v);
        }
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

    result = call_below(op, call, args);
    if (result == NULL) goto fail;

    PyObject* first = PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL;
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

/* ---------------------------------------------------------------- setup */

static PyObject** const setup_slots[] = {
    (PyObject**)&TensorType, &infos, &py_info, &py_record, &py_record_checked,
    &py_handle_inplace, &py_edge, &py_accumulator, &py_alias, &py_saved_result,
    &hooks_stack, &call_impl, (PyObject**)&SavedCls, (PyObject**)&AccCls,
};
static const char* const setup_names[] = {
    "Tensor", "infos", "info", "record", "record_checked", "handle_inplace", "edge",
    "accumulator", "alias", "saved_result", "hooks_stack", "call_impl", "SavedTensor",
    "AccumulateGrad",
};
#define N_SETUP (sizeof setup_names / sizeof setup_names[0])

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
    {"accumulator", (PyCFunction)accumulator_fn, METH_O,
     "accumulator(t): the (shared) AccumulateGrad node of leaf t"},
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
        intern(&s_is_floating_point, "is_floating_point") || intern(&s__vv, "_vv") ||
        intern(&s__acc, "_acc") || intern(&s_impl, "impl") || intern(&s_result, "result") ||
        intern(&s__unpack_slow, "_unpack_slow"))
        return -1;
    no_edge = Py_BuildValue("(Oi)", Py_None, 0);
    if (no_edge == NULL) return -1;
    PyObject* m = PyImport_ImportModule("ember_autograd._C");
    if (m == NULL) return -1;
    int rc = -1;
    if (add_type(m, &ThreadStateType, "ThreadState") || add_type(m, &NodeType, "NodeBase") ||
        add_type(m, &AccType, "AccumulateGradBase") ||
        add_type(m, &SavedType, "SavedTensorBase") || add_type(m, &InfoType, "OpInfo"))
        goto out;
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
