/* ek_agents.bridge._otlpspans: the spans of one OTLP/JSON scope, read in C.
 *
 * read_spans(spans, where, ing, scope, group_attr, keep) reads a list of spans as parsed by
 * orjson (dicts, lists, str, int, float, bool) into a list of RawSpan, exactly as the Python
 * reader (ek_agents.bridge._otlp._otlp_span) reads them, for the plain shape the OpenTelemetry
 * Collector writes:
 *
 *   - traceId / spanId: 32 / 16 hex digits, not all zero (lowercased); parentSpanId absent,
 *     empty or 16 hex digits (all zero: no parent);
 *   - name a str; startTimeUnixNano / endTimeUnixNano an int or a string of 1-19 digits;
 *   - status absent, null or an object whose code is an int or a str and whose message is
 *     absent, null or a str;
 *   - no events;
 *   - attributes absent, null or a list of {"key": str, "value": {KIND: x}} whose kept values
 *     (keep[key], decided once per key by kept(key, group_attr)) are a stringValue of at most
 *     max_chars characters, an intValue (int, or 1-19 digits), a doubleValue (float or int), a
 *     boolValue, or an arrayValue {"values": [...]} of those (a tuple).
 *
 * Any span not of that shape is handed whole to the Python reader (slow(sp, where, ing, scope,
 * group_attr)), which reads it or raises the error naming what is wrong: the C code never
 * decides an error and never words one. Attributes not kept are skipped without looking at
 * their values, as the Python reader skips them.
 *
 * Why: a span of a GenAI instrumentation carries 10-30 attributes, each a small dict; the
 * Python loop over them was the largest part of a monitor window's reading (about 2x the
 * orjson parse of the same lines). The tests hold the two readers equal
 * (tests/bridge/test_otlp_c.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *kept_fn, *slow_fn, *rawspan_type;
static Py_ssize_t max_chars = -1;

static PyObject *k_traceId, *k_spanId, *k_parentSpanId, *k_name, *k_status, *k_code, *k_message,
    *k_events, *k_start, *k_end, *k_attributes, *k_key, *k_value, *k_values, *s_error, *empty_tuple,
    *empty_str;

/* Whether str object o equals the ASCII string s of length n. */
static inline int
eq_ascii(PyObject *o, const char *s, Py_ssize_t n)
{
    return PyUnicode_IS_ASCII(o) && PyUnicode_GET_LENGTH(o) == n &&
           memcmp(PyUnicode_DATA(o), s, (size_t)n) == 0;
}

/* An id of n hex digits as lowercase hex. Returns 1 with *out a new reference (Py_None when
 * the id is absent/empty/all zero and absent_ok), 0 when the Python reader must read it. */
static int
hex_id(PyObject *v, Py_ssize_t n, int absent_ok, PyObject **out)
{
    if (v == NULL || v == Py_None || (PyUnicode_CheckExact(v) && PyUnicode_GET_LENGTH(v) == 0)) {
        if (!absent_ok) return 0;
        Py_INCREF(Py_None);
        *out = Py_None;
        return 1;
    }
    if (!PyUnicode_CheckExact(v) || !PyUnicode_IS_ASCII(v) || PyUnicode_GET_LENGTH(v) != n)
        return 0;
    const unsigned char *s = PyUnicode_1BYTE_DATA(v);
    int upper = 0, nonzero = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= '0' && c <= '9') {
            nonzero |= (c != '0');
        } else if (c >= 'a' && c <= 'f') {
            nonzero = 1;
        } else if (c >= 'A' && c <= 'F') {
            nonzero = upper = 1;
        } else {
            return 0;
        }
    }
    if (!nonzero) {
        if (!absent_ok) return 0;  /* an all-zero trace or span id: the Python reader refuses it */
        Py_INCREF(Py_None);
        *out = Py_None;
        return 1;
    }
    if (!upper) {
        Py_INCREF(v);
        *out = v;
        return 1;
    }
    PyObject *r = PyUnicode_New(n, 127);
    if (r == NULL) return -1;
    unsigned char *d = PyUnicode_1BYTE_DATA(r);
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        d[i] = (c >= 'A' && c <= 'F') ? (unsigned char)(c + 32) : c;
    }
    *out = r;
    return 1;
}

/* An int, or a string of 1-19 ASCII digits, as an int (new reference); NULL without an error
 * set when the Python reader must read it. */
static PyObject *
plain_int(PyObject *v)
{
    if (PyLong_CheckExact(v)) {
        Py_INCREF(v);
        return v;
    }
    if (!PyUnicode_CheckExact(v) || !PyUnicode_IS_ASCII(v)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(v);
    if (n < 1 || n > 19) return NULL;
    const unsigned char *s = PyUnicode_1BYTE_DATA(v);
    unsigned long long x = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return NULL;
        x = x * 10 + (unsigned long long)(s[i] - '0');
    }
    return PyLong_FromUnsignedLongLong(x);
}

/* The value of one kept attribute (new reference); NULL without an error set when the Python
 * reader must read it, NULL with an error set on a failure. */
static PyObject *
attr_value(PyObject *v)
{
    if (v == NULL || !PyDict_CheckExact(v) || PyDict_GET_SIZE(v) != 1) return NULL;
    Py_ssize_t pos = 0;
    PyObject *kind, *x;
    if (!PyDict_Next(v, &pos, &kind, &x) || !PyUnicode_CheckExact(kind)) return NULL;
    if (eq_ascii(kind, "stringValue", 11)) {
        if (PyUnicode_CheckExact(x) && PyUnicode_GET_LENGTH(x) <= max_chars) {
            Py_INCREF(x);
            return x;
        }
        return NULL;  /* not a str, or to be cut and counted */
    }
    if (eq_ascii(kind, "intValue", 8)) return plain_int(x);
    if (eq_ascii(kind, "doubleValue", 11)) {
        if (PyFloat_CheckExact(x)) {
            Py_INCREF(x);
            return x;
        }
        if (PyLong_CheckExact(x)) {
            PyObject *f = PyNumber_Float(x);
            if (f == NULL && PyErr_ExceptionMatches(PyExc_OverflowError))
                PyErr_Clear();  /* beyond a double: the Python reader words the error */
            return f;
        }
        return NULL;
    }
    if (eq_ascii(kind, "boolValue", 9)) {
        if (PyBool_Check(x)) {
            Py_INCREF(x);
            return x;
        }
        return NULL;
    }
    if (eq_ascii(kind, "arrayValue", 10) && PyDict_CheckExact(x) && PyDict_GET_SIZE(x) == 1) {
        /* {"values": [plain scalar value, ...]} -> a tuple (an array in an array: Python's) */
        PyObject *vals = PyDict_GetItemWithError(x, k_values);
        if (vals == NULL || !PyList_CheckExact(vals)) return NULL;
        Py_ssize_t n = PyList_GET_SIZE(vals);
        PyObject *out = PyTuple_New(n);
        if (out == NULL) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *e = PyList_GET_ITEM(vals, i);
            PyObject *ev = NULL;
            if (PyDict_CheckExact(e) && PyDict_GET_SIZE(e) == 1) {
                Py_ssize_t p2 = 0;
                PyObject *k2, *x2;
                PyDict_Next(e, &p2, &k2, &x2);
                if (PyUnicode_CheckExact(k2) && !eq_ascii(k2, "arrayValue", 10)) ev = attr_value(e);
            }
            if (ev == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            PyTuple_SET_ITEM(out, i, ev);
        }
        return out;
    }
    return NULL;  /* nested arrays, key-value lists, bytes, an unknown kind */
}

/* The kept attributes of a span (new dict); NULL without an error set when the Python reader
 * must read the span, NULL with an error set on a failure. */
static PyObject *
attributes(PyObject *items, PyObject *group_attr, PyObject *keep)
{
    PyObject *out = PyDict_New();
    if (out == NULL || items == NULL || items == Py_None) return out;
    if (!PyList_CheckExact(items)) goto slow;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        if (!PyDict_CheckExact(kv)) goto slow;
        PyObject *key = PyDict_GetItemWithError(kv, k_key);
        if (key == NULL) {
            if (PyErr_Occurred()) goto fail;
            goto slow;
        }
        if (!PyUnicode_CheckExact(key)) goto slow;
        PyObject *k = PyDict_GetItemWithError(keep, key);
        int keep_it;
        if (k == NULL) {
            if (PyErr_Occurred()) goto fail;
            PyObject *got = PyObject_CallFunctionObjArgs(kept_fn, key, group_attr, NULL);
            if (got == NULL) goto fail;
            int set = PyDict_SetItem(keep, key, got);
            keep_it = set < 0 ? -1 : PyObject_IsTrue(got);
            Py_DECREF(got);
        } else {
            keep_it = PyObject_IsTrue(k);
        }
        if (keep_it < 0) goto fail;
        if (!keep_it) continue;
        PyObject *v = PyDict_GetItemWithError(kv, k_value);
        if (v == NULL && PyErr_Occurred()) goto fail;
        PyObject *val = attr_value(v);
        if (val == NULL) {
            if (PyErr_Occurred()) goto fail;
            goto slow;
        }
        int set = PyDict_SetItem(out, key, val);
        Py_DECREF(val);
        if (set < 0) goto fail;
    }
    return out;
slow:
    Py_DECREF(out);
    return NULL;
fail:
    Py_DECREF(out);
    return NULL;
}

/* The status message of a span whose status is ERROR, Py_None when it is not (new
 * references); NULL when the Python reader must read it. */
static PyObject *
status_error(PyObject *status)
{
    if (status == NULL || status == Py_None) {
        Py_INCREF(Py_None);
        return Py_None;
    }
    if (!PyDict_CheckExact(status)) return NULL;
    PyObject *code = PyDict_GetItemWithError(status, k_code);
    if (code == NULL && PyErr_Occurred()) return NULL;
    int err;
    if (code == NULL || code == Py_None) {
        err = 0;
    } else if (PyLong_CheckExact(code)) {
        int overflow;
        long c = PyLong_AsLongAndOverflow(code, &overflow);
        if (c == -1 && PyErr_Occurred()) return NULL;
        err = !overflow && c == 2;
    } else if (PyUnicode_CheckExact(code)) {
        err = eq_ascii(code, "STATUS_CODE_ERROR", 17) || eq_ascii(code, "2", 1);
    } else {
        return NULL;
    }
    if (!err) {
        Py_INCREF(Py_None);
        return Py_None;
    }
    PyObject *msg = PyDict_GetItemWithError(status, k_message);
    if (msg == NULL && PyErr_Occurred()) return NULL;
    if (msg == NULL || msg == Py_None || (PyUnicode_CheckExact(msg) && PyUnicode_GET_LENGTH(msg) == 0)) {
        Py_INCREF(s_error);
        return s_error;
    }
    if (!PyUnicode_CheckExact(msg)) return NULL;
    Py_INCREF(msg);
    return msg;
}

/* One plain span as a RawSpan (new reference); NULL without an error set when the Python
 * reader must read it. */
static PyObject *
plain_span(PyObject *sp, PyObject *scope, PyObject *group_attr, PyObject *keep)
{
    PyObject *f[10] = {NULL};  /* RawSpan's fields, in order */
    PyObject *r = NULL, *ev, *name, *t;
    if (!PyDict_CheckExact(sp)) return NULL;
    int got = hex_id(PyDict_GetItemWithError(sp, k_traceId), 32, 0, &f[0]);
    if (got <= 0) goto out;
    got = hex_id(PyDict_GetItemWithError(sp, k_spanId), 16, 0, &f[1]);
    if (got <= 0) goto out;
    got = hex_id(PyDict_GetItemWithError(sp, k_parentSpanId), 16, 1, &f[2]);
    if (got <= 0) goto out;
    name = PyDict_GetItemWithError(sp, k_name);
    if (name == NULL) {
        if (PyErr_Occurred()) goto out;
        name = empty_str;
    }
    if (!PyUnicode_CheckExact(name)) goto out;
    Py_INCREF(name);
    f[3] = name;
    t = PyDict_GetItemWithError(sp, k_start);
    if (t == NULL && PyErr_Occurred()) goto out;
    if ((f[4] = t == NULL ? PyLong_FromLong(0) : plain_int(t)) == NULL) goto out;
    t = PyDict_GetItemWithError(sp, k_end);
    if (t == NULL && PyErr_Occurred()) goto out;
    if ((f[5] = t == NULL ? PyLong_FromLong(0) : plain_int(t)) == NULL) goto out;
    ev = PyDict_GetItemWithError(sp, k_events);
    if (ev == NULL && PyErr_Occurred()) goto out;
    if (ev != NULL && ev != Py_None && !(PyList_CheckExact(ev) && PyList_GET_SIZE(ev) == 0)) goto out;
    if ((f[7] = status_error(PyDict_GetItemWithError(sp, k_status))) == NULL) goto out;
    if ((f[6] = attributes(PyDict_GetItemWithError(sp, k_attributes), group_attr, keep)) == NULL)
        goto out;
    Py_INCREF(scope);
    f[8] = scope;
    Py_INCREF(empty_tuple);
    f[9] = empty_tuple;
    r = PyObject_Vectorcall(rawspan_type, f, 10, NULL);
out:
    for (int i = 0; i < 10; i++) Py_XDECREF(f[i]);
    return r;
}

static PyObject *
read_spans(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "read_spans(spans, where, ing, scope, group_attr, keep)");
        return NULL;
    }
    PyObject *spans = args[0], *where = args[1], *ing = args[2], *scope = args[3],
             *group_attr = args[4], *keep = args[5];
    if (rawspan_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_otlpspans.configure() was not called");
        return NULL;
    }
    if (!PyList_CheckExact(spans) || !PyDict_CheckExact(keep) || !PyUnicode_CheckExact(scope)) {
        PyErr_SetString(PyExc_TypeError, "read_spans: spans must be a list, scope a str, keep a dict");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(spans);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *sp = PyList_GET_ITEM(spans, i);
        PyObject *r = plain_span(sp, scope, group_attr, keep);
        if (r == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(out);
                return NULL;
            }
            r = PyObject_CallFunctionObjArgs(slow_fn, sp, where, ing, scope, group_attr, NULL);
            if (r == NULL) {
                Py_DECREF(out);
                return NULL;
            }
        }
        PyList_SET_ITEM(out, i, r);
    }
    return out;
}

static PyObject *
configure(PyObject *self, PyObject *args)
{
    PyObject *kept, *slow, *rawspan;
    Py_ssize_t mc;
    if (!PyArg_ParseTuple(args, "OOOn:configure", &kept, &slow, &rawspan, &mc)) return NULL;
    if (!PyCallable_Check(kept) || !PyCallable_Check(slow) || !PyCallable_Check(rawspan) || mc < 0) {
        PyErr_SetString(PyExc_TypeError, "configure(kept, slow, RawSpan, max_chars)");
        return NULL;
    }
    Py_INCREF(kept);
    Py_INCREF(slow);
    Py_INCREF(rawspan);
    Py_XSETREF(kept_fn, kept);
    Py_XSETREF(slow_fn, slow);
    Py_XSETREF(rawspan_type, rawspan);
    max_chars = mc;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"read_spans", (PyCFunction)(void (*)(void))read_spans, METH_FASTCALL,
     "read_spans(spans, where, ing, scope, group_attr, keep) -> [RawSpan, ...]"},
    {"configure", configure, METH_VARARGS,
     "configure(kept, slow, RawSpan, max_chars): the Python reader's parts the C reader uses"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_otlpspans",
                                    "The spans of one OTLP/JSON scope, read in C.", -1, methods};

PyMODINIT_FUNC
PyInit__otlpspans(void)
{
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(k_traceId, "traceId");
    INTERN(k_spanId, "spanId");
    INTERN(k_parentSpanId, "parentSpanId");
    INTERN(k_name, "name");
    INTERN(k_status, "status");
    INTERN(k_code, "code");
    INTERN(k_message, "message");
    INTERN(k_events, "events");
    INTERN(k_start, "startTimeUnixNano");
    INTERN(k_end, "endTimeUnixNano");
    INTERN(k_attributes, "attributes");
    INTERN(k_key, "key");
    INTERN(k_value, "value");
    INTERN(k_values, "values");
    INTERN(s_error, "error");
    INTERN(empty_str, "");
#undef INTERN
    if ((empty_tuple = PyTuple_New(0)) == NULL) return NULL;
    return PyModule_Create(&module);
}
