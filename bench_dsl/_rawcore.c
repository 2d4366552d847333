/* The raw executor's hot path in C: what bench_dsl/rawexec.py's pure-Python core does, with the
 * same names and the same behaviour, for the work done once per reply and once per transaction.
 *
 * Why C: on a machine where the client shares the cores with the server, the client's CPU per
 * transaction is throughput taken from the server. Profiled on 2 cores (point selects, 16 users),
 * the interpreter was 40% of bench-dsl's CPU: walking replies, drawing keys, encoding packets and
 * counting latencies. Here these run without a Python frame; Python is called only for what is
 * rare (an error reply, the end of the run) or for what a workload writes in Python (its
 * transactions' packets, when they are not one of the shapes known here).
 *
 * Types (each has a pure-Python twin in rawexec.py or metrics.py that the tests hold it to):
 *   Core         the base of RawLoop: an asyncio BufferedProtocol's get_buffer/buffer_updated, the
 *                reply parser, and the step from one statement and one transaction to the next.
 *   Counts       latencies counted by their microsecond value, and statements, per transaction type.
 *   Mix          picks a transaction type by weight, with the user's random.Random.
 *   PointSelect  sysbench's oltp_point_select: a table drawn uniformly, a key from its "special"
 *                distribution, drawn with the user's random.Random exactly as generators.special
 *                draws it (the same keys for the same seed).
 *   Oltp         a transaction of sysbench's other OLTP tests (oltp_read_write and the like): its
 *                statements' packets, every table, key and c/pad string drawn as the Python
 *                session draws them (its twin: the Python transaction programs.py builds from the
 *                Drawn of workloads/sysbench.py's session).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define MAX_PAYLOAD 0xFFFFFF
#define FIRST_BUFFER (16 * 1024)
#define MORE_RESULTS 0x0008 /* SERVER_MORE_RESULTS_EXISTS: another result of the same statement follows */
enum { S_FIRST = 0, S_COLUMNS = 1, S_ROWS = 2 };

/* rawexec.BEGIN, COMMIT and ROLLBACK: COM_QUERY packets, sequence 0 */
static const char BEGIN_PACKET[] = "\x06\x00\x00\x00\x03" "BEGIN";
static const char COMMIT_PACKET[] = "\x07\x00\x00\x00\x03" "COMMIT";
static const char ROLLBACK_PACKET[] = "\x09\x00\x00\x00\x03" "ROLLBACK";

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* what time.perf_counter_ns reads on Linux */
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---------------------------------------------------------------------------------------------- */
/* Counts                                                                                          */

/* one transaction measured by a Blocking user's thread, waiting for take() (which holds the GIL) */
typedef struct {
    int32_t tx, queries;
    int64_t us;
} Pending;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    PyObject *lat;        /* list of n dicts: microseconds -> transactions */
    long long *queries;   /* statements per transaction type */
    pthread_mutex_t mu;   /* guards pending: threads without the GIL add to it */
    int mu_ready;
    Pending *pending;
    Py_ssize_t npending, cappending;
} Counts;

static PyTypeObject CountsType;

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
    PyObject *lat = fresh_dicts(n);
    if (lat == NULL) return -1;
    long long *q = PyMem_Calloc((size_t)n, sizeof(long long));
    if (q == NULL) { Py_DECREF(lat); PyErr_NoMemory(); return -1; }
    Py_XSETREF(self->lat, lat);
    PyMem_Free(self->queries);
    self->queries = q;
    self->n = n;
    if (!self->mu_ready) {
        if (pthread_mutex_init(&self->mu, NULL) != 0) { PyErr_SetString(PyExc_OSError, "pthread_mutex_init"); return -1; }
        self->mu_ready = 1;
    }
    pthread_mutex_lock(&self->mu);
    self->npending = 0;
    pthread_mutex_unlock(&self->mu);
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

static void Counts_dealloc(Counts *self) {
    PyObject_GC_UnTrack(self);
    Counts_clear(self);
    PyMem_Free(self->queries);
    PyMem_RawFree(self->pending);
    if (self->mu_ready) pthread_mutex_destroy(&self->mu);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* lat[i][us] += 1; queries[i] += q. 0, or -1 with an exception set. */
static int counts_add(Counts *self, long long i, long long us, long long q) {
    if (self->lat == NULL) { PyErr_SetString(PyExc_ValueError, "Counts not initialised"); return -1; }
    if (i < 0 || i >= self->n) { PyErr_SetString(PyExc_IndexError, "transaction type out of range"); return -1; }
    PyObject *d = PyList_GET_ITEM(self->lat, i);
    PyObject *key = PyLong_FromLongLong(us);
    if (key == NULL) return -1;
    PyObject *old = PyDict_GetItemWithError(d, key); /* borrowed */
    long long n = 1;
    if (old != NULL) {
        n = PyLong_AsLongLong(old) + 1;
        if (n == 0 && PyErr_Occurred()) { Py_DECREF(key); return -1; }
    } else if (PyErr_Occurred()) {
        Py_DECREF(key);
        return -1;
    }
    PyObject *val = PyLong_FromLongLong(n);
    if (val == NULL) { Py_DECREF(key); return -1; }
    int rc = PyDict_SetItem(d, key, val);
    Py_DECREF(key);
    Py_DECREF(val);
    if (rc == 0) self->queries[i] += q;
    return rc;
}

/* What a thread without the GIL does instead of counts_add: the transaction waits in `pending`
 * until take() counts it. 0, or -1 when out of memory (nothing set: no GIL). */
static int counts_add_nogil(Counts *self, long long i, long long us, long long q) {
    pthread_mutex_lock(&self->mu);
    if (self->npending == self->cappending) {
        Py_ssize_t cap = self->cappending ? 2 * self->cappending : 1024;
        Pending *more = PyMem_RawRealloc(self->pending, (size_t)cap * sizeof(Pending));
        if (more == NULL) { pthread_mutex_unlock(&self->mu); return -1; }
        self->pending = more;
        self->cappending = cap;
    }
    Pending *r = &self->pending[self->npending++];
    r->tx = (int32_t)i;
    r->queries = (int32_t)q;
    r->us = us;
    pthread_mutex_unlock(&self->mu);
    return 0;
}

/* the transactions threads have added since the last call, counted (the GIL held) */
static int counts_fold(Counts *self) {
    if (!self->mu_ready) return 0;
    pthread_mutex_lock(&self->mu);
    Pending *p = self->pending;
    Py_ssize_t n = self->npending;
    self->pending = NULL;
    self->npending = self->cappending = 0;
    pthread_mutex_unlock(&self->mu);
    int rc = 0;
    for (Py_ssize_t j = 0; j < n && rc == 0; j++) rc = counts_add(self, p[j].tx, p[j].us, p[j].queries);
    PyMem_RawFree(p);
    return rc;
}

static PyObject *Counts_ok(Counts *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "ok(i, micros, queries)"); return NULL; }
    long long i = PyLong_AsLongLong(args[0]);
    long long us = PyLong_AsLongLong(args[1]);
    long long q = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (counts_add(self, i, us, q) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Counts_take(Counts *self, PyObject *unused) {
    if (self->lat == NULL) { PyErr_SetString(PyExc_ValueError, "Counts not initialised"); return NULL; }
    if (counts_fold(self) < 0) return NULL;
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

static PyMethodDef Counts_methods[] = {
    {"ok", (PyCFunction)(void (*)(void))Counts_ok, METH_FASTCALL,
     "ok(i, micros, queries): one completed transaction of type i"},
    {"take", (PyCFunction)Counts_take, METH_NOARGS,
     "take() -> [(latencies {us: count}, statements)] per type, and start afresh"},
    {NULL}};

static PyTypeObject CountsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl._rawcore.Counts",
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

/* ---------------------------------------------------------------------------------------------- */
/* Random draws through the user's random.Random (its own Mersenne Twister: the same values as the  */
/* Python path draws)                                                                             */

static int draw(PyObject *random, double *out) {
    PyObject *r = PyObject_CallNoArgs(random);
    if (r == NULL) return -1;
    *out = PyFloat_AsDouble(r);
    Py_DECREF(r);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* A copy of a random.Random's Mersenne Twister, for a thread that draws without the GIL: CPython's
 * genrand_uint32 and random_random (Modules/_randommodule.c), so that the draws are the Python
 * ones. Loaded from rng.getstate() before the thread runs and stored back with rng.setstate()
 * after, so the Random goes on from where the thread left it. */
#define MT_N 624
#define MT_M 397
typedef struct {
    uint32_t s[MT_N];
    int i;
    PyObject *gauss; /* getstate()'s gauss_next, given back as it was */
} MT;

static uint32_t mt_next(MT *m) {
    static const uint32_t mag01[2] = {0x0U, 0x9908b0dfU};
    uint32_t y;
    if (m->i >= MT_N) {
        int kk;
        for (kk = 0; kk < MT_N - MT_M; kk++) {
            y = (m->s[kk] & 0x80000000U) | (m->s[kk + 1] & 0x7fffffffU);
            m->s[kk] = m->s[kk + MT_M] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        for (; kk < MT_N - 1; kk++) {
            y = (m->s[kk] & 0x80000000U) | (m->s[kk + 1] & 0x7fffffffU);
            m->s[kk] = m->s[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        y = (m->s[MT_N - 1] & 0x80000000U) | (m->s[0] & 0x7fffffffU);
        m->s[MT_N - 1] = m->s[MT_M - 1] ^ (y >> 1) ^ mag01[y & 0x1U];
        m->i = 0;
    }
    y = m->s[m->i++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

static double mt_random(MT *m) {
    uint32_t a = mt_next(m) >> 5, b = mt_next(m) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

/* m = rng.getstate() (version 3: 624 words and the index). 0, or -1 with an exception set. */
static int mt_load(MT *m, PyObject *rng) {
    PyObject *st = PyObject_CallMethod(rng, "getstate", NULL);
    if (st == NULL) return -1;
    PyObject *words = NULL;
    if (!PyTuple_Check(st) || PyTuple_GET_SIZE(st) != 3 || !PyTuple_Check(words = PyTuple_GET_ITEM(st, 1))
        || PyTuple_GET_SIZE(words) != MT_N + 1) {
        Py_DECREF(st);
        PyErr_SetString(PyExc_ValueError, "not a version 3 random.Random state");
        return -1;
    }
    for (int j = 0; j <= MT_N; j++) {
        unsigned long v = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(words, j));
        if (v == (unsigned long)-1 && PyErr_Occurred()) { Py_DECREF(st); return -1; }
        if (j < MT_N) m->s[j] = (uint32_t)v;
        else m->i = (int)v;
    }
    if (m->i < 0 || m->i > MT_N) { Py_DECREF(st); PyErr_SetString(PyExc_ValueError, "bad state index"); return -1; }
    m->gauss = Py_NewRef(PyTuple_GET_ITEM(st, 2));
    Py_DECREF(st);
    return 0;
}

/* rng.setstate() from m; m's reference to gauss is given away. 0, or -1 with an exception set. */
static int mt_store(MT *m, PyObject *rng) {
    PyObject *words = PyTuple_New(MT_N + 1), *st = NULL, *r = NULL;
    if (words == NULL) goto done;
    for (int j = 0; j <= MT_N; j++) {
        PyObject *v = j < MT_N ? PyLong_FromUnsignedLong(m->s[j]) : PyLong_FromLong(m->i);
        if (v == NULL) goto done;
        PyTuple_SET_ITEM(words, j, v);
    }
    st = Py_BuildValue("(iOO)", 3, words, m->gauss);
    if (st == NULL) goto done;
    r = PyObject_CallMethod(rng, "setstate", "(O)", st);
done:
    Py_XDECREF(words);
    Py_XDECREF(st);
    Py_CLEAR(m->gauss);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

/* rng.random(), from the copy when there is one (no GIL needed then) */
static int draw_from(PyObject *random, MT *mt, double *out) {
    if (mt != NULL) {
        *out = mt_random(mt);
        return 0;
    }
    return draw(random, out);
}

/* ---------------------------------------------------------------------------------------------- */
/* Mix                                                                                             */

typedef struct {
    PyObject_HEAD
    PyObject *random;  /* rng.random */
    double *cum;       /* cumulative weights */
    Py_ssize_t n;
} Mix;

static PyTypeObject MixType;

static int Mix_init(Mix *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"rng", "weights", NULL};
    PyObject *rng, *weights;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO", kwlist, &rng, &weights)) return -1;
    PyObject *seq = PySequence_Fast(weights, "weights must be a sequence");
    if (seq == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1) { Py_DECREF(seq); PyErr_SetString(PyExc_ValueError, "no weights"); return -1; }
    double *cum = PyMem_Malloc((size_t)n * sizeof(double));
    if (cum == NULL) { Py_DECREF(seq); PyErr_NoMemory(); return -1; }
    /* the running sum of the weights as Python's itertools.accumulate adds them */
    PyObject *acc = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *w = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *next = acc == NULL ? Py_NewRef(w) : PyNumber_Add(acc, w);
        Py_XDECREF(acc);
        acc = next;
        if (acc == NULL) break;
        cum[i] = PyFloat_AsDouble(acc);
        if (cum[i] == -1.0 && PyErr_Occurred()) { Py_CLEAR(acc); break; }
    }
    Py_DECREF(seq);
    if (acc == NULL) { PyMem_Free(cum); return -1; }
    Py_DECREF(acc);
    PyObject *random = PyObject_GetAttrString(rng, "random");
    if (random == NULL) { PyMem_Free(cum); return -1; }
    Py_XSETREF(self->random, random);
    PyMem_Free(self->cum);
    self->cum = cum;
    self->n = n;
    return 0;
}

/* rawexec.Mix.__call__: x = rng.random() * total; the first type whose cumulative weight is above x */
static long long mix_pick(Mix *self) {
    double r;
    if (draw(self->random, &r) < 0) return -1;
    double x = r * self->cum[self->n - 1];
    for (Py_ssize_t i = 0; i < self->n; i++)
        if (x < self->cum[i]) return i;
    return self->n - 1;
}

static PyObject *Mix_call(Mix *self, PyObject *args, PyObject *kwds) {
    if (self->cum == NULL) { PyErr_SetString(PyExc_ValueError, "Mix not initialised"); return NULL; }
    long long i = mix_pick(self);
    return i < 0 ? NULL : PyLong_FromLongLong(i);
}

static int Mix_traverse(Mix *self, visitproc visit, void *arg) {
    Py_VISIT(self->random);
    return 0;
}

static int Mix_clear(Mix *self) {
    Py_CLEAR(self->random);
    return 0;
}

static void Mix_dealloc(Mix *self) {
    PyObject_GC_UnTrack(self);
    Mix_clear(self);
    PyMem_Free(self->cum);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject MixType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl._rawcore.Mix",
    .tp_doc = "Mix(rng, weights)(): a transaction type drawn by weight.",
    .tp_basicsize = sizeof(Mix),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Mix_init,
    .tp_dealloc = (destructor)Mix_dealloc,
    .tp_traverse = (traverseproc)Mix_traverse,
    .tp_clear = (inquiry)Mix_clear,
    .tp_call = (ternaryfunc)Mix_call,
};

/* ---------------------------------------------------------------------------------------------- */
/* PointSelect                                                                                     */

/* a packet's parts, written at p; where the next one goes */
static char *put_i64(char *p, long long v) { /* '<q' */
    unsigned long long u = (unsigned long long)v;
    for (int i = 0; i < 8; i++) *p++ = (char)((u >> (8 * i)) & 0xFF);
    return p;
}

static char *put_bytes(char *p, PyObject *b) {
    memcpy(p, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
    return p + PyBytes_GET_SIZE(b);
}

/* generators.special's parameters, computed as it computes them */
typedef struct {
    long long a, t;      /* keys in [a, a + t] */
    double res_mult, pct_mult, pct2_mult, iter_mult;
    int iters;
} Special;

/* 0, or -1 with an exception set */
static int special_init(Special *sp, long long a, long long b, double pct, double res, int iters) {
    if (b < a || iters < 1 || res >= 100.0) {
        PyErr_SetString(PyExc_ValueError, "a <= b, iters >= 1 and res < 100 expected");
        return -1;
    }
    sp->a = a;
    sp->t = b - a;
    sp->res_mult = 100.0 / (100.0 - res);
    sp->pct_mult = pct / 100.0;
    sp->pct2_mult = pct / 200.0;
    sp->iter_mult = 1.0 / iters;
    sp->iters = iters;
    return 0;
}

/* generators.special, operation for operation (IEEE doubles in the same order give the same key) */
static int special_key(const Special *sp, PyObject *random, MT *mt, long long *key) {
    double rnd, s = 0.0, r;
    double t = (double)sp->t;
    if (draw_from(random, mt, &rnd) < 0) return -1;
    if (rnd * t * sp->res_mult < t) {
        for (int i = 0; i < sp->iters; i++) {
            if (draw_from(random, mt, &r) < 0) return -1;
            s += r;
        }
        *key = sp->a + (long long)(s * t * sp->iter_mult);
        return 0;
    }
    double d = t * sp->pct_mult;
    *key = sp->a + (long long)(rnd * (d + 1) + t / 2 - t * sp->pct2_mult);
    return 0;
}

/* rng is a random.Random itself (not a subclass that draws otherwise): 1, 0, or -1 with an exception */
static int is_plain_random(PyObject *rng) {
    PyObject *mod = PyImport_ImportModule("random"), *cls = NULL;
    if (mod != NULL) {
        cls = PyObject_GetAttrString(mod, "Random");
        Py_DECREF(mod);
    }
    if (cls == NULL) return -1;
    int plain = (PyObject *)Py_TYPE(rng) == cls;
    Py_DECREF(cls);
    return plain;
}

/* a tuple of bytes from a sequence of them, and the longest's length; NULL with an exception set */
static PyObject *bytes_tuple(PyObject *seq, Py_ssize_t *longest) {
    PyObject *tup = PySequence_Tuple(seq);
    if (tup == NULL) return NULL;
    if (PyTuple_GET_SIZE(tup) < 1) { Py_DECREF(tup); PyErr_SetString(PyExc_ValueError, "no tables"); return NULL; }
    *longest = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tup); i++) {
        PyObject *b = PyTuple_GET_ITEM(tup, i);
        if (!PyBytes_CheckExact(b)) {
            Py_DECREF(tup);
            PyErr_SetString(PyExc_TypeError, "heads must be bytes");
            return NULL;
        }
        if (PyBytes_GET_SIZE(b) > *longest) *longest = PyBytes_GET_SIZE(b);
    }
    return tup;
}

typedef struct {
    PyObject_HEAD
    PyObject *heads;     /* tuple of bytes: each table's packet up to its one integer parameter */
    PyObject *random;    /* rng.random */
    PyObject *rng;
    int plain_rng;       /* rng is a random.Random itself: its draws can be made in C (MT) */
    Py_ssize_t max_head;
    Special sp;
} PointSelect;

static PyTypeObject PointSelectType;

static int PointSelect_init(PointSelect *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"heads", "rng", "a", "b", "pct", "res", "iters", NULL};
    PyObject *heads, *rng;
    long long a, b;
    double pct, res;
    int iters;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOLLddi", kwlist, &heads, &rng, &a, &b, &pct, &res, &iters))
        return -1;
    Special sp;
    if (special_init(&sp, a, b, pct, res, iters) < 0) return -1;
    int plain = is_plain_random(rng);
    if (plain < 0) return -1;
    Py_ssize_t longest;
    PyObject *tup = bytes_tuple(heads, &longest);
    if (tup == NULL) return -1;
    PyObject *random = PyObject_GetAttrString(rng, "random");
    if (random == NULL) { Py_DECREF(tup); return -1; }
    Py_XSETREF(self->heads, tup);
    Py_XSETREF(self->random, random);
    Py_XSETREF(self->rng, Py_NewRef(rng));
    self->plain_rng = plain;
    self->max_head = longest;
    self->sp = sp;
    return 0;
}

/* one point select's packet into out (max_head + 8 bytes); its length, or -1 with an exception set.
 * Without the GIL only with mt: nothing else is touched that the GIL guards. */
static Py_ssize_t point_select_encode(PointSelect *self, MT *mt, char *out) {
    Py_ssize_t tables = PyTuple_GET_SIZE(self->heads), table = 0;
    if (tables > 1) { /* int(rng.random() * tables), drawn before the key */
        double r;
        if (draw_from(self->random, mt, &r) < 0) return -1;
        table = (Py_ssize_t)(r * (double)tables);
    }
    long long key;
    if (special_key(&self->sp, self->random, mt, &key) < 0) return -1;
    return put_i64(put_bytes(out, PyTuple_GET_ITEM(self->heads, table)), key) - out;
}

/* one transaction: a 1-tuple with the packet, as the Python program returns it */
static PyObject *point_select_packets(PointSelect *self) {
    PyObject *packet = PyBytes_FromStringAndSize(NULL, self->max_head + 8);
    if (packet == NULL) return NULL;
    Py_ssize_t n = point_select_encode(self, NULL, PyBytes_AS_STRING(packet));
    if (n < 0 || (n < self->max_head + 8 && _PyBytes_Resize(&packet, n) < 0)) {
        Py_XDECREF(packet);
        return NULL;
    }
    PyObject *out = PyTuple_New(1);
    if (out == NULL) { Py_DECREF(packet); return NULL; }
    PyTuple_SET_ITEM(out, 0, packet);
    return out;
}

static PyObject *PointSelect_call(PointSelect *self, PyObject *args, PyObject *kwds) {
    if (self->heads == NULL) { PyErr_SetString(PyExc_ValueError, "PointSelect not initialised"); return NULL; }
    return point_select_packets(self);
}

static int PointSelect_clear(PointSelect *self);

static void PointSelect_dealloc(PointSelect *self) {
    PyObject_GC_UnTrack(self);
    PointSelect_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int PointSelect_traverse(PointSelect *self, visitproc visit, void *arg) {
    Py_VISIT(self->heads);
    Py_VISIT(self->random);
    Py_VISIT(self->rng);
    return 0;
}

static int PointSelect_clear(PointSelect *self) {
    Py_CLEAR(self->heads);
    Py_CLEAR(self->random);
    Py_CLEAR(self->rng);
    return 0;
}

static PyTypeObject PointSelectType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl._rawcore.PointSelect",
    .tp_doc = "PointSelect(heads, rng, a, b, pct, res, iters)(tx): one point select's packets.",
    .tp_basicsize = sizeof(PointSelect),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)PointSelect_init,
    .tp_dealloc = (destructor)PointSelect_dealloc,
    .tp_traverse = (traverseproc)PointSelect_traverse,
    .tp_clear = (inquiry)PointSelect_clear,
    .tp_call = (ternaryfunc)PointSelect_call,
};

/* ---------------------------------------------------------------------------------------------- */
/* Oltp                                                                                            */

/* 10**digits as 32-bit words, least significant first, and its bit length */
#define BIG_WORDS 12
typedef struct {
    uint32_t w[BIG_WORDS];
    int words, bits;
} Big;

static void big_pow10(Big *n, int digits) {
    memset(n, 0, sizeof *n);
    n->w[0] = 1;
    for (int d = 0; d < digits; d++) {
        uint64_t carry = 0;
        for (int i = 0; i < BIG_WORDS; i++) {
            uint64_t v = (uint64_t)n->w[i] * 10 + carry;
            n->w[i] = (uint32_t)v;
            carry = v >> 32;
        }
    }
    n->words = BIG_WORDS;
    while (n->words > 1 && n->w[n->words - 1] == 0) n->words--;
    uint32_t top = n->w[n->words - 1];
    n->bits = 32 * (n->words - 1);
    while (top) { n->bits++; top >>= 1; }
}

/* rng.randrange(n) for n = 10**digits, as CPython draws it (_randbelow_with_getrandbits: k =
 * n.bit_length() bits from getrandbits(k), again while >= n; getrandbits fills 32-bit words from
 * the least significant, the last one shifted right to its k mod 32 bits), written as `digits`
 * decimal digits with leading zeros: "%0*d" % (digits, value). */
static void big_below_pow10(MT *mt, const Big *n, int digits, char *out) {
    uint32_t r[BIG_WORDS];
    int words = (n->bits - 1) / 32 + 1;
    for (;;) {
        int k = n->bits;
        for (int i = 0; i < words; i++, k -= 32) {
            uint32_t v = mt_next(mt);
            if (k < 32) v >>= (32 - k);
            r[i] = v;
        }
        int i = words - 1; /* r >= n? from the most significant word */
        while (i > 0 && r[i] == (i < n->words ? n->w[i] : 0)) i--;
        if (r[i] < (i < n->words ? n->w[i] : 0)) break;
    }
    for (int pos = digits; pos > 0;) { /* nine digits at a time, from the least significant */
        uint64_t rem = 0;
        for (int i = words - 1; i >= 0; i--) {
            uint64_t cur = (rem << 32) | r[i];
            r[i] = (uint32_t)(cur / 1000000000u);
            rem = cur % 1000000000u;
        }
        for (int j = 0; j < 9 && pos > 0; j++) {
            out[--pos] = (char)('0' + rem % 10);
            rem /= 10;
        }
    }
}

static Big C_BELOW, PAD_BELOW; /* 10**110 and 10**55: sysbench's c and pad columns' digits */

/* sysbench.c_value / pad_value: `groups` groups of 11 random digits joined by dashes, as a
 * length-encoded string parameter (the length is below 251: one byte). */
static char *put_digit_groups(char *p, MT *mt, const Big *n, int groups) {
    char digits[11 * 10];
    big_below_pow10(mt, n, 11 * groups, digits);
    *p++ = (char)(12 * groups - 1);
    for (int g = 0; g < groups; g++) {
        if (g) *p++ = '-';
        memcpy(p, digits + 11 * g, 11);
        p += 11;
    }
    return p;
}

/* what a group's statements take: (the statement's parameters) */
enum {
    G_ID = 0,            /* (id): point selects, index updates */
    G_RANGE = 1,         /* (lo, lo + range_size - 1): the four range selects */
    G_C_ID = 2,          /* (c, id): non-index updates */
    G_DELETE_INSERT = 3, /* (i) then (i, k, c, pad): a delete and its insert */
};
#define OLTP_GROUPS 16

typedef struct {
    PyObject_HEAD
    PyObject *groups;    /* the ((kind, count, heads, insert_heads or None), ...) given */
    PyObject *rng;
    Special sp;
    Py_ssize_t tables, ngroups, max_out, max_packets;
    long long range_size;
    int trx;
    int kind[OLTP_GROUPS], count[OLTP_GROUPS];
    PyObject *heads[OLTP_GROUPS], *heads2[OLTP_GROUPS]; /* borrowed from groups */
} Oltp;

static PyTypeObject OltpType;

static int Oltp_init(Oltp *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"groups", "rng", "a", "b", "pct", "res", "iters", "range_size", "trx", NULL};
    PyObject *groups, *rng;
    long long a, b, range_size;
    double pct, res;
    int iters, trx;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOLLddiLp", kwlist, &groups, &rng, &a, &b, &pct, &res, &iters,
                                     &range_size, &trx))
        return -1;
    Special sp;
    if (special_init(&sp, a, b, pct, res, iters) < 0) return -1;
    int plain = is_plain_random(rng);
    if (plain < 0) return -1;
    if (!plain) { PyErr_SetString(PyExc_TypeError, "Oltp draws from a random.Random's own state"); return -1; }
    PyObject *tup = PySequence_Tuple(groups);
    if (tup == NULL) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(tup), tables = -1, out = trx ? 2 * 16 : 0, packets = trx ? 2 : 0;
    if (n < 1 || n > OLTP_GROUPS) {
        Py_DECREF(tup);
        PyErr_Format(PyExc_ValueError, "1 to %d groups of statements expected", OLTP_GROUPS);
        return -1;
    }
    /* filled here, and this object's only once all is well: a failed init leaves it as it was */
    int kinds[OLTP_GROUPS], counts[OLTP_GROUPS];
    PyObject *all_heads[OLTP_GROUPS], *all_heads2[OLTP_GROUPS];
    /* the tuples of heads, checked and kept in a tuple of our own (the borrowed pointers' owner) */
    PyObject *kept = PyTuple_New(n);
    if (kept == NULL) { Py_DECREF(tup); return -1; }
    for (Py_ssize_t g = 0; g < n; g++) {
        int kind, count;
        PyObject *h, *h2, *heads = NULL, *heads2 = NULL;
        Py_ssize_t longest = 0, longest2 = 0;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(tup, g), "iiOO", &kind, &count, &h, &h2)) goto fail;
        if (kind < G_ID || kind > G_DELETE_INSERT || count < 1 || (kind == G_DELETE_INSERT) == (h2 == Py_None)) {
            PyErr_SetString(PyExc_ValueError, "a group is (kind 0-3, count >= 1, heads, insert heads for kind 3)");
            goto fail;
        }
        if ((heads = bytes_tuple(h, &longest)) == NULL) goto fail;
        if (h2 != Py_None && (heads2 = bytes_tuple(h2, &longest2)) == NULL) { Py_DECREF(heads); goto fail; }
        if ((tables >= 0 && PyTuple_GET_SIZE(heads) != tables) ||
            (heads2 != NULL && PyTuple_GET_SIZE(heads2) != PyTuple_GET_SIZE(heads))) {
            Py_DECREF(heads);
            Py_XDECREF(heads2);
            PyErr_SetString(PyExc_ValueError, "every group needs a head for each table");
            goto fail;
        }
        tables = PyTuple_GET_SIZE(heads);
        PyObject *item = Py_BuildValue("(NN)", heads, heads2 != NULL ? heads2 : Py_NewRef(Py_None));
        if (item == NULL) goto fail;
        PyTuple_SET_ITEM(kept, g, item);
        kinds[g] = kind;
        counts[g] = count;
        all_heads[g] = heads;
        all_heads2[g] = heads2;
        /* the longest a statement of the group can be: its head and its values */
        Py_ssize_t one = longest + (kind == G_RANGE ? 16 : kind == G_C_ID ? 8 + 120 : 8);
        if (kind == G_DELETE_INSERT) one += longest2 + 16 + 120 + 60;
        out += count * one;
        packets += count * (kind == G_DELETE_INSERT ? 2 : 1);
    }
    Py_DECREF(tup);
    memcpy(self->kind, kinds, sizeof kinds);
    memcpy(self->count, counts, sizeof counts);
    memcpy(self->heads, all_heads, sizeof all_heads);
    memcpy(self->heads2, all_heads2, sizeof all_heads2);
    Py_XSETREF(self->groups, kept);
    Py_XSETREF(self->rng, Py_NewRef(rng));
    self->sp = sp;
    self->ngroups = n;
    self->tables = tables;
    self->range_size = range_size;
    self->trx = trx;
    self->max_out = out;
    self->max_packets = packets;
    return 0;
fail:
    Py_DECREF(tup);
    Py_DECREF(kept);
    return -1;
}

/* One transaction, drawn as sysbench._SysbenchSession._plan draws it (a table per group, then each
 * statement's values in order) and encoded as Statement.packet encodes it: the packets written one
 * after the other into out (max_out bytes), their starts and lengths into pk and pklen
 * (max_packets each). How many. Touches nothing the GIL guards. */
static Py_ssize_t oltp_encode(Oltp *self, MT *mt, char *out, const char **pk, Py_ssize_t *pklen) {
    Py_ssize_t n = 0;
    char *p = out;
#define PACKET(start) do { pk[n] = (start); pklen[n] = p - (start); n++; } while (0)
    if (self->trx) {
        memcpy(p, BEGIN_PACKET, sizeof(BEGIN_PACKET) - 1);
        p += sizeof(BEGIN_PACKET) - 1;
        PACKET(out);
    }
    for (Py_ssize_t g = 0; g < self->ngroups; g++) {
        Py_ssize_t t = self->tables > 1 ? (Py_ssize_t)(mt_random(mt) * (double)self->tables) : 0;
        PyObject *head = PyTuple_GET_ITEM(self->heads[g], t);
        for (int c = 0; c < self->count[g]; c++) {
            char *start = p;
            long long id, k;
            switch (self->kind[g]) {
            case G_ID:
                special_key(&self->sp, NULL, mt, &id);
                p = put_i64(put_bytes(p, head), id);
                break;
            case G_RANGE:
                special_key(&self->sp, NULL, mt, &id);
                p = put_i64(put_i64(put_bytes(p, head), id), id + self->range_size - 1);
                break;
            case G_C_ID:
                p = put_digit_groups(put_bytes(p, head), mt, &C_BELOW, 10); /* c before the key */
                special_key(&self->sp, NULL, mt, &id);
                p = put_i64(p, id);
                break;
            default: /* G_DELETE_INSERT */
                special_key(&self->sp, NULL, mt, &id);
                special_key(&self->sp, NULL, mt, &k);
                p = put_i64(put_bytes(p, head), id);
                PACKET(start);
                start = p;
                p = put_i64(put_i64(put_bytes(p, PyTuple_GET_ITEM(self->heads2[g], t)), id), k);
                p = put_digit_groups(put_digit_groups(p, mt, &C_BELOW, 10), mt, &PAD_BELOW, 5);
            }
            PACKET(start);
        }
    }
    if (self->trx) {
        char *start = p;
        memcpy(p, COMMIT_PACKET, sizeof(COMMIT_PACKET) - 1);
        p += sizeof(COMMIT_PACKET) - 1;
        PACKET(start);
    }
#undef PACKET
    return n;
}

/* one transaction as a list of bytes (the GIL held), from the Random's state and back to it */
static PyObject *oltp_packets(Oltp *self) {
    if (self->groups == NULL) { PyErr_SetString(PyExc_ValueError, "Oltp not initialised"); return NULL; }
    char *out = PyMem_RawMalloc((size_t)self->max_out);
    const char **pk = PyMem_RawMalloc((size_t)self->max_packets * sizeof(char *));
    Py_ssize_t *pklen = PyMem_RawMalloc((size_t)self->max_packets * sizeof(Py_ssize_t));
    MT *mt = PyMem_RawMalloc(sizeof(MT));
    PyObject *list = NULL;
    if (out == NULL || pk == NULL || pklen == NULL || mt == NULL) { PyErr_NoMemory(); goto done; }
    if (mt_load(mt, self->rng) < 0) goto done;
    Py_ssize_t n = oltp_encode(self, mt, out, pk, pklen);
    if (mt_store(mt, self->rng) < 0) goto done;
    list = PyList_New(n);
    for (Py_ssize_t j = 0; list != NULL && j < n; j++) {
        PyObject *b = PyBytes_FromStringAndSize(pk[j], pklen[j]);
        if (b == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, j, b);
    }
done:
    PyMem_RawFree(out);
    PyMem_RawFree(pk);
    PyMem_RawFree(pklen);
    PyMem_RawFree(mt);
    return list;
}

static PyObject *Oltp_call(Oltp *self, PyObject *args, PyObject *kwds) {
    return oltp_packets(self);
}

static int Oltp_traverse(Oltp *self, visitproc visit, void *arg) {
    Py_VISIT(self->groups);
    Py_VISIT(self->rng);
    return 0;
}

static int Oltp_clear(Oltp *self) {
    Py_CLEAR(self->groups);
    Py_CLEAR(self->rng);
    self->ngroups = 0;
    return 0;
}

static void Oltp_dealloc(Oltp *self) {
    PyObject_GC_UnTrack(self);
    Oltp_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject OltpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl._rawcore.Oltp",
    .tp_doc = "Oltp(groups, rng, a, b, pct, res, iters, range_size, trx)(tx): one transaction of sysbench's "
              "OLTP tests (its statements' packets), drawn with rng as the Python session draws it.",
    .tp_basicsize = sizeof(Oltp),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Oltp_init,
    .tp_dealloc = (destructor)Oltp_dealloc,
    .tp_traverse = (traverseproc)Oltp_traverse,
    .tp_clear = (inquiry)Oltp_clear,
    .tp_call = (ternaryfunc)Oltp_call,
};

/* ---------------------------------------------------------------------------------------------- */
/* What both ways of running a user (Core on the event loop, Blocking on a thread) do alike         */

/* The next transaction's type (the GIL held; pick is not None): 0, or -1 with an exception set. */
static int pick_tx(PyObject *pick, long long *tx) {
    if (Py_IS_TYPE(pick, &MixType)) {
        *tx = mix_pick((Mix *)pick);
        return *tx < 0 ? -1 : 0;
    }
    PyObject *r = PyObject_CallNoArgs(pick);
    if (r == NULL) return -1;
    *tx = PyLong_AsLongLong(r);
    Py_DECREF(r);
    if (*tx == -1 && PyErr_Occurred()) return -1;
    if (*tx < 0) {
        PyErr_SetString(PyExc_ValueError, "negative transaction type");
        return -1;
    }
    return 0;
}

/* program(tx): transaction tx's packets, a new reference (the GIL held), or NULL with an exception. */
static PyObject *program_packets(PyObject *program, long long tx) {
    if (Py_IS_TYPE(program, &PointSelectType)) return point_select_packets((PointSelect *)program);
    if (Py_IS_TYPE(program, &OltpType)) return oltp_packets((Oltp *)program);
    PyObject *arg = PyLong_FromLongLong(tx);
    if (arg == NULL) return NULL;
    PyObject *packets = PyObject_CallOneArg(program, arg);
    Py_DECREF(arg);
    return packets;
}

/* A receive buffer with at least a quarter of it free after `end`, so that a read takes a good
 * part of a large reply at a time: what has been parsed (before `pos`) is dropped first, and the
 * buffer doubles when that is not enough. 0, or -1 when out of memory (nothing set: no GIL needed). */
static int make_room(char **buf, Py_ssize_t *cap, Py_ssize_t *pos, Py_ssize_t *end) {
    Py_ssize_t room = *cap / 4;
    if (*cap - *end >= room) return 0;
    if (*pos) {
        memmove(*buf, *buf + *pos, (size_t)(*end - *pos));
        *end -= *pos;
        *pos = 0;
    }
    if (*cap - *end >= room) return 0;
    char *bigger = PyMem_RawRealloc(*buf, (size_t)(2 * *cap));
    if (bigger == NULL) return -1;
    *buf = bigger;
    *cap *= 2;
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Core                                                                                            */

typedef struct {
    PyObject_HEAD
    PyObject *write;      /* the transport's write */
    PyObject *program;    /* tx -> packets */
    PyObject *pick;       /* () -> tx */
    PyObject *record;     /* Counts, or anything with ok(tx, us, statements), or None */
    PyObject *packets;    /* the transaction in flight */
    PyObject *failed;     /* None, or (code, message) of an error whose ROLLBACK's reply is awaited */
    char *buf;
    Py_ssize_t cap, end, pos;
    Py_ssize_t exports;   /* buffers handed out and not yet released: buf must not move */
    Py_ssize_t columns_left;
    int state;
    char deprecate_eof;
    char stop;
    long long tx, attempt, k, t0, completed;
} Core;

static PyTypeObject CoreType;

static int Core_init(Core *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"write", "program", "pick", "record", "deprecate_eof", NULL};
    PyObject *write, *program, *pick, *record;
    int deprecate_eof;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOp", kwlist, &write, &program, &pick, &record, &deprecate_eof))
        return -1;
    if (self->exports) { PyErr_SetString(PyExc_BufferError, "buffer in use"); return -1; }
    char *buf = PyMem_RawMalloc(FIRST_BUFFER);
    if (buf == NULL) { PyErr_NoMemory(); return -1; }
    PyMem_RawFree(self->buf);
    self->buf = buf;
    self->cap = FIRST_BUFFER;
    self->end = self->pos = 0;
    self->state = S_FIRST;
    self->columns_left = 0;
    Py_XSETREF(self->write, Py_NewRef(write));
    Py_XSETREF(self->program, Py_NewRef(program));
    Py_XSETREF(self->pick, Py_NewRef(pick));
    Py_XSETREF(self->record, Py_NewRef(record));
    Py_XSETREF(self->packets, PyTuple_New(0));
    Py_XSETREF(self->failed, Py_NewRef(Py_None));
    if (self->packets == NULL) return -1;
    self->deprecate_eof = (char)deprecate_eof;
    self->stop = 0;
    self->tx = self->attempt = self->k = self->t0 = self->completed = 0;
    return 0;
}

static int Core_traverse(Core *self, visitproc visit, void *arg) {
    Py_VISIT(self->write);
    Py_VISIT(self->program);
    Py_VISIT(self->pick);
    Py_VISIT(self->record);
    Py_VISIT(self->packets);
    Py_VISIT(self->failed);
    return 0;
}

static int Core_clear(Core *self) {
    Py_CLEAR(self->write);
    Py_CLEAR(self->program);
    Py_CLEAR(self->pick);
    Py_CLEAR(self->record);
    Py_CLEAR(self->packets);
    Py_CLEAR(self->failed);
    return 0;
}

static void Core_dealloc(Core *self) {
    PyObject_GC_UnTrack(self);
    Core_clear(self);
    PyMem_RawFree(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int write_packet(Core *self, Py_ssize_t k) {
    PyObject *packets = self->packets, *p;
    if (PyTuple_CheckExact(packets)) p = Py_NewRef(PyTuple_GET_ITEM(packets, k));
    else if (PyList_CheckExact(packets)) p = Py_NewRef(PyList_GET_ITEM(packets, k));
    else p = PySequence_GetItem(packets, k);
    if (p == NULL) return -1;
    PyObject *r = PyObject_CallOneArg(self->write, p);
    Py_DECREF(p);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static int start_attempt(Core *self) {
    PyObject *packets = program_packets(self->program, self->tx);
    if (packets == NULL) return -1;
    Py_ssize_t n = PyObject_Length(packets);
    if (n <= 0) {
        Py_DECREF(packets);
        if (n == 0) PyErr_SetString(PyExc_ValueError, "a transaction without statements");
        return -1;
    }
    Py_SETREF(self->packets, packets);
    self->k = 0;
    return write_packet(self, 0);
}

static int call_method0(Core *self, const char *name) {
    PyObject *r = PyObject_CallMethod((PyObject *)self, name, NULL);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static int next_transaction(Core *self) {
    if (self->stop) {
        PyObject *r = PyObject_CallMethod((PyObject *)self, "_finish", "O", Py_False);
        if (r == NULL) return -1;
        Py_DECREF(r);
        return 0;
    }
    if (self->pick == Py_None) self->tx = 0;
    else if (pick_tx(self->pick, &self->tx) < 0) return -1;
    self->attempt = 0;
    self->t0 = now_ns();
    return start_attempt(self);
}

static int reply_ok(Core *self) {
    if (self->failed != Py_None) /* the ROLLBACK after a failed statement has been answered */
        return call_method0(self, "_rollback_answered");
    Py_ssize_t k = (Py_ssize_t)++self->k;
    Py_ssize_t n = PyObject_Length(self->packets);
    if (n < 0) return -1;
    if (k < n) return write_packet(self, k);
    long long us = (now_ns() - self->t0) / 1000;
    if (Py_IS_TYPE(self->record, &CountsType)) {
        if (counts_add((Counts *)self->record, self->tx, us, k) < 0) return -1;
    } else if (self->record != Py_None) {
        PyObject *r = PyObject_CallMethod(self->record, "ok", "LLn", self->tx, us, k);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    self->completed++;
    return next_transaction(self);
}

static int reply_error(Core *self, int code, const unsigned char *text, Py_ssize_t len) {
    PyObject *r = PyObject_CallMethod((PyObject *)self, "_reply_error", "iN", code,
                                      PyUnicode_DecodeUTF8((const char *)text, len, "replace"));
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static Py_ssize_t skip_lenenc(const unsigned char *b, Py_ssize_t p) {
    unsigned char v = b[p];
    return p + (v < 0xFB ? 1 : v == 0xFC ? 3 : v == 0xFD ? 4 : 9);
}

/* Where the status flags of the OK or EOF packet at `start` are. */
static Py_ssize_t status_at(const unsigned char *b, Py_ssize_t start, Py_ssize_t length) {
    if (length < 7 || (b[start + 1] < 0xFB && b[start + 2] < 0xFB)) return start + 3;
    Py_ssize_t p = skip_lenenc(b, start + 1);
    return p < start + length ? skip_lenenc(b, p) : start + length; /* past the packet: no flags */
}

/* Where a walk through replies is, between two packets. */
typedef struct {
    int state;
    Py_ssize_t left; /* column definitions (and their EOF) still to step over */
} Walk;

/* what walk() and Blocking's read_reply() found */
enum { RP_MORE, RP_OK, RP_ERR, RP_BAD, RP_LOST, RP_NOMEM };

/* rawexec._PyCore._parse's walk: steps over the packets in b[*at, end) until a statement's reply
 * ends. RP_OK; RP_ERR with *code and the message at *msg (*mlen bytes, inside b); RP_BAD with *msg saying
 * what is not supported; RP_MORE when the next packet is not all there. *at is left after what was
 * stepped over. Touches nothing but its arguments: runs with or without the GIL. */
static int walk(Walk *w, const unsigned char *b, Py_ssize_t *at, Py_ssize_t end, char deprecate_eof,
                int *code, const char **msg, Py_ssize_t *mlen) {
    Py_ssize_t pos = *at, left = w->left;
    int state = w->state, found = RP_MORE;
    while (end - pos >= 4) {
        Py_ssize_t length = b[pos] | (b[pos + 1] << 8) | (b[pos + 2] << 16);
        Py_ssize_t start = pos + 4, nxt = start + length;
        if (nxt > end) break;
        if (!(0 < length && length < MAX_PAYLOAD)) {
            *msg = "a reply of 16 MiB or more: not supported by the raw executor";
            found = RP_BAD;
            break;
        }
        unsigned char first = b[start];
        if (state == S_ROWS) {
            if (first < 0xFE) { pos = nxt; continue; } /* a row (binary rows start with 0x00) */
        } else if (state == S_COLUMNS) { /* a column definition, or the EOF after them */
            pos = nxt;
            if (--left == 0) state = S_ROWS;
            continue;
        }
        if (first == 0xFF) { /* an error, first or instead of the end of the rows */
            if (length < 3) {
                *msg = "a malformed reply: an error packet without its code";
                found = RP_BAD;
                break;
            }
            *code = b[start + 1] | (b[start + 2] << 8);
            Py_ssize_t from = (length > 9 && b[start + 3] == 0x23) ? start + 9 : start + 3;
            *msg = (const char *)b + from;
            *mlen = nxt - from;
            pos = nxt;
            state = S_FIRST;
            found = RP_ERR;
            break;
        }
        if (state == S_FIRST && first != 0x00 && first != 0xFE) { /* a result set: its column count */
            if (first == 0xFB) {
                *msg = "LOCAL INFILE request: not supported by the raw executor";
                found = RP_BAD;
                break;
            }
            if (first < 0xFB) left = first;
            else {
                int bytes = first == 0xFC ? 2 : 3;
                if (length < 1 + bytes) {
                    *msg = "a malformed reply: a column count cut short";
                    found = RP_BAD;
                    break;
                }
                left = 0;
                for (int i = bytes - 1; i >= 0; i--) left = (left << 8) | b[start + 1 + i];
            }
            if (!deprecate_eof) left += 1;
            state = S_COLUMNS;
            pos = nxt;
            continue;
        }
        /* an OK, or the EOF / OK after the rows: the statement is done unless a result follows */
        pos = nxt;
        state = S_FIRST;
        Py_ssize_t p = status_at(b, start, length);
        if (p < nxt && (b[p] & MORE_RESULTS)) continue;
        found = RP_OK;
        break;
    }
    *at = pos;
    w->state = state;
    w->left = left;
    return found;
}

/* Every reply the buffer holds, each told to the core. Callbacks may write and finish, never touch
 * the buffer. */
static int parse(Core *self) {
    const unsigned char *b = (const unsigned char *)self->buf;
    Py_ssize_t pos = self->pos, end = self->end;
    Walk w = {self->state, self->columns_left};
    for (;;) {
        int code = 0;
        const char *msg = NULL;
        Py_ssize_t mlen = 0;
        int found = walk(&w, b, &pos, end, self->deprecate_eof, &code, &msg, &mlen);
        if (found == RP_MORE) break;
        if (found == RP_BAD) {
            PyErr_SetString(PyExc_ValueError, msg);
            return -1;
        }
        if ((found == RP_ERR ? reply_error(self, code, (const unsigned char *)msg, mlen) : reply_ok(self)) < 0)
            return -1;
    }
    if (pos == end) self->pos = self->end = 0;
    else self->pos = pos;
    self->state = w.state;
    self->columns_left = w.left;
    return 0;
}

/* asyncio.BufferedProtocol.get_buffer: a view of the free space (the Core exports it) */
static PyObject *Core_get_buffer(Core *self, PyObject *sizehint) {
    if (self->buf == NULL) { PyErr_SetString(PyExc_ValueError, "Core not initialised"); return NULL; }
    if (self->cap - self->end < self->cap / 4 && self->exports) {  /* make_room would move it */
        PyErr_SetString(PyExc_BufferError, "buffer in use");
        return NULL;
    }
    if (make_room(&self->buf, &self->cap, &self->pos, &self->end) < 0) return PyErr_NoMemory();
    return PyMemoryView_FromObject((PyObject *)self);
}

static int Core_getbuffer(Core *self, Py_buffer *view, int flags) {
    if (self->buf == NULL) { PyErr_SetString(PyExc_BufferError, "Core not initialised"); return -1; }
    int rc = PyBuffer_FillInfo(view, (PyObject *)self, self->buf + self->end, self->cap - self->end, 0, flags);
    if (rc == 0) self->exports++;
    return rc;
}

static void Core_releasebuffer(Core *self, Py_buffer *view) {
    self->exports--;
}

static PyBufferProcs Core_as_buffer = {
    .bf_getbuffer = (getbufferproc)Core_getbuffer,
    .bf_releasebuffer = (releasebufferproc)Core_releasebuffer,
};

/* asyncio.BufferedProtocol.buffer_updated: parse what came; a defect reaches the run (_broken) */
static PyObject *Core_buffer_updated(Core *self, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0 || n > self->cap - self->end) {
        PyErr_SetString(PyExc_ValueError, "more bytes than the buffer holds");
        return NULL;
    }
    self->end += n;
    if (parse(self) == 0) Py_RETURN_NONE;
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL; /* KeyboardInterrupt and the like go on */
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    if (tb != NULL) PyException_SetTraceback(exc, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    PyObject *r = PyObject_CallMethod((PyObject *)self, "_broken", "O", exc);
    Py_DECREF(exc);
    if (r == NULL) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyObject *Core_next_transaction(Core *self, PyObject *unused) {
    if (next_transaction(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Core_start_attempt(Core *self, PyObject *unused) {
    if (start_attempt(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Core_get_buffer_size(Core *self, void *closure) {
    return PyLong_FromSsize_t(self->cap);
}

static PyMethodDef Core_methods[] = {
    {"get_buffer", (PyCFunction)Core_get_buffer, METH_O, "BufferedProtocol.get_buffer"},
    {"buffer_updated", (PyCFunction)Core_buffer_updated, METH_O, "BufferedProtocol.buffer_updated"},
    {"_next_transaction", (PyCFunction)Core_next_transaction, METH_NOARGS, "pick and start the next transaction"},
    {"_start_attempt", (PyCFunction)Core_start_attempt, METH_NOARGS, "send the first statement of an attempt"},
    {NULL}};

static PyMemberDef Core_members[] = {
    {"program", T_OBJECT_EX, offsetof(Core, program), 0, NULL},
    {"packets", T_OBJECT_EX, offsetof(Core, packets), 0, NULL},
    {"failed", T_OBJECT_EX, offsetof(Core, failed), 0, NULL},
    {"stop", T_BOOL, offsetof(Core, stop), 0, "finish after the transaction in flight"},
    {"tx", T_LONGLONG, offsetof(Core, tx), 0, NULL},
    {"attempt", T_LONGLONG, offsetof(Core, attempt), 0, NULL},
    {"k", T_LONGLONG, offsetof(Core, k), 0, NULL},
    {"t0", T_LONGLONG, offsetof(Core, t0), 0, NULL},
    {"completed", T_LONGLONG, offsetof(Core, completed), 0, "transactions completed"},
    {NULL}};

static PyGetSetDef Core_getset[] = {
    {"buffer_size", (getter)Core_get_buffer_size, NULL, "bytes the receive buffer holds", NULL},
    {NULL}};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl._rawcore.Core",
    .tp_doc = "The raw executor's reply parser and transaction stepping (see rawexec._PyCore).",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_traverse = (traverseproc)Core_traverse,
    .tp_clear = (inquiry)Core_clear,
    .tp_methods = Core_methods,
    .tp_members = Core_members,
    .tp_getset = Core_getset,
    .tp_as_buffer = &Core_as_buffer,
};

/* ---------------------------------------------------------------------------------------------- */
/* Blocking                                                                                        */
/*                                                                                                 */
/* One user's transactions on a thread of its own, with blocking reads and writes on the socket, as */
/* sysbench runs each of its threads. Measured on 2 cores with the server on the same machine: one */
/* event loop serving many connections wakes the server's threads across cores (0.43 rescheduling  */
/* interrupts per transaction against sysbench's 0.1, ~42 us of server CPU per point select against */
/* ~32), while a thread per connection that waits in recv() is woken where its server thread ran.   */
/* The GIL is released for the whole loop when the transaction is built in C (PointSelect, Oltp,    */
/* drawn with a copy of the user's Mersenne Twister); a transaction built in Python takes it once.   */
/* run() returns to Python for everything rare: an error reply, a lost connection, the stop.       */

enum { B_STOPPED = 0, B_ERROR = 1, B_LOST = 2, B_DOUBT = 3 };
#define MESSAGE_MAX 512


typedef struct {
    PyObject_HEAD
    PyObject *program;    /* tx -> packets, or a PointSelect or an Oltp */
    PyObject *pick;       /* () -> tx, or None */
    PyObject *record;     /* Counts, or anything with ok(tx, us, statements), or None */
    PyObject *packets;    /* the transaction in flight, as a list or tuple of bytes (PySequence_Fast) */
    const char **pk;      /* its packets' bytes, readable without the GIL while `packets` lives */
    Py_ssize_t *pklen, npk, cappk;
    char *out;            /* a packet built in C */
    Py_ssize_t capout;
    char *buf;
    Py_ssize_t cap, end, pos;
    char deprecate_eof;
    char stop;            /* set by the event loop's thread, read by the user's */
    char running;
    long long tx, attempt, k, t0, completed;
} Blocking;

static PyTypeObject BlockingType;

/* room for the packets of a transaction of n statements; 0, or -1 with an exception set */
static int packet_slots(Blocking *self, Py_ssize_t n) {
    if (n <= self->cappk) return 0;
    const char **pk = PyMem_RawRealloc(self->pk, (size_t)n * sizeof(char *));
    if (pk != NULL) self->pk = pk;
    Py_ssize_t *pklen = pk == NULL ? NULL : PyMem_RawRealloc(self->pklen, (size_t)n * sizeof(Py_ssize_t));
    if (pklen != NULL) self->pklen = pklen;
    if (pk == NULL || pklen == NULL) { PyErr_NoMemory(); return -1; }
    self->cappk = n;
    return 0;
}

static int Blocking_init(Blocking *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"program", "pick", "record", "deprecate_eof", NULL};
    PyObject *program, *pick, *record;
    int deprecate_eof;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOp", kwlist, &program, &pick, &record, &deprecate_eof))
        return -1;
    if (self->running) { PyErr_SetString(PyExc_RuntimeError, "running"); return -1; }
    if (self->buf == NULL) {
        self->buf = PyMem_RawMalloc(FIRST_BUFFER);
        if (self->buf == NULL) { PyErr_NoMemory(); return -1; }
        self->cap = FIRST_BUFFER;
    }
    self->end = self->pos = 0;
    Py_XSETREF(self->program, Py_NewRef(program));
    Py_XSETREF(self->pick, Py_NewRef(pick));
    Py_XSETREF(self->record, Py_NewRef(record));
    Py_CLEAR(self->packets);
    self->npk = 0;
    self->deprecate_eof = (char)deprecate_eof;
    self->stop = 0;
    self->tx = self->attempt = self->k = self->t0 = self->completed = 0;
    return 0;
}

static int Blocking_traverse(Blocking *self, visitproc visit, void *arg) {
    Py_VISIT(self->program);
    Py_VISIT(self->pick);
    Py_VISIT(self->record);
    Py_VISIT(self->packets);
    return 0;
}

static int Blocking_clear(Blocking *self) {
    Py_CLEAR(self->program);
    Py_CLEAR(self->pick);
    Py_CLEAR(self->record);
    Py_CLEAR(self->packets);
    return 0;
}

static void Blocking_dealloc(Blocking *self) {
    PyObject_GC_UnTrack(self);
    Blocking_clear(self);
    PyMem_RawFree(self->buf);
    PyMem_RawFree(self->out);
    PyMem_RawFree(self->pk);
    PyMem_RawFree(self->pklen);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* 0, or -1 with errno set */
static int send_all(int fd, const char *p, Py_ssize_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, (size_t)n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= w;
    }
    return 0;
}

/* Reads one statement's whole reply (no GIL: only this object's buffer is touched): walk()'s
 * RP_OK, RP_ERR (the message valid until the next read) or RP_BAD, or RP_LOST with *msg a static text,
 * or RP_NOMEM. */
static int read_reply(Blocking *self, int fd, int *code, const char **msg, Py_ssize_t *mlen) {
    Walk w = {S_FIRST, 0};
    for (;;) {
        Py_ssize_t pos = self->pos, end = self->end;
        int found = walk(&w, (const unsigned char *)self->buf, &pos, end, self->deprecate_eof, code, msg, mlen);
        if (found != RP_MORE) {
            if (pos == end) self->pos = self->end = 0;
            else self->pos = pos;
            return found;
        }
        if (pos == end) pos = end = 0;  /* more bytes needed */
        if (make_room(&self->buf, &self->cap, &pos, &end) < 0) return RP_NOMEM;
        self->pos = pos;
        self->end = end;
        ssize_t n = recv(fd, self->buf + end, (size_t)(self->cap - end), 0);
        if (n > 0) {
            self->end += n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        *msg = n == 0 ? "closed" : strerror(errno);
        return RP_LOST;
    }
}

/* The transaction's packets from Python (the GIL held): 0, or -1 with an exception set. */
static int python_packets(Blocking *self) {
    PyObject *packets = program_packets(self->program, self->tx);
    if (packets == NULL) return -1;
    PyObject *fast = PySequence_Fast(packets, "a transaction's packets must be a sequence");
    Py_DECREF(packets);
    if (fast == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n == 0) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "a transaction without statements");
        return -1;
    }
    if (packet_slots(self, n) < 0) { Py_DECREF(fast); return -1; }
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t j = 0; j < n; j++) {
        if (!PyBytes_Check(items[j])) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_TypeError, "a transaction's packets must be bytes");
            return -1;
        }
        self->pk[j] = PyBytes_AS_STRING(items[j]);
        self->pklen[j] = PyBytes_GET_SIZE(items[j]);
    }
    Py_XSETREF(self->packets, fast);
    self->npk = n;
    return 0;
}

/* text (n bytes; up to its NUL when n < 0) kept as an outcome's message; its length */
static Py_ssize_t keep(char *message, const char *text, Py_ssize_t n) {
    if (n < 0) n = (Py_ssize_t)strlen(text);
    if (n > MESSAGE_MAX) n = MESSAGE_MAX;
    memcpy(message, text, (size_t)n);
    return n;
}

#define GIL_RELEASE() do { if (ts == NULL) ts = PyEval_SaveThread(); } while (0)
#define GIL_TAKE() do { if (ts != NULL) { PyEval_RestoreThread(ts); ts = NULL; } } while (0)

/* run(fd, retry) -> (outcome, code, message): transactions until one of them fails or `stop` is
 * set. retry: start again the transaction that failed (tx and attempt as they are). */
static PyObject *Blocking_run(Blocking *self, PyObject *args) {
    int fd, retry;
    if (!PyArg_ParseTuple(args, "ip", &fd, &retry)) return NULL;
    if (self->program == NULL) { PyErr_SetString(PyExc_ValueError, "Blocking not initialised"); return NULL; }
    if (self->running) { PyErr_SetString(PyExc_RuntimeError, "already running"); return NULL; }
    /* a transaction built in C, drawn from a copy of the user's Random: no GIL in the loop */
    PointSelect *ps = NULL;
    Oltp *ol = NULL;
    PyObject *rng = NULL;
    Py_ssize_t need_out = 0, need_packets = 0;
    if (self->pick == Py_None && Py_IS_TYPE(self->program, &PointSelectType) &&
        ((PointSelect *)self->program)->plain_rng) {
        ps = (PointSelect *)self->program;
        rng = ps->rng;
        need_out = ps->max_head + 8;
        need_packets = 1;
    } else if (self->pick == Py_None && Py_IS_TYPE(self->program, &OltpType) && ((Oltp *)self->program)->groups) {
        ol = (Oltp *)self->program;
        rng = ol->rng;
        need_out = ol->max_out;
        need_packets = ol->max_packets;
    }
    MT *mt = NULL;
    if (rng != NULL) {
        if (self->capout < need_out) {
            char *out = PyMem_RawRealloc(self->out, (size_t)need_out);
            if (out == NULL) return PyErr_NoMemory();
            self->out = out;
            self->capout = need_out;
        }
        if (packet_slots(self, need_packets) < 0) return NULL;
        mt = PyMem_RawMalloc(sizeof(MT));
        if (mt == NULL) return PyErr_NoMemory();
        if (mt_load(mt, rng) < 0) { PyMem_RawFree(mt); return NULL; }
    }
    int counts = Py_IS_TYPE(self->record, &CountsType) && ((Counts *)self->record)->mu_ready;
    self->running = 1;
    PyThreadState *ts = NULL; /* NULL while this thread holds the GIL */
    int outcome = -1, code = 0;
    char message[MESSAGE_MAX];
    Py_ssize_t mlen = 0;
    const char *bad = NULL; /* a defect found without the GIL, raised once it is held */

    for (;;) {
        if (!retry) {
            if (__atomic_load_n(&self->stop, __ATOMIC_RELAXED)) { outcome = B_STOPPED; break; }
            /* the GIL first, when the transaction needs it: waiting for it (other users' threads,
             * the interval's fold) is the client's time, not the transaction's */
            if (self->pick != Py_None || mt == NULL) GIL_TAKE();
            if (self->pick == Py_None) self->tx = 0;
            else if (pick_tx(self->pick, &self->tx) < 0) break;
            self->attempt = 0;
            self->t0 = now_ns();
        }
        retry = 0;
        if (ps != NULL) {
            self->pklen[0] = point_select_encode(ps, mt, self->out);
            self->pk[0] = self->out;
            self->npk = 1;
        } else if (ol != NULL) {
            self->npk = oltp_encode(ol, mt, self->out, self->pk, self->pklen);
        } else {
            GIL_TAKE();
            if (python_packets(self) < 0) break;
        }
        GIL_RELEASE();
        int r = RP_OK;
        const char *m = NULL;
        for (self->k = 0; self->k < self->npk; self->k++) {
            if (send_all(fd, self->pk[self->k], self->pklen[self->k]) < 0) {
                r = RP_LOST;
                m = strerror(errno);
                break;
            }
            r = read_reply(self, fd, &code, &m, &mlen);
            if (r != RP_OK) break;
        }
        if (r == RP_OK) {
            long long us = (now_ns() - self->t0) / 1000;
            if (counts) {
                if (self->tx >= ((Counts *)self->record)->n) { bad = "transaction type out of range"; break; }
                if (counts_add_nogil((Counts *)self->record, self->tx, us, self->k) < 0) {
                    bad = "out of memory for a transaction's count";
                    break;
                }
            } else if (self->record != Py_None) {
                GIL_TAKE();
                PyObject *o = PyObject_CallMethod(self->record, "ok", "LLL", self->tx, us, self->k);
                if (o == NULL) break;
                Py_DECREF(o);
            }
            self->completed++;
            continue;
        }
        if (r == RP_BAD || r == RP_NOMEM) {
            bad = r == RP_BAD ? m : "out of memory for a reply";
            break;
        }
        /* an error reply's message or the reason of the loss, kept before anything else is read */
        mlen = keep(message, m, r == RP_ERR ? mlen : -1);
        outcome = r == RP_ERR ? B_ERROR : B_LOST;
        if (r == RP_ERR && self->k > 0 && self->pklen[0] == (Py_ssize_t)sizeof(BEGIN_PACKET) - 1 &&
            memcmp(self->pk[0], BEGIN_PACKET, sizeof(BEGIN_PACKET) - 1) == 0) {
            /* inside a transaction: rolled back before anything else, as _Control does */
            int rcode;
            Py_ssize_t rlen;
            const char *rm = NULL;
            int rr = send_all(fd, ROLLBACK_PACKET, sizeof(ROLLBACK_PACKET) - 1) < 0
                         ? (rm = strerror(errno), RP_LOST) : read_reply(self, fd, &rcode, &rm, &rlen);
            if (rr == RP_ERR) outcome = B_DOUBT; /* the session is in doubt: the first error is reported */
            else if (rr == RP_BAD || rr == RP_NOMEM) bad = rr == RP_BAD ? rm : "out of memory for a reply";
            else if (rr == RP_LOST) { /* as _Control: only the loss is reported */
                mlen = keep(message, rm, -1);
                outcome = B_LOST;
            }
        }
        break;
    }
    GIL_TAKE();
    self->running = 0;
    if (mt != NULL) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        int rc = mt_store(mt, rng);
        PyMem_RawFree(mt);
        if (rc < 0) {
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
            return NULL;
        }
        PyErr_Restore(et, ev, tb);
    }
    if (bad != NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(strncmp(bad, "out of memory", 13) == 0 ? PyExc_MemoryError : PyExc_ValueError, bad);
        return NULL;
    }
    if (outcome < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "Blocking.run ended without an outcome");
        return NULL;
    }
    PyObject *text = PyUnicode_DecodeUTF8(message, mlen, "replace");
    if (text != NULL && outcome == B_LOST) {
        code = 2013;
        Py_SETREF(text, PyUnicode_FromFormat("Lost connection to server during query (%U)", text));
    }
    return text == NULL ? NULL : Py_BuildValue("(iiN)", outcome, code, text);
}

static PyObject *Blocking_get_buffer_size(Blocking *self, void *closure) {
    return PyLong_FromSsize_t(self->cap);
}

static PyMethodDef Blocking_methods[] = {
    {"run", (PyCFunction)Blocking_run, METH_VARARGS,
     "run(fd, retry) -> (outcome, code, message): transactions until an error, a lost connection or stop"},
    {NULL}};

static PyMemberDef Blocking_members[] = {
    {"stop", T_BOOL, offsetof(Blocking, stop), 0, "finish after the transaction in flight"},
    {"tx", T_LONGLONG, offsetof(Blocking, tx), 0, NULL},
    {"attempt", T_LONGLONG, offsetof(Blocking, attempt), 0, NULL},
    {"k", T_LONGLONG, offsetof(Blocking, k), READONLY, NULL},
    {"completed", T_LONGLONG, offsetof(Blocking, completed), READONLY, "transactions completed"},
    {NULL}};

static PyGetSetDef Blocking_getset[] = {
    {"buffer_size", (getter)Blocking_get_buffer_size, NULL, "bytes the receive buffer holds", NULL},
    {NULL}};

static PyTypeObject BlockingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl._rawcore.Blocking",
    .tp_doc = "Blocking(program, pick, record, deprecate_eof): one user's transactions on a thread of its own.",
    .tp_basicsize = sizeof(Blocking),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Blocking_init,
    .tp_dealloc = (destructor)Blocking_dealloc,
    .tp_traverse = (traverseproc)Blocking_traverse,
    .tp_clear = (inquiry)Blocking_clear,
    .tp_methods = Blocking_methods,
    .tp_members = Blocking_members,
    .tp_getset = Blocking_getset,
};

/* ---------------------------------------------------------------------------------------------- */

/* _draws(rng, n): n values of rng.random() drawn from a copy of its Mersenne Twister, the way
 * Blocking draws them, and rng left where the copy ended. The tests hold it to random.Random. */
static PyObject *module_draws(PyObject *mod, PyObject *args) {
    PyObject *rng;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On", &rng, &n)) return NULL;
    MT mt;
    if (mt_load(&mt, rng) < 0) return NULL;
    PyObject *out = PyList_New(n > 0 ? n : 0);
    for (Py_ssize_t j = 0; out != NULL && j < n; j++) {
        PyObject *v = PyFloat_FromDouble(mt_random(&mt));
        if (v == NULL) Py_CLEAR(out);
        else PyList_SET_ITEM(out, j, v);
    }
    if (mt_store(&mt, rng) < 0) Py_CLEAR(out);
    return out;
}

static PyMethodDef module_methods[] = {
    {"_draws", module_draws, METH_VARARGS, "_draws(rng, n): n rng.random() values drawn in C"},
    {NULL}};

static struct PyModuleDef rawcore_module = {
    PyModuleDef_HEAD_INIT, "bench_dsl._rawcore",
    "The raw executor's hot path in C (see bench_dsl/rawexec.py for its pure-Python twin).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__rawcore(void) {
    PyTypeObject *types[] = {&CountsType, &MixType, &PointSelectType, &OltpType, &CoreType, &BlockingType};
    const char *names[] = {"Counts", "Mix", "PointSelect", "Oltp", "Core", "Blocking"};
    big_pow10(&C_BELOW, 110);
    big_pow10(&PAD_BELOW, 55);
    for (int i = 0; i < 6; i++)
        if (PyType_Ready(types[i]) < 0) return NULL;
    PyObject *m = PyModule_Create(&rawcore_module);
    if (m == NULL) return NULL;
    for (int i = 0; i < 6; i++) {
        if (PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
