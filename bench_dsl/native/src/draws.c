/* ---------------------------------------------------------------------------------------------- */
/* Draws: what a value of a statement is drawn from. The distributions of sysbench 1.0 (sb_rand.c): */
/* special, gaussian, pareto, as it computes them; zipf by rejection-inversion (Hörmann and         */
/* Derflinger 1996, as sysbench 1.1's zipfian and Apache Commons RNG); the language's own nurand,  */
/* sequence, choice, randstr; sysbench's c and pad strings (groups of 11 digits joined by dashes). */

#include "draws.h"

static const char *DRAW_NAMES[] = {"const", "uniform", "uniform_real", "special", "gaussian", "pareto", "zipf",
                                   "nurand", "sequence", "choice", "randstr", "digits", "user", "filled",
                                   "tpcc_order", "tpcc_remote", "tpcc_customer", "captured", NULL};

static double zipf_h_integral(double x, double e);
static double zipf_h(double x, double e);
static double zipf_h_integral_inverse(double x, double e);

static double helper1(double x) {
    return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}
static double helper2(double x) {
    return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}
static double zipf_h_integral(double x, double e) {
    double log_x = log(x);
    return helper2((1 - e) * log_x) * log_x;
}
static double zipf_h(double x, double e) { return exp(-e * log(x)); }
static double zipf_h_integral_inverse(double x, double e) {
    double t = x * (1 - e);
    if (t < -1) t = -1;
    return exp(helper1(t) * x);
}

static const char ALNUM[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/* room for n bytes of text in a slot; 0, or -1 when out of memory */
int bd_slot_room(Slot *s, size_t n) {
    if (s->cap >= n && s->buf != NULL) return 0;
    size_t cap = n < 64 ? 64 : n;
    char *b = PyMem_RawRealloc(s->buf, cap);
    if (b == NULL) return -1;
    s->buf = b;
    s->cap = cap;
    return 0;
}

static int put_const(Slot *s, const Const *c) {
    s->t = c->t;
    s->i = c->i;
    s->d = c->d;
    if (c->t == V_TEXT) {
        if (bd_slot_room(s, c->len) < 0) return -1;
        memcpy(s->buf, c->s, c->len);
        s->len = c->len;
    }
    return 0;
}

/* one value of draw g into s (no GIL: nothing Python); 0, or -1 when out of memory */
int bd_draw_value(const Draw *g, Rng *r, long long *sequence, Slot *s) {
    switch (g->kind) {
    case D_CONST:
        return put_const(s, &g->choices[0]);
    case D_UNIFORM:
        s->t = V_INT;
        s->i = g->lo + (long long)rng_below(r, (uint64_t)(g->hi - g->lo) + 1);
        return 0;
    case D_UNIFORM_REAL:
        s->t = V_REAL;
        s->d = g->a + (g->b - g->a) * rng_double(r);
        return 0;
    case D_SPECIAL: { /* sb_rand_special */
        double t = (double)(g->hi - g->lo), rnd = rng_double(r);
        s->t = V_INT;
        if (rnd * (t * g->a) < t) {
            double sum = 0.0;
            for (int k = 0; k < g->iters; k++) sum += rng_double(r);
            s->i = g->lo + (long long)(sum * t / g->iters);
        } else {
            double d = t * g->b;
            s->i = g->lo + (long long)(rnd * (d + 1) + t / 2 - t * g->c);
        }
        return 0;
    }
    case D_GAUSSIAN: { /* sb_rand_gaussian */
        double t = (double)(g->hi - g->lo + 1), sum = 0.0;
        for (int k = 0; k < g->iters; k++) sum += rng_double(r) * t;
        s->t = V_INT;
        s->i = g->lo + (long long)(sum / g->iters);
        return 0;
    }
    case D_PARETO: /* sb_rand_pareto */
        s->t = V_INT;
        s->i = g->lo + (long long)((double)(g->hi - g->lo + 1) * pow(rng_double(r), g->a));
        return 0;
    case D_ZIPF: {
        long long n = g->hi - g->lo + 1;
        double e = g->a;
        for (;;) {
            double u = g->e + rng_double(r) * (g->d - g->e);
            double x = zipf_h_integral_inverse(u, e);
            long long k = (long long)(x + 0.5);
            if (k < 1) k = 1;
            else if (k > n) k = n;
            if (k - x <= g->c || u >= zipf_h_integral(k + 0.5, e) - zipf_h((double)k, e)) {
                s->t = V_INT;
                s->i = g->lo + k - 1;
                return 0;
            }
        }
    }
    case D_NURAND:
        bd_slot_int(s, bd_nurand(r, g->na, g->lo, g->hi, g->nc));
        return 0;
    case D_SEQUENCE:
        s->t = V_INT;
        s->i = __atomic_fetch_add(sequence, 1, __ATOMIC_RELAXED);
        return 0;
    case D_CHOICE:
        return put_const(s, &g->choices[rng_below(r, (uint64_t)g->nchoices)]);
    case D_RANDSTR: {
        size_t n = (size_t)(g->lo + (long long)rng_below(r, (uint64_t)(g->hi - g->lo) + 1));
        if (bd_slot_room(s, n) < 0) return -1;
        for (size_t k = 0; k < n; k++) s->buf[k] = ALNUM[rng_below(r, sizeof(ALNUM) - 1)];
        s->t = V_TEXT;
        s->len = n;
        return 0;
    }
    case D_DIGITS: { /* sb_rand_str("###########-###########...") */
        size_t n = (size_t)(g->lo * 12 - 1);
        if (bd_slot_room(s, n) < 0) return -1;
        for (size_t k = 0; k < n; k++) s->buf[k] = (k % 12 == 11) ? '-' : (char)('0' + rng_below(r, 10));
        s->t = V_TEXT;
        s->len = n;
        return 0;
    }
    }
    return 0; /* D_USER and after: a user's (bd_user_draw), never asked of a loader */
}

/* a Python value as a constant; 0, or -1 with an exception set */
int bd_const_from(PyObject *v, Const *c) {
    memset(c, 0, sizeof(*c));
    if (v == Py_None) { c->t = V_NULL; return 0; }
    if (PyBool_Check(v) || PyLong_Check(v)) {
        c->t = V_INT;
        c->i = PyLong_AsLongLong(v);
        return c->i == -1 && PyErr_Occurred() ? -1 : 0;
    }
    if (PyFloat_Check(v)) { c->t = V_REAL; c->d = PyFloat_AS_DOUBLE(v); return 0; }
    if (PyUnicode_Check(v)) {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(v, &n);
        if (u == NULL) return -1;
        c->s = PyMem_RawMalloc((size_t)n + 1);
        if (c->s == NULL) { PyErr_NoMemory(); return -1; }
        memcpy(c->s, u, (size_t)n + 1);
        c->len = (size_t)n;
        c->t = V_TEXT;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "a constant is None, an int, a float or a str, not %.100s", Py_TYPE(v)->tp_name);
    return -1;
}

static long long arg_ll(PyObject *spec, Py_ssize_t k) {
    PyObject *o = PyTuple_GET_ITEM(spec, k);
    return PyLong_AsLongLong(o);
}

static double arg_d(PyObject *spec, Py_ssize_t k) {
    return PyFloat_AsDouble(PyTuple_GET_ITEM(spec, k));
}

/* A draw from its description: (name, *arguments). 0, or -1 with an exception set. */
int bd_draw_from(PyObject *spec, Draw *g) {
    memset(g, 0, sizeof(*g));
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(spec, 0))) {
        PyErr_SetString(PyExc_TypeError, "a draw is (name, *arguments)");
        return -1;
    }
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(spec, 0));
    if (name == NULL) return -1;
    int kind = -1;
    for (int k = 0; DRAW_NAMES[k] != NULL; k++)
        if (strcmp(name, DRAW_NAMES[k]) == 0) kind = k;
    static const int arity[] = {1, 2, 2, 5, 3, 3, 3, 4, 1, -1, 2, 1};
    Py_ssize_t nargs = PyTuple_GET_SIZE(spec) - 1;
    if (kind < 0) { PyErr_Format(PyExc_ValueError, "no draw named %s", name); return -1; }
    if (kind >= D_USER) return bd_user_draw_from(kind, spec, g);
    if ((arity[kind] >= 0 && nargs != arity[kind]) || (kind == D_CHOICE && nargs < 1)) {
        PyErr_Format(PyExc_ValueError, "%s takes %d arguments, not %zd", name, arity[kind], nargs);
        return -1;
    }
    g->kind = kind;
    g->type = V_INT;
    switch (kind) {
    case D_CONST:
    case D_CHOICE:
        g->choices = PyMem_RawCalloc((size_t)nargs, sizeof(Const));
        if (g->choices == NULL) { PyErr_NoMemory(); return -1; }
        g->nchoices = nargs;
        for (Py_ssize_t k = 0; k < nargs; k++)
            if (bd_const_from(PyTuple_GET_ITEM(spec, k + 1), &g->choices[k]) < 0) return -1;
        g->type = V_NULL;
        break;
    case D_UNIFORM_REAL:
        g->a = arg_d(spec, 1);
        g->b = arg_d(spec, 2);
        g->type = V_REAL;
        break;
    case D_SEQUENCE:
        g->lo = arg_ll(spec, 1);
        break;
    case D_DIGITS:
        g->lo = arg_ll(spec, 1);
        break;
    case D_NURAND:
        g->na = arg_ll(spec, 1);
        g->lo = arg_ll(spec, 2);
        g->hi = arg_ll(spec, 3);
        g->nc = arg_ll(spec, 4);
        break;
    default:
        g->lo = arg_ll(spec, 1);
        g->hi = arg_ll(spec, 2);
    }
    if (PyErr_Occurred()) return -1;
    switch (kind) {
    case D_SPECIAL: {
        double pct = arg_d(spec, 3), res = arg_d(spec, 4);
        g->iters = (int)arg_ll(spec, 5);
        if (PyErr_Occurred()) return -1;
        if (res >= 100 || g->iters < 1) { PyErr_SetString(PyExc_ValueError, "special: res < 100, iters >= 1"); return -1; }
        g->a = 100.0 / (100.0 - res);
        g->b = pct / 100.0;
        g->c = pct / 200.0;
        break;
    }
    case D_GAUSSIAN:
        g->iters = (int)arg_ll(spec, 3);
        if (g->iters < 1) { PyErr_SetString(PyExc_ValueError, "gaussian: iters >= 1"); return -1; }
        break;
    case D_PARETO: {
        double h = arg_d(spec, 3);
        if (!(h > 0 && h < 1)) { PyErr_SetString(PyExc_ValueError, "pareto: 0 < h < 1"); return -1; }
        g->a = log(h) / log(1.0 - h);
        break;
    }
    case D_ZIPF: {
        double e = arg_d(spec, 3);
        if (!(e > 0)) { PyErr_SetString(PyExc_ValueError, "zipf: the exponent is above 0"); return -1; }
        g->a = e;
        g->c = 2 - zipf_h_integral_inverse(zipf_h_integral(2.5, e) - zipf_h(2, e), e);
        g->d = zipf_h_integral(1.5, e) - 1.0;
        g->e = zipf_h_integral((double)(g->hi - g->lo + 1) + 0.5, e);
        break;
    }
    case D_RANDSTR:
        g->type = V_TEXT;
        if (g->lo < 0) { PyErr_SetString(PyExc_ValueError, "randstr: lengths >= 0"); return -1; }
        break;
    case D_DIGITS:
        g->type = V_TEXT;
        if (g->lo < 1) { PyErr_SetString(PyExc_ValueError, "digits: at least one group"); return -1; }
        break;
    case D_NURAND:
        if (g->na < 0) { PyErr_SetString(PyExc_ValueError, "nurand: A >= 0"); return -1; }
        break;
    }
    if (PyErr_Occurred()) return -1;
    if ((kind == D_UNIFORM || kind == D_SPECIAL || kind == D_GAUSSIAN || kind == D_PARETO || kind == D_ZIPF ||
         kind == D_NURAND || kind == D_RANDSTR) && g->lo > g->hi) {
        PyErr_Format(PyExc_ValueError, "%s: the minimum is larger than the maximum", name);
        return -1;
    }
    return 0;
}

void bd_draw_free(Draw *g) {
    for (Py_ssize_t k = 0; k < g->nchoices; k++) PyMem_RawFree(g->choices[k].s);
    PyMem_RawFree(g->choices);
    g->choices = NULL;
    g->nchoices = 0;
}
