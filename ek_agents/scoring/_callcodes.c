/* ek_agents._callcodes: one character per tool call, in C.
 *
 * encode(a, b) reads two lists of call lists (each call a (str, dict) tuple whose argument
 * values are plain str/int/float/bool/None) and gives every call a class: two calls share a
 * class iff they call the same tool with equal arguments of the same types (1, 1.0 and True
 * are three classes; key order does not matter). It returns
 *
 *     (classes_a, classes_b, tools_a, tools_b, representatives, tool_names)
 *
 * where classes_x / tools_x hold one str per call list of side x, one code point per call --
 * the class id or the tool id, skipping the surrogate block -- representatives[i] is the
 * first call of class i and tool_names[j] the name of tool j. Anything else in the input (another shape,
 * a nested or non-scalar value, a key that is not a str, more classes than code points)
 * returns None: the caller then takes its general path, which reads and reports it.
 *
 * The pure-Python twin is ek_agents.callcodes.encode_python (tests hold the two equal).
 *
 * CallTable (below) keeps such classes from one call to the next, one episode at a time: what
 * ToolCallMetric.score uses to pair identical calls without preparing them again.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SURROGATES 0x800
#define MAX_ID (0x10FFFF - SURROGATES)

typedef struct {
    Py_ssize_t cls;  /* -1: empty */
    Py_hash_t hash;
} Slot;

typedef struct {
    Slot *slots;
    Py_ssize_t cap;  /* a power of two */
    PyObject *reps;  /* list: the first call of each class */
    PyObject *tool_ids;  /* dict: tool name -> id */
    PyObject *tool_names;  /* list */
    int *tool_of;  /* per class: its tool id */
    Py_ssize_t tool_of_cap;
} Table;  /* with tool_ids NULL (a CallTable) no tool ids are kept and reps hold snapshots */

static inline int
plain_value(PyObject *v)
{
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyUnicode_Type) return 1;
    if (t == &PyLong_Type) return 2;
    if (t == &PyFloat_Type) return 3;
    if (t == &PyBool_Type) return 4;
    if (v == Py_None) return 5;
    return 0;
}

static inline uint64_t
mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* The call's hash (order-free over the arguments); 0 = not a plain call, -1 = error. */
static int
call_hash(PyObject *call, Py_hash_t *out)
{
    if (!PyTuple_CheckExact(call) || PyTuple_GET_SIZE(call) != 2) return 0;
    PyObject *tool = PyTuple_GET_ITEM(call, 0), *args = PyTuple_GET_ITEM(call, 1);
    if (!PyUnicode_CheckExact(tool) || !PyDict_CheckExact(args)) return 0;
    Py_hash_t ht = PyObject_Hash(tool);
    if (ht == -1) return -1;
    uint64_t acc = 0;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(args, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k)) return 0;
        int tag = plain_value(v);
        if (!tag) return 0;
        Py_hash_t hk = PyObject_Hash(k);
        if (hk == -1) return -1;
        Py_hash_t hv = PyObject_Hash(v);
        if (hv == -1) return -1;
        acc += mix((uint64_t)hk * 0x9E3779B97F4A7C15ULL ^ mix((uint64_t)hv + (uint64_t)tag));
    }
    uint64_t h = mix((uint64_t)ht ^ acc ^ ((uint64_t)PyDict_GET_SIZE(args) << 56));
    Py_hash_t r = (Py_hash_t)(h >> 1);
    *out = r == -1 ? -2 : r;
    return 1;
}

/* 1 if two plain calls are equal with the same value types, 0 if not, -1 on error. */
static int
call_equal(PyObject *a, PyObject *b)
{
    if (a == b) return 1;
    PyObject *ta = PyTuple_GET_ITEM(a, 0), *tb = PyTuple_GET_ITEM(b, 0);
    if (ta != tb) {
        int eq = PyUnicode_Compare(ta, tb);
        if (eq == -1 && PyErr_Occurred()) return -1;
        if (eq != 0) return 0;
    }
    PyObject *da = PyTuple_GET_ITEM(a, 1), *db = PyTuple_GET_ITEM(b, 1);
    if (PyDict_GET_SIZE(da) != PyDict_GET_SIZE(db)) return 0;
    Py_ssize_t pos = 0;
    PyObject *k, *v, *w;
    while (PyDict_Next(da, &pos, &k, &v)) {
        w = PyDict_GetItemWithError(db, k);
        if (w == NULL) return PyErr_Occurred() ? -1 : 0;
        if (Py_TYPE(v) != Py_TYPE(w)) return 0;
        if (v != w) {
            int eq = PyObject_RichCompareBool(v, w, Py_EQ);
            if (eq <= 0) return eq;
        }
    }
    return 1;
}

static int
grow(Table *t)
{
    Py_ssize_t cap = t->cap * 2;
    Slot *s = PyMem_Malloc(cap * sizeof(Slot));
    if (!s) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < cap; i++) s[i].cls = -1;
    for (Py_ssize_t i = 0; i < t->cap; i++) {
        if (t->slots[i].cls < 0) continue;
        size_t j = (size_t)t->slots[i].hash & (cap - 1);
        while (s[j].cls >= 0) j = (j + 1) & (cap - 1);
        s[j] = t->slots[i];
    }
    PyMem_Free(t->slots);
    t->slots = s;
    t->cap = cap;
    return 0;
}

/* The class of a call (a new class when it is the first of its kind); -2 = not plain, -1 = error. */
static Py_ssize_t
intern_call(Table *t, PyObject *call)
{
    Py_hash_t h;
    int ok = call_hash(call, &h);
    if (ok <= 0) return ok == 0 ? -2 : -1;
    size_t mask = t->cap - 1, j = (size_t)h & mask;
    while (t->slots[j].cls >= 0) {
        if (t->slots[j].hash == h) {
            int eq = call_equal(call, PyList_GET_ITEM(t->reps, t->slots[j].cls));
            if (eq < 0) return -1;
            if (eq) return t->slots[j].cls;
        }
        j = (j + 1) & mask;
    }
    Py_ssize_t cls = PyList_GET_SIZE(t->reps);
    if (cls >= MAX_ID) return -2;
    if (t->tool_ids == NULL) {  /* a CallTable: no tool ids; the class keeps a snapshot */
        PyObject *copy = PyDict_Copy(PyTuple_GET_ITEM(call, 1));
        if (!copy) return -1;
        PyObject *rep = PyTuple_Pack(2, PyTuple_GET_ITEM(call, 0), copy);
        Py_DECREF(copy);
        if (!rep) return -1;
        int bad = PyList_Append(t->reps, rep);
        Py_DECREF(rep);
        if (bad) return -1;
        goto placed;
    }
    /* its tool's id */
    PyObject *tool = PyTuple_GET_ITEM(call, 0);
    PyObject *id = PyDict_GetItemWithError(t->tool_ids, tool);
    Py_ssize_t tid;
    if (id == NULL) {
        if (PyErr_Occurred()) return -1;
        tid = PyList_GET_SIZE(t->tool_names);
        if (tid >= MAX_ID) return -2;
        PyObject *n = PyLong_FromSsize_t(tid);
        if (!n) return -1;
        int bad = PyDict_SetItem(t->tool_ids, tool, n);
        Py_DECREF(n);
        if (bad || PyList_Append(t->tool_names, tool)) return -1;
    } else {
        tid = PyLong_AsSsize_t(id);
    }
    if (cls >= t->tool_of_cap) {
        Py_ssize_t cap = t->tool_of_cap ? t->tool_of_cap * 2 : 1024;
        int *p = PyMem_Realloc(t->tool_of, cap * sizeof(int));
        if (!p) { PyErr_NoMemory(); return -1; }
        t->tool_of = p;
        t->tool_of_cap = cap;
    }
    t->tool_of[cls] = (int)tid;
    if (PyList_Append(t->reps, call)) return -1;
placed:
    t->slots[j].cls = cls;
    t->slots[j].hash = h;
    if (2 * (cls + 1) > t->cap && grow(t)) return -1;
    return cls;
}

static inline Py_UCS4
code(Py_ssize_t id)
{
    return (Py_UCS4)(id < 0xD800 ? id : id + SURROGATES);
}

/* Classes of every call of `lists` into ids[]; 1 done, 0 not plain, -1 error. */
static int
read_side(Table *t, PyObject *lists, Py_ssize_t **ids, Py_ssize_t *n)
{
    if (!PyList_CheckExact(lists)) return 0;
    Py_ssize_t total = 0, m = PyList_GET_SIZE(lists);
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *row = PyList_GET_ITEM(lists, i);
        if (!PyList_CheckExact(row)) return 0;
        total += PyList_GET_SIZE(row);
    }
    Py_ssize_t *out = PyMem_Malloc((total ? total : 1) * sizeof(Py_ssize_t));
    if (!out) { PyErr_NoMemory(); return -1; }
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *row = PyList_GET_ITEM(lists, i);
        Py_ssize_t r = PyList_GET_SIZE(row);
        if (k + r > total) { PyMem_Free(out); return 0; }  /* a list grew under us */
        for (Py_ssize_t c = 0; c < r; c++) {
            Py_ssize_t cls = intern_call(t, PyList_GET_ITEM(row, c));
            if (cls < 0) { PyMem_Free(out); return cls == -2 ? 0 : -1; }
            out[k++] = cls;
        }
    }
    *ids = out;
    *n = k;
    return 1;
}

/* One str per call list of `lists` (whose calls' ids are ids[], list after list): the code
 * point of each call's id, or of its tool's id when tool_of is given. */
static PyObject *
codes_strs(PyObject *lists, const Py_ssize_t *ids, Py_ssize_t n, const int *tool_of)
{
    Py_ssize_t m = PyList_GET_SIZE(lists), k = 0;
    PyObject *out = PyList_New(m);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < m; i++) {
        Py_ssize_t r = PyList_GET_SIZE(PyList_GET_ITEM(lists, i));
        if (k + r > n || PyList_GET_SIZE(lists) != m) {  /* changed under us (a finalizer) */
            Py_DECREF(out);
            PyErr_SetString(PyExc_RuntimeError, "encode: a call list changed while it was read");
            return NULL;
        }
        Py_UCS4 top = 0;
        for (Py_ssize_t c = 0; c < r; c++) {
            Py_UCS4 x = code(tool_of ? tool_of[ids[k + c]] : ids[k + c]);
            if (x > top) top = x;
        }
        PyObject *s = PyUnicode_New(r, top);
        if (!s) { Py_DECREF(out); return NULL; }
        int kind = PyUnicode_KIND(s);
        void *data = PyUnicode_DATA(s);
        for (Py_ssize_t c = 0; c < r; c++)
            PyUnicode_WRITE(kind, data, c, code(tool_of ? tool_of[ids[k + c]] : ids[k + c]));
        PyList_SET_ITEM(out, i, s);
        k += r;
    }
    return out;
}

static PyObject *
encode(PyObject *self, PyObject *args)
{
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO:encode", &a, &b)) return NULL;
    Table t = {0};
    Py_ssize_t *ia = NULL, *ib = NULL, na = 0, nb = 0;
    PyObject *result = NULL, *ca = NULL, *cb = NULL, *ta = NULL, *tb = NULL;
    t.cap = 1024;
    t.slots = PyMem_Malloc(t.cap * sizeof(Slot));
    t.reps = PyList_New(0);
    t.tool_ids = PyDict_New();
    t.tool_names = PyList_New(0);
    if (!t.slots || !t.reps || !t.tool_ids || !t.tool_names) {
        if (!t.slots) PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < t.cap; i++) t.slots[i].cls = -1;
    int ok = read_side(&t, a, &ia, &na);
    if (ok == 1) ok = read_side(&t, b, &ib, &nb);
    if (ok <= 0) {
        if (ok == 0) { result = Py_None; Py_INCREF(result); }
        goto done;
    }
    if (!(ca = codes_strs(a, ia, na, NULL)) || !(cb = codes_strs(b, ib, nb, NULL))
        || !(ta = codes_strs(a, ia, na, t.tool_of)) || !(tb = codes_strs(b, ib, nb, t.tool_of)))
        goto done;
    result = PyTuple_Pack(6, ca, cb, ta, tb, t.reps, t.tool_names);
done:
    Py_XDECREF(ca); Py_XDECREF(cb); Py_XDECREF(ta); Py_XDECREF(tb);
    Py_XDECREF(t.reps); Py_XDECREF(t.tool_ids); Py_XDECREF(t.tool_names);
    PyMem_Free(t.slots); PyMem_Free(t.tool_of); PyMem_Free(ia); PyMem_Free(ib);
    return result;
}

/* ------------------------------------------------------------------ CallTable
 *
 * The same classes, kept from one call to the next, one episode at a time (what
 * ToolCallMetric.score uses). A class keeps a copy (tool, dict(args)) of its first call -- the
 * values are immutable scalars, so a caller's later change to its dicts never moves a call to
 * another class -- available as representative(i); len() is the number of classes; clear()
 * forgets them.
 *
 * classes(a, b) reads two call lists (one episode's predictions and golds, each call a plain
 * (str, dict) tuple as above) and returns (ids_a, ids_b), a tuple of class ids per list, or
 * None when a call is not plain.
 *
 * The caller may give a class an exact *key* per side and a weight: set_pred(i, key, weight),
 * set_gold(i, key) (keys are ints; a predicted and a gold call are an exact match iff their
 * keys are equal). read(a, b) is classes(a, b), except
 *   - when both lists have the same length and every call's key is set and equal to the key of
 *     the call at the same position on the other side: the sum of the predicted calls' weights
 *     (a float, added in list order);
 *   - else when every call's key is set (and the lists are not huge): (ids_a, ids_b, tp, rest,
 *     left), each predicted call, in order, paired with the first free gold call of its key;
 *     tp the paired predicted calls' weights added in order, rest / left the positions of the
 *     calls left unpaired.
 */
#define UNSET INT64_MIN

typedef struct {
    PyObject_HEAD
    Table t;
    int64_t *pkey, *gkey;  /* per class; UNSET until set */
    double *weight;
    Py_ssize_t keys_cap;
} CallTable;

static void
table_free(Table *t)
{
    Py_CLEAR(t->reps);
    PyMem_Free(t->slots);
    t->slots = NULL;
    PyMem_Free(t->tool_of);
    t->tool_of = NULL;
    t->tool_of_cap = 0;
}

static int
table_init(Table *t)
{
    t->cap = 64;
    t->slots = PyMem_Malloc(t->cap * sizeof(Slot));
    if (!t->slots) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < t->cap; i++) t->slots[i].cls = -1;
    t->reps = PyList_New(0);
    if (!t->reps) return -1;
    t->tool_ids = NULL;
    t->tool_names = NULL;
    return 0;
}

static void
keys_free(CallTable *self)
{
    PyMem_Free(self->pkey);
    PyMem_Free(self->gkey);
    PyMem_Free(self->weight);
    self->pkey = self->gkey = NULL;
    self->weight = NULL;
    self->keys_cap = 0;
}

/* Room for the keys of every class there is (new ones UNSET); -1 on error. */
static int
keys_fit(CallTable *self)
{
    Py_ssize_t n = PyList_GET_SIZE(self->t.reps);
    if (n <= self->keys_cap) return 0;
    Py_ssize_t cap = self->keys_cap ? self->keys_cap : 256;
    while (cap < n) cap *= 2;
    int64_t *p = PyMem_Realloc(self->pkey, cap * sizeof(int64_t));
    if (!p) { PyErr_NoMemory(); return -1; }
    self->pkey = p;
    int64_t *g = PyMem_Realloc(self->gkey, cap * sizeof(int64_t));
    if (!g) { PyErr_NoMemory(); return -1; }
    self->gkey = g;
    double *w = PyMem_Realloc(self->weight, cap * sizeof(double));
    if (!w) { PyErr_NoMemory(); return -1; }
    self->weight = w;
    for (Py_ssize_t i = self->keys_cap; i < cap; i++) {
        p[i] = g[i] = UNSET;
        w[i] = 0.0;
    }
    self->keys_cap = cap;
    return 0;
}

static PyObject *
calltable_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "CallTable() takes no arguments");
        return NULL;
    }
    CallTable *self = (CallTable *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    if (table_init(&self->t)) { Py_DECREF(self); return NULL; }
    return (PyObject *)self;
}

static void
calltable_dealloc(CallTable *self)
{
    table_free(&self->t);
    keys_free(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The classes of the calls of `row` into ids[] (room for `cap`, else *heap is allocated and
 * used); 1 done, 0 not plain, -1 error. *n is the number of calls. */
static int
read_row(Table *t, PyObject *row, Py_ssize_t *ids, Py_ssize_t cap, Py_ssize_t **heap, Py_ssize_t *n)
{
    if (!PyList_CheckExact(row)) return 0;
    Py_ssize_t m = PyList_GET_SIZE(row);
    if (m > cap) {
        *heap = PyMem_Malloc(m * sizeof(Py_ssize_t));
        if (!*heap) { PyErr_NoMemory(); return -1; }
        ids = *heap;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        if (i >= PyList_GET_SIZE(row)) {  /* changed under us (a finalizer during an allocation) */
            PyErr_SetString(PyExc_RuntimeError, "CallTable: a call list changed while it was read");
            return -1;
        }
        PyObject *call = PyList_GET_ITEM(row, i);
        Py_INCREF(call);
        Py_ssize_t cls = intern_call(t, call);
        Py_DECREF(call);
        if (cls < 0) return cls == -2 ? 0 : -1;
        ids[i] = cls;
    }
    *n = m;
    return 1;
}

static PyObject *
ids_tuple(const Py_ssize_t *ids, Py_ssize_t n)
{
    PyObject *out = PyTuple_New(n);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *id = PyLong_FromSsize_t(ids[i]);
        if (!id) { Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(out, i, id);
    }
    return out;
}

#define ON_STACK 64
#define PAIR_MAX 65536  /* read() pairs keys by scanning: up to this many (pred, gold) comparisons */

/* read()'s pairing when every key is set (else Py_None): each predicted call, in order, takes
 * the first free gold call of its key. (ids_a, ids_b, tp, rest, left): tp the paired predicted
 * calls' weights added in order; rest / left the positions of the calls left unpaired. */
static PyObject *
pair_keys(CallTable *self, const Py_ssize_t *ia, Py_ssize_t na, const Py_ssize_t *ib, Py_ssize_t nb)
{
    for (Py_ssize_t j = 0; j < nb; j++)
        if (self->gkey[ib[j]] == UNSET) Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < na; i++)
        if (self->pkey[ia[i]] == UNSET) Py_RETURN_NONE;
    char used_s[ON_STACK], *used = nb <= ON_STACK ? used_s : PyMem_Malloc(nb);
    Py_ssize_t rest_s[ON_STACK], *rest = na <= ON_STACK ? rest_s : PyMem_Malloc(na * sizeof(Py_ssize_t));
    PyObject *result = NULL, *ta = NULL, *tb = NULL, *tr = NULL, *tl = NULL, *tp_obj = NULL;
    if (!used || !rest) { PyErr_NoMemory(); goto done; }
    memset(used, 0, nb);
    double tp = 0.0;
    Py_ssize_t nr = 0, first = 0;  /* golds before `first` are all used */
    for (Py_ssize_t i = 0; i < na; i++) {
        int64_t k = self->pkey[ia[i]];
        Py_ssize_t j = first;
        for (; j < nb; j++)
            if (!used[j] && self->gkey[ib[j]] == k) break;
        if (j < nb) {
            used[j] = 1;
            tp += self->weight[ia[i]];
            while (first < nb && used[first]) first++;
        } else {
            rest[nr++] = i;
        }
    }
    Py_ssize_t nl = 0;
    for (Py_ssize_t j = 0; j < nb; j++) nl += !used[j];
    if (!(tr = PyTuple_New(nr)) || !(tl = PyTuple_New(nl))) goto done;
    for (Py_ssize_t r = 0; r < nr; r++) {
        PyObject *x = PyLong_FromSsize_t(rest[r]);
        if (!x) goto done;
        PyTuple_SET_ITEM(tr, r, x);
    }
    for (Py_ssize_t j = 0, l = 0; j < nb; j++) {
        if (used[j]) continue;
        PyObject *x = PyLong_FromSsize_t(j);
        if (!x) goto done;
        PyTuple_SET_ITEM(tl, l++, x);
    }
    if (!(ta = ids_tuple(ia, na)) || !(tb = ids_tuple(ib, nb)) || !(tp_obj = PyFloat_FromDouble(tp))) goto done;
    result = PyTuple_Pack(5, ta, tb, tp_obj, tr, tl);
done:
    Py_XDECREF(ta); Py_XDECREF(tb); Py_XDECREF(tr); Py_XDECREF(tl); Py_XDECREF(tp_obj);
    if (used != used_s) PyMem_Free(used);
    if (rest != rest_s) PyMem_Free(rest);
    return result;
}

/* classes(a, b) (exact=0) or read(a, b) (exact=1). */
static PyObject *
calltable_read_impl(CallTable *self, PyObject *const *args, Py_ssize_t nargs, int exact, const char *name)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "CallTable.%s(a, b) takes 2 call lists (%zd given)", name, nargs);
        return NULL;
    }
    Py_ssize_t sa[ON_STACK], sb[ON_STACK], *ha = NULL, *hb = NULL, na = 0, nb = 0;
    PyObject *result = NULL;
    int ok = read_row(&self->t, args[0], sa, ON_STACK, &ha, &na);
    if (ok == 1) ok = read_row(&self->t, args[1], sb, ON_STACK, &hb, &nb);
    if (ok <= 0) {
        if (ok == 0) { result = Py_None; Py_INCREF(result); }
        goto done;
    }
    const Py_ssize_t *ia = ha ? ha : sa, *ib = hb ? hb : sb;
    if (exact) {
        if (keys_fit(self)) goto done;
        if (na == nb) {
            double tp = 0.0;
            Py_ssize_t i = 0;
            for (; i < na; i++) {
                int64_t k = self->pkey[ia[i]];
                if (k == UNSET || k != self->gkey[ib[i]]) break;
                tp += self->weight[ia[i]];
            }
            if (i == na) { result = PyFloat_FromDouble(tp); goto done; }
        }
        if (na * nb <= PAIR_MAX) {
            result = pair_keys(self, ia, na, ib, nb);
            if (result != Py_None) goto done;
            Py_DECREF(result);
            result = NULL;
        }
    }
    PyObject *ta = ids_tuple(ia, na);
    if (!ta) goto done;
    PyObject *tb = ids_tuple(ib, nb);
    if (!tb) { Py_DECREF(ta); goto done; }
    result = PyTuple_Pack(2, ta, tb);
    Py_DECREF(ta);
    Py_DECREF(tb);
done:
    PyMem_Free(ha);
    PyMem_Free(hb);
    return result;
}

static PyObject *
calltable_classes(CallTable *self, PyObject *const *args, Py_ssize_t nargs)
{
    return calltable_read_impl(self, args, nargs, 0, "classes");
}

static PyObject *
calltable_read(CallTable *self, PyObject *const *args, Py_ssize_t nargs)
{
    return calltable_read_impl(self, args, nargs, 1, "read");
}

/* The class of args[0] (checked), for set_pred / set_gold; -1 on error. */
static Py_ssize_t
class_arg(CallTable *self, PyObject *arg, const char *name)
{
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred()) return -1;
    if (i < 0 || i >= PyList_GET_SIZE(self->t.reps)) {
        PyErr_Format(PyExc_IndexError, "CallTable.%s(%zd): no such class (%zd classes)",
                     name, i, PyList_GET_SIZE(self->t.reps));
        return -1;
    }
    if (keys_fit(self)) return -1;
    return i;
}

static int
key_arg(PyObject *arg, int64_t *out)
{
    long long k = PyLong_AsLongLong(arg);
    if (k == -1 && PyErr_Occurred()) return -1;
    if (k == UNSET) {
        PyErr_SetString(PyExc_ValueError, "CallTable: a key must be above -2**63");
        return -1;
    }
    *out = (int64_t)k;
    return 0;
}

/* A setter's first two arguments, the class index and its key; ``want`` arguments in all
   (``params`` names them in the error). */
static int
class_key_args(CallTable *self, PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want,
               const char *name, const char *params, Py_ssize_t *i, int64_t *k)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "CallTable.%s(%s) takes %zd arguments (%zd given)",
                     name, params, want, nargs);
        return -1;
    }
    *i = class_arg(self, args[0], name);
    if (*i < 0) return -1;
    return key_arg(args[1], k);
}

static PyObject *
calltable_set_pred(CallTable *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t i;
    int64_t k;
    if (class_key_args(self, args, nargs, 3, "set_pred", "i, key, weight", &i, &k)) return NULL;
    double w = PyFloat_AsDouble(args[2]);
    if (w == -1.0 && PyErr_Occurred()) return NULL;
    self->pkey[i] = k;
    self->weight[i] = w;
    Py_RETURN_NONE;
}

static PyObject *
calltable_set_gold(CallTable *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t i;
    int64_t k;
    if (class_key_args(self, args, nargs, 2, "set_gold", "i, key", &i, &k)) return NULL;
    self->gkey[i] = k;
    Py_RETURN_NONE;
}

static PyObject *
calltable_representative(CallTable *self, PyObject *arg)
{
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= PyList_GET_SIZE(self->t.reps)) {
        PyErr_Format(PyExc_IndexError, "CallTable.representative(%zd): no such class (%zd classes)",
                     i, PyList_GET_SIZE(self->t.reps));
        return NULL;
    }
    PyObject *r = PyList_GET_ITEM(self->t.reps, i);
    Py_INCREF(r);
    return r;
}

static PyObject *
calltable_clear(CallTable *self, PyObject *unused)
{
    Table fresh = {0};
    if (table_init(&fresh)) { table_free(&fresh); return NULL; }
    table_free(&self->t);
    self->t = fresh;
    keys_free(self);
    Py_RETURN_NONE;
}

static Py_ssize_t
calltable_len(CallTable *self)
{
    return PyList_GET_SIZE(self->t.reps);
}

static PyMethodDef calltable_methods[] = {
    {"classes", (PyCFunction)(void (*)(void))calltable_classes, METH_FASTCALL,
     "classes(a, b) -> (ids_a, ids_b), a tuple of class ids per call list, or None when a call is not plain"},
    {"read", (PyCFunction)(void (*)(void))calltable_read, METH_FASTCALL,
     "read(a, b) -> the predicted weights' sum (float) when every call's key equals the key at the same "
     "position on the other side, else classes(a, b)"},
    {"set_pred", (PyCFunction)(void (*)(void))calltable_set_pred, METH_FASTCALL,
     "set_pred(i, key, weight) -> None: class i's exact key and weight as a predicted call"},
    {"set_gold", (PyCFunction)(void (*)(void))calltable_set_gold, METH_FASTCALL,
     "set_gold(i, key) -> None: class i's exact key as a gold call"},
    {"representative", (PyCFunction)calltable_representative, METH_O,
     "representative(i) -> (tool, args): a copy of the first call of class i"},
    {"clear", (PyCFunction)calltable_clear, METH_NOARGS, "clear() -> None: forget every class"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods calltable_as_sequence = {
    .sq_length = (lenfunc)calltable_len,
};

static PyTypeObject CallTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ek_agents.scoring._callcodes.CallTable",
    .tp_basicsize = sizeof(CallTable),
    .tp_dealloc = (destructor)calltable_dealloc,
    .tp_as_sequence = &calltable_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CallTable(): the classes of plain tool calls, kept from one classes() call to the next",
    .tp_methods = calltable_methods,
    .tp_new = calltable_new,
};

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS,
     "encode(a, b) -> (classes_a, classes_b, tools_a, tools_b, representatives, tool_names) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_callcodes", "One character per tool call (see ek_agents.callcodes).", -1, methods,
};

PyMODINIT_FUNC
PyInit__callcodes(void)
{
    if (PyType_Ready(&CallTableType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&CallTableType);
    if (PyModule_AddObject(m, "CallTable", (PyObject *)&CallTableType) < 0) {
        Py_DECREF(&CallTableType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
