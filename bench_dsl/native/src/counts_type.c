/* The Python type Counts (bench_dsl.native._native.Counts): what the executor and the Python users
 * call (ok, take, quiet, enter, leave), over the queue of counts.c, and its test-only entry points. */

#include "counts.h"
#include "testing.h"

/* Tallies of n types, empty; NULL with an exception set */
static Tally *fresh_tallies(Py_ssize_t n) {
    Tally *t = PyMem_RawMalloc((size_t)n * sizeof(Tally));
    if (t == NULL) { PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        bd_hdr_init(&t[i].hist);
        t[i].queries = t[i].total_us = t[i].rollbacks = 0;
    }
    return t;
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
    } else if (bd_counts_drain(self) < 0) { /* what was recorded before, into the tallies dropped below */
        PyErr_Clear();
    }
    Tally *t = fresh_tallies(n);
    if (t == NULL) return -1;
    PyMem_RawFree(self->tally);
    self->tally = t;
    self->n = n;
    return 0;
}

static PyObject *Counts_release_writer(Counts *self, PyObject *unused);

static void Counts_dealloc(Counts *self) {
    if (self->holding) Py_XDECREF(Counts_release_writer(self, NULL));
    PyMem_RawFree(self->tally);  /* no lane is left: each user holds a reference, and closes its own */
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
    if (!self->ready || self->tally == NULL) { PyErr_SetString(PyExc_ValueError, "Counts not initialised"); return NULL; }
    if (i < 0 || i >= self->n) { PyErr_SetString(PyExc_IndexError, "transaction type out of range"); return NULL; }
    if (bd_counts_add_nogil(self, i, us, q, now_ns()) < 0) return PyErr_NoMemory();
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

/* take() -> [(histogram, transactions, statements, microseconds, rollbacks)] per type since the last
 * take: the histogram of response times (us) in HdrHistogram's V2 compressed base64, or None when none
 * completed; the transactions rolled back on purpose (counted among the transactions too); and
 * starts afresh */
static PyObject *Counts_take(Counts *self, PyObject *unused) {
    if (!self->ready || self->tally == NULL) { PyErr_SetString(PyExc_ValueError, "Counts not initialised"); return NULL; }
    if (bd_counts_fold(self) < 0) return NULL;
    PyObject *out = PyList_New(self->n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        Tally *t = &self->tally[i];
        PyObject *hist = bd_hdr_encode(&t->hist);
        PyObject *row = hist == NULL ? NULL : Py_BuildValue("(NLLLL)", hist, (long long)t->hist.total, t->queries, t->total_us,
                                                           t->rollbacks);
        if (row == NULL) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, row);
    }
    /* only once every type is encoded: a failure above loses nothing (the next take has it all) */
    for (Py_ssize_t i = 0; i < self->n; i++) {
        bd_hdr_reset(&self->tally[i].hist);
        self->tally[i].queries = self->tally[i].total_us = self->tally[i].rollbacks = 0;
    }
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
    if (self->tally == NULL || h.tx < 0 || h.tx >= self->n) { PyErr_SetString(PyExc_ValueError, "no such type"); return NULL; }
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

/* completion j of writer w: type (w + j) % n, (j % 1000) us, 1 + j % 3 statements; into the queue,
 * or into the writer's own lane */
typedef struct {
    Counts *counts;
    Lane **lanes;  /* one per writer, or NULL: the queue */
} HammerTarget;

static void *hammer_main(void *arg) {
    Hammer *h = arg;
    HammerTarget *t = h->target;
    Counts *c = t->counts;
    Lane *lane = t->lanes != NULL ? t->lanes[h->first] : NULL;
    bd_counts_enter(c, now_ns());
    for (long long j = 0; j < h->each && !h->failed; j++) {
        long long i = (h->first + j) % c->n, us = j % 1000, q = 1 + j % 3;
        int rc = lane != NULL ? bd_lane_add(c, lane, i, us, q, now_ns(), 0) : bd_counts_add_nogil(c, i, us, q, now_ns());
        if (rc < 0) h->failed = 1;
    }
    bd_counts_leave(c, now_ns());
    return NULL;
}

/* _hammer(threads, each, lanes=False): `threads` threads without the GIL record `each` completions
 * apiece, at once, each into a lane of its own or all into the queue; returns when all have */
static PyObject *Counts_hammer(Counts *self, PyObject *args) {
    int threads, lanes = 0;
    long long each;
    if (!PyArg_ParseTuple(args, "iL|p", &threads, &each, &lanes)) return NULL;
    if (self->tally == NULL || threads < 1 || threads > 1024 || each < 0) {
        PyErr_SetString(PyExc_ValueError, "1 to 1024 threads, an initialised Counts");
        return NULL;
    }
    HammerTarget t = {self, NULL};
    if (lanes) {
        t.lanes = PyMem_Calloc((size_t)threads, sizeof(Lane *));
        if (t.lanes == NULL) return PyErr_NoMemory();
        for (int k = 0; k < threads; k++)
            if ((t.lanes[k] = bd_lane_open(self)) == NULL) {
                for (int j = 0; j < k; j++) bd_lane_close(self, t.lanes[j]);
                PyMem_Free(t.lanes);
                return PyErr_NoMemory();
            }
    }
    PyObject *out = bd_hammer_run(hammer_main, &t, threads, each);
    if (lanes) {
        int rc = 0;
        for (int k = 0; k < threads; k++) rc |= bd_lane_close(self, t.lanes[k]);
        PyMem_Free(t.lanes);
        if (rc < 0) Py_CLEAR(out);
    }
    return out;
}

static PyMethodDef Counts_methods[] = {
    {"ok", (PyCFunction)(void (*)(void))Counts_ok, METH_FASTCALL,
     "ok(i, micros, queries): one completed transaction of type i"},
    {"take", (PyCFunction)Counts_take, METH_NOARGS,
     "take() -> [(histogram, transactions, statements, microseconds)] per type, and start afresh: the "
     "histogram of response times (us) in HdrHistogram's V2 compressed base64, None when none completed"},
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
     "test only: _hammer(threads, each, lanes=False): threads without the GIL record `each` completions apiece at "
     "once (j-th of thread w: type (w + j) % n, j % 1000 us, 1 + j % 3 statements), into the queue or each into a "
     "lane of its own (as the executor's users); returns when all have"},
    {NULL}};

PyTypeObject bd_CountsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl.native._native.Counts",
    .tp_doc = "Response times recorded into HDR histograms, and statements, per transaction type.",
    .tp_basicsize = sizeof(Counts),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Counts_init,
    .tp_dealloc = (destructor)Counts_dealloc,
    .tp_methods = Counts_methods,
};
