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
/*                                                                                                  */
/* This unit: the timeline and the users' side of it, under the mutex, and the snapshot a take      */
/* reads; schedule_type.c: the Python type.                                                         */

#include "schedule.h"

/* a sample of `kind` (ns) for the next take; under mu. 0, or -1 when out of memory. Read once a
 * snapshot counting it is published: no release store of its own. */
int bd_samples_push(Schedule *s, int kind, long long ns) {
    if (s->widx == CHUNK_RECS) {
        Chunk *c = bd_chunk_new();
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

/* an arrival into the backlog (at its end; at its front: one older than all of it); 0, or -1 when
 * out of memory (then it is dropped instead) */
int bd_ring_push(Schedule *s, long long due, int front) {
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
long long bd_ring_pop(Schedule *s, int *queued) {
    long long due = s->ring[s->rhead];
    s->rhead = (s->rhead + 1) % s->rcap;
    s->rlen--;
    *queued = due < 0;
    return due < 0 ? -due : due;
}

/* the first section after a take restarts the maxima from the state the take saw */
void bd_sched_epoch(Schedule *s) {
    long long e = __atomic_load_n(&s->takes, __ATOMIC_ACQUIRE);
    if (e == s->max_epoch) return;
    s->max_epoch = e;
    s->busy_max = s->busy;
    s->queued_max = s->rlen - sched_free(s) > 0 ? s->rlen - sched_free(s) : 0;
}

void bd_sched_lock(Schedule *s) {
    pthread_mutex_lock(&s->mu);
    bd_sched_epoch(s);
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

void bd_sched_unlock(Schedule *s) {
    sched_publish(s);
    pthread_mutex_unlock(&s->mu);
}

/* The latest published state (the reader's), without waiting: a slot found being rewritten means a
 * newer one is published already. The samples it counts are visible from then on. */
void bd_sched_snapshot(Schedule *s, SchedSnap *out) {
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
void bd_sched_advance(Schedule *s, long long now) {
    if (s->gap > 0) {
        double late = (double)(now - s->grace);
        long long room = s->queue + sched_free(s);
        while (s->next_due <= late) {
            if (s->rlen < room && bd_ring_push(s, (long long)s->next_due, 0) == 0) {
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

void bd_sched_wake_waiting(Schedule *s) {
    for (Claim *c = s->waiting.next; c != &s->waiting; c = c->next) claim_wake(c);
}

/* The claims still in the future, taken back: the timeline resumes from the earliest of them (they
 * are its last arrivals handed out, all after the claims already due), their users claim again once
 * woken. Under the mutex. */
void bd_sched_take_back(Schedule *s, long long now) {
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
        if (s->rlen >= s->queue + sched_free(s) || bd_ring_push(s, (long long)c->due, 1) < 0) s->dropped++;
        else if (sched_free(s) > 0) bd_sched_wake_waiting(s);
    }
}

/* the user leaves the transaction it was busy with: its service time counted. Under the mutex;
 * 0, or -1 when out of memory. */
int bd_sched_leave_busy(Schedule *s, int *state, long long *service) {
    int rc = 0;
    if (*state == S_BUSY) {
        s->busy--;
        if (*service >= 0) rc = bd_samples_push(s, SAMPLE_SERVICE, *service);
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
int bd_sched_claim(Schedule *s, Claim *c, const int *stop, int *state, long long *service, long long *due,
                   long long *send, Counts *counts, int *inside) {
    bd_sched_lock(s);
    long long now = now_ns();
    bd_sched_advance(s, now); /* with the free users there were until now */
    int rc = bd_sched_leave_busy(s, state, service);
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
                *due = bd_ring_pop(s, &queued);
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
        bd_sched_unlock(s);
        if (*inside) {
            bd_counts_leave(counts, now);
            *inside = 0;
        }
        futex_sleep(&c->word, seen, until);
        bd_sched_lock(s);
        now = now_ns();
        bd_sched_advance(s, now); /* its claim is earlier than anything this decides */
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
        rc = bd_samples_push(s, SAMPLE_LAG, now - *due);
        if (rc == 0 && queued) rc = bd_samples_push(s, SAMPLE_WAIT, now - *due);
    }
    bd_sched_unlock(s);
    return rc < 0 ? -1 : got;
}

/* the user is out of run(): no longer busy or idle. 0, or -1 when out of memory. */
int bd_sched_leave(Schedule *s, int *state, long long *service) {
    bd_sched_lock(s);
    int rc = bd_sched_leave_busy(s, state, service);
    bd_sched_unlock(s);
    return rc;
}

/* back in run() to try again the transaction of the arrival it claimed */
void bd_sched_resume(Schedule *s, int *state) {
    bd_sched_lock(s);
    *state = S_BUSY;
    if (++s->busy > s->busy_max) s->busy_max = s->busy;
    bd_sched_unlock(s);
}

/* the user of `c`, if it waits for an arrival, rechecks its stop flag */
void bd_sched_wake(Schedule *s, Claim *c) {
    bd_sched_lock(s);
    claim_wake(c);
    bd_sched_unlock(s);
}
