/* Schedule: the open-loop arrivals of the users of one process (schedule.c says how; the Python
 * type is schedule_type.c's). */

#ifndef BD_SCHEDULE_H
#define BD_SCHEDULE_H

#include "native.h"
#include "counts.h"
#include "rng.h"

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
    Claim waiting;            /* the list's head: the users in bd_sched_claim() */
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
    Hist *hists;              /* lag, service and queue wait since the last take (SAMPLE_*), recorded here */
    long long hist_us[3];     /* and the sums of their values */
    SchedSnap told;           /* what the last take saw */
    /* the test-only held user (Schedule._hold_user) */
    pthread_t holder;
    int holding;
    uint32_t release;
} Schedule;

BD_INTERNAL extern PyTypeObject bd_ScheduleType;

static inline double sched_gap(Schedule *s) {
    /* -ln(1 - u), u in [0, 1): an exponential gap of mean `gap` */
    return s->poisson ? -log1p(-rng_double(&s->rng)) * s->gap : s->gap;
}

/* idle users that no arrival is promised to */
static inline long long sched_free(const Schedule *s) {
    return s->idle - s->claimed;
}

/* schedule.c; each says what it does where it is defined */
BD_INTERNAL int bd_samples_push(Schedule *s, int kind, long long ns);
BD_INTERNAL int bd_ring_push(Schedule *s, long long due, int front);
BD_INTERNAL long long bd_ring_pop(Schedule *s, int *queued);
BD_INTERNAL void bd_sched_epoch(Schedule *s);
BD_INTERNAL void bd_sched_lock(Schedule *s);
BD_INTERNAL void bd_sched_unlock(Schedule *s);
BD_INTERNAL void bd_sched_snapshot(Schedule *s, SchedSnap *out);
BD_INTERNAL void bd_sched_advance(Schedule *s, long long now);
BD_INTERNAL void bd_sched_wake_waiting(Schedule *s);
BD_INTERNAL void bd_sched_take_back(Schedule *s, long long now);
BD_INTERNAL int bd_sched_leave_busy(Schedule *s, int *state, long long *service);
BD_INTERNAL int bd_sched_claim(Schedule *s, Claim *c, const int *stop, int *state, long long *service,
                               long long *due, long long *send, Counts *counts, int *inside);
BD_INTERNAL int bd_sched_leave(Schedule *s, int *state, long long *service);
BD_INTERNAL void bd_sched_resume(Schedule *s, int *state);
BD_INTERNAL void bd_sched_wake(Schedule *s, Claim *c);

#endif
