/* Draws (draws.c): what a value of a statement is drawn from, and the value drawn. */

#ifndef BD_DRAWS_H
#define BD_DRAWS_H

#include "native.h"
#include "rng.h"

/* D_USER and after: drawn by a user (bd_user_draw, tpcc.c), which they read more than the generator
 * of: its own values, or values drawn before them in the step. D_FILLED: a slot its draw (the one
 * before it) fills, as a draw of several values does. D_CAPTURED: a slot an execution reads a value
 * back into (Capture), never drawn. */
enum { D_CONST, D_UNIFORM, D_UNIFORM_REAL, D_SPECIAL, D_GAUSSIAN, D_PARETO, D_ZIPF, D_NURAND, D_SEQUENCE,
       D_CHOICE, D_RANDSTR, D_DIGITS, D_USER, D_FILLED, D_TPCC_ORDER, D_TPCC_REMOTE, D_TPCC_CUSTOMER, D_CAPTURED };

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
    int ref[2];              /* the program's slots of the values it reads (tpcc draws) */
} Draw;

/* a drawn value, as a statement's parameter reads it; text is in buf (owned, grown as needed) */
typedef struct {
    VType t;
    long long i;
    double d;
    char *buf;
    size_t cap, len;
} Slot;

/* NURand(A, x, y) with its C (TPC-C clause 2.1.6): the nurand draw's, and the tpcc draws' */
static inline long long bd_nurand(Rng *r, long long a, long long x, long long y, long long c) {
    long long p = (long long)rng_below(r, (uint64_t)a + 1);
    long long q = x + (long long)rng_below(r, (uint64_t)(y - x) + 1);
    return (((p | q) + c) % (y - x + 1)) + x;
}

static inline void bd_slot_int(Slot *s, long long v) {
    s->t = V_INT;
    s->i = v;
}

BD_INTERNAL int bd_draw_value(const Draw *g, Rng *r, long long *sequence, Slot *s);
BD_INTERNAL int bd_draw_from(PyObject *spec, Draw *g);
BD_INTERNAL void bd_draw_free(Draw *g);
BD_INTERNAL int bd_slot_room(Slot *s, size_t n);
BD_INTERNAL int bd_const_from(PyObject *v, Const *c);

/* tpcc.c: the draws a user makes (D_USER and after) */
BD_INTERNAL int bd_user_draw_from(int kind, PyObject *spec, Draw *g);
BD_INTERNAL int bd_draw_width(int kind);
BD_INTERNAL int bd_user_draw(const Draw *g, Rng *r, const long long *values, int nvalues, Slot *slots, Slot *s);

#endif
