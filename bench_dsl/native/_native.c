/* The hot path of fixed-statement workloads (sysbench's tests, custom), in C over libmariadb's
 * prepared-statement API, as sysbench's drv_mysql.c runs its threads: each virtual user is a thread
 * of its own that connects with libmariadb (TLS, authentication plugins and compression are the
 * library's), prepares its statements, then loops over transactions with the GIL released, drawing
 * every value in C with a generator seeded per user. Python is called only for what is rare: an
 * error, a lost connection, the end of the run (bench_dsl/native/executor.py applies the policy).
 *
 * Why C and a thread per user: on a machine where the client shares the cores with the server, the
 * client's CPU per transaction is throughput taken from the server, and a thread blocked in recv()
 * on its own socket is woken where its server thread answered (one event loop reading many sockets
 * woke the server's threads across cores: 0.43 rescheduling interrupts per transaction against
 * sysbench's 0.1, measured on 2 cores).
 *
 * Types:
 *   Counts   latencies counted by their microsecond value, and statements, per transaction type
 *            (threads append records to a queue; take() reads what they published, the GIL held,
 *            and never waits for them); and the quiet spans between completions (a stalled
 *            server: see quiet()).
 *   Program  a workload's transactions as data (bench_dsl/language/statements.py, flattened by executor.py):
 *            statements, the values drawn for them, and the weights of the types. Shared by the
 *            users of a process (so are its sequences).
 *   Schedule the arrivals of an open-loop (`rate`) run: due times at a target rate, shared by the
 *            users of a process; each transaction waits for one, and its latency runs from its due
 *            time (what was late because the client or the server was, is counted, not omitted).
 *   User     one virtual user: its connection, prepared statements, generator and loop.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <mysql.h>
#include <errmsg.h>

#define MESSAGE_MAX 512

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---------------------------------------------------------------------------------------------- */
/* Counts                                                                                          */
/*                                                                                                  */
/* The users' threads (no GIL) are writers; take() is the one reader (the GIL held). A report must  */
/* not wait for the users: with 1,500 user threads on 2 cores, a user preempted while holding a     */
/* lock the report needs holds the report until the scheduler runs it again. So writers are         */
/* serialized among themselves only (`w`, which the reader never takes), and everything a take      */
/* needs reaches it through a queue of records the writers append and publish with a release store; */
/* the reader reads what is published (acquire), and a record still being written at a take is     */
/* counted at the next one, as a completion that raced the take always was. The GIL path (ok(), the */
/* Python users) is a writer like the others.                                                      */

typedef struct { long long start, end; } Span;

/* Quiet spans: the gaps between two completions of the process's users at least QUIET_MIN_NS long
 * (what a stalled server leaves), at most QUIET_MAX of them between two takes (the longest kept).
 * The reader finds them from the completions' end times in the writers' order: exactly what the
 * writers would find, at no cost to them.
 *
 * Idle spans: those in which none of the process's users was inside a transaction (each waited for
 * an arrival, or had not started): a gap is a stall only where some user waited on the server, so
 * the coordinator takes them out of the gaps (bench_dsl/measure/stalls.py). A user enters when it
 * starts its first transaction and leaves only when it goes to sleep for an arrival or stops: a
 * closed loop enters once per run() and pays nothing per transaction; an open loop pays where its
 * user sleeps anyway. The writers count who is inside and record only the changes to and from none:
 * the reader rebuilds the spans, and whether none is inside at the take, from what is published,
 * never from two fields read apart. */
#define QUIET_MIN_NS 50000000LL
#define QUIET_MAX 64

/* a record: a completion (tx >= 0: its type, statements, a = microseconds, b = its end in ns), or
 * a change of who is inside (a = when) */
enum { REC_IDLE_BEGIN = -1, REC_IDLE_END = -2 };
typedef struct {
    int32_t tx, queries;
    int64_t a, b;
} Rec;

/* 48 KB a chunk: at 50,000 transactions a second, some 25 allocations a second */
#define CHUNK_RECS 2048

/* Writers write only into the tail chunk (under `w`) and publish `filled` (release); a chunk is
 * full for good once `next` is set, so the reader may free it when it has read all of it. */
typedef struct Chunk {
    struct Chunk *next;
    size_t filled;
    Rec r[CHUNK_RECS];
} Chunk;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    PyObject *lat;        /* list of n dicts: microseconds -> transactions (the reader's) */
    long long *queries;   /* statements per transaction type (the reader's) */
    int ready;            /* w is initialised, head and tail allocated */
    /* the writers', under w */
    pthread_mutex_t w;
    Chunk *tail;
    int inflight;         /* users inside a transaction (entered, not left) */
    /* the reader's, under the GIL */
    Chunk *head;
    size_t consumed;      /* records of head already read */
    int draining;
    long long last_ns;    /* the latest completion read (0: none yet); never reset */
    Span quiet[QUIET_MAX];
    int nquiet;
    int idle_now;         /* none was inside, as of the records read */
    long long idle_from;  /* since when (0: since ever) */
    Span idle[QUIET_MAX];
    int nidle;
    Span taken[QUIET_MAX];  /* what the last take() took: quiet() returns it */
    int ntaken;
    long long taken_last_ns, taken_at_ns;
    Span taken_idle[QUIET_MAX];
    int ntaken_idle;
    long long taken_idle_from;  /* at the last take: idle since then, or -1 (a user was inside) */
    /* the test-only held writer (Counts._hold_writer) */
    pthread_t holder;
    int holding;
    uint32_t release;
    Rec *held;
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

static Chunk *chunk_new(void) {
    Chunk *c = PyMem_RawMalloc(sizeof(Chunk));
    if (c != NULL) {
        c->next = NULL;
        c->filled = 0;
    }
    return c;
}

static int counts_drain(Counts *self);

static int Counts_init(Counts *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"n", NULL};
    Py_ssize_t n;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n", kwlist, &n)) return -1;
    if (n < 1) { PyErr_SetString(PyExc_ValueError, "at least one transaction type"); return -1; }
    if (!self->ready) {
        Chunk *c = chunk_new();
        if (c == NULL) { PyErr_NoMemory(); return -1; }
        if (pthread_mutex_init(&self->w, NULL) != 0) {
            PyMem_RawFree(c);
            PyErr_SetString(PyExc_OSError, "pthread_mutex_init");
            return -1;
        }
        self->head = self->tail = c;
        self->idle_now = 1;
        self->ready = 1;
    } else if (counts_drain(self) < 0) { /* what was recorded before, into the counts dropped below */
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

/* lat[i][us] += 1; queries[i] += q. The reader's. 0, or -1 with an exception set. */
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

/* [start, end) into spans (n of them), if QUIET_MIN_NS or longer; when full, the shortest gives way
 * to a longer one. The reader's. */
static void spans_keep(Span *spans, int *n, long long start, long long end) {
    if (end - start < QUIET_MIN_NS) return;
    int k = *n;
    if (k == QUIET_MAX) {
        int shortest = 0;
        for (int j = 1; j < QUIET_MAX; j++)
            if (spans[j].end - spans[j].start < spans[shortest].end - spans[shortest].start) shortest = j;
        if (spans[shortest].end - spans[shortest].start >= end - start) return;
        k = shortest;
    } else {
        (*n)++;
    }
    spans[k].start = start;
    spans[k].end = end;
}

/* The slot of the next record, in the tail chunk (a new one linked when it is full); NULL when out
 * of memory. Under w; the record counts once rec_publish() has run. */
static Rec *rec_slot(Counts *self) {
    Chunk *t = self->tail;
    size_t k = __atomic_load_n(&t->filled, __ATOMIC_RELAXED); /* only writers store it, under w */
    if (k == CHUNK_RECS) {
        Chunk *c = chunk_new();
        if (c == NULL) return NULL;
        /* the last the writers touch of t: the reader may free it from then on */
        __atomic_store_n(&t->next, c, __ATOMIC_RELEASE);
        self->tail = t = c;
        k = 0;
    }
    return &t->r[k];
}

static void rec_publish(Counts *self) {
    Chunk *t = self->tail;
    __atomic_store_n(&t->filled, __atomic_load_n(&t->filled, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}

/* One record, under w. 0, or -1 when out of memory (nothing set: no GIL needed). */
static int counts_record(Counts *self, int32_t tx, int32_t queries, int64_t a, int64_t b) {
    pthread_mutex_lock(&self->w);
    Rec *r = rec_slot(self);
    if (r != NULL) {
        r->tx = tx;
        r->queries = queries;
        r->a = a;
        r->b = b;
        rec_publish(self);
    }
    pthread_mutex_unlock(&self->w);
    return r != NULL ? 0 : -1;
}

/* A user starts waiting on the server at `t` (enter) or stops (leave): a record only when none was
 * inside before, or none is after. Out of memory, the change is not recorded: the idle spans are
 * then wrong until the next such change, and the process is about to fail anyway. */
static void counts_enter(Counts *self, long long t) {
    pthread_mutex_lock(&self->w);
    if (self->inflight++ == 0) {
        Rec *r = rec_slot(self);
        if (r != NULL) {
            r->tx = REC_IDLE_END;
            r->a = t;
            rec_publish(self);
        }
    }
    pthread_mutex_unlock(&self->w);
}

static void counts_leave(Counts *self, long long t) {
    pthread_mutex_lock(&self->w);
    if (self->inflight > 0 && --self->inflight == 0) {
        Rec *r = rec_slot(self);
        if (r != NULL) {
            r->tx = REC_IDLE_BEGIN;
            r->a = t;
            rec_publish(self);
        }
    }
    pthread_mutex_unlock(&self->w);
}

/* A completed transaction (type i, us microseconds, q statements, completed at `end` ns), from a
 * thread without the GIL: counted by the next take. 0, or -1 when out of memory (nothing set). */
static int counts_add_nogil(Counts *self, long long i, long long us, long long q, long long end) {
    return counts_record(self, (int32_t)i, (int32_t)q, us, end);
}

/* One record read: a completion at `end` makes the gap since the one before it, if long enough, a
 * quiet span (a completion older than the latest, its thread having taken w late, only counts). */
static int counts_read(Counts *self, const Rec *r) {
    if (r->tx == REC_IDLE_END) {
        if (self->idle_now) spans_keep(self->idle, &self->nidle, self->idle_from, r->a);
        self->idle_now = 0;
        return 0;
    }
    if (r->tx == REC_IDLE_BEGIN) {
        self->idle_now = 1;
        self->idle_from = r->a;
        return 0;
    }
    long long last = self->last_ns;
    if (r->b > last) {
        self->last_ns = r->b;
        if (last != 0) spans_keep(self->quiet, &self->nquiet, last, r->b);
    }
    return counts_add(self, r->tx, r->a, r->queries);
}

/* Everything published so far, read, and the chunks read to their end freed. Never waits for a
 * writer. The GIL held; 0, or -1 with an exception set (the records read up to the failing one
 * included are not read again). */
static int counts_drain(Counts *self) {
    if (!self->ready || self->draining) return 0; /* a take within a take (a finalizer): the outer reads */
    self->draining = 1;
    int rc = 0;
    for (;;) {
        Chunk *c = self->head;
        size_t filled = __atomic_load_n(&c->filled, __ATOMIC_ACQUIRE);
        while (self->consumed < filled && rc == 0) rc = counts_read(self, &c->r[self->consumed++]);
        if (rc < 0 || filled < CHUNK_RECS) break;
        Chunk *next = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
        if (next == NULL) break; /* still the writers' tail */
        self->head = next;
        self->consumed = 0;
        PyMem_RawFree(c);
    }
    self->draining = 0;
    return rc;
}

/* read what was published, and what take() and quiet() return set aside */
static int counts_fold(Counts *self) {
    int rc = counts_drain(self);
    /* after the reads: every completion read ended before this */
    self->taken_at_ns = now_ns();
    memcpy(self->taken, self->quiet, (size_t)self->nquiet * sizeof(Span));
    self->ntaken = self->nquiet;
    self->nquiet = 0;
    self->taken_last_ns = self->last_ns;
    memcpy(self->taken_idle, self->idle, (size_t)self->nidle * sizeof(Span));
    self->ntaken_idle = self->nidle;
    self->nidle = 0;
    self->taken_idle_from = self->idle_now ? self->idle_from : -1;
    return rc;
}

static PyObject *Counts_ok(Counts *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "ok(i, micros, queries)"); return NULL; }
    long long i = PyLong_AsLongLong(args[0]);
    long long us = PyLong_AsLongLong(args[1]);
    long long q = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (!self->ready || self->lat == NULL) { PyErr_SetString(PyExc_ValueError, "Counts not initialised"); return NULL; }
    if (i < 0 || i >= self->n) { PyErr_SetString(PyExc_IndexError, "transaction type out of range"); return NULL; }
    if (counts_record(self, (int32_t)i, (int32_t)q, us, now_ns()) < 0) return PyErr_NoMemory();
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
    if (self->ready) counts_enter(self, t);
    Py_RETURN_NONE;
}

static PyObject *Counts_leave(Counts *self, PyObject *arg) {
    long long t = PyLong_AsLongLong(arg);
    if (t == -1 && PyErr_Occurred()) return NULL;
    if (self->ready) counts_leave(self, t);
    Py_RETURN_NONE;
}

static PyObject *Counts_take(Counts *self, PyObject *unused) {
    if (!self->ready || self->lat == NULL) { PyErr_SetString(PyExc_ValueError, "Counts not initialised"); return NULL; }
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

/* The held writer's two halves (Counts._hold_writer): inside w with its completion written, then
 * published and out. */
static void counts_hold_begin(Counts *c, long long tx, long long us, long long q) {
    pthread_mutex_lock(&c->w);
    c->held = rec_slot(c);
    if (c->held != NULL) *c->held = (Rec){(int32_t)tx, (int32_t)q, us, now_ns()};
}

static void counts_hold_end(Counts *c) {
    if (c->held != NULL) rec_publish(c);
    pthread_mutex_unlock(&c->w);
}

/* ---------------------------------------------------------------------------------------------- */
/* Counts' test-only entry points (tests/unit/test_native_counts.py): a writer held inside its      */
/* critical section, and many writers at once. Nothing in a run calls them.                         */

typedef struct {
    Counts *counts;
    long long tx, us, queries;
    uint32_t held;      /* set by the writer once it is inside */
} Hold;

static void word_wait(uint32_t *word) {
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == 0)
        syscall(SYS_futex, word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0);
}

static void word_set(uint32_t *word) {
    __atomic_store_n(word, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
}

static void *hold_main(void *arg) {
    Hold *h = arg;
    Counts *c = h->counts;
    long long tx = h->tx, us = h->us, q = h->queries;
    counts_hold_begin(c, tx, us, q);
    word_set(&h->held); /* h is the caller's, gone once it saw this */
    word_wait(&c->release);
    counts_hold_end(c);
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
    word_wait(&h.held);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* _release_writer(): the held writer publishes its completion and leaves; returns once it has */
static PyObject *Counts_release_writer(Counts *self, PyObject *unused) {
    if (!self->holding) Py_RETURN_NONE;
    Py_BEGIN_ALLOW_THREADS
    word_set(&self->release);
    pthread_join(self->holder, NULL);
    Py_END_ALLOW_THREADS
    self->holding = 0;
    Py_RETURN_NONE;
}

/* A test's writer threads (Counts._hammer, Schedule._hammer): thread k of them runs `main` on its
 * own Hammer, `first` k, over `each` items, and sets `failed` when out of memory. */
typedef struct {
    void *target;
    long long first, each;
    int failed;
} Hammer;

/* `threads` threads without the GIL, at once, each its Hammer; returns when all have */
static PyObject *hammer_run(void *(*main)(void *), void *target, int threads, long long each) {
    Hammer *hs = PyMem_Calloc((size_t)threads, sizeof(Hammer));
    pthread_t *ids = PyMem_Calloc((size_t)threads, sizeof(pthread_t));
    if (hs == NULL || ids == NULL) { PyMem_Free(hs); PyMem_Free(ids); return PyErr_NoMemory(); }
    int started = 0, failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; started < threads; started++) {
        hs[started] = (Hammer){target, started, each, 0};
        if (pthread_create(&ids[started], NULL, main, &hs[started]) != 0) break;
    }
    for (int k = 0; k < started; k++) {
        pthread_join(ids[k], NULL);
        failed |= hs[k].failed;
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(hs);
    PyMem_Free(ids);
    if (started < threads) { PyErr_SetString(PyExc_OSError, "pthread_create"); return NULL; }
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* completion j of writer w: type (w + j) % n, (j % 1000) us, 1 + j % 3 statements */
static void *hammer_main(void *arg) {
    Hammer *h = arg;
    Counts *c = h->target;
    counts_enter(c, now_ns());
    for (long long j = 0; j < h->each && !h->failed; j++)
        if (counts_add_nogil(c, (h->first + j) % c->n, j % 1000, 1 + j % 3, now_ns()) < 0) h->failed = 1;
    counts_leave(c, now_ns());
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
    return hammer_run(hammer_main, self, threads, each);
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

static PyTypeObject CountsType = {
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


/* ---------------------------------------------------------------------------------------------- */
/* The generator: xoshiro256** (Blackman and Vigna), seeded through splitmix64. A user's values are */
/* reproducible from the run's seed and the user's number, whatever else runs.                     */

typedef struct { uint64_t s[4]; } Rng;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void rng_seed(Rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_next(Rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* uniform in [0, 1), 53 bits */
static inline double rng_double(Rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* uniform in [0, n), without bias (Lemire's multiply-and-reject); n > 0 */
static inline uint64_t rng_below(Rng *r, uint64_t n) {
    __uint128_t m = (__uint128_t)rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t floor = -n % n;
        while (low < floor) {
            m = (__uint128_t)rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* ---------------------------------------------------------------------------------------------- */
/* Draws: what a value of a statement is drawn from. The distributions of sysbench 1.0 (sb_rand.c): */
/* special, gaussian, pareto, as it computes them; zipf by rejection-inversion (Hörmann and         */
/* Derflinger 1996, as sysbench 1.1's zipfian and Apache Commons RNG); the language's own nurand,  */
/* sequence, choice, randstr; sysbench's c and pad strings (groups of 11 digits joined by dashes). */

enum { D_CONST, D_UNIFORM, D_UNIFORM_REAL, D_SPECIAL, D_GAUSSIAN, D_PARETO, D_ZIPF, D_NURAND, D_SEQUENCE,
       D_CHOICE, D_RANDSTR, D_DIGITS };
static const char *DRAW_NAMES[] = {"const", "uniform", "uniform_real", "special", "gaussian", "pareto", "zipf",
                                   "nurand", "sequence", "choice", "randstr", "digits", NULL};

/* 0: nothing drawn yet (sent as NULL) */
typedef enum { V_UNSET = 0, V_NULL, V_INT, V_REAL, V_TEXT } VType;

typedef struct {
    VType t;
    long long i;
    double d;
    char *s;     /* V_TEXT: owned copy */
    size_t len;
} Const;

typedef struct {
    int kind;
    long long lo, hi;        /* integer bounds; nurand: x, y; randstr: lengths; digits: groups */
    double a, b;             /* uniform_real bounds; special: range multiplier, pct; pareto: power; zipf: exponent */
    double c, d, e;          /* special: pct/2; zipf: s, H(x1), H(n + 0.5) */
    int iters;
    long long na, nc;        /* nurand's A and C */
    Const *choices;          /* const: one; choice: nchoices */
    Py_ssize_t nchoices;
    VType type;              /* what it gives (choice: V_NULL, each value its own) */
} Draw;

/* a drawn value, as a statement's parameter reads it; text is in buf (owned, grown as needed) */
typedef struct {
    VType t;
    long long i;
    double d;
    char *buf;
    size_t cap, len;
} Slot;

static double zipf_h_integral(double x, double e);
static double zipf_h(double x, double e);
static double zipf_h_integral_inverse(double x, double e);

static double helper1(double x) {
    return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}
static double helper2(double x) {
    return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}
static double zipf_h_integral(double x, double e) {
    double log_x = log(x);
    return helper2((1 - e) * log_x) * log_x;
}
static double zipf_h(double x, double e) { return exp(-e * log(x)); }
static double zipf_h_integral_inverse(double x, double e) {
    double t = x * (1 - e);
    if (t < -1) t = -1;
    return exp(helper1(t) * x);
}

static const char ALNUM[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/* room for n bytes of text in a slot; 0, or -1 when out of memory */
static int slot_room(Slot *s, size_t n) {
    if (s->cap >= n && s->buf != NULL) return 0;
    size_t cap = n < 64 ? 64 : n;
    char *b = PyMem_RawRealloc(s->buf, cap);
    if (b == NULL) return -1;
    s->buf = b;
    s->cap = cap;
    return 0;
}

static int put_const(Slot *s, const Const *c) {
    s->t = c->t;
    s->i = c->i;
    s->d = c->d;
    if (c->t == V_TEXT) {
        if (slot_room(s, c->len) < 0) return -1;
        memcpy(s->buf, c->s, c->len);
        s->len = c->len;
    }
    return 0;
}

/* one value of draw g into s (no GIL: nothing Python); 0, or -1 when out of memory */
static int draw_value(const Draw *g, Rng *r, long long *sequence, Slot *s) {
    switch (g->kind) {
    case D_CONST:
        return put_const(s, &g->choices[0]);
    case D_UNIFORM:
        s->t = V_INT;
        s->i = g->lo + (long long)rng_below(r, (uint64_t)(g->hi - g->lo) + 1);
        return 0;
    case D_UNIFORM_REAL:
        s->t = V_REAL;
        s->d = g->a + (g->b - g->a) * rng_double(r);
        return 0;
    case D_SPECIAL: { /* sb_rand_special */
        double t = (double)(g->hi - g->lo), rnd = rng_double(r);
        s->t = V_INT;
        if (rnd * (t * g->a) < t) {
            double sum = 0.0;
            for (int k = 0; k < g->iters; k++) sum += rng_double(r);
            s->i = g->lo + (long long)(sum * t / g->iters);
        } else {
            double d = t * g->b;
            s->i = g->lo + (long long)(rnd * (d + 1) + t / 2 - t * g->c);
        }
        return 0;
    }
    case D_GAUSSIAN: { /* sb_rand_gaussian */
        double t = (double)(g->hi - g->lo + 1), sum = 0.0;
        for (int k = 0; k < g->iters; k++) sum += rng_double(r) * t;
        s->t = V_INT;
        s->i = g->lo + (long long)(sum / g->iters);
        return 0;
    }
    case D_PARETO: /* sb_rand_pareto */
        s->t = V_INT;
        s->i = g->lo + (long long)((double)(g->hi - g->lo + 1) * pow(rng_double(r), g->a));
        return 0;
    case D_ZIPF: {
        long long n = g->hi - g->lo + 1;
        double e = g->a;
        for (;;) {
            double u = g->e + rng_double(r) * (g->d - g->e);
            double x = zipf_h_integral_inverse(u, e);
            long long k = (long long)(x + 0.5);
            if (k < 1) k = 1;
            else if (k > n) k = n;
            if (k - x <= g->c || u >= zipf_h_integral(k + 0.5, e) - zipf_h((double)k, e)) {
                s->t = V_INT;
                s->i = g->lo + k - 1;
                return 0;
            }
        }
    }
    case D_NURAND: { /* TPC-C clause 2.1.6 */
        long long a = (long long)rng_below(r, (uint64_t)g->na + 1);
        long long b = g->lo + (long long)rng_below(r, (uint64_t)(g->hi - g->lo) + 1);
        s->t = V_INT;
        s->i = (((a | b) + g->nc) % (g->hi - g->lo + 1)) + g->lo;
        return 0;
    }
    case D_SEQUENCE:
        s->t = V_INT;
        s->i = __atomic_fetch_add(sequence, 1, __ATOMIC_RELAXED);
        return 0;
    case D_CHOICE:
        return put_const(s, &g->choices[rng_below(r, (uint64_t)g->nchoices)]);
    case D_RANDSTR: {
        size_t n = (size_t)(g->lo + (long long)rng_below(r, (uint64_t)(g->hi - g->lo) + 1));
        if (slot_room(s, n) < 0) return -1;
        for (size_t k = 0; k < n; k++) s->buf[k] = ALNUM[rng_below(r, sizeof(ALNUM) - 1)];
        s->t = V_TEXT;
        s->len = n;
        return 0;
    }
    case D_DIGITS: { /* sb_rand_str("###########-###########...") */
        size_t n = (size_t)(g->lo * 12 - 1);
        if (slot_room(s, n) < 0) return -1;
        for (size_t k = 0; k < n; k++) s->buf[k] = (k % 12 == 11) ? '-' : (char)('0' + rng_below(r, 10));
        s->t = V_TEXT;
        s->len = n;
        return 0;
    }
    }
    return 0;
}

/* a Python value as a constant; 0, or -1 with an exception set */
static int const_from(PyObject *v, Const *c) {
    memset(c, 0, sizeof(*c));
    if (v == Py_None) { c->t = V_NULL; return 0; }
    if (PyBool_Check(v) || PyLong_Check(v)) {
        c->t = V_INT;
        c->i = PyLong_AsLongLong(v);
        return c->i == -1 && PyErr_Occurred() ? -1 : 0;
    }
    if (PyFloat_Check(v)) { c->t = V_REAL; c->d = PyFloat_AS_DOUBLE(v); return 0; }
    if (PyUnicode_Check(v)) {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(v, &n);
        if (u == NULL) return -1;
        c->s = PyMem_RawMalloc((size_t)n + 1);
        if (c->s == NULL) { PyErr_NoMemory(); return -1; }
        memcpy(c->s, u, (size_t)n + 1);
        c->len = (size_t)n;
        c->t = V_TEXT;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "a constant is None, an int, a float or a str, not %.100s", Py_TYPE(v)->tp_name);
    return -1;
}

static long long arg_ll(PyObject *spec, Py_ssize_t k) {
    PyObject *o = PyTuple_GET_ITEM(spec, k);
    return PyLong_AsLongLong(o);
}

static double arg_d(PyObject *spec, Py_ssize_t k) {
    return PyFloat_AsDouble(PyTuple_GET_ITEM(spec, k));
}

/* A draw from its description: (name, *arguments). 0, or -1 with an exception set. */
static int draw_from(PyObject *spec, Draw *g) {
    memset(g, 0, sizeof(*g));
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(spec, 0))) {
        PyErr_SetString(PyExc_TypeError, "a draw is (name, *arguments)");
        return -1;
    }
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(spec, 0));
    if (name == NULL) return -1;
    int kind = -1;
    for (int k = 0; DRAW_NAMES[k] != NULL; k++)
        if (strcmp(name, DRAW_NAMES[k]) == 0) kind = k;
    static const int arity[] = {1, 2, 2, 5, 3, 3, 3, 4, 1, -1, 2, 1};
    Py_ssize_t nargs = PyTuple_GET_SIZE(spec) - 1;
    if (kind < 0) { PyErr_Format(PyExc_ValueError, "no draw named %s", name); return -1; }
    if ((arity[kind] >= 0 && nargs != arity[kind]) || (kind == D_CHOICE && nargs < 1)) {
        PyErr_Format(PyExc_ValueError, "%s takes %d arguments, not %zd", name, arity[kind], nargs);
        return -1;
    }
    g->kind = kind;
    g->type = V_INT;
    switch (kind) {
    case D_CONST:
    case D_CHOICE:
        g->choices = PyMem_RawCalloc((size_t)nargs, sizeof(Const));
        if (g->choices == NULL) { PyErr_NoMemory(); return -1; }
        g->nchoices = nargs;
        for (Py_ssize_t k = 0; k < nargs; k++)
            if (const_from(PyTuple_GET_ITEM(spec, k + 1), &g->choices[k]) < 0) return -1;
        g->type = V_NULL;
        break;
    case D_UNIFORM_REAL:
        g->a = arg_d(spec, 1);
        g->b = arg_d(spec, 2);
        g->type = V_REAL;
        break;
    case D_SEQUENCE:
        g->lo = arg_ll(spec, 1);
        break;
    case D_DIGITS:
        g->lo = arg_ll(spec, 1);
        break;
    case D_NURAND:
        g->na = arg_ll(spec, 1);
        g->lo = arg_ll(spec, 2);
        g->hi = arg_ll(spec, 3);
        g->nc = arg_ll(spec, 4);
        break;
    default:
        g->lo = arg_ll(spec, 1);
        g->hi = arg_ll(spec, 2);
    }
    if (PyErr_Occurred()) return -1;
    switch (kind) {
    case D_SPECIAL: {
        double pct = arg_d(spec, 3), res = arg_d(spec, 4);
        g->iters = (int)arg_ll(spec, 5);
        if (PyErr_Occurred()) return -1;
        if (res >= 100 || g->iters < 1) { PyErr_SetString(PyExc_ValueError, "special: res < 100, iters >= 1"); return -1; }
        g->a = 100.0 / (100.0 - res);
        g->b = pct / 100.0;
        g->c = pct / 200.0;
        break;
    }
    case D_GAUSSIAN:
        g->iters = (int)arg_ll(spec, 3);
        if (g->iters < 1) { PyErr_SetString(PyExc_ValueError, "gaussian: iters >= 1"); return -1; }
        break;
    case D_PARETO: {
        double h = arg_d(spec, 3);
        if (!(h > 0 && h < 1)) { PyErr_SetString(PyExc_ValueError, "pareto: 0 < h < 1"); return -1; }
        g->a = log(h) / log(1.0 - h);
        break;
    }
    case D_ZIPF: {
        double e = arg_d(spec, 3);
        if (!(e > 0)) { PyErr_SetString(PyExc_ValueError, "zipf: the exponent is above 0"); return -1; }
        g->a = e;
        g->c = 2 - zipf_h_integral_inverse(zipf_h_integral(2.5, e) - zipf_h(2, e), e);
        g->d = zipf_h_integral(1.5, e) - 1.0;
        g->e = zipf_h_integral((double)(g->hi - g->lo + 1) + 0.5, e);
        break;
    }
    case D_RANDSTR:
        g->type = V_TEXT;
        if (g->lo < 0) { PyErr_SetString(PyExc_ValueError, "randstr: lengths >= 0"); return -1; }
        break;
    case D_DIGITS:
        g->type = V_TEXT;
        if (g->lo < 1) { PyErr_SetString(PyExc_ValueError, "digits: at least one group"); return -1; }
        break;
    case D_NURAND:
        if (g->na < 0) { PyErr_SetString(PyExc_ValueError, "nurand: A >= 0"); return -1; }
        break;
    }
    if (PyErr_Occurred()) return -1;
    if ((kind == D_UNIFORM || kind == D_SPECIAL || kind == D_GAUSSIAN || kind == D_PARETO || kind == D_ZIPF ||
         kind == D_NURAND || kind == D_RANDSTR) && g->lo > g->hi) {
        PyErr_Format(PyExc_ValueError, "%s: the minimum is larger than the maximum", name);
        return -1;
    }
    return 0;
}

static void draw_free(Draw *g) {
    for (Py_ssize_t k = 0; k < g->nchoices; k++) PyMem_RawFree(g->choices[k].s);
    PyMem_RawFree(g->choices);
    g->choices = NULL;
    g->nchoices = 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Program                                                                                         */

typedef struct {
    int draw;                /* the slot it takes */
    long long plus;          /* added to an integer (sysbench's ranges: lo + range_size - 1) */
} Param;

typedef struct {
    int *stmt;               /* the statement per table */
    Param *params;
    int nparams;
} Exec;

typedef struct {
    int count, tables;
    int *draws;              /* drawn anew for each repetition, in order */
    int ndraws;
    Exec *execs;
    int nexecs;
} Step;

typedef struct {
    int explicit_;           /* BEGIN before, COMMIT after */
    Step *steps;
    int nsteps;
} Tx;

typedef struct {
    PyObject_HEAD
    char **sql;
    unsigned long *sqllen;
    int nsql;
    int *nparams;            /* per statement, as its executions give them (checked when prepared) */
    Draw *draws;
    int ndraws;
    long long *sequences;    /* per draw: the next value of a sequence, shared by the process's users */
    Tx *txs;
    int ntx;
    double *cum;             /* running sum of the weights */
} Program;

static PyTypeObject ProgramType;

static void program_free(Program *p) {
    for (int k = 0; k < p->nsql; k++) PyMem_RawFree(p->sql[k]);
    PyMem_RawFree(p->sql);
    PyMem_RawFree(p->sqllen);
    PyMem_RawFree(p->nparams);
    for (int k = 0; k < p->ndraws; k++) draw_free(&p->draws[k]);
    PyMem_RawFree(p->draws);
    PyMem_RawFree(p->sequences);
    for (int t = 0; t < p->ntx; t++) {
        Tx *tx = &p->txs[t];
        for (int s = 0; s < tx->nsteps; s++) {
            Step *st = &tx->steps[s];
            for (int e = 0; e < st->nexecs; e++) {
                PyMem_RawFree(st->execs[e].stmt);
                PyMem_RawFree(st->execs[e].params);
            }
            PyMem_RawFree(st->execs);
            PyMem_RawFree(st->draws);
        }
        PyMem_RawFree(tx->steps);
    }
    PyMem_RawFree(p->txs);
    PyMem_RawFree(p->cum);
    memset((char *)p + sizeof(PyObject), 0, sizeof(Program) - sizeof(PyObject));
}

#define SEQ_CHECK(o, what) \
    if (!PySequence_Check(o)) { PyErr_SetString(PyExc_TypeError, what " is a sequence"); goto fail; }

static int int_item(PyObject *seq, Py_ssize_t k, long long *out) {
    PyObject *o = PySequence_GetItem(seq, k);
    if (o == NULL) return -1;
    *out = PyLong_AsLongLong(o);
    Py_DECREF(o);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int parse_exec(Program *p, PyObject *o, int tables, Exec *e) {
    /* (statements per table, ((slot, plus), ...)) */
    PyObject *stmts = NULL, *params = NULL;
    if (!PyArg_ParseTuple(o, "OO", &stmts, &params)) return -1;
    Py_ssize_t ns = PySequence_Size(stmts), np = PySequence_Size(params);
    if (ns < 0 || np < 0) return -1;
    if (ns != tables) { PyErr_SetString(PyExc_ValueError, "an execution names one statement per table"); return -1; }
    e->stmt = PyMem_RawCalloc((size_t)ns, sizeof(int));
    e->params = PyMem_RawCalloc((size_t)(np ? np : 1), sizeof(Param));
    if (e->stmt == NULL || e->params == NULL) { PyErr_NoMemory(); return -1; }
    e->nparams = (int)np;
    for (Py_ssize_t k = 0; k < ns; k++) {
        long long v;
        if (int_item(stmts, k, &v) < 0) return -1;
        if (v < 0 || v >= p->nsql) { PyErr_SetString(PyExc_IndexError, "no such statement"); return -1; }
        e->stmt[k] = (int)v;
        if (p->nparams[v] >= 0 && p->nparams[v] != np) {
            PyErr_SetString(PyExc_ValueError, "a statement is given different numbers of values");
            return -1;
        }
        p->nparams[v] = (int)np;
    }
    for (Py_ssize_t k = 0; k < np; k++) {
        PyObject *pair = PySequence_GetItem(params, k);
        if (pair == NULL) return -1;
        long long slot, plus;
        int rc = PyArg_ParseTuple(pair, "LL", &slot, &plus) ? 0 : -1;
        Py_DECREF(pair);
        if (rc < 0) return -1;
        if (slot < 0 || slot >= p->ndraws) { PyErr_SetString(PyExc_IndexError, "no such draw"); return -1; }
        e->params[k].draw = (int)slot;
        e->params[k].plus = plus;
    }
    return 0;
}

/* Program(sql, draws, transactions, weights): sql a list of statements (? placeholders); draws a
 * list of (name, *arguments); a transaction is (explicit, steps), a step (count, tables, draws
 * (indexes, drawn anew each repetition), executions), an execution (statement per table, ((draw,
 * plus), ...)). A step with tables > 1 draws its table uniformly, once for its repetitions. */
static int Program_init(Program *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"sql", "draws", "transactions", "weights", NULL};
    PyObject *sql, *draws, *txs, *weights;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO", kwlist, &sql, &draws, &txs, &weights)) return -1;
    program_free(self);
    SEQ_CHECK(sql, "sql");
    SEQ_CHECK(draws, "draws");
    SEQ_CHECK(txs, "transactions");
    SEQ_CHECK(weights, "weights");
    Py_ssize_t nsql = PySequence_Size(sql), nd = PySequence_Size(draws), nt = PySequence_Size(txs);
    if (nt < 1 || PySequence_Size(weights) != nt) {
        PyErr_SetString(PyExc_ValueError, "one weight per transaction type, and at least one type");
        goto fail;
    }
    self->sql = PyMem_RawCalloc((size_t)nsql + 1, sizeof(char *));
    self->sqllen = PyMem_RawCalloc((size_t)nsql + 1, sizeof(unsigned long));
    self->nparams = PyMem_RawCalloc((size_t)nsql + 1, sizeof(int));
    self->draws = PyMem_RawCalloc((size_t)nd + 1, sizeof(Draw));
    self->sequences = PyMem_RawCalloc((size_t)nd + 1, sizeof(long long));
    self->txs = PyMem_RawCalloc((size_t)nt, sizeof(Tx));
    self->cum = PyMem_RawCalloc((size_t)nt, sizeof(double));
    if (!self->sql || !self->sqllen || !self->nparams || !self->draws || !self->sequences || !self->txs || !self->cum) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t k = 0; k < nsql; k++) {
        PyObject *o = PySequence_GetItem(sql, k);
        if (o == NULL) goto fail;
        Py_ssize_t n;
        const char *u = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &n) : NULL;
        if (u == NULL) {
            Py_DECREF(o);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a statement is a str");
            goto fail;
        }
        self->sql[k] = PyMem_RawMalloc((size_t)n + 1);
        if (self->sql[k] == NULL) { Py_DECREF(o); PyErr_NoMemory(); goto fail; }
        memcpy(self->sql[k], u, (size_t)n + 1);
        self->sqllen[k] = (unsigned long)n;
        self->nparams[k] = -1;
        self->nsql = (int)k + 1;
        Py_DECREF(o);
    }
    for (Py_ssize_t k = 0; k < nd; k++) {
        PyObject *o = PySequence_GetItem(draws, k);
        if (o == NULL) goto fail;
        self->ndraws = (int)k + 1;
        int rc = draw_from(o, &self->draws[k]);
        Py_DECREF(o);
        if (rc < 0) goto fail;
        if (self->draws[k].kind == D_SEQUENCE) self->sequences[k] = self->draws[k].lo;
    }
    double total = 0;
    for (Py_ssize_t t = 0; t < nt; t++) {
        PyObject *o = PySequence_GetItem(txs, t);
        if (o == NULL) goto fail;
        int explicit_;
        PyObject *steps;
        int ok = PyArg_ParseTuple(o, "pO", &explicit_, &steps);
        Py_DECREF(o);
        if (!ok) goto fail;
        Tx *tx = &self->txs[t];
        self->ntx = (int)t + 1;
        tx->explicit_ = explicit_;
        Py_ssize_t ns = PySequence_Size(steps);
        if (ns < 0) goto fail;
        tx->steps = PyMem_RawCalloc((size_t)(ns ? ns : 1), sizeof(Step));
        if (tx->steps == NULL) { PyErr_NoMemory(); goto fail; }
        for (Py_ssize_t s = 0; s < ns; s++) {
            PyObject *so = PySequence_GetItem(steps, s);
            if (so == NULL) goto fail;
            int count, tables;
            PyObject *sdraws, *execs;
            ok = PyArg_ParseTuple(so, "iiOO", &count, &tables, &sdraws, &execs);
            Py_DECREF(so);
            if (!ok) goto fail;
            Step *st = &tx->steps[s];
            tx->nsteps = (int)s + 1;
            if (count < 0 || tables < 1) { PyErr_SetString(PyExc_ValueError, "count >= 0, tables >= 1"); goto fail; }
            st->count = count;
            st->tables = tables;
            Py_ssize_t nsd = PySequence_Size(sdraws), ne = PySequence_Size(execs);
            if (nsd < 0 || ne < 0) goto fail;
            st->draws = PyMem_RawCalloc((size_t)(nsd ? nsd : 1), sizeof(int));
            st->execs = PyMem_RawCalloc((size_t)(ne ? ne : 1), sizeof(Exec));
            if (st->draws == NULL || st->execs == NULL) { PyErr_NoMemory(); goto fail; }
            for (Py_ssize_t k = 0; k < nsd; k++) {
                long long v;
                if (int_item(sdraws, k, &v) < 0) goto fail;
                if (v < 0 || v >= nd) { PyErr_SetString(PyExc_IndexError, "no such draw"); goto fail; }
                st->draws[k] = (int)v;
                st->ndraws = (int)k + 1;
            }
            for (Py_ssize_t k = 0; k < ne; k++) {
                PyObject *eo = PySequence_GetItem(execs, k);
                if (eo == NULL) goto fail;
                st->nexecs = (int)k + 1;
                int rc = parse_exec(self, eo, tables, &st->execs[k]);
                Py_DECREF(eo);
                if (rc < 0) goto fail;
            }
        }
        long long executions = 0;
        for (int k = 0; k < tx->nsteps; k++) executions += (long long)tx->steps[k].count * tx->steps[k].nexecs;
        if (executions == 0 && !tx->explicit_) {
            /* it would spin without a pause, counted as transactions the server never saw */
            PyErr_SetString(PyExc_ValueError, "a transaction executes nothing");
            goto fail;
        }
        PyObject *w = PySequence_GetItem(weights, t);
        if (w == NULL) goto fail;
        double x = PyFloat_AsDouble(w);
        Py_DECREF(w);
        if (x == -1.0 && PyErr_Occurred()) goto fail;
        if (!(x >= 0)) { PyErr_SetString(PyExc_ValueError, "weights are 0 or more"); goto fail; }
        total += x;
        self->cum[t] = total;
    }
    if (!(total > 0)) { PyErr_SetString(PyExc_ValueError, "the weights add up to more than 0"); goto fail; }
    return 0;
fail:
    program_free(self);
    return -1;
}

static void Program_dealloc(Program *self) {
    program_free(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl.native._native.Program",
    .tp_doc = "A workload's transactions as the users' threads run them.",
    .tp_basicsize = sizeof(Program),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Program_init,
    .tp_dealloc = (destructor)Program_dealloc,
};

static int pick_tx(const Program *p, Rng *r) {
    if (p->ntx == 1) return 0;
    double x = rng_double(r) * p->cum[p->ntx - 1];
    for (int t = 0; t < p->ntx; t++)
        if (x < p->cum[t]) return t;
    return p->ntx - 1;
}

/* ---------------------------------------------------------------------------------------------- */
/* Schedule: open-loop arrivals for the users of one process (a `rate` scenario). A timeline of due */
/* times at a target rate, evenly spaced or Poisson, independent of replies; each arrival is served */
/* by an idle user, or, when none is free within the grace, queued (up to `queue`) or dropped.      */
/*                                                                                                  */
/* Nothing runs between two events: the timeline is advanced lazily, under the mutex, whenever a    */
/* user claims or starts an arrival, set() changes the rate, or take() finds the mutex free (held,  */
/* a user holds it, and decides them itself: the take reports the state the mutex's last holder     */
/* published, and never waits). Between two such events the users' states are constant, so          */
/* deciding then what each arrival met is exact.                                                    */
/*                                                                                                  */
/* Each user claims the next arrival of the timeline as it becomes idle, then sleeps until that     */
/* arrival's due time on a timer of its own (a futex wait with an absolute CLOCK_MONOTONIC          */
/* deadline): one wakeup per arrival, its own user's, and no thread wakes another for it. The       */
/* design before this one woke a leader at each due time, which then woke a follower to lead the    */
/* next one (a futex wake, the follower's wakeup, and often a third sleep on the mutex the leader   */
/* still held): 2.7 to 3.1 voluntary context switches and 60 to 100 us of client CPU per            */
/* transaction at 1,000 to 10,000 a second, against 1 and 20 us closed loop (bench/arrivals.py      */
/* --cost, SELECT 1, 2 cores shared with the server).                                               */
/*                                                                                                  */
/* Claims are handed out in timeline order, so every claim a waiting user holds is earlier than     */
/* every arrival not yet claimed: an arrival whose grace runs out unclaimed found every user busy   */
/* or already promised to an earlier arrival, which is what the idle users of the former design     */
/* could take too (a late leader's backlog held up to one arrival per idle user). The users free    */
/* for it are the idle ones holding no claim (there are some only while there is no rate, or for a  */
/* moment after set() took the claims back): an arrival past its grace joins the backlog while it   */
/* holds fewer than queue + free users (each free user can be found by one arrival; the rest is the */
/* queue), and is dropped otherwise.                                                                */
/*                                                                                                  */
/* A claim is not yet an arrival offered: it is counted (offered, started, lag) when its user       */
/* starts it, so that take() counts arrivals as they fall due, not a pool's worth of gaps ahead.    */
/* set() takes back the claims still in the future (the timeline resumes from the earliest of them, */
/* at the new pace) and wakes their users to claim again; a user that leaves holding one hands it to */
/* the user holding the latest claim, and the timeline resumes from that one's.                     */

#define GRACE_NS_DEFAULT 1000000LL
#define WAIT_MAX_NS 3600000000000LL /* a due time further away is waited for an hour at a time */

enum { S_OUT = 0, S_IDLE, S_BUSY };

/* What take() reports, as the last critical section left it: published by each holder of the
 * mutex as it lets go, so that a take never waits for a user holding it (preempted there, with 1,500
 * users on 2 cores, it may not run again for a while). offered, started and dropped count from the
 * start (the reader keeps what it reported); busy_max and queued_max since the take `epoch` (the
 * writers restart them at their first section after a take); nrec: the samples written so far. */
typedef struct {
    long long offered, started, dropped, busy, idle, queued, waiting, busy_max, queued_max, epoch, nrec;
} SchedSnap;

#define SNAP_FIELDS ((int)(sizeof(SchedSnap) / sizeof(long long)))

/* two slots, written in turn: a reader retries only when a writer published twice meanwhile, never
 * for one stopped halfway */
typedef struct {
    unsigned long long seq;   /* odd: being written */
    SchedSnap v;
} SnapSlot;

enum { SAMPLE_LAG = 0, SAMPLE_SERVICE, SAMPLE_WAIT };

/* A user waiting in its schedule (a member of its User, linked into the schedule's list while it waits). */
typedef struct Claim {
    struct Claim *prev, *next;
    double due;               /* ns, CLOCK_MONOTONIC: the arrival it holds, while `held` */
    int held;
    uint32_t word;            /* the futex it sleeps on: changed (under the mutex) to wake it */
} Claim;

typedef struct {
    PyObject_HEAD
    pthread_mutex_t mu;
    int ready;                /* mu is initialised */
    Rng rng;                  /* Poisson gaps */
    double gap;               /* mean gap between arrivals, ns; 0: no arrivals */
    int poisson;
    long long queue;          /* arrivals that may wait for a user beyond the grace */
    long long grace;          /* ns an arrival may wait for a free user before it is queued or dropped */
    double next_due;          /* ns, CLOCK_MONOTONIC: the first arrival neither claimed, queued nor dropped */
    long long *ring;          /* the backlog: due times of arrivals past their grace, oldest first;
                               * negated: one that found no free user (queued, not merely late) */
    Py_ssize_t rcap, rhead, rlen;
    Claim waiting;            /* the list's head: the users in sched_claim() */
    long long idle, claimed;  /* users waiting; those of them holding a claim */
    long long busy, busy_max;
    long long offered, started, dropped, queued_max;   /* from the start; the maxima since max_epoch */
    long long max_epoch;
    Chunk *wtail;             /* the samples (Rec: tx their kind, a microseconds): written under mu */
    long long widx, nrec;     /* in wtail; in all */
    unsigned long long npub;  /* snapshots published */
    SnapSlot snap[2];
    unsigned long long current;  /* the latest published */
    long long takes;          /* the reader's: take() calls so far (writers read it for max_epoch) */
    /* the reader's, under the GIL */
    Chunk *rchunk;
    long long ridx, rtotal;
    SchedSnap told;           /* what the last take saw */
    /* the test-only held user (Schedule._hold_user) */
    pthread_t holder;
    int holding;
    uint32_t release;
} Schedule;

static PyTypeObject ScheduleType;

/* a sample of `kind` (ns) for the next take; under mu. 0, or -1 when out of memory. Read once a
 * snapshot counting it is published: no release store of its own. */
static int samples_push(Schedule *s, int kind, long long ns) {
    if (s->widx == CHUNK_RECS) {
        Chunk *c = chunk_new();
        if (c == NULL) return -1;
        s->wtail->next = c;  /* the last the writers touch of wtail: the reader frees it past this */
        s->wtail = c;
        s->widx = 0;
    }
    Rec *r = &s->wtail->r[s->widx++];
    r->tx = kind;
    r->a = ns > 0 ? ns / 1000 : 0;
    s->nrec++;
    return 0;
}

/* d[us] += 1 (the GIL held); 0, or -1 with an exception set */
static int tally_one(PyObject *d, long long us) {
    PyObject *key = PyLong_FromLongLong(us);
    if (key == NULL) return -1;
    PyObject *old = PyDict_GetItemWithError(d, key); /* borrowed */
    long long n = old != NULL ? PyLong_AsLongLong(old) + 1 : 1;
    PyObject *val = PyErr_Occurred() ? NULL : PyLong_FromLongLong(n);
    int rc = val == NULL || PyDict_SetItem(d, key, val) < 0 ? -1 : 0;
    Py_DECREF(key);
    Py_XDECREF(val);
    return rc;
}

static double sched_gap(Schedule *s) {
    /* -ln(1 - u), u in [0, 1): an exponential gap of mean `gap` */
    return s->poisson ? -log1p(-rng_double(&s->rng)) * s->gap : s->gap;
}

/* idle users that no arrival is promised to */
static long long sched_free(const Schedule *s) {
    return s->idle - s->claimed;
}

/* an arrival into the backlog (at its end; at its front: one older than all of it); 0, or -1 when
 * out of memory (then it is dropped instead) */
static int ring_push(Schedule *s, long long due, int front) {
    if (s->rlen >= sched_free(s)) due = -due; /* beyond the free users' share: it waits for a busy one */
    if (s->rlen == s->rcap) {
        Py_ssize_t cap = s->rcap ? 2 * s->rcap : 64;
        long long *more = PyMem_RawMalloc((size_t)cap * sizeof(long long));
        if (more == NULL) return -1;
        for (Py_ssize_t j = 0; j < s->rlen; j++) more[j] = s->ring[(s->rhead + j) % s->rcap];
        PyMem_RawFree(s->ring);
        s->ring = more;
        s->rcap = cap;
        s->rhead = 0;
    }
    if (front) {
        s->rhead = (s->rhead + s->rcap - 1) % s->rcap;
        s->ring[s->rhead] = due;
    } else {
        s->ring[(s->rhead + s->rlen) % s->rcap] = due;
    }
    s->rlen++;
    return 0;
}

/* the oldest arrival of the backlog: its due time, and whether it waited for a user */
static long long ring_pop(Schedule *s, int *queued) {
    long long due = s->ring[s->rhead];
    s->rhead = (s->rhead + 1) % s->rcap;
    s->rlen--;
    *queued = due < 0;
    return due < 0 ? -due : due;
}

/* the first section after a take restarts the maxima from the state the take saw */
static void sched_epoch(Schedule *s) {
    long long e = __atomic_load_n(&s->takes, __ATOMIC_ACQUIRE);
    if (e == s->max_epoch) return;
    s->max_epoch = e;
    s->busy_max = s->busy;
    s->queued_max = s->rlen - sched_free(s) > 0 ? s->rlen - sched_free(s) : 0;
}

static void sched_lock(Schedule *s) {
    pthread_mutex_lock(&s->mu);
    sched_epoch(s);
}

/* the state as this section leaves it, for take(); under mu */
static void sched_publish(Schedule *s) {
    long long queued = s->rlen - sched_free(s);
    SchedSnap v = {s->offered, s->started, s->dropped, s->busy, s->idle, queued > 0 ? queued : 0, s->rlen,
                   s->busy_max, s->queued_max, s->max_epoch, s->nrec};
    unsigned long long k = ++s->npub;
    SnapSlot *slot = &s->snap[k & 1];
    __atomic_store_n(&slot->seq, 2 * k - 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    const long long *from = (const long long *)&v;
    long long *to = (long long *)&slot->v;
    for (int j = 0; j < SNAP_FIELDS; j++) __atomic_store_n(&to[j], from[j], __ATOMIC_RELAXED);
    __atomic_store_n(&slot->seq, 2 * k, __ATOMIC_RELEASE);
    __atomic_store_n(&s->current, k, __ATOMIC_RELEASE);
}

static void sched_unlock(Schedule *s) {
    sched_publish(s);
    pthread_mutex_unlock(&s->mu);
}

/* The latest published state (the reader's), without waiting: a slot found being rewritten means a
 * newer one is published already. The samples it counts are visible from then on. */
static void sched_snapshot(Schedule *s, SchedSnap *out) {
    for (;;) {
        unsigned long long k = __atomic_load_n(&s->current, __ATOMIC_ACQUIRE);
        SnapSlot *slot = &s->snap[k & 1];
        unsigned long long seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
        if (seq != 2 * k) continue;
        const long long *from = (const long long *)&slot->v;
        long long *to = (long long *)out;
        for (int j = 0; j < SNAP_FIELDS; j++) to[j] = __atomic_load_n(&from[j], __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&slot->seq, __ATOMIC_RELAXED) == seq) return;
    }
}

/* What each unclaimed arrival whose grace ran out by `now` met: a free user or room in the queue
 * (the backlog), or nothing (dropped). Under the mutex. */
static void sched_advance(Schedule *s, long long now) {
    if (s->gap > 0) {
        double late = (double)(now - s->grace);
        long long room = s->queue + sched_free(s);
        while (s->next_due <= late) {
            if (s->rlen < room && ring_push(s, (long long)s->next_due, 0) == 0) {
                s->offered++;
                s->next_due += sched_gap(s);
                continue;
            }
            if (s->poisson) {
                s->offered++;
                s->dropped++;
                s->next_due += sched_gap(s);
                continue;
            }
            /* no room until the next event: every arrival up to `late` is dropped (after a 2 s stall
             * at 50,000 per second, 100,000 of them: counted at once, not walked) */
            long long k = (long long)floor((late - s->next_due) / s->gap) + 1;
            s->offered += k;
            s->dropped += k;
            s->next_due += (double)k * s->gap;
        }
    }
    long long depth = s->rlen - sched_free(s); /* arrivals no free user will take: the queue */
    if (depth > s->queued_max) s->queued_max = depth;
}

static void ts_of(long long ns, struct timespec *ts) {
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
}

/* Sleeps until `*word` is changed from `seen` (and woken), or until `until` (ns, CLOCK_MONOTONIC,
 * absolute: a wakeup late by the scheduler is not made later by a relative wait restarted). */
static void futex_sleep(uint32_t *word, uint32_t seen, long long until) {
    struct timespec ts;
    ts_of(until, &ts);
    syscall(SYS_futex, word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, seen, &ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

/* the waiting user of `c` rechecks its stop flag, its claim and the timeline. Under the mutex (the
 * claim is in the list only while its user waits, so its memory is its user's while this runs). */
static void claim_wake(Claim *c) {
    __atomic_add_fetch(&c->word, 1, __ATOMIC_RELAXED);
    syscall(SYS_futex, &c->word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
}

static void sched_wake_waiting(Schedule *s) {
    for (Claim *c = s->waiting.next; c != &s->waiting; c = c->next) claim_wake(c);
}

/* The claims still in the future, taken back: the timeline resumes from the earliest of them (they
 * are its last arrivals handed out, all after the claims already due), their users claim again once
 * woken. Under the mutex. */
static void sched_take_back(Schedule *s, long long now) {
    for (Claim *c = s->waiting.next; c != &s->waiting; c = c->next) {
        if (c->held && c->due > (double)now) {
            if (c->due < s->next_due) s->next_due = c->due;
            c->held = 0;
            s->claimed--;
        }
    }
}

/* A user leaves (its stop) holding the claim `c`, out of the list already. Under the mutex. When a
 * pool stops, each of its users leaves so: a single wakeup each, not one for every user still waiting. */
static void sched_abandon(Schedule *s, Claim *c, long long now) {
    c->held = 0;
    s->claimed--;
    if (c->due > (double)now) {
        /* the claims are the timeline's arrivals before next_due, and those still in the future are
         * all held by waiting users: the one holding the latest takes this one instead (its deadline
         * only earlier), and the timeline resumes from its own; none later: this one was the last */
        Claim *last = NULL;
        for (Claim *w = s->waiting.next; w != &s->waiting; w = w->next)
            if (w->held && w->due > c->due && (last == NULL || w->due > last->due)) last = w;
        if (last == NULL) {
            s->next_due = c->due;
        } else {
            s->next_due = last->due;
            last->due = c->due;
            claim_wake(last);
        }
    } else {
        /* due, and nobody's now: an arrival that met no free user at its time (the backlog's oldest,
         * taken by the next user to claim; woken for it only if one is free: all hold claims at a rate) */
        s->offered++;
        if (s->rlen >= s->queue + sched_free(s) || ring_push(s, (long long)c->due, 1) < 0) s->dropped++;
        else if (sched_free(s) > 0) sched_wake_waiting(s);
    }
}

/* the user leaves the transaction it was busy with: its service time counted. Under the mutex;
 * 0, or -1 when out of memory. */
static int sched_leave_busy(Schedule *s, int *state, long long *service) {
    int rc = 0;
    if (*state == S_BUSY) {
        s->busy--;
        if (*service >= 0) rc = samples_push(s, SAMPLE_SERVICE, *service);
    }
    *service = -1;
    *state = S_OUT;
    return rc;
}

/* The user's next arrival, claimed and waited for (no GIL). 1 with *due and *send (ns) set; 0 when
 * `stop` was set first; -1 when out of memory. `c`: the user's claim; `state` and `service`: the
 * user's (its previous transaction's service time, counted here, under the mutex this takes anyway).
 * Two short holds of the mutex per arrival, the claim and the start, and one sleep between them.
 * `inside`: whether the user counts in `counts` as inside a transaction; it leaves before it sleeps
 * (a user waiting for an arrival is no sign of a stalled server), and *inside becomes 0. */
static int sched_claim(Schedule *s, Claim *c, const int *stop, int *state, long long *service, long long *due,
                       long long *send, Counts *counts, int *inside) {
    sched_lock(s);
    long long now = now_ns();
    sched_advance(s, now); /* with the free users there were until now */
    int rc = sched_leave_busy(s, state, service);
    s->idle++;
    c->held = 0;
    c->next = &s->waiting;
    c->prev = s->waiting.prev;
    s->waiting.prev->next = c;
    s->waiting.prev = c;
    int got = 0, queued = 0;
    while (rc == 0 && !__atomic_load_n(stop, __ATOMIC_RELAXED)) {
        if (!c->held) {
            if (s->rlen > 0) { /* older than any arrival not claimed yet */
                *due = ring_pop(s, &queued);
                got = 1;
                break;
            }
            if (s->gap > 0) {
                c->due = s->next_due;
                c->held = 1;
                s->claimed++;
                s->next_due += sched_gap(s);
            }
        }
        if (c->held && c->due <= (double)now) {
            c->held = 0;
            s->claimed--;
            *due = (long long)c->due;
            s->offered++;
            got = 1;
            break;
        }
        long long until = c->held ? (long long)ceil(c->due) : now + WAIT_MAX_NS;
        if (until - now > WAIT_MAX_NS) until = now + WAIT_MAX_NS;
        uint32_t seen = c->word;
        sched_unlock(s);
        if (*inside) {
            counts_leave(counts, now);
            *inside = 0;
        }
        futex_sleep(&c->word, seen, until);
        sched_lock(s);
        now = now_ns();
        sched_advance(s, now); /* its claim is earlier than anything this decides */
    }
    c->prev->next = c->next;
    c->next->prev = c->prev;
    s->idle--;
    if (c->held) sched_abandon(s, c, now);
    if (got) {
        *send = now;
        *state = S_BUSY;
        s->started++;
        if (++s->busy > s->busy_max) s->busy_max = s->busy;
        rc = samples_push(s, SAMPLE_LAG, now - *due);
        if (rc == 0 && queued) rc = samples_push(s, SAMPLE_WAIT, now - *due);
    }
    sched_unlock(s);
    return rc < 0 ? -1 : got;
}

/* the user is out of run(): no longer busy or idle. 0, or -1 when out of memory. */
static int sched_leave(Schedule *s, int *state, long long *service) {
    sched_lock(s);
    int rc = sched_leave_busy(s, state, service);
    sched_unlock(s);
    return rc;
}

/* back in run() to try again the transaction of the arrival it claimed */
static void sched_resume(Schedule *s, int *state) {
    sched_lock(s);
    *state = S_BUSY;
    if (++s->busy > s->busy_max) s->busy_max = s->busy;
    sched_unlock(s);
}

/* the user of `c`, if it waits for an arrival, rechecks its stop flag */
static void sched_wake(Schedule *s, Claim *c) {
    sched_lock(s);
    claim_wake(c);
    sched_unlock(s);
}

static int Schedule_init(Schedule *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"seed", "grace", NULL};
    unsigned long long seed;
    double grace = (double)GRACE_NS_DEFAULT / 1e9;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "K|d", kwlist, &seed, &grace)) return -1;
    if (!(grace >= 0 && grace < 3600)) { PyErr_SetString(PyExc_ValueError, "grace: 0 to 3600 seconds"); return -1; }
    if (self->ready) { PyErr_SetString(PyExc_RuntimeError, "a Schedule is initialised once"); return -1; }
    Chunk *c = chunk_new();
    if (c == NULL) { PyErr_NoMemory(); return -1; }
    if (pthread_mutex_init(&self->mu, NULL) != 0) {
        PyMem_RawFree(c);
        PyErr_SetString(PyExc_OSError, "pthread_mutex_init");
        return -1;
    }
    self->wtail = self->rchunk = c;
    self->waiting.next = self->waiting.prev = &self->waiting;
    self->ready = 1;
    rng_seed(&self->rng, (uint64_t)seed);
    self->grace = (long long)(grace * 1e9);
    return 0;
}

static PyObject *Schedule_release_user(Schedule *self, PyObject *unused);

static void Schedule_dealloc(Schedule *self) {
    if (self->holding) Py_XDECREF(Schedule_release_user(self, NULL));
    if (self->ready) pthread_mutex_destroy(&self->mu); /* no user waits: each holds a reference */
    PyMem_RawFree(self->ring);
    for (Chunk *c = self->rchunk; c != NULL;) {
        Chunk *next = c->next;
        PyMem_RawFree(c);
        c = next;
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* set(rate, poisson, queue, offset): arrivals at `rate` per second from now on */
static PyObject *Schedule_set(Schedule *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"rate", "poisson", "queue", "offset", NULL};
    double rate, offset = 0.0;
    int poisson = 0;
    long long queue = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "d|pLd", kwlist, &rate, &poisson, &queue, &offset)) return NULL;
    if (!self->ready) { PyErr_SetString(PyExc_ValueError, "Schedule not initialised"); return NULL; }
    if (!(rate >= 0 && rate <= 1e9)) { PyErr_SetString(PyExc_ValueError, "rate: 0 to 1e9 per second"); return NULL; }
    if (queue < 0) { PyErr_SetString(PyExc_ValueError, "queue: 0 or more"); return NULL; }
    if (!(offset >= 0 && offset < 1)) { PyErr_SetString(PyExc_ValueError, "offset: in [0, 1)"); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    sched_lock(self);
    long long now = now_ns();
    sched_advance(self, now);
    sched_take_back(self, now); /* the timeline from its first arrival not yet due, at the new pace */
    double old = self->gap, gap = rate > 0 ? 1e9 / rate : 0.0;
    if (gap == 0 && old > 0) {
        /* a stop: the arrivals already due, still in their grace, are kept for the users (or
         * dropped, as they would have been), not forgotten */
        long long room = queue + sched_free(self);
        for (; self->next_due <= (double)now; self->next_due += sched_gap(self)) {
            self->offered++;
            if (self->rlen >= room || ring_push(self, (long long)self->next_due, 0) < 0) self->dropped++;
        }
    } else if (gap > 0 && old > 0) {
        /* the part of the current gap still to run, at the new pace: neither a burst nor a gap; then,
         * evenly spaced, back onto the grid of the new gap shifted by `offset` (the next point of it),
         * as at a start: each process takes a new rate at its own moment, and without this the
         * merged timeline of W processes lost its interleaving at the first change (bursts of W) */
        if (self->next_due > (double)now) self->next_due = (double)now + (self->next_due - (double)now) * gap / old;
        if (!poisson) self->next_due = (ceil((self->next_due - offset * gap) / gap) + offset) * gap;
    } else if (gap > 0) {
        /* a start: on the grid of `gap` shifted by `offset`, on the machine's monotonic clock, so
         * that processes at the same rate with offsets i/W interleave whenever each starts */
        double k = ceil(((double)now - offset * gap) / gap);
        self->next_due = (k + offset) * gap;
    }
    self->gap = gap;
    self->poisson = poisson;
    self->queue = queue;
    sched_wake_waiting(self); /* to claim again, at the new rate; or to take what a stop kept */
    sched_unlock(self);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* The samples the snapshot `v` counts, not yet read, into lag, service and wait (the GIL held);
 * 0, or -1 with an exception set. Past a chunk's end, the writers linked the next before that
 * snapshot was published. */
static int sched_drain(Schedule *s, const SchedSnap *v, PyObject *d[3]) {
    while (s->rtotal < v->nrec) {
        if (s->ridx == CHUNK_RECS) {
            Chunk *next = s->rchunk->next;
            PyMem_RawFree(s->rchunk);
            s->rchunk = next;
            s->ridx = 0;
        }
        const Rec *r = &s->rchunk->r[s->ridx++];
        s->rtotal++;
        if (tally_one(d[r->tx], r->a) < 0) return -1;
    }
    return 0;
}

static PyObject *Schedule_take(Schedule *self, PyObject *unused) {
    if (!self->ready) { PyErr_SetString(PyExc_ValueError, "Schedule not initialised"); return NULL; }
    /* the arrivals due by now decided, unless a user holds the mutex: then they are at its next
     * section (its own decides them) and counted by the next take; the take never waits for it */
    if (pthread_mutex_trylock(&self->mu) == 0) {
        sched_epoch(self);
        sched_advance(self, now_ns());
        sched_unlock(self);
    }
    SchedSnap v;
    sched_snapshot(self, &v);
    const SchedSnap *was = &self->told;
    /* maxima since the last take: the writers' if one has run since, and at least what it saw then */
    long long busy_max = v.epoch == self->takes ? v.busy_max : v.busy;
    long long queued_max = v.epoch == self->takes ? v.queued_max : v.queued;
    if (busy_max < was->busy) busy_max = was->busy;
    if (queued_max < was->queued) queued_max = was->queued;
    long long offered = v.offered - was->offered, started = v.started - was->started;
    long long dropped = v.dropped - was->dropped;
    self->told = v;
    __atomic_store_n(&self->takes, self->takes + 1, __ATOMIC_RELEASE);
    PyObject *d[3] = {PyDict_New(), PyDict_New(), PyDict_New()};
    if (d[0] == NULL || d[1] == NULL || d[2] == NULL || sched_drain(self, &v, d) < 0) {
        Py_XDECREF(d[0]); Py_XDECREF(d[1]); Py_XDECREF(d[2]);
        return NULL;
    }
    return Py_BuildValue("{sLsLsLsLsLsLsLsLsLsNsNsN}", "offered", offered, "started", started, "dropped", dropped,
                         "queued_max", queued_max, "queued", v.queued, "waiting", v.waiting, "busy", v.busy,
                         "busy_max", busy_max, "idle", v.idle, "lag", d[SAMPLE_LAG], "service", d[SAMPLE_SERVICE],
                         "queue_wait", d[SAMPLE_WAIT]);
}

/* For a user on asyncmy beside the C executor's (a statement the C executor could not prepare): it
 * cannot sleep on a futex without a thread of its own, so it polls, between sleeps on its event
 * loop, and takes only what is due (the C users' claims are all earlier). Not counted idle while it
 * sleeps: an arrival it would have taken late counts as met by no free user. */
static PyObject *Schedule_claim_nowait(Schedule *self, PyObject *unused) {
    if (!self->ready) { PyErr_SetString(PyExc_ValueError, "Schedule not initialised"); return NULL; }
    long long due = 0, now, next = -1;
    int got = 0, queued = 0, rc = 0;
    sched_lock(self);
    now = now_ns();
    sched_advance(self, now);
    if (self->rlen > 0) {
        due = ring_pop(self, &queued);
        got = 1;
    } else if (self->gap > 0 && self->next_due <= (double)now) {
        due = (long long)self->next_due;
        self->offered++;
        self->next_due += sched_gap(self);
        got = 1;
    } else if (self->gap > 0) {
        next = (long long)ceil(self->next_due);
    }
    if (got) {
        self->started++;
        if (++self->busy > self->busy_max) self->busy_max = self->busy;
        rc = samples_push(self, SAMPLE_LAG, now - due);
        if (rc == 0 && queued) rc = samples_push(self, SAMPLE_WAIT, now - due);
    }
    sched_unlock(self);
    if (rc < 0) return PyErr_NoMemory();
    if (got) return Py_BuildValue("(LL)", due, now);
    if (next < 0) return Py_BuildValue("(OO)", Py_None, Py_None);
    return Py_BuildValue("(OL)", Py_None, next);
}

static PyObject *Schedule_release(Schedule *self, PyObject *arg) {
    long long service = PyLong_AsLongLong(arg);
    if (service == -1 && PyErr_Occurred()) return NULL;
    if (!self->ready) { PyErr_SetString(PyExc_ValueError, "Schedule not initialised"); return NULL; }
    int state = S_BUSY;
    sched_lock(self);
    int rc = sched_leave_busy(self, &state, &service);
    sched_unlock(self);
    if (rc < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* Schedule's test-only entry points (tests/unit/test_native_counts.py): a user held inside the    */
/* mutex, and many users starting and finishing arrivals at once. Nothing in a run calls them.     */

typedef struct {
    Schedule *schedule;
    uint32_t held;
} HoldUser;

/* one arrival started (its lag 5 us) and left unfinished, inside the mutex until released */
static void *hold_user_main(void *arg) {
    HoldUser *h = arg;
    Schedule *s = h->schedule;
    sched_lock(s);
    s->offered++;
    s->started++;
    if (++s->busy > s->busy_max) s->busy_max = s->busy;
    int rc = samples_push(s, SAMPLE_LAG, 5000);
    word_set(&h->held); /* h is the caller's, gone once it saw this */
    word_wait(&s->release);
    sched_unlock(s);
    return rc < 0 ? s : NULL;
}

/* _hold_user(): a thread starts an arrival inside the mutex and stays there until _release_user() */
static PyObject *Schedule_hold_user(Schedule *self, PyObject *unused) {
    if (!self->ready) { PyErr_SetString(PyExc_ValueError, "Schedule not initialised"); return NULL; }
    if (self->holding) { PyErr_SetString(PyExc_RuntimeError, "a user is held already"); return NULL; }
    HoldUser h = {self, 0};
    self->release = 0;
    if (pthread_create(&self->holder, NULL, hold_user_main, &h) != 0) {
        PyErr_SetString(PyExc_OSError, "pthread_create");
        return NULL;
    }
    self->holding = 1;
    Py_BEGIN_ALLOW_THREADS
    word_wait(&h.held);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* _release_user(): the held user leaves the mutex; returns once it has */
static PyObject *Schedule_release_user(Schedule *self, PyObject *unused) {
    if (!self->holding) Py_RETURN_NONE;
    void *failed = NULL;
    Py_BEGIN_ALLOW_THREADS
    word_set(&self->release);
    pthread_join(self->holder, &failed);
    Py_END_ALLOW_THREADS
    self->holding = 0;
    if (failed != NULL) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* `each` arrivals, started and finished: the j-th's lag j % 1000 us, its service 1000 + j % 7 us */
static void *hammer_user_main(void *arg) {
    Hammer *h = arg;
    Schedule *s = h->target;
    for (long long j = 0; j < h->each && !h->failed; j++) {
        sched_lock(s);
        s->offered++;
        s->started++;
        if (++s->busy > s->busy_max) s->busy_max = s->busy;
        if (samples_push(s, SAMPLE_LAG, (j % 1000) * 1000) < 0) h->failed = 1;
        sched_unlock(s);
        int state = S_BUSY;
        long long service = (1000 + j % 7) * 1000;
        sched_lock(s);
        if (sched_leave_busy(s, &state, &service) < 0) h->failed = 1;
        sched_unlock(s);
    }
    return NULL;
}

/* _hammer(threads, each): threads without the GIL start and finish `each` arrivals apiece at once */
static PyObject *Schedule_hammer(Schedule *self, PyObject *args) {
    int threads;
    long long each;
    if (!PyArg_ParseTuple(args, "iL", &threads, &each)) return NULL;
    if (!self->ready || threads < 1 || threads > 1024 || each < 0) {
        PyErr_SetString(PyExc_ValueError, "1 to 1024 threads, an initialised Schedule");
        return NULL;
    }
    return hammer_run(hammer_user_main, self, threads, each);
}

static PyMethodDef Schedule_methods[] = {
    {"claim_nowait", (PyCFunction)Schedule_claim_nowait, METH_NOARGS,
     "claim_nowait() -> (due_ns, send_ns) of an arrival now claimed, or (None, the next due time in ns, "
     "None at rate 0): for a user outside the C executor, which then calls release()"},
    {"release", (PyCFunction)Schedule_release, METH_O,
     "release(service_ns): the transaction of a claim_nowait() is over (service_ns -1: it failed)"},
    {"set", (PyCFunction)(void (*)(void))Schedule_set, METH_VARARGS | METH_KEYWORDS,
     "set(rate, poisson=False, queue=0, offset=0.0): arrivals at `rate` per second from now on (0: none); "
     "queue: how many may wait for a user; offset in [0, 1): the phase of a start, in gaps"},
    {"take", (PyCFunction)Schedule_take, METH_NOARGS,
     "take() -> dict since the previous take: offered, started, dropped, queued_max, queued, waiting (offered, "
     "neither started nor dropped, now), busy, busy_max, idle, and lag, service, queue_wait as {microseconds: count}"},
    {"_hold_user", (PyCFunction)Schedule_hold_user, METH_NOARGS,
     "test only: a thread starts an arrival (lag 5 us) inside the schedule's mutex and stays there until "
     "_release_user()"},
    {"_release_user", (PyCFunction)Schedule_release_user, METH_NOARGS,
     "test only: the held user leaves the mutex; returns once it has"},
    {"_hammer", (PyCFunction)Schedule_hammer, METH_VARARGS,
     "test only: _hammer(threads, each): threads without the GIL start and finish `each` arrivals apiece at "
     "once (the j-th: lag j % 1000 us, service 1000 + j % 7 us); returns when all have"},
    {NULL}};

static PyTypeObject ScheduleType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl.native._native.Schedule",
    .tp_doc = "Schedule(seed, grace=0.001): the arrivals of an open-loop run, shared by the users of a process.",
    .tp_basicsize = sizeof(Schedule),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Schedule_init,
    .tp_dealloc = (destructor)Schedule_dealloc,
    .tp_methods = Schedule_methods,
};

/* ---------------------------------------------------------------------------------------------- */
/* User                                                                                            */

/* what run() and connect() say */
enum { OUT_OK = 0, OUT_STOPPED = 0, OUT_ERROR = 1, OUT_LOST = 2, OUT_DOUBT = 3, OUT_PREPARE = 4, OUT_ELSEWHERE = 5 };

typedef struct {
    long long i;
    int32_t i32;
    double d;
    unsigned long len;
    int type;                /* the MYSQL_TYPE_ it was last bound as (0 before the first) */
    const void *buffer;      /* and where from */
} Bound;

typedef struct {
    PyObject_HEAD
    Program *program;
    Counts *counts;
    Schedule *schedule;      /* open loop: each transaction waits for an arrival; NULL: closed loop */
    int sched_state;         /* S_OUT, S_IDLE or S_BUSY, under the schedule's mutex */
    long long send, service; /* the transaction's send time; the last one's service time (-1: none) */
    MYSQL *mysql;
    MYSQL_STMT **stmts;
    MYSQL_BIND **binds;      /* per statement */
    Bound **bound;
    char *bound_ok;          /* per statement: its binds are the library's */
    Slot *slots;
    Rng rng;
    int stop;                /* read by the user's thread before each transaction */
    int running;
    pthread_mutex_t mu;      /* guards mysql against interrupt() while it is replaced */
    long long tx, attempt, completed, t0;
    /* the connection's options */
    char *host, *user, *password, *database, *unix_socket, *ssl_mode, *ssl_ca, *ssl_cert, *ssl_key, *charset;
    char *identity_sql, *identity; /* what the server must answer to identity_sql, its values tab-separated */
    unsigned int port, connect_timeout;
    int compress;
    Claim claim;             /* its place among the schedule's waiting users; last: the closed loop's
                              * fields keep the offsets (and cache lines) they had without it */
    int inside;              /* counted in counts as inside a transaction (bench_dsl/measure/stalls.py) */
} User;

static void user_leave(User *self) {
    if (self->inside && self->counts != NULL) counts_leave(self->counts, now_ns());
    self->inside = 0;
}

static PyTypeObject UserType;

static void free_text(char **s) {
    if (*s != NULL) {
        memset(*s, 0, strlen(*s)); /* a password does not outlive its user in memory */
        PyMem_RawFree(*s);
        *s = NULL;
    }
}

/* options[key] as an owned C string (NULL when absent or None); 0, or -1 with an exception set */
static int text_option(PyObject *options, const char *key, char **out) {
    free_text(out);
    PyObject *v = PyDict_GetItemString(options, key); /* borrowed */
    if (v == NULL || v == Py_None) return 0;
    Py_ssize_t n;
    const char *u = PyUnicode_Check(v) ? PyUnicode_AsUTF8AndSize(v, &n) : NULL;
    if (u == NULL) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "option %s is a str", key);
        return -1;
    }
    if ((Py_ssize_t)strlen(u) != n) { PyErr_Format(PyExc_ValueError, "option %s holds a NUL", key); return -1; }
    *out = PyMem_RawMalloc((size_t)n + 1);
    if (*out == NULL) { PyErr_NoMemory(); return -1; }
    memcpy(*out, u, (size_t)n + 1);
    return 0;
}

static int int_option(PyObject *options, const char *key, unsigned int *out, unsigned int fallback) {
    PyObject *v = PyDict_GetItemString(options, key);
    if (v == NULL || v == Py_None) { *out = fallback; return 0; }
    long x = PyLong_AsLong(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    *out = (unsigned int)x;
    return 0;
}

static void user_close(User *self) {
    Program *p = self->program;
    if (self->stmts != NULL) {
        for (int k = 0; p != NULL && k < p->nsql; k++)
            if (self->stmts[k] != NULL) mysql_stmt_close(self->stmts[k]);
        memset(self->stmts, 0, sizeof(MYSQL_STMT *) * (size_t)(p ? p->nsql : 0));
    }
    if (self->bound_ok != NULL && p != NULL) memset(self->bound_ok, 0, (size_t)p->nsql);
    pthread_mutex_lock(&self->mu);
    MYSQL *m = self->mysql;
    self->mysql = NULL;
    pthread_mutex_unlock(&self->mu);
    if (m != NULL) mysql_close(m);
}

/* User(program, counts, seed, options, schedule=None): options is a dict of host, port, user, password,
 * database, unix_socket, ssl_mode, ssl_ca, ssl_cert, ssl_key, compress, connect_timeout, and
 * identity_sql with identity: the one-row answer every connection must get to it. With a
 * Schedule, each transaction starts at an arrival and its latency runs from the arrival's due time. */
static int User_init(User *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"program", "counts", "seed", "options", "schedule", NULL};
    PyObject *program, *counts, *options, *schedule = Py_None;
    unsigned long long seed;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!KO!|O", kwlist, &ProgramType, &program, &CountsType, &counts,
                                     &seed, &PyDict_Type, &options, &schedule))
        return -1;
    if (self->program != NULL) { PyErr_SetString(PyExc_RuntimeError, "a User is initialised once"); return -1; }
    if (schedule != Py_None && (!PyObject_TypeCheck(schedule, &ScheduleType) || !((Schedule *)schedule)->ready)) {
        PyErr_SetString(PyExc_TypeError, "schedule is an initialised Schedule or None");
        return -1;
    }
    Program *p = (Program *)program;
    if (p->ntx < 1) { PyErr_SetString(PyExc_ValueError, "the program is not initialised"); return -1; }
    if (((Counts *)counts)->n < p->ntx) { PyErr_SetString(PyExc_ValueError, "fewer counts than transaction types"); return -1; }
    if (pthread_mutex_init(&self->mu, NULL) != 0) { PyErr_SetString(PyExc_OSError, "pthread_mutex_init"); return -1; }
    Py_INCREF(program);
    self->program = p;
    Py_INCREF(counts);
    self->counts = (Counts *)counts;
    if (schedule != Py_None) {
        Py_INCREF(schedule);
        self->schedule = (Schedule *)schedule;
    }
    self->service = -1;
    rng_seed(&self->rng, (uint64_t)seed);
    size_t n = (size_t)p->nsql + 1;
    self->stmts = PyMem_RawCalloc(n, sizeof(MYSQL_STMT *));
    self->binds = PyMem_RawCalloc(n, sizeof(MYSQL_BIND *));
    self->bound = PyMem_RawCalloc(n, sizeof(Bound *));
    self->bound_ok = PyMem_RawCalloc(n, 1);
    self->slots = PyMem_RawCalloc((size_t)p->ndraws + 1, sizeof(Slot));
    if (!self->stmts || !self->binds || !self->bound || !self->bound_ok || !self->slots) { PyErr_NoMemory(); return -1; }
    for (int k = 0; k < p->nsql; k++) {
        int np = p->nparams[k] > 0 ? p->nparams[k] : 1;
        self->binds[k] = PyMem_RawCalloc((size_t)np, sizeof(MYSQL_BIND));
        self->bound[k] = PyMem_RawCalloc((size_t)np, sizeof(Bound));
        if (!self->binds[k] || !self->bound[k]) { PyErr_NoMemory(); return -1; }
    }
    if (text_option(options, "host", &self->host) < 0 || text_option(options, "user", &self->user) < 0 ||
        text_option(options, "password", &self->password) < 0 || text_option(options, "database", &self->database) < 0 ||
        text_option(options, "unix_socket", &self->unix_socket) < 0 ||
        text_option(options, "ssl_mode", &self->ssl_mode) < 0 || text_option(options, "ssl_ca", &self->ssl_ca) < 0 ||
        text_option(options, "ssl_cert", &self->ssl_cert) < 0 || text_option(options, "ssl_key", &self->ssl_key) < 0 ||
        text_option(options, "charset", &self->charset) < 0 ||
        text_option(options, "identity_sql", &self->identity_sql) < 0 ||
        text_option(options, "identity", &self->identity) < 0 ||
        int_option(options, "port", &self->port, 3306) < 0 ||
        int_option(options, "connect_timeout", &self->connect_timeout, 10) < 0)
        return -1;
    unsigned int compress;
    if (int_option(options, "compress", &compress, 0) < 0) return -1;
    self->compress = compress != 0;
    return 0;
}

static int User_traverse(User *self, visitproc visit, void *arg) {
    Py_VISIT(self->program);
    Py_VISIT(self->counts);
    Py_VISIT(self->schedule);
    return 0;
}

static void User_dealloc(User *self) {
    PyObject_GC_UnTrack(self);
    Program *p = self->program;
    if (p != NULL) {
        user_close(self);
        pthread_mutex_destroy(&self->mu);
        for (int k = 0; k < p->nsql; k++) {
            if (self->binds) PyMem_RawFree(self->binds[k]);
            if (self->bound) PyMem_RawFree(self->bound[k]);
        }
        for (int k = 0; self->slots && k < p->ndraws; k++) PyMem_RawFree(self->slots[k].buf);
    }
    PyMem_RawFree(self->stmts);
    PyMem_RawFree(self->binds);
    PyMem_RawFree(self->bound);
    PyMem_RawFree(self->bound_ok);
    PyMem_RawFree(self->slots);
    char **texts[] = {&self->host, &self->user, &self->password, &self->database, &self->unix_socket,
                      &self->ssl_mode, &self->ssl_ca, &self->ssl_cert, &self->ssl_key, &self->charset,
                      &self->identity_sql, &self->identity};
    for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) free_text(texts[k]);
    user_leave(self);
    Py_CLEAR(self->program);
    Py_CLEAR(self->counts);
    Py_CLEAR(self->schedule);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t keep(char *message, const char *text) {
    size_t n = strlen(text);
    if (n >= MESSAGE_MAX) n = MESSAGE_MAX - 1;
    memcpy(message, text, n);
    message[n] = 0;
    return (Py_ssize_t)n;
}

/* the connection cannot go on: lost, or any error of the client library itself (2000-2999: out of
 * sync, a packet it could not read...), after which the session's state is unknown */
static int lost(unsigned int code) {
    return code >= CR_MIN_ERROR && code <= CR_MAX_ERROR;
}

/* the TLS options of the address, as the mysql client reads --ssl-mode (dsn.py has checked them:
 * VERIFY_* always comes with ssl-ca, files never without a mode) */
static void set_tls(User *self, MYSQL *m) {
    const char *mode = self->ssl_mode;
    if (mode == NULL || strcmp(mode, "DISABLED") == 0 || strcmp(mode, "PREFERRED") == 0) return; /* plain */
    my_bool yes = 1, no = 0;
    int verify_ca = strcmp(mode, "VERIFY_CA") == 0, verify_identity = strcmp(mode, "VERIFY_IDENTITY") == 0;
    /* REQUIRED: encrypted, nothing verified (libmariadb checks the chain whenever it is given a CA,
     * so the CA is given only from VERIFY_CA up); VERIFY_IDENTITY: the host name too */
    mysql_ssl_set(m, self->ssl_key, self->ssl_cert, verify_ca || verify_identity ? self->ssl_ca : NULL, NULL, NULL);
    mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &yes);
    mysql_optionsv(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, verify_identity ? &yes : &no);
}

/* OUT_OK when the server answers identity_sql with `identity`; OUT_ELSEWHERE with what it answered
 * in message; OUT_ERROR when it could not be asked (no GIL) */
static int same_server(User *self, MYSQL *m, unsigned int *code, char *message) {
    if (mysql_real_query(m, self->identity_sql, (unsigned long)strlen(self->identity_sql)) != 0) {
        *code = mysql_errno(m);
        keep(message, mysql_error(m));
        return OUT_ERROR;
    }
    MYSQL_RES *res = mysql_store_result(m);
    if (res == NULL) {
        *code = mysql_errno(m);
        keep(message, *code ? mysql_error(m) : "no answer to the server's identity");
        return OUT_ERROR;
    }
    MYSQL_ROW row = mysql_fetch_row(res);
    unsigned long *lengths = mysql_fetch_lengths(res);
    unsigned int n = mysql_num_fields(res);
    char found[4352]; /* a host name, a port and a data directory (PATH_MAX) */
    size_t at = 0;
    for (unsigned int k = 0; row != NULL && k < n; k++) { /* truncated to the buffer: a long answer differs */
        if (k > 0 && at < sizeof(found) - 1) found[at++] = '\t';
        size_t len = row[k] ? (size_t)lengths[k] : 0, room = sizeof(found) - 1 - at;
        if (len > room) len = room;
        if (len) memcpy(found + at, row[k], len);
        at += len;
    }
    found[at] = 0;
    mysql_free_result(res);
    if (row != NULL && strcmp(found, self->identity) == 0) return OUT_OK;
    *code = 0;
    keep(message, found);
    return OUT_ELSEWHERE;
}

/* connect and prepare (no GIL). OUT_OK, OUT_ERROR (cannot connect), OUT_ELSEWHERE (another server than
 * `identity` answered) or OUT_PREPARE (a statement cannot be
 * prepared: the caller lets the driver meet it); code and message filled. */
static int user_connect(User *self, unsigned int *code, char *message) {
    Program *p = self->program;
    MYSQL *m = mysql_init(NULL);
    if (m == NULL) { *code = CR_OUT_OF_MEMORY; keep(message, "out of memory for a connection"); return OUT_ERROR; }
    unsigned int timeout = self->connect_timeout;
    mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    if (self->charset != NULL) mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, self->charset);
    if (self->compress) mysql_optionsv(m, MYSQL_OPT_COMPRESS, NULL);
    set_tls(self, m);
    /* The transport the address names, never the library's guess: libmariadb takes the host
     * "localhost" for its default socket and drops the port, which once sent every user to another
     * server than the one at localhost:PORT (issue 38). A socket only when the address gives one. */
    unsigned int protocol = self->unix_socket ? MYSQL_PROTOCOL_SOCKET : MYSQL_PROTOCOL_TCP;
    mysql_optionsv(m, MYSQL_OPT_PROTOCOL, &protocol);
    const char *host = self->unix_socket ? "localhost" : self->host;
    if (mysql_real_connect(m, host, self->user, self->password, self->database, self->port, self->unix_socket,
                           0) == NULL) {
        *code = mysql_errno(m);
        keep(message, mysql_error(m));
        mysql_close(m);
        return OUT_ERROR;
    }
    pthread_mutex_lock(&self->mu);
    self->mysql = m;
    pthread_mutex_unlock(&self->mu);
    if (self->identity_sql != NULL) {
        int rc = same_server(self, m, code, message);
        if (rc != OUT_OK) return rc;
    }
    for (int k = 0; k < p->nsql; k++) {
        if (p->nparams[k] < 0) continue; /* never executed */
        MYSQL_STMT *st = mysql_stmt_init(m);
        if (st == NULL) { *code = CR_OUT_OF_MEMORY; keep(message, "out of memory for a statement"); return OUT_ERROR; }
        self->stmts[k] = st;
        if (mysql_stmt_prepare(st, p->sql[k], p->sqllen[k]) != 0) {
            *code = mysql_stmt_errno(st);
            keep(message, mysql_stmt_error(st));
            return lost(*code) ? OUT_ERROR : OUT_PREPARE;
        }
        if ((int)mysql_stmt_param_count(st) != p->nparams[k]) {
            *code = 0;
            snprintf(message, MESSAGE_MAX, "the statement takes %lu values, the workload gives %d: %.200s",
                     mysql_stmt_param_count(st), p->nparams[k], p->sql[k]);
            return OUT_PREPARE;
        }
    }
    return OUT_OK;
}

/* one execution of statement si with its parameters from the slots (no GIL); 0, or the error code */
static unsigned int execute(User *self, int si, const Exec *e) {
    MYSQL_STMT *st = self->stmts[si];
    MYSQL_BIND *b = self->binds[si];
    Bound *bd = self->bound[si];
    int rebind = !self->bound_ok[si];
    for (int k = 0; k < e->nparams; k++) {
        const Slot *s = &self->slots[e->params[k].draw];
        Bound *x = &bd[k];
        const void *buffer = NULL;
        int type = MYSQL_TYPE_NULL;
        switch (s->t) {
        case V_INT: {
            long long v = s->i + e->params[k].plus;
            if (v >= INT32_MIN && v <= INT32_MAX) {
                /* a key as sysbench binds it (MYSQL_TYPE_LONG): 4 bytes, not 8 */
                x->i32 = (int32_t)v;
                buffer = &x->i32;
                type = MYSQL_TYPE_LONG;
            } else {
                x->i = v;
                buffer = &x->i;
                type = MYSQL_TYPE_LONGLONG;
            }
            break;
        }
        case V_REAL: x->d = s->d + (double)e->params[k].plus; buffer = &x->d; type = MYSQL_TYPE_DOUBLE; break;
        case V_TEXT: x->len = (unsigned long)s->len; buffer = s->buf; type = MYSQL_TYPE_STRING; break;
        default: break;
        }
        if (type != x->type || buffer != x->buffer) {
            rebind = 1;
            x->type = type;
            x->buffer = buffer;
            memset(&b[k], 0, sizeof(MYSQL_BIND));
            b[k].buffer = (void *)buffer;
            b[k].buffer_type = (enum enum_field_types)type;
            if (type == MYSQL_TYPE_STRING) {
                b[k].length = &x->len;
                b[k].buffer_length = s->cap;
            }
        }
    }
    if (rebind) {
        if (mysql_stmt_bind_param(st, b) != 0) return mysql_stmt_errno(st);
        self->bound_ok[si] = 1;
    }
    if (mysql_stmt_execute(st) != 0) return mysql_stmt_errno(st);
    for (;;) { /* every result, read to its end */
        if (mysql_stmt_field_count(st) > 0) {
            /* Rows are never looked at: free_result reads them off the wire and drops each packet
             * where store_result would copy it into a result set first (rows of the range selects
             * are most of what an OLTP client reads). It clears the connection's error before it
             * reads, so an error packet in the middle of the rows, or a lost connection, is then
             * the connection's error, not the statement's. */
            mysql_stmt_free_result(st);
            unsigned int err = mysql_errno(self->mysql);
            if (err != 0) return err;
        }
        if (!mysql_stmt_more_results(st)) break;
        int rc = mysql_stmt_next_result(st);
        if (rc > 0) return mysql_stmt_errno(st);
        if (rc < 0) break;
    }
    return 0;
}

static unsigned int simple_query(MYSQL *m, const char *q, unsigned long n) {
    return mysql_real_query(m, q, n) != 0 ? mysql_errno(m) : 0;
}

/* One transaction, drawn and sent (no GIL). 0, or the error code with its message in message;
 * *statements counts what was sent. */
static unsigned int transaction(User *self, char *message, long long *statements) {
    Program *p = self->program;
    const Tx *tx = &p->txs[self->tx];
    MYSQL *m = self->mysql;
    unsigned int code = 0;
    *statements = 0;
    if (tx->explicit_) {
        if ((code = simple_query(m, "BEGIN", 5)) != 0) { keep(message, mysql_error(m)); return code; }
        (*statements)++;
    }
    for (int s = 0; s < tx->nsteps; s++) {
        const Step *st = &tx->steps[s];
        int table = st->tables > 1 ? (int)rng_below(&self->rng, (uint64_t)st->tables) : 0;
        for (int rep = 0; rep < st->count; rep++) {
            for (int d = 0; d < st->ndraws; d++) {
                int k = st->draws[d];
                if (draw_value(&p->draws[k], &self->rng, &p->sequences[k], &self->slots[k]) < 0) {
                    keep(message, "out of memory for a value");
                    return CR_OUT_OF_MEMORY;
                }
            }
            for (int e = 0; e < st->nexecs; e++) {
                const Exec *ex = &st->execs[e];
                int si = ex->stmt[table];
                code = execute(self, si, ex);
                if (code != 0) {
                    MYSQL_STMT *failed = self->stmts[si];
                    keep(message, mysql_stmt_errno(failed) ? mysql_stmt_error(failed) : mysql_error(m));
                    return code;
                }
                (*statements)++;
            }
        }
    }
    if (tx->explicit_) {
        if ((code = simple_query(m, "COMMIT", 6)) != 0) { keep(message, mysql_error(m)); return code; }
        (*statements)++;
    }
    return 0;
}

static PyObject *User_connect(User *self, PyObject *unused) {
    if (self->program == NULL) { PyErr_SetString(PyExc_ValueError, "User not initialised"); return NULL; }
    if (self->running) { PyErr_SetString(PyExc_RuntimeError, "already running"); return NULL; }
    self->running = 1;
    user_close(self);
    unsigned int code = 0;
    char message[MESSAGE_MAX] = "";
    int outcome;
    Py_BEGIN_ALLOW_THREADS
    outcome = user_connect(self, &code, message);
    if (outcome == OUT_ERROR || outcome == OUT_ELSEWHERE) user_close(self);
    Py_END_ALLOW_THREADS
    self->running = 0;
    return Py_BuildValue("(iIN)", outcome, code, PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace"));
}

/* run(retry) -> (outcome, code, message): transactions until one of them fails or `stop` is set.
 * retry: start again the transaction that failed (its type, start time and attempt kept). */
static PyObject *User_run(User *self, PyObject *args) {
    int retry;
    if (!PyArg_ParseTuple(args, "p", &retry)) return NULL;
    if (self->program == NULL) { PyErr_SetString(PyExc_ValueError, "User not initialised"); return NULL; }
    if (self->running) { PyErr_SetString(PyExc_RuntimeError, "already running"); return NULL; }
    if (self->mysql == NULL) return Py_BuildValue("(iIs)", OUT_LOST, (unsigned int)CR_SERVER_LOST, "not connected");
    self->running = 1;
    int outcome = OUT_STOPPED;
    unsigned int code = 0;
    char message[MESSAGE_MAX] = "";
    const char *bad = NULL;
    Counts *counts = self->counts;
    Schedule *sched = __atomic_load_n(&self->schedule, __ATOMIC_ACQUIRE);
    int slack = 0;
    int inside = self->inside;
    Py_BEGIN_ALLOW_THREADS
    if (sched != NULL && retry) sched_resume(sched, &self->sched_state);
    for (;;) {
        if (!retry) {
            if (__atomic_load_n(&self->stop, __ATOMIC_RELAXED)) break;
            self->tx = pick_tx(self->program, &self->rng);
            self->attempt = 0;
            /* a schedule may be given while the user runs closed-loop (once, never taken back) */
            if (sched == NULL) sched = __atomic_load_n(&self->schedule, __ATOMIC_ACQUIRE);
            if (sched == NULL) {
                self->t0 = now_ns();
            } else {
                if (!slack) {
                    /* due times kept to the microsecond: the kernel's default slack (50 us late on
                     * every wakeup) would be lag of the client's own making, at every rate */
                    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
                    slack = 1;
                }
                int got = sched_claim(sched, &self->claim, &self->stop, &self->sched_state, &self->service, &self->t0,
                                      &self->send, counts, &inside);
                if (got < 0) { bad = "out of memory for an arrival's times"; break; }
                if (got == 0) break;
            }
        }
        if (!inside) {  /* a closed loop's user once per run(), an open loop's after a sleep */
            counts_enter(counts, retry ? now_ns() : sched != NULL ? self->send : self->t0);
            inside = 1;
        }
        retry = 0;
        long long statements;
        code = transaction(self, message, &statements);
        if (code == 0) {
            long long end = now_ns();
            if (counts_add_nogil(counts, self->tx, (end - self->t0) / 1000, statements, end) < 0) {
                bad = "out of memory for a transaction's count";
                break;
            }
            if (sched != NULL) self->service = end - self->send;
            self->completed++;
            continue;
        }
        if (code == CR_OUT_OF_MEMORY) { bad = "out of memory"; break; }
        outcome = lost(code) ? OUT_LOST : OUT_ERROR;
        if (outcome == OUT_ERROR && self->program->txs[self->tx].explicit_) {
            /* inside a transaction: rolled back before anything else; if that fails, the session is
             * in doubt and the first error is the one reported */
            unsigned int rc = simple_query(self->mysql, "ROLLBACK", 8);
            if (rc != 0) outcome = lost(rc) ? OUT_LOST : OUT_DOUBT;
            if (rc != 0 && lost(rc)) { code = rc; keep(message, mysql_error(self->mysql)); }
        }
        break;
    }
    if (sched != NULL && sched_leave(sched, &self->sched_state, &self->service) < 0) bad = "out of memory";
    /* stopped: it waits on nothing; after an error it stays inside, retrying or reconnecting (a
     * server that cannot be reached is waited on) */
    self->inside = inside;
    if (outcome == OUT_STOPPED) user_leave(self);
    Py_END_ALLOW_THREADS
    self->running = 0;
    if (bad != NULL) return PyErr_NoMemory();
    return Py_BuildValue("(iIN)", outcome, code, PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace"));
}

/* Wakes the user's thread out of a blocking call (from another thread): the socket is shut down,
 * not closed, so its descriptor cannot name another connection before close(). */
static PyObject *User_interrupt(User *self, PyObject *unused) {
    __atomic_store_n(&self->stop, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&self->mu);
    if (self->mysql != NULL) {
        my_socket fd = mysql_get_socket(self->mysql);
        if ((int)fd >= 0) shutdown(fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&self->mu);
    if (self->schedule != NULL) sched_wake(self->schedule, &self->claim); /* waiting for an arrival */
    Py_RETURN_NONE;
}

static PyObject *User_close(User *self, PyObject *unused) {
    if (self->running) { PyErr_SetString(PyExc_RuntimeError, "close() while running"); return NULL; }
    user_leave(self);
    if (self->program != NULL) {
        Py_BEGIN_ALLOW_THREADS
        user_close(self);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyObject *User_query_value(User *self, PyObject *args) {
    /* the first column of the first row of a text query, or None: for tests and the run's record of
     * the session (Ssl_cipher, CONNECTION_ID()) */
    const char *q;
    if (!PyArg_ParseTuple(args, "s", &q)) return NULL;
    if (self->running || self->mysql == NULL) { PyErr_SetString(PyExc_RuntimeError, "not connected, or running"); return NULL; }
    if (mysql_query(self->mysql, q) != 0) {
        PyErr_Format(PyExc_RuntimeError, "(%u) %s", mysql_errno(self->mysql), mysql_error(self->mysql));
        return NULL;
    }
    MYSQL_RES *res = mysql_store_result(self->mysql);
    if (res == NULL) Py_RETURN_NONE;
    MYSQL_ROW row = mysql_fetch_row(res);
    PyObject *out = row != NULL && row[0] != NULL ? PyUnicode_DecodeUTF8(row[0], (Py_ssize_t)strlen(row[0]), "replace")
                                                  : Py_NewRef(Py_None);
    mysql_free_result(res);
    return out;
}

static PyObject *User_get_cipher(User *self, void *closure) {
    const char *c = self->mysql != NULL ? mysql_get_ssl_cipher(self->mysql) : NULL;
    return c != NULL ? PyUnicode_FromString(c) : Py_NewRef(Py_None);
}

static PyObject *User_get_schedule(User *self, void *closure) {
    return Py_NewRef(self->schedule != NULL ? (PyObject *)self->schedule : Py_None);
}

/* A closed-loop user turned open-loop, even while it runs (it reads the pointer before each
 * transaction): once, never undone (its thread may be inside the schedule). */
static int User_set_schedule(User *self, PyObject *value, void *closure) {
    if (value == NULL || !PyObject_TypeCheck(value, &ScheduleType) || !((Schedule *)value)->ready) {
        PyErr_SetString(PyExc_TypeError, "schedule is an initialised Schedule");
        return -1;
    }
    if (self->schedule == (Schedule *)value) return 0;
    if (self->schedule != NULL) { PyErr_SetString(PyExc_ValueError, "the user has a schedule already"); return -1; }
    Py_INCREF(value);
    __atomic_store_n(&self->schedule, (Schedule *)value, __ATOMIC_RELEASE);
    return 0;
}

static PyObject *User_get_stop(User *self, void *closure) {
    return PyBool_FromLong(__atomic_load_n(&self->stop, __ATOMIC_RELAXED));
}

static int User_set_stop(User *self, PyObject *value, void *closure) {
    if (value == NULL) { PyErr_SetString(PyExc_AttributeError, "stop cannot be deleted"); return -1; }
    int v = PyObject_IsTrue(value);
    if (v < 0) return -1;
    __atomic_store_n(&self->stop, v, __ATOMIC_RELAXED);
    if (v && self->schedule != NULL) sched_wake(self->schedule, &self->claim); /* waiting for an arrival */
    return 0;
}

static PyMethodDef User_methods[] = {
    {"connect", (PyCFunction)User_connect, METH_NOARGS,
     "connect() -> (outcome, code, message): connects and prepares (blocking, the GIL released)"},
    {"run", (PyCFunction)User_run, METH_VARARGS,
     "run(retry) -> (outcome, code, message): transactions until an error or the stop (blocking)"},
    {"interrupt", (PyCFunction)User_interrupt, METH_NOARGS, "stop, and wake a blocked call (any thread)"},
    {"close", (PyCFunction)User_close, METH_NOARGS, "close the connection (not while running)"},
    {"query_value", (PyCFunction)User_query_value, METH_VARARGS, "query_value(sql) -> str | None"},
    {NULL}};

static PyMemberDef User_members[] = {
    {"tx", T_LONGLONG, offsetof(User, tx), READONLY, "the transaction type in flight, or last run"},
    {"attempt", T_LONGLONG, offsetof(User, attempt), 0, "attempts of the transaction in flight before this one"},
    {"completed", T_LONGLONG, offsetof(User, completed), READONLY, "transactions completed"},
    {NULL}};

static PyGetSetDef User_getset[] = {
    {"stop", (getter)User_get_stop, (setter)User_set_stop, "no transaction starts once set", NULL},
    {"cipher", (getter)User_get_cipher, NULL, "the connection's TLS cipher, or None", NULL},
    {"schedule", (getter)User_get_schedule, (setter)User_set_schedule,
     "the Schedule its transactions wait for (None: closed loop); set once, even while it runs", NULL},
    {NULL}};

static PyTypeObject UserType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl.native._native.User",
    .tp_doc = "One virtual user: its libmariadb connection, prepared statements, generator and loop.",
    .tp_basicsize = sizeof(User),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)User_init,
    .tp_dealloc = (destructor)User_dealloc,
    .tp_traverse = (traverseproc)User_traverse,
    .tp_methods = User_methods,
    .tp_members = User_members,
    .tp_getset = User_getset,
};

/* ---------------------------------------------------------------------------------------------- */

/* sample(draw, seed, n) -> list: n values of one draw, from a generator seeded as a user's is; what
 * the tests compare with sysbench's own distributions */
static PyObject *module_sample(PyObject *mod, PyObject *args) {
    PyObject *spec;
    unsigned long long seed;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!Kn", &PyTuple_Type, &spec, &seed, &n)) return NULL;
    Draw g;
    if (draw_from(spec, &g) < 0) { draw_free(&g); return NULL; }
    Rng r;
    rng_seed(&r, (uint64_t)seed);
    long long sequence = g.lo;
    Slot s = {0};
    PyObject *out = PyList_New(n);
    for (Py_ssize_t k = 0; out != NULL && k < n; k++) {
        if (draw_value(&g, &r, &sequence, &s) < 0) { Py_CLEAR(out); PyErr_NoMemory(); break; }
        PyObject *v = s.t == V_INT ? PyLong_FromLongLong(s.i) : s.t == V_REAL ? PyFloat_FromDouble(s.d)
                    : s.t == V_TEXT ? PyUnicode_DecodeUTF8(s.buf, (Py_ssize_t)s.len, "strict") : Py_NewRef(Py_None);
        if (v == NULL) { Py_CLEAR(out); break; }
        PyList_SET_ITEM(out, k, v);
    }
    PyMem_RawFree(s.buf);
    draw_free(&g);
    return out;
}

static PyObject *module_client_version(PyObject *mod, PyObject *unused) {
    return PyUnicode_FromString(mysql_get_client_info());
}

static PyMethodDef module_methods[] = {
    {"sample", module_sample, METH_VARARGS, "sample(draw, seed, n) -> n values of a draw"},
    {"client_version", module_client_version, METH_NOARGS, "libmariadb's version"},
    {NULL}};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "bench_dsl.native._native",
    "The hot path of fixed-statement workloads: a thread per user over libmariadb.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    /* once, before any thread: libmariadb's global state (and its TLS library's) */
    if (mysql_library_init(0, NULL, NULL) != 0) {
        PyErr_SetString(PyExc_ImportError, "libmariadb could not initialise");
        return NULL;
    }
    if (PyType_Ready(&CountsType) < 0 || PyType_Ready(&ProgramType) < 0 || PyType_Ready(&ScheduleType) < 0 ||
        PyType_Ready(&UserType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL) return NULL;
    PyTypeObject *types[] = {&CountsType, &ProgramType, &ScheduleType, &UserType};
    const char *names[] = {"Counts", "Program", "Schedule", "User"};
    for (int k = 0; k < 4; k++) {
        Py_INCREF(types[k]);
        if (PyModule_AddObject(m, names[k], (PyObject *)types[k]) < 0) { Py_DECREF(types[k]); Py_DECREF(m); return NULL; }
    }
    PyModule_AddIntConstant(m, "STOPPED", OUT_STOPPED);
    PyModule_AddIntConstant(m, "ERROR", OUT_ERROR);
    PyModule_AddIntConstant(m, "LOST", OUT_LOST);
    PyModule_AddIntConstant(m, "DOUBT", OUT_DOUBT);
    PyModule_AddIntConstant(m, "PREPARE", OUT_PREPARE);
    PyModule_AddIntConstant(m, "ELSEWHERE", OUT_ELSEWHERE);
    return m;
}
