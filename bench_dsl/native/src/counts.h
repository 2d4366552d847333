/* Counts: the completions of a process's users, per transaction type, recorded into HDR histograms
 * (hdr.h), and the quiet and idle spans between them (counts.c: the lanes and the queue the users'
 * threads write and take() reads; counts_type.c: the Python type). Chunk and Rec also carry a
 * Schedule's samples (schedule.c). */

#ifndef BD_COUNTS_H
#define BD_COUNTS_H

#include "native.h"
#include "hdr.h"

typedef struct { long long start, end; } Span;

/* Quiet spans: the gaps between two completions of the process's users at least QUIET_MIN_NS long
 * (what a stalled server leaves), at most QUIET_MAX of them between two takes (the longest kept).
 * The writer of a completion finds the gap it ends: each raises the latest end time of any
 * completion (last_end, one compare-and-swap), and the one that raises it by QUIET_MIN_NS or more
 * records the span it closes (a completion older than the latest, its thread having been
 * preempted, only counts).
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

/* a record: a completion (tx >= 0: its type, with REC_ROLLED_BACK when the transaction rolled back
 * on purpose; statements, a = microseconds, b = its end in ns), a change of who is inside (a = when),
 * or a quiet span (a to b) */
enum { REC_IDLE_BEGIN = -1, REC_IDLE_END = -2, REC_QUIET = -3 };
#define REC_ROLLED_BACK (1 << 30)
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

/* A lane: one user's completions, written by its thread alone and read by take(): no lock between
 * the two, and none among users (a shared one cost every completion a contended mutex). Its chunks
 * are small: a lane per virtual user. */
#define LANE_RECS 170  /* 4 KB a chunk */

typedef struct LaneChunk {
    struct LaneChunk *next;
    size_t filled;
    Rec r[LANE_RECS];
} LaneChunk;

typedef struct Lane {
    LaneChunk *tail;          /* the writer's */
    LaneChunk *head;          /* the reader's, and how much of it was read */
    size_t consumed;
    struct Lane *prev, *next; /* the Counts' lanes, under the GIL */
} Lane;

/* a transaction type's figures since the last take (the reader's) */
typedef struct {
    Hist hist;
    long long queries, total_us, rollbacks;
} Tally;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    Tally *tally;         /* n of them (the reader's) */
    int ready;            /* w is initialised, head and tail allocated */
    long long last_end;   /* the latest end of any completion recorded (ns, 0: none), the writers' (atomic) */
    /* the writers', under w: the queue of the users on asyncmy (ok()) and of the enter and leave of all */
    pthread_mutex_t w;
    Chunk *tail;
    int inflight;         /* users inside a transaction (entered, not left) */
    /* the reader's, under the GIL */
    Lane *lanes;
    Chunk *head;
    size_t consumed;      /* records of head already read */
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

BD_INTERNAL extern PyTypeObject bd_CountsType;

/* counts.c; each says what it does where it is defined */
BD_INTERNAL Chunk *bd_chunk_new(void);
BD_INTERNAL int bd_counts_record(Counts *self, int32_t tx, int32_t queries, int64_t a, int64_t b);
BD_INTERNAL void bd_counts_enter(Counts *self, long long t);
BD_INTERNAL void bd_counts_leave(Counts *self, long long t);
BD_INTERNAL int bd_counts_add_nogil(Counts *self, long long i, long long us, long long q, long long end);
BD_INTERNAL Lane *bd_lane_open(Counts *self);
BD_INTERNAL int bd_lane_add(Counts *self, Lane *lane, long long i, long long us, long long q, long long end,
                            int rolled_back);
BD_INTERNAL int bd_lane_close(Counts *self, Lane *lane);
BD_INTERNAL int bd_counts_drain(Counts *self);
BD_INTERNAL int bd_counts_fold(Counts *self);
BD_INTERNAL void bd_counts_hold_begin(Counts *c, long long tx, long long us, long long q);
BD_INTERNAL void bd_counts_hold_end(Counts *c);

#endif
