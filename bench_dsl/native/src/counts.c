/* ---------------------------------------------------------------------------------------------- */
/* Counts: the queue of completions the users' threads write and take() reads (the Python type is   */
/* counts_type.c's).                                                                                */
/*                                                                                                  */
/* The users' threads (no GIL) are writers; take() is the one reader (the GIL held). A report must  */
/* not wait for the users: with 1,500 user threads on 2 cores, a user preempted while holding a     */
/* lock the report needs holds the report until the scheduler runs it again. So writers are         */
/* serialized among themselves only (`w`, which the reader never takes), and everything a take      */
/* needs reaches it through a queue of records the writers append and publish with a release store; */
/* the reader reads what is published (acquire), and a record still being written at a take is     */
/* counted at the next one, as a completion that raced the take always was. The GIL path (ok(), the */
/* Python users) is a writer like the others.                                                      */

#include "counts.h"

/* an empty chunk of records (Counts' queue; a Schedule's samples); NULL when out of memory */
Chunk *bd_chunk_new(void) {
    Chunk *c = PyMem_RawMalloc(sizeof(Chunk));
    if (c != NULL) {
        c->next = NULL;
        c->filled = 0;
    }
    return c;
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
        Chunk *c = bd_chunk_new();
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
int bd_counts_record(Counts *self, int32_t tx, int32_t queries, int64_t a, int64_t b) {
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
void bd_counts_enter(Counts *self, long long t) {
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

void bd_counts_leave(Counts *self, long long t) {
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
int bd_counts_add_nogil(Counts *self, long long i, long long us, long long q, long long end) {
    return bd_counts_record(self, (int32_t)i, (int32_t)q, us, end);
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
int bd_counts_drain(Counts *self) {
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
int bd_counts_fold(Counts *self) {
    int rc = bd_counts_drain(self);
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

/* The held writer's two halves (Counts._hold_writer): inside w with its completion written, then
 * published and out. */
void bd_counts_hold_begin(Counts *c, long long tx, long long us, long long q) {
    pthread_mutex_lock(&c->w);
    c->held = rec_slot(c);
    if (c->held != NULL) *c->held = (Rec){(int32_t)tx, (int32_t)q, us, now_ns()};
}

void bd_counts_hold_end(Counts *c) {
    if (c->held != NULL) rec_publish(c);
    pthread_mutex_unlock(&c->w);
}
