/* The Python type Counts (bench_dsl.native._native.Counts): what the executor and the Python users
 * call (ok, take, quiet, enter, leave), over the queue of counts.c, and its test-only entry points. */

#include "counts.h"
#include "testing.h"

static PyObject *fresh_dicts(Py_ssize_t n) {
    PyObject *list = PyList_New(n);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyDict_New();
        if (d == NULL) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, d);
    }
    return list;
}

static int Counts_init(Counts *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"n", NULL};
    Py_ssize_t n;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n", kwlist, &n)) return -1;
    if (n < 1) { PyErr_SetString(PyExc_ValueError, "at least one transaction type"); return -1; }
    if (!self->ready) {
        Chunk *c = bd_chunk_new();
        if (c == NULL) { PyErr_NoMemory(); return -1; }
        if (pthread_mutex_init(&self->w, NULL) != 0) {
            PyMem_RawFree(c);
            PyErr_SetString(PyExc_OSError, "pthread_mutex_init");
            return -1;
        }
        self->head = self->tail = c;
        self->idle_now = 1;
        self->ready = 1;
    } else if (bd_counts_drain(self) < 0) { /* what was recorded before, into the counts dropped below */
        PyErr_Clear();
    }
    PyObject *lat = fresh_dicts(n);
    if (lat == NULL) return -1;
    long long *q = PyMem_Calloc((size_t)n, sizeof(long long));
    if (q == NULL) { Py_DECREF(lat); PyErr_NoMemory(); return -1; }
    Py_XSETREF(self->lat, lat);
    PyMem_Free(self->queries);
    self->queries = q;
    self->n = n;
    return 0;
}

static int Counts_traverse(Counts *self, visitproc visit, void *arg) {
    Py_VISIT(self->lat);
    return 0;
}

static int Counts_clear(Counts *self) {
    Py_CLEAR(self->lat);
    return 0;
}

static PyObject *Counts_release_writer(Counts *self, PyObject *unused);

static void Counts_dealloc(Counts *self) {
    PyObject_GC_UnTrack(self);
    if (self->holding) Py_XDECREF(Counts_release_writer(self, NULL));
    Counts_clear(self);
    PyMem_Free(self->queries);
    for (Chunk *c = self->head; c != NULL;) { /* no writer left: each user holds a reference */
        Chunk *next = c->next;
        PyMem_RawFree(c);
        c = next;
    }
    if (self->ready) pthread_mutex_destroy(&self->w);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Counts_ok(Counts *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "ok(i, micros, queries)"); return NULL; }
    long long i = PyLong_AsLongLong(args[0]);
    long long us = PyLong_AsLongLong(args[1]);
    long long q = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (!self->ready || self->lat == NULL) { PyErr_SetString(PyExc_ValueError, "Counts not initialised"); return NULL; }
    if (i < 0 || i >= self->n) { PyErr_SetString(PyExc_IndexError, "transaction type out of range"); return NULL; }
    if (bd_counts_record(self, (int32_t)i, (int32_t)q, us, now_ns()) < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *spans_list(const Span *spans, int n) {
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (int j = 0; j < n; j++) {
        PyObject *pair = Py_BuildValue("(LL)", spans[j].start, spans[j].end);
        if (pair == NULL) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, j, pair);
    }
    return out;
}

static PyObject *Counts_quiet(Counts *self, PyObject *unused) {
    PyObject *spans = spans_list(self->taken, self->ntaken);
    if (spans == NULL) return NULL;
    PyObject *idle = spans_list(self->taken_idle, self->ntaken_idle);
    if (idle == NULL) { Py_DECREF(spans); return NULL; }
    PyObject *last = self->taken_last_ns == 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(self->taken_last_ns);
    PyObject *from = self->taken_idle_from < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(self->taken_idle_from);
    if (last == NULL || from == NULL) {
        Py_DECREF(spans); Py_DECREF(idle); Py_XDECREF(last); Py_XDECREF(from);
        return NULL;
    }
    return Py_BuildValue("(NNLNN)", spans, last, self->taken_at_ns, idle, from);
}

/* enter(t_ns) / leave(t_ns): a user on asyncmy starts waiting on the server, or stops */
static PyObject *Counts_enter(Counts *self, PyObject *arg) {
    long long t = PyLong_AsLongLong(arg);
    if (t == -1 && PyErr_Occurred()) return NULL;
    if (self->ready) bd_counts_enter(self, t);
    Py_RETURN_NONE;
}

static PyObject *Counts_leave(Counts *self, PyObject *arg) {
    long long t = PyLong_AsLongLong(arg);
    if (t == -1 && PyErr_Occurred()) return NULL;
    if (self->ready) bd_counts_leave(self, t);
    Py_RETURN_NONE;
}

static PyObject *Counts_take(Counts *self, PyObject *unused) {
    if (!self->ready || self->lat == NULL) { PyErr_SetString(PyExc_ValueError, "Counts not initialised"); return NULL; }
    if (bd_counts_fold(self) < 0) return NULL;
    PyObject *fresh = fresh_dicts(self->n);
    if (fresh == NULL) return NULL;
    PyObject *out = PyList_New(self->n);
    if (out == NULL) { Py_DECREF(fresh); return NULL; }
    for (Py_ssize_t i = 0; i < self->n; i++) {
        PyObject *pair = Py_BuildValue("(OL)", PyList_GET_ITEM(self->lat, i), self->queries[i]);
        if (pair == NULL) { Py_DECREF(out); Py_DECREF(fresh); return NULL; }
        PyList_SET_ITEM(out, i, pair);
    }
    Py_SETREF(self->lat, fresh);
    memset(self->queries, 0, (size_t)self->n * sizeof(long long));
    return out;
}

/* ---------------------------------------------------------------------------------------------- */
/* Counts' test-only entry points (tests/unit/test_native_counts.py): a writer held inside its      */
/* critical section, and many writers at once. Nothing in a run calls them.                         */

typedef struct {
    Counts *counts;
    long long tx, us, queries;
    uint32_t held;      /* set by the writer once it is inside */
} Hold;

static void *hold_main(void *arg) {
    Hold *h = arg;
    Counts *c = h->counts;
    long long tx = h->tx, us = h->us, q = h->queries;
    bd_counts_hold_begin(c, tx, us, q);
    bd_word_set(&h->held); /* h is the caller's, gone once it saw this */
    bd_word_wait(&c->release);
    bd_counts_hold_end(c);
    return NULL;
}

/* _hold_writer(i, micros, queries): a thread records one completion, and stays inside the writers'
 * critical section, the record unpublished, until _release_writer(). Returns once it is inside. */
static PyObject *Counts_hold_writer(Counts *self, PyObject *args) {
    Hold h = {self, 0, 0, 0, 0};
    if (!PyArg_ParseTuple(args, "LLL", &h.tx, &h.us, &h.queries)) return NULL;
    if (self->lat == NULL || h.tx < 0 || h.tx >= self->n) { PyErr_SetString(PyExc_ValueError, "no such type"); return NULL; }
    if (self->holding) { PyErr_SetString(PyExc_RuntimeError, "a writer is held already"); return NULL; }
    self->release = 0;
    if (pthread_create(&self->holder, NULL, hold_main, &h) != 0) { PyErr_SetString(PyExc_OSError, "pthread_create"); return NULL; }
    self->holding = 1;
    Py_BEGIN_ALLOW_THREADS
    bd_word_wait(&h.held);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* _release_writer(): the held writer publishes its completion and leaves; returns once it has */
static PyObject *Counts_release_writer(Counts *self, PyObject *unused) {
    if (!self->holding) Py_RETURN_NONE;
    Py_BEGIN_ALLOW_THREADS
    bd_word_set(&self->release);
    pthread_join(self->holder, NULL);
    Py_END_ALLOW_THREADS
    self->holding = 0;
    Py_RETURN_NONE;
}

/* completion j of writer w: type (w + j) % n, (j % 1000) us, 1 + j % 3 statements */
static void *hammer_main(void *arg) {
    Hammer *h = arg;
    Counts *c = h->target;
    bd_counts_enter(c, now_ns());
    for (long long j = 0; j < h->each && !h->failed; j++)
        if (bd_counts_add_nogil(c, (h->first + j) % c->n, j % 1000, 1 + j % 3, now_ns()) < 0) h->failed = 1;
    bd_counts_leave(c, now_ns());
    return NULL;
}

/* _hammer(threads, each): `threads` threads without the GIL record `each` completions apiece, at
 * once; returns when all have */
static PyObject *Counts_hammer(Counts *self, PyObject *args) {
    int threads;
    long long each;
    if (!PyArg_ParseTuple(args, "iL", &threads, &each)) return NULL;
    if (self->lat == NULL || threads < 1 || threads > 1024 || each < 0) {
        PyErr_SetString(PyExc_ValueError, "1 to 1024 threads, an initialised Counts");
        return NULL;
    }
    return bd_hammer_run(hammer_main, self, threads, each);
}

static PyMethodDef Counts_methods[] = {
    {"ok", (PyCFunction)(void (*)(void))Counts_ok, METH_FASTCALL,
     "ok(i, micros, queries): one completed transaction of type i"},
    {"take", (PyCFunction)Counts_take, METH_NOARGS,
     "take() -> [(latencies {us: count}, statements)] per type, and start afresh"},
    {"quiet", (PyCFunction)Counts_quiet, METH_NOARGS,
     "quiet() -> ([(start_ns, end_ns)] gaps between completions taken by the last take(), the latest "
     "completion's time or None, the take's time, [(start_ns, end_ns)] spans in which no user was inside a "
     "transaction, since when none was at the take or None): CLOCK_MONOTONIC, as time.monotonic_ns()"},
    {"enter", (PyCFunction)Counts_enter, METH_O, "enter(t_ns): a user starts waiting on the server"},
    {"leave", (PyCFunction)Counts_leave, METH_O, "leave(t_ns): a user no longer waits on the server"},
    {"_hold_writer", (PyCFunction)Counts_hold_writer, METH_VARARGS,
     "test only: _hold_writer(i, micros, queries): a thread stays inside the writers' critical section, "
     "that completion written but not published, until _release_writer()"},
    {"_release_writer", (PyCFunction)Counts_release_writer, METH_NOARGS,
     "test only: the held writer publishes its completion and leaves; returns once it has"},
    {"_hammer", (PyCFunction)Counts_hammer, METH_VARARGS,
     "test only: _hammer(threads, each): threads without the GIL record `each` completions apiece at once "
     "(j-th of thread w: type (w + j) % n, j % 1000 us, 1 + j % 3 statements); returns when all have"},
    {NULL}};

PyTypeObject bd_CountsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl.native._native.Counts",
    .tp_doc = "Latencies counted by their microsecond value, and statements, per transaction type.",
    .tp_basicsize = sizeof(Counts),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Counts_init,
    .tp_dealloc = (destructor)Counts_dealloc,
    .tp_traverse = (traverseproc)Counts_traverse,
    .tp_clear = (inquiry)Counts_clear,
    .tp_methods = Counts_methods,
};
