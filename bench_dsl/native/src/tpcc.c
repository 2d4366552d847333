/* ---------------------------------------------------------------------------------------------- */
/* The draws a user makes itself (draws.h: D_USER and after): its own values (user(k): a TPC-C      */
/* terminal's home warehouse), and TPC-C's terminal inputs (clauses 2.4.1 to 2.8.1), which read     */
/* values drawn before them in the step: an order's lines, a payment's customer warehouse and       */
/* district, a customer by id or by last name. bench_dsl/workloads/tpcc/session.py's Inputs draws   */
/* the same inputs for the terminals that run on asyncmy.                                           */

#include "draws.h"

#define ORDER_LINES_MAX 15

int bd_draw_width(int kind) {
    return kind == D_TPCC_ORDER ? 4 : kind == D_TPCC_REMOTE || kind == D_TPCC_CUSTOMER ? 2 : 1;
}

/* (name, *arguments) of a draw of kind D_USER or after. 0, or -1 with an exception set. The fields
 * each kind keeps, by argument:
 *   user(k): lo = k
 *   filled()
 *   tpcc_order(home, warehouses, A, C, items, rollback, remote): ref[0] = home, lo = warehouses,
 *     na = A, nc = C (NURand of the item ids), hi = items, a = the share of orders with an unused
 *     item, b = the share of lines from another warehouse
 *   tpcc_remote(home, district, warehouses, districts, remote): ref = home and district, lo =
 *     warehouses, hi = districts, a = the share of customers of another warehouse
 *   tpcc_customer(by_name, A_last, C_last, A_id, C_id, customers, *syllables): a = the share named by
 *     last name, na and nc the last name's NURand, lo and hi the id's, iters = customers, choices =
 *     the syllables a name is three of (by the digits of its number, in base of their count) */
int bd_user_draw_from(int kind, PyObject *spec, Draw *g) {
    static const int arity[] = {1, 0, 7, 5, -1, 0};
    Py_ssize_t nargs = PyTuple_GET_SIZE(spec) - 1;
    int want = arity[kind - D_USER];
    if ((want >= 0 && nargs != want) || (kind == D_TPCC_CUSTOMER && nargs < 7)) {
        PyErr_Format(PyExc_ValueError, "draw %d takes %d arguments, not %zd", kind, want < 0 ? 7 : want, nargs);
        return -1;
    }
    g->kind = kind;
    g->type = V_INT;
#define LL(k) PyLong_AsLongLong(PyTuple_GET_ITEM(spec, (k) + 1))
#define DBL(k) PyFloat_AsDouble(PyTuple_GET_ITEM(spec, (k) + 1))
    switch (kind) {
    case D_USER:
        g->lo = LL(0);
        if (!PyErr_Occurred() && g->lo < 0) PyErr_SetString(PyExc_ValueError, "user(k): k >= 0");
        break;
    case D_TPCC_ORDER:
        g->ref[0] = (int)LL(0);
        g->lo = LL(1);
        g->na = LL(2);
        g->nc = LL(3);
        g->hi = LL(4);
        g->a = DBL(5);
        g->b = DBL(6);
        if (!PyErr_Occurred() && (g->lo < 1 || g->hi < 1 || g->na < 0))
            PyErr_SetString(PyExc_ValueError, "tpcc_order: warehouses and items >= 1, A >= 0");
        break;
    case D_TPCC_REMOTE:
        g->ref[0] = (int)LL(0);
        g->ref[1] = (int)LL(1);
        g->lo = LL(2);
        g->hi = LL(3);
        g->a = DBL(4);
        if (!PyErr_Occurred() && (g->lo < 1 || g->hi < 1))
            PyErr_SetString(PyExc_ValueError, "tpcc_remote: warehouses and districts >= 1");
        break;
    case D_TPCC_CUSTOMER:
        g->a = DBL(0);
        g->na = LL(1);
        g->nc = LL(2);
        g->lo = LL(3);
        g->hi = LL(4);
        g->iters = (int)LL(5);
        if (PyErr_Occurred()) return -1;
        if (g->na < 0 || g->lo < 0 || g->iters < 1) {
            PyErr_SetString(PyExc_ValueError, "tpcc_customer: A >= 0, customers >= 1");
            return -1;
        }
        g->nchoices = nargs - 6;
        g->choices = PyMem_RawCalloc((size_t)g->nchoices, sizeof(Const));
        if (g->choices == NULL) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t k = 0; k < g->nchoices; k++) {
            if (bd_const_from(PyTuple_GET_ITEM(spec, k + 7), &g->choices[k]) < 0) return -1;
            if (g->choices[k].t != V_TEXT) { PyErr_SetString(PyExc_TypeError, "a syllable is a str"); return -1; }
        }
        break;
    }
#undef LL
#undef DBL
    return PyErr_Occurred() ? -1 : 0;
}

/* a warehouse other than w, uniformly (warehouses >= 2) */
static long long other_warehouse(Rng *r, long long w, long long warehouses) {
    long long o = 1 + (long long)rng_below(r, (uint64_t)(warehouses - 1));
    return o >= w ? o + 1 : o;
}

typedef struct { long long sw, i, q; } Line;

static int line_before(const Line *x, const Line *y) {
    return x->sw != y->sw ? x->sw < y->sw : x->i != y->i ? x->i < y->i : x->q < y->q;
}

/* New-Order's lines (2.4.1.3 to 2.4.1.5), sorted by stock key so that concurrent orders lock stock
 * rows in one order, as JSON [[item, supplying warehouse, quantity], ...]; then their count, whether
 * every line is supplied by the home warehouse, and whether a stock row comes twice */
static int draw_order(const Draw *g, Rng *r, const Slot *slots, Slot *s) {
    long long w = slots[g->ref[0]].i;
    int count = 5 + (int)rng_below(r, 11);
    int rollback = rng_double(r) < g->a;
    Line l[ORDER_LINES_MAX];
    for (int k = 0; k < count; k++) {
        l[k].i = bd_nurand(r, g->na, 1, g->hi, g->nc);
        l[k].sw = g->lo > 1 && rng_double(r) < g->b ? other_warehouse(r, w, g->lo) : w;
        l[k].q = 1 + (long long)rng_below(r, 10);
    }
    if (rollback) l[count - 1].i = g->hi + 1; /* an unused item: the order is rolled back (2.4.1.4) */
    for (int k = 1; k < count; k++) {
        Line x = l[k];
        int j = k;
        for (; j > 0 && line_before(&x, &l[j - 1]); j--) l[j] = l[j - 1];
        l[j] = x;
    }
    int local = 1, repeats = 0;
    for (int k = 0; k < count; k++) {
        local &= l[k].sw == w;
        repeats |= k > 0 && l[k].sw == l[k - 1].sw && l[k].i == l[k - 1].i;
    }
    if (bd_slot_room(&s[0], 64 * ORDER_LINES_MAX + 2) < 0) return -1;
    char *out = s[0].buf;
    size_t n = 0;
    out[n++] = '[';
    for (int k = 0; k < count; k++)
        n += (size_t)snprintf(out + n, s[0].cap - n, "%s[%lld,%lld,%lld]", k ? "," : "", l[k].i, l[k].sw, l[k].q);
    out[n++] = ']';
    s[0].t = V_TEXT;
    s[0].len = n;
    bd_slot_int(&s[1], count);
    bd_slot_int(&s[2], local);
    bd_slot_int(&s[3], repeats);
    return 0;
}

/* Payment's customer warehouse and district: another warehouse's for `remote` of them (2.5.1.2) */
static void draw_remote(const Draw *g, Rng *r, const Slot *slots, Slot *s) {
    long long w = slots[g->ref[0]].i, d = slots[g->ref[1]].i;
    if (g->lo > 1 && rng_double(r) < g->a) {
        bd_slot_int(&s[0], other_warehouse(r, w, g->lo));
        bd_slot_int(&s[1], 1 + (long long)rng_below(r, (uint64_t)g->hi));
    } else {
        bd_slot_int(&s[0], w);
        bd_slot_int(&s[1], d);
    }
}

/* A customer by last name (id 0, the name) or by id (the id, NULL) (2.5.1.2, 2.6.1.2) */
static int draw_customer(const Draw *g, Rng *r, Slot *s) {
    if (rng_double(r) < g->a) {
        long long base = g->nchoices, top = base * base * base - 1;
        long long n = bd_nurand(r, g->na, 0, top, g->nc);
        const Const *part[3] = {&g->choices[n / (base * base)], &g->choices[n / base % base], &g->choices[n % base]};
        size_t len = part[0]->len + part[1]->len + part[2]->len;
        if (bd_slot_room(&s[1], len) < 0) return -1;
        size_t at = 0;
        for (int k = 0; k < 3; k++) {
            memcpy(s[1].buf + at, part[k]->s, part[k]->len);
            at += part[k]->len;
        }
        bd_slot_int(&s[0], 0);
        s[1].t = V_TEXT;
        s[1].len = len;
    } else {
        bd_slot_int(&s[0], bd_nurand(r, g->lo, 1, g->iters, g->hi));
        s[1].t = V_NULL;
    }
    return 0;
}

/* the value(s) of draw g, a user's, into s (its first slot among the user's slots); 0, or -1 when
 * out of memory */
int bd_user_draw(const Draw *g, Rng *r, const long long *values, int nvalues, Slot *slots, Slot *s) {
    switch (g->kind) {
    case D_USER:
        if (g->lo < nvalues) bd_slot_int(s, values[g->lo]);
        else s->t = V_NULL; /* checked when the user is made: never */
        return 0;
    case D_TPCC_ORDER: return draw_order(g, r, slots, s);
    case D_TPCC_REMOTE: draw_remote(g, r, slots, s); return 0;
    case D_TPCC_CUSTOMER: return draw_customer(g, r, s);
    }
    return 0;
}
