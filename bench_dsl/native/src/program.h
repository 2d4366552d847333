/* ---------------------------------------------------------------------------------------------- */
/* Program: a workload's transactions as data, the description of what the users send (program.c    */
/* reads it from Python; statements.c prepares and executes it).                                    */

#ifndef BD_PROGRAM_H
#define BD_PROGRAM_H

#include "native.h"
#include "draws.h"
#include "rng.h"

typedef struct {
    int draw;                /* the slot it takes */
    long long plus;          /* added to an integer (sysbench's ranges: lo + range_size - 1) */
} Param;

/* what an execution reads from what it got back, into a slot of the user's */
enum { CAP_INSERT_ID, CAP_ROWS, CAP_FIRST, CAP_MIDDLE, CAP_ROWS_JSON, CAP_FIRST_TEXT };
typedef struct {
    int slot, kind, column;
} Capture;

typedef struct {
    int *stmt;               /* the statement per table */
    Param *params;
    int nparams;
    int outcome;             /* its first row's first column says whether the transaction kept its work:
                              * 0 when it rolled back on purpose (TPC-C's New-Order procedure) */
    Capture *caps;
    int ncaps;
    int when;                /* sent only when this slot holds a value (not NULL); -1: always */
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
    /* a terminal's pause before it (paced programs): its keying time, then the think time drawn after
     * it, which the next transaction waits first: negative exponential with this mean, cut at think_max */
    double keying_s, think_mean_s, think_max_s;
    /* has_keep: it commits when slot keep_a >= slot keep_b + keep_plus, and rolls back on purpose
     * otherwise (TPC-C's New-Order that found fewer items than it named) */
    int has_keep, keep_a, keep_b;
    long long keep_plus;
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
    int paced;               /* each transaction waits its pause first (Tx) */
    int values;              /* the user values its user(k) draws read: a user brings at least this many */
    int autocommit;          /* 0: the session's autocommit is off, and an explicit transaction sends no
                              * BEGIN (its first statement starts it) */
} Program;

BD_INTERNAL extern PyTypeObject bd_ProgramType;

/* the type of the next transaction, by the weights */
static inline int pick_tx(const Program *p, Rng *r) {
    if (p->ntx == 1) return 0;
    double x = rng_double(r) * p->cum[p->ntx - 1];
    for (int t = 0; t < p->ntx; t++)
        if (x < p->cum[t]) return t;
    return p->ntx - 1;
}

#endif
