/* The Python type Schedule (bench_dsl.native._native.Schedule): set() and take() for the run, the
 * claims of a user outside the C executor (claim_nowait, release), and its test-only entry points. */

#include "schedule.h"
#include "testing.h"

static int Schedule_init(Schedule *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"seed", "grace", NULL};
    unsigned long long seed;
    double grace = (double)GRACE_NS_DEFAULT / 1e9;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "K|d", kwlist, &seed, &grace)) return -1;
    if (!(grace >= 0 && grace < 3600)) { PyErr_SetString(PyExc_ValueError, "grace: 0 to 3600 seconds"); return -1; }
    if (self->ready) { PyErr_SetString(PyExc_RuntimeError, "a Schedule is initialised once"); return -1; }
    Chunk *c = bd_chunk_new();
    Hist *h = PyMem_RawMalloc(3 * sizeof(Hist));
    if (c == NULL || h == NULL) { PyMem_RawFree(c); PyMem_RawFree(h); PyErr_NoMemory(); return -1; }
    for (int k = 0; k < 3; k++) bd_hdr_init(&h[k]);
    if (pthread_mutex_init(&self->mu, NULL) != 0) {
        PyMem_RawFree(c);
        PyMem_RawFree(h);
        PyErr_SetString(PyExc_OSError, "pthread_mutex_init");
        return -1;
    }
    self->wtail = self->rchunk = c;
    self->hists = h;
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
    PyMem_RawFree(self->hists);
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
    bd_sched_lock(self);
    long long now = now_ns();
    bd_sched_advance(self, now);
    bd_sched_take_back(self, now); /* the timeline from its first arrival not yet due, at the new pace */
    double old = self->gap, gap = rate > 0 ? 1e9 / rate : 0.0;
    if (gap == 0 && old > 0) {
        /* a stop: the arrivals already due, still in their grace, are kept for the users (or
         * dropped, as they would have been), not forgotten */
        long long room = queue + sched_free(self);
        for (; self->next_due <= (double)now; self->next_due += sched_gap(self)) {
            self->offered++;
            if (self->rlen >= room || bd_ring_push(self, (long long)self->next_due, 0) < 0) self->dropped++;
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
    bd_sched_wake_waiting(self); /* to claim again, at the new rate; or to take what a stop kept */
    bd_sched_unlock(self);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* The samples the snapshot `v` counts, not yet read, recorded into the lag, service and wait
 * histograms (the GIL held). Past a chunk's end, the writers linked the next before that snapshot
 * was published. */
static void sched_drain(Schedule *s, const SchedSnap *v) {
    while (s->rtotal < v->nrec) {
        if (s->ridx == CHUNK_RECS) {
            Chunk *next = s->rchunk->next;
            PyMem_RawFree(s->rchunk);
            s->rchunk = next;
            s->ridx = 0;
        }
        const Rec *r = &s->rchunk->r[s->ridx++];
        s->rtotal++;
        hdr_record(&s->hists[r->tx], r->a, 1);
        s->hist_us[r->tx] += r->a;
    }
}

static PyObject *Schedule_take(Schedule *self, PyObject *unused) {
    if (!self->ready) { PyErr_SetString(PyExc_ValueError, "Schedule not initialised"); return NULL; }
    /* the arrivals due by now decided, unless a user holds the mutex: then they are at its next
     * section (its own decides them) and counted by the next take; the take never waits for it */
    if (pthread_mutex_trylock(&self->mu) == 0) {
        bd_sched_epoch(self);
        bd_sched_advance(self, now_ns());
        bd_sched_unlock(self);
    }
    SchedSnap v;
    bd_sched_snapshot(self, &v);
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
    sched_drain(self, &v);
    PyObject *h[3];
    for (int k = 0; k < 3; k++) {
        if ((h[k] = bd_hdr_encode(&self->hists[k])) == NULL) {
            for (int j = 0; j < k; j++) Py_DECREF(h[j]);
            return NULL;  /* the samples stay recorded: the next take has them */
        }
    }
    PyObject *out = Py_BuildValue(
        "{sLsLsLsLsLsLsLsLsLsNsLsNsLsNsL}", "offered", offered, "started", started, "dropped", dropped,
        "queued_max", queued_max, "queued", v.queued, "waiting", v.waiting, "busy", v.busy, "busy_max", busy_max,
        "idle", v.idle, "lag", h[SAMPLE_LAG], "lag_us", self->hist_us[SAMPLE_LAG], "service", h[SAMPLE_SERVICE],
        "service_us", self->hist_us[SAMPLE_SERVICE], "queue_wait", h[SAMPLE_WAIT],
        "queue_wait_us", self->hist_us[SAMPLE_WAIT]);
    if (out == NULL) return NULL;
    for (int k = 0; k < 3; k++) {
        bd_hdr_reset(&self->hists[k]);
        self->hist_us[k] = 0;
    }
    return out;
}

/* For a user on asyncmy beside the C executor's (a statement the C executor could not prepare): it
 * cannot sleep on a futex without a thread of its own, so it polls, between sleeps on its event
 * loop, and takes only what is due (the C users' claims are all earlier). Not counted idle while it
 * sleeps: an arrival it would have taken late counts as met by no free user. */
static PyObject *Schedule_claim_nowait(Schedule *self, PyObject *unused) {
    if (!self->ready) { PyErr_SetString(PyExc_ValueError, "Schedule not initialised"); return NULL; }
    long long due = 0, now, next = -1;
    int got = 0, queued = 0, rc = 0;
    bd_sched_lock(self);
    now = now_ns();
    bd_sched_advance(self, now);
    if (self->rlen > 0) {
        due = bd_ring_pop(self, &queued);
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
        rc = bd_samples_push(self, SAMPLE_LAG, now - due);
        if (rc == 0 && queued) rc = bd_samples_push(self, SAMPLE_WAIT, now - due);
    }
    bd_sched_unlock(self);
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
    bd_sched_lock(self);
    int rc = bd_sched_leave_busy(self, &state, &service);
    bd_sched_unlock(self);
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
    bd_sched_lock(s);
    s->offered++;
    s->started++;
    if (++s->busy > s->busy_max) s->busy_max = s->busy;
    int rc = bd_samples_push(s, SAMPLE_LAG, 5000);
    bd_word_set(&h->held); /* h is the caller's, gone once it saw this */
    bd_word_wait(&s->release);
    bd_sched_unlock(s);
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
    bd_word_wait(&h.held);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* _release_user(): the held user leaves the mutex; returns once it has */
static PyObject *Schedule_release_user(Schedule *self, PyObject *unused) {
    if (!self->holding) Py_RETURN_NONE;
    void *failed = NULL;
    Py_BEGIN_ALLOW_THREADS
    bd_word_set(&self->release);
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
        bd_sched_lock(s);
        s->offered++;
        s->started++;
        if (++s->busy > s->busy_max) s->busy_max = s->busy;
        if (bd_samples_push(s, SAMPLE_LAG, (j % 1000) * 1000) < 0) h->failed = 1;
        bd_sched_unlock(s);
        int state = S_BUSY;
        long long service = (1000 + j % 7) * 1000;
        bd_sched_lock(s);
        if (bd_sched_leave_busy(s, &state, &service) < 0) h->failed = 1;
        bd_sched_unlock(s);
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
    return bd_hammer_run(hammer_user_main, self, threads, each);
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
     "neither started nor dropped, now), busy, busy_max, idle, and lag, service, queue_wait as histograms of "
     "microseconds (HdrHistogram's V2 base64, None when empty) with the sums of their values (lag_us ...)"},
    {"_hold_user", (PyCFunction)Schedule_hold_user, METH_NOARGS,
     "test only: a thread starts an arrival (lag 5 us) inside the schedule's mutex and stays there until "
     "_release_user()"},
    {"_release_user", (PyCFunction)Schedule_release_user, METH_NOARGS,
     "test only: the held user leaves the mutex; returns once it has"},
    {"_hammer", (PyCFunction)Schedule_hammer, METH_VARARGS,
     "test only: _hammer(threads, each): threads without the GIL start and finish `each` arrivals apiece at "
     "once (the j-th: lag j % 1000 us, service 1000 + j % 7 us); returns when all have"},
    {NULL}};

PyTypeObject bd_ScheduleType = {
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
