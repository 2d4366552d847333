/* ---------------------------------------------------------------------------------------------- */
/* Counts: the lanes and the queue of completions the users' threads write and take() reads (the     */
/* Python type is counts_type.c's).                                                                 */
/*                                                                                                  */
/* The users' threads (no GIL) are writers; take() is the one reader (the GIL held). A report must  */
/* not wait for the users: with 1,500 user threads on 2 cores, a user preempted while holding a     */
/* lock the report needs holds the report until the scheduler runs it again. So each user of the C  */
/* executor writes its completions into a lane of its own, which nothing else writes, and everything */
/* else (the users on asyncmy, through ok() with the GIL; every user's enter and leave) into one     */
/* queue whose writers are serialized among themselves only (`w`, which the reader never takes).    */
/* Writers publish with a release store; the reader reads what is published (acquire) and records   */
/* each completion into its type's HDR histogram; a record still being written at a take is counted */
/* at the next one, as a completion that raced the take always was.                                 */

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

/* A completion of type i into its histogram. The reader's. 0, or -1 with an exception set. */
static int counts_add(Counts *self, long long i, long long us, long long q) {
    if (self->tally == NULL) { PyErr_SetString(PyExc_ValueError, "Counts not initialised"); return -1; }
    int rolled_back = i >= 0 && (i & REC_ROLLED_BACK);
    i &= ~(long long)REC_ROLLED_BACK;
    if (i < 0 || i >= self->n) { PyErr_SetString(PyExc_IndexError, "transaction type out of range"); return -1; }
    Tally *t = &self->tally[i];
    hdr_record(&t->hist, us, 1);
    t->queries += q;
    t->total_us += us;
    t->rollbacks += rolled_back;
    return 0;
}

/* A completion ending at `end` raises the latest end of any (the writers' order is the order of
 * their compare-and-swaps): 1, with the gap it closes in *start, when that gap is a quiet span. */
static int quiet_closed(Counts *self, long long end, long long *start) {
    long long last = __atomic_load_n(&self->last_end, __ATOMIC_RELAXED);
    while (end > last) {
        if (__atomic_compare_exchange_n(&self->last_end, &last, end, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            *start = last;
            return last != 0 && end - last >= QUIET_MIN_NS;
        }
    }
    return 0;
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

/* A completed transaction (type i, us microseconds, q statements, completed at `end` ns) into the
 * queue (a user on asyncmy; the tests' writers): counted by the next take. 0, or -1 when out of
 * memory (nothing set: no GIL needed). */
int bd_counts_add_nogil(Counts *self, long long i, long long us, long long q, long long end) {
    long long start;
    if (quiet_closed(self, end, &start) && bd_counts_record(self, REC_QUIET, 0, start, end) < 0) return -1;
    return bd_counts_record(self, (int32_t)i, (int32_t)q, us, end);
}

/* A user's lane, linked into the Counts' (the GIL held); NULL when out of memory (no exception set) */
Lane *bd_lane_open(Counts *self) {
    Lane *l = PyMem_RawCalloc(1, sizeof(Lane));
    LaneChunk *c = PyMem_RawMalloc(sizeof(LaneChunk));
    if (l == NULL || c == NULL) { PyMem_RawFree(l); PyMem_RawFree(c); return NULL; }
    c->next = NULL;
    c->filled = 0;
    l->head = l->tail = c;
    l->next = self->lanes;
    if (self->lanes != NULL) self->lanes->prev = l;
    self->lanes = l;
    return l;
}

/* One record into the lane, by its one writer: no lock. 0, or -1 when out of memory (nothing set). */
static int lane_put(Lane *l, int32_t tx, int32_t q, int64_t a, int64_t b) {
    LaneChunk *t = l->tail;
    size_t k = t->filled;  /* only this thread stores it */
    if (k == LANE_RECS) {
        LaneChunk *c = PyMem_RawMalloc(sizeof(LaneChunk));
        if (c == NULL) return -1;
        c->next = NULL;
        c->filled = 0;
        /* the last the writer touches of t: the reader may free it from then on */
        __atomic_store_n(&t->next, c, __ATOMIC_RELEASE);
        l->tail = t = c;
        k = 0;
    }
    t->r[k] = (Rec){tx, q, a, b};
    __atomic_store_n(&t->filled, k + 1, __ATOMIC_RELEASE);
    return 0;
}

/* A completed transaction of the lane's user (its thread, no GIL), as bd_counts_add_nogil */
int bd_lane_add(Counts *self, Lane *lane, long long i, long long us, long long q, long long end,
                int rolled_back) {
    long long start;
    if (quiet_closed(self, end, &start) && lane_put(lane, REC_QUIET, 0, start, end) < 0) return -1;
    return lane_put(lane, (int32_t)i | (rolled_back ? REC_ROLLED_BACK : 0), (int32_t)q, us, end);
}

/* One record read. The GIL held; 0, or -1 with an exception set. */
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
    if (r->tx == REC_QUIET) {
        spans_keep(self->quiet, &self->nquiet, r->a, r->b);
        return 0;
    }
    if (r->b > self->last_ns) self->last_ns = r->b;
    return counts_add(self, r->tx, r->a, r->queries);
}

/* What the lane's writer has published, read, and its chunks read to their end freed. */
static int lane_drain(Counts *self, Lane *l) {
    int rc = 0;
    for (;;) {
        LaneChunk *c = l->head;
        size_t filled = __atomic_load_n(&c->filled, __ATOMIC_ACQUIRE);
        while (l->consumed < filled && rc == 0) rc = counts_read(self, &c->r[l->consumed++]);
        if (rc < 0 || filled < LANE_RECS) return rc;
        LaneChunk *next = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
        if (next == NULL) return rc; /* still the writer's tail */
        l->head = next;
        l->consumed = 0;
        PyMem_RawFree(c);
    }
}

/* The user is gone (its thread no longer writes): what it wrote is read, and its lane freed. The
 * GIL held; 0, or -1 with an exception set (the lane is freed all the same). */
int bd_lane_close(Counts *self, Lane *l) {
    int rc = lane_drain(self, l);
    if (l->prev != NULL) l->prev->next = l->next;
    else self->lanes = l->next;
    if (l->next != NULL) l->next->prev = l->prev;
    for (LaneChunk *c = l->head; c != NULL;) {
        LaneChunk *next = c->next;
        PyMem_RawFree(c);
        c = next;
    }
    PyMem_RawFree(l);
    return rc;
}

/* Everything published so far, read, and the chunks read to their end freed. Never waits for a
 * writer, and calls no Python code (a record goes into a histogram in C: no take can begin inside
 * another). The GIL held; 0, or -1 with an exception set (the records read up to the failing one
 * included are not read again). */
int bd_counts_drain(Counts *self) {
    if (!self->ready) return 0;
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
    for (Lane *l = self->lanes; l != NULL && rc == 0; l = l->next) rc = lane_drain(self, l);
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
