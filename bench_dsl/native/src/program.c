/* The Python type Program (bench_dsl.native._native.Program): a workload's transactions read from
 * their description (executor.py flattens bench_dsl/language/statements.py's) into program.h's
 * structures, once, before the users run them. */

#include "program.h"

static void program_free(Program *p) {
    for (int k = 0; k < p->nsql; k++) PyMem_RawFree(p->sql[k]);
    PyMem_RawFree(p->sql);
    PyMem_RawFree(p->sqllen);
    PyMem_RawFree(p->nparams);
    for (int k = 0; k < p->ndraws; k++) bd_draw_free(&p->draws[k]);
    PyMem_RawFree(p->draws);
    PyMem_RawFree(p->sequences);
    for (int t = 0; t < p->ntx; t++) {
        Tx *tx = &p->txs[t];
        for (int s = 0; s < tx->nsteps; s++) {
            Step *st = &tx->steps[s];
            for (int e = 0; e < st->nexecs; e++) {
                PyMem_RawFree(st->execs[e].stmt);
                PyMem_RawFree(st->execs[e].params);
                PyMem_RawFree(st->execs[e].caps);
            }
            PyMem_RawFree(st->execs);
            PyMem_RawFree(st->draws);
        }
        PyMem_RawFree(tx->steps);
    }
    PyMem_RawFree(p->txs);
    PyMem_RawFree(p->cum);
    memset((char *)p + sizeof(PyObject), 0, sizeof(Program) - sizeof(PyObject));
}

#define SEQ_CHECK(o, what) \
    if (!PySequence_Check(o)) { PyErr_SetString(PyExc_TypeError, what " is a sequence"); goto fail; }

static int int_item(PyObject *seq, Py_ssize_t k, long long *out) {
    PyObject *o = PySequence_GetItem(seq, k);
    if (o == NULL) return -1;
    *out = PyLong_AsLongLong(o);
    Py_DECREF(o);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static const char *CAPTURES[] = {"insert_id", "rows", "first", "middle", "rows_json", "first_text", NULL};

/* ((slot, kind, column), ...): what an execution reads back, into which slots */
static int parse_captures(Program *p, PyObject *caps, Exec *e) {
    Py_ssize_t n = PySequence_Size(caps);
    if (n < 0) return -1;
    e->caps = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof(Capture));
    if (e->caps == NULL) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *c = PySequence_GetItem(caps, k);
        if (c == NULL) return -1;
        int slot, column;
        const char *kind;
        int ok = PyArg_ParseTuple(c, "isi", &slot, &kind, &column);
        Py_DECREF(c);
        if (!ok) return -1;
        int found = -1;
        for (int j = 0; CAPTURES[j] != NULL; j++)
            if (strcmp(kind, CAPTURES[j]) == 0) found = j;
        if (found < 0) { PyErr_Format(PyExc_ValueError, "no capture named %s", kind); return -1; }
        if (slot < 0 || slot >= p->ndraws || column < 0) { PyErr_SetString(PyExc_IndexError, "no such slot"); return -1; }
        e->caps[k] = (Capture){slot, found, column};
        e->ncaps = (int)k + 1;
    }
    return 0;
}

static int parse_exec(Program *p, PyObject *o, int tables, Exec *e) {
    /* (statements per table, ((slot, plus), ...), outcome, captures, when) */
    PyObject *stmts = NULL, *params = NULL, *caps = NULL;
    e->when = -1;
    if (!PyArg_ParseTuple(o, "OO|pOi", &stmts, &params, &e->outcome, &caps, &e->when)) return -1;
    if (caps != NULL && caps != Py_None && parse_captures(p, caps, e) < 0) return -1;
    if (e->when >= p->ndraws) { PyErr_SetString(PyExc_IndexError, "no such slot"); return -1; }
    Py_ssize_t ns = PySequence_Size(stmts), np = PySequence_Size(params);
    if (ns < 0 || np < 0) return -1;
    if (ns != tables) { PyErr_SetString(PyExc_ValueError, "an execution names one statement per table"); return -1; }
    e->stmt = PyMem_RawCalloc((size_t)ns, sizeof(int));
    e->params = PyMem_RawCalloc((size_t)(np ? np : 1), sizeof(Param));
    if (e->stmt == NULL || e->params == NULL) { PyErr_NoMemory(); return -1; }
    e->nparams = (int)np;
    for (Py_ssize_t k = 0; k < ns; k++) {
        long long v;
        if (int_item(stmts, k, &v) < 0) return -1;
        if (v < 0 || v >= p->nsql) { PyErr_SetString(PyExc_IndexError, "no such statement"); return -1; }
        e->stmt[k] = (int)v;
        if (p->nparams[v] >= 0 && p->nparams[v] != np) {
            PyErr_SetString(PyExc_ValueError, "a statement is given different numbers of values");
            return -1;
        }
        p->nparams[v] = (int)np;
    }
    for (Py_ssize_t k = 0; k < np; k++) {
        PyObject *pair = PySequence_GetItem(params, k);
        if (pair == NULL) return -1;
        long long slot, plus;
        int rc = PyArg_ParseTuple(pair, "LL", &slot, &plus) ? 0 : -1;
        Py_DECREF(pair);
        if (rc < 0) return -1;
        if (slot < 0 || slot >= p->ndraws) { PyErr_SetString(PyExc_IndexError, "no such draw"); return -1; }
        e->params[k].draw = (int)slot;
        e->params[k].plus = plus;
    }
    return 0;
}

/* The draws read: a draw of several values is followed by as many "filled" slots less one, a draw
 * that reads slots reads them drawn before it, and user(k) draws say how many values a user brings. */
static int check_draws(Program *self) {
    for (int k = 0; k < self->ndraws; k++) {
        const Draw *g = &self->draws[k];
        int width = bd_draw_width(g->kind);
        for (int j = 1; j < width; j++)
            if (k + j >= self->ndraws || self->draws[k + j].kind != D_FILLED) {
                PyErr_SetString(PyExc_ValueError, "a draw of several values is followed by its filled slots");
                return -1;
            }
        int refs = g->kind == D_TPCC_ORDER ? 1 : g->kind == D_TPCC_REMOTE ? 2 : 0;
        for (int j = 0; j < refs; j++)
            if (g->ref[j] < 0 || g->ref[j] >= k) {
                PyErr_SetString(PyExc_ValueError, "a draw reads a value drawn before it");
                return -1;
            }
        if (g->kind == D_USER && g->lo + 1 > self->values) self->values = (int)g->lo + 1;
        k += width - 1;
    }
    return 0;
}

/* Program(sql, draws, transactions, weights, pauses=None, autocommit=True): sql a list of statements
 * (? placeholders); draws a list of (name, *arguments); a transaction is (explicit, steps, keep), keep
 * None or (slot a, slot b, plus): it commits when a >= b + plus; a step (count, tables, draws (indexes,
 * drawn anew each repetition), executions), an execution (statement per table, ((draw, plus), ...),
 * outcome, captures ((slot, kind, column), ...), when (a slot, or -1)). A step with tables > 1 draws its
 * table uniformly, once for its repetitions. pauses: per transaction, (keying, think mean, think max)
 * in seconds: each user waits before each. */
static int Program_init(Program *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"sql", "draws", "transactions", "weights", "pauses", "autocommit", NULL};
    PyObject *sql, *draws, *txs, *weights, *pauses = Py_None;
    int autocommit = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO|Op", kwlist, &sql, &draws, &txs, &weights, &pauses,
                                     &autocommit))
        return -1;
    program_free(self);
    SEQ_CHECK(sql, "sql");
    SEQ_CHECK(draws, "draws");
    SEQ_CHECK(txs, "transactions");
    SEQ_CHECK(weights, "weights");
    Py_ssize_t nsql = PySequence_Size(sql), nd = PySequence_Size(draws), nt = PySequence_Size(txs);
    if (nt < 1 || PySequence_Size(weights) != nt) {
        PyErr_SetString(PyExc_ValueError, "one weight per transaction type, and at least one type");
        goto fail;
    }
    self->sql = PyMem_RawCalloc((size_t)nsql + 1, sizeof(char *));
    self->sqllen = PyMem_RawCalloc((size_t)nsql + 1, sizeof(unsigned long));
    self->nparams = PyMem_RawCalloc((size_t)nsql + 1, sizeof(int));
    self->draws = PyMem_RawCalloc((size_t)nd + 1, sizeof(Draw));
    self->sequences = PyMem_RawCalloc((size_t)nd + 1, sizeof(long long));
    self->txs = PyMem_RawCalloc((size_t)nt, sizeof(Tx));
    self->cum = PyMem_RawCalloc((size_t)nt, sizeof(double));
    if (!self->sql || !self->sqllen || !self->nparams || !self->draws || !self->sequences || !self->txs || !self->cum) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t k = 0; k < nsql; k++) {
        PyObject *o = PySequence_GetItem(sql, k);
        if (o == NULL) goto fail;
        Py_ssize_t n;
        const char *u = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &n) : NULL;
        if (u == NULL) {
            Py_DECREF(o);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a statement is a str");
            goto fail;
        }
        self->sql[k] = PyMem_RawMalloc((size_t)n + 1);
        if (self->sql[k] == NULL) { Py_DECREF(o); PyErr_NoMemory(); goto fail; }
        memcpy(self->sql[k], u, (size_t)n + 1);
        self->sqllen[k] = (unsigned long)n;
        self->nparams[k] = -1;
        self->nsql = (int)k + 1;
        Py_DECREF(o);
    }
    for (Py_ssize_t k = 0; k < nd; k++) {
        PyObject *o = PySequence_GetItem(draws, k);
        if (o == NULL) goto fail;
        self->ndraws = (int)k + 1;
        int rc = bd_draw_from(o, &self->draws[k]);
        Py_DECREF(o);
        if (rc < 0) goto fail;
        if (self->draws[k].kind == D_SEQUENCE) self->sequences[k] = self->draws[k].lo;
    }
    if (check_draws(self) < 0) goto fail;
    double total = 0;
    for (Py_ssize_t t = 0; t < nt; t++) {
        PyObject *o = PySequence_GetItem(txs, t);
        if (o == NULL) goto fail;
        int explicit_;
        PyObject *steps, *keep = Py_None;
        int ok = PyArg_ParseTuple(o, "pO|O", &explicit_, &steps, &keep);
        Tx *tx = &self->txs[t];
        if (ok && keep != Py_None) {
            ok = PyArg_ParseTuple(keep, "iiL", &tx->keep_a, &tx->keep_b, &tx->keep_plus);
            tx->has_keep = 1;
            if (ok && (tx->keep_a < 0 || tx->keep_a >= nd || tx->keep_b < 0 || tx->keep_b >= nd || !explicit_)) {
                PyErr_SetString(PyExc_ValueError, "keep names two slots, of an explicit transaction");
                ok = 0;
            }
        }
        Py_DECREF(o);
        if (!ok) goto fail;
        self->ntx = (int)t + 1;
        tx->explicit_ = explicit_;
        Py_ssize_t ns = PySequence_Size(steps);
        if (ns < 0) goto fail;
        tx->steps = PyMem_RawCalloc((size_t)(ns ? ns : 1), sizeof(Step));
        if (tx->steps == NULL) { PyErr_NoMemory(); goto fail; }
        for (Py_ssize_t s = 0; s < ns; s++) {
            PyObject *so = PySequence_GetItem(steps, s);
            if (so == NULL) goto fail;
            int count, tables;
            PyObject *sdraws, *execs;
            ok = PyArg_ParseTuple(so, "iiOO", &count, &tables, &sdraws, &execs);
            Py_DECREF(so);
            if (!ok) goto fail;
            Step *st = &tx->steps[s];
            tx->nsteps = (int)s + 1;
            if (count < 0 || tables < 1) { PyErr_SetString(PyExc_ValueError, "count >= 0, tables >= 1"); goto fail; }
            st->count = count;
            st->tables = tables;
            Py_ssize_t nsd = PySequence_Size(sdraws), ne = PySequence_Size(execs);
            if (nsd < 0 || ne < 0) goto fail;
            st->draws = PyMem_RawCalloc((size_t)(nsd ? nsd : 1), sizeof(int));
            st->execs = PyMem_RawCalloc((size_t)(ne ? ne : 1), sizeof(Exec));
            if (st->draws == NULL || st->execs == NULL) { PyErr_NoMemory(); goto fail; }
            for (Py_ssize_t k = 0; k < nsd; k++) {
                long long v;
                if (int_item(sdraws, k, &v) < 0) goto fail;
                if (v < 0 || v >= nd) { PyErr_SetString(PyExc_IndexError, "no such draw"); goto fail; }
                st->draws[k] = (int)v;
                st->ndraws = (int)k + 1;
            }
            for (Py_ssize_t k = 0; k < ne; k++) {
                PyObject *eo = PySequence_GetItem(execs, k);
                if (eo == NULL) goto fail;
                st->nexecs = (int)k + 1;
                int rc = parse_exec(self, eo, tables, &st->execs[k]);
                Py_DECREF(eo);
                if (rc < 0) goto fail;
            }
        }
        long long executions = 0;
        for (int k = 0; k < tx->nsteps; k++) executions += (long long)tx->steps[k].count * tx->steps[k].nexecs;
        if (executions == 0 && !tx->explicit_) {
            /* it would spin without a pause, counted as transactions the server never saw */
            PyErr_SetString(PyExc_ValueError, "a transaction executes nothing");
            goto fail;
        }
        PyObject *w = PySequence_GetItem(weights, t);
        if (w == NULL) goto fail;
        double x = PyFloat_AsDouble(w);
        Py_DECREF(w);
        if (x == -1.0 && PyErr_Occurred()) goto fail;
        if (!(x >= 0)) { PyErr_SetString(PyExc_ValueError, "weights are 0 or more"); goto fail; }
        total += x;
        self->cum[t] = total;
    }
    if (!(total > 0)) { PyErr_SetString(PyExc_ValueError, "the weights add up to more than 0"); goto fail; }
    self->autocommit = autocommit;
    if (pauses != Py_None) {
        if (!PySequence_Check(pauses) || PySequence_Size(pauses) != nt) {
            PyErr_SetString(PyExc_ValueError, "one pause per transaction type");
            goto fail;
        }
        for (Py_ssize_t t = 0; t < nt; t++) {
            PyObject *o = PySequence_GetItem(pauses, t);
            if (o == NULL) goto fail;
            Tx *tx = &self->txs[t];
            int ok = PyArg_ParseTuple(o, "ddd", &tx->keying_s, &tx->think_mean_s, &tx->think_max_s);
            Py_DECREF(o);
            if (!ok) goto fail;
            if (!(tx->keying_s >= 0 && tx->think_mean_s >= 0 && tx->think_max_s >= 0)) {
                PyErr_SetString(PyExc_ValueError, "pauses are 0 s or more");
                goto fail;
            }
        }
        self->paced = 1;
    }
    return 0;
fail:
    program_free(self);
    return -1;
}

static void Program_dealloc(Program *self) {
    program_free(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject bd_ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl.native._native.Program",
    .tp_doc = "A workload's transactions as the users' threads run them.",
    .tp_basicsize = sizeof(Program),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Program_init,
    .tp_dealloc = (destructor)Program_dealloc,
};
