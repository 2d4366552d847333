/* Draws (draws.c): what a value of a statement is drawn from, and the value drawn. */

#ifndef BD_DRAWS_H
#define BD_DRAWS_H

#include "native.h"
#include "rng.h"

enum { D_CONST, D_UNIFORM, D_UNIFORM_REAL, D_SPECIAL, D_GAUSSIAN, D_PARETO, D_ZIPF, D_NURAND, D_SEQUENCE,
       D_CHOICE, D_RANDSTR, D_DIGITS };

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

BD_INTERNAL int bd_draw_value(const Draw *g, Rng *r, long long *sequence, Slot *s);
BD_INTERNAL int bd_draw_from(PyObject *spec, Draw *g);
BD_INTERNAL void bd_draw_free(Draw *g);

#endif
