/* ---------------------------------------------------------------------------------------------- */
/* User: the Python type bench_dsl.native._native.User, one virtual user, and its loop (run()): its */
/* connection is connection.c's, its statements statements.c's.                                     */

#include "user.h"

static void user_leave(User *self) {
    if (self->inside && self->counts != NULL) bd_counts_leave(self->counts, now_ns());
    self->inside = 0;
}

/* its own values (a sequence of ints), at least as many as the program's user(k) draws read */
static int user_values(User *self, PyObject *values, int needed) {
    Py_ssize_t n = values == Py_None ? 0 : PySequence_Size(values);
    if (n < 0) return -1;
    if (n < needed) {
        PyErr_Format(PyExc_ValueError, "the program's draws read %d values of the user's, it has %zd", needed, n);
        return -1;
    }
    self->values = PyMem_RawCalloc((size_t)n + 1, sizeof(long long));
    if (self->values == NULL) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = PySequence_GetItem(values, k);
        if (o == NULL) return -1;
        self->values[k] = PyLong_AsLongLong(o);
        Py_DECREF(o);
        if (self->values[k] == -1 && PyErr_Occurred()) return -1;
    }
    self->nvalues = (int)n;
    return 0;
}

/* User(program, counts, seed, options, schedule=None, values=()): options is a dict of host, port,
 * user, password, database, unix_socket, ssl_mode, ssl_ca, ssl_cert, ssl_key, compress,
 * connect_timeout, and identity_sql with identity: the one-row answer every connection must get to
 * it. With a Schedule, each transaction starts at an arrival and its latency runs from the arrival's
 * due time. values: the user's own, which the program's user(k) draws give (a terminal's warehouse). */
static int User_init(User *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"program", "counts", "seed", "options", "schedule", "values", NULL};
    PyObject *program, *counts, *options, *schedule = Py_None, *values = Py_None;
    unsigned long long seed;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!KO!|OO", kwlist, &bd_ProgramType, &program, &bd_CountsType,
                                     &counts, &seed, &PyDict_Type, &options, &schedule, &values))
        return -1;
    if (self->program != NULL) { PyErr_SetString(PyExc_RuntimeError, "a User is initialised once"); return -1; }
    if (schedule != Py_None && (!PyObject_TypeCheck(schedule, &bd_ScheduleType) || !((Schedule *)schedule)->ready)) {
        PyErr_SetString(PyExc_TypeError, "schedule is an initialised Schedule or None");
        return -1;
    }
    Program *p = (Program *)program;
    if (p->ntx < 1) { PyErr_SetString(PyExc_ValueError, "the program is not initialised"); return -1; }
    if (((Counts *)counts)->n < p->ntx) { PyErr_SetString(PyExc_ValueError, "fewer counts than transaction types"); return -1; }
    if (pthread_mutex_init(&self->mu, NULL) != 0) { PyErr_SetString(PyExc_OSError, "pthread_mutex_init"); return -1; }
    pthread_condattr_t attr;
    int cond_rc = pthread_condattr_init(&attr);
    if (cond_rc == 0) cond_rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (cond_rc == 0) cond_rc = pthread_cond_init(&self->wake, &attr);
    pthread_condattr_destroy(&attr);
    if (cond_rc != 0) {
        pthread_mutex_destroy(&self->mu);
        PyErr_SetString(PyExc_OSError, "pthread_cond_init");
        return -1;
    }
    Py_INCREF(program);
    self->program = p;
    self->lane = bd_lane_open((Counts *)counts);
    if (self->lane == NULL) { PyErr_NoMemory(); return -1; }
    Py_INCREF(counts);
    self->counts = (Counts *)counts;
    if (schedule != Py_None) {
        Py_INCREF(schedule);
        self->schedule = (Schedule *)schedule;
    }
    self->service = -1;
    rng_seed(&self->rng, (uint64_t)seed);
    size_t n = (size_t)p->nsql + 1;
    self->stmts = PyMem_RawCalloc(n, sizeof(MYSQL_STMT *));
    self->binds = PyMem_RawCalloc(n, sizeof(MYSQL_BIND *));
    self->bound = PyMem_RawCalloc(n, sizeof(Bound *));
    self->bound_ok = PyMem_RawCalloc(n, 1);
    self->slots = PyMem_RawCalloc((size_t)p->ndraws + 1, sizeof(Slot));
    if (!self->stmts || !self->binds || !self->bound || !self->bound_ok || !self->slots) { PyErr_NoMemory(); return -1; }
    for (int k = 0; k < p->nsql; k++) {
        int np = p->nparams[k] > 0 ? p->nparams[k] : 1;
        self->binds[k] = PyMem_RawCalloc((size_t)np, sizeof(MYSQL_BIND));
        self->bound[k] = PyMem_RawCalloc((size_t)np, sizeof(Bound));
        if (!self->binds[k] || !self->bound[k]) { PyErr_NoMemory(); return -1; }
    }
    if (user_values(self, values, p->values) < 0) return -1;
    return bd_connection_options(self, options);
}

static int User_traverse(User *self, visitproc visit, void *arg) {
    Py_VISIT(self->program);
    Py_VISIT(self->counts);
    Py_VISIT(self->schedule);
    return 0;
}

static void User_dealloc(User *self) {
    PyObject_GC_UnTrack(self);
    Program *p = self->program;
    if (p != NULL) {
        bd_connection_close(self);
        pthread_mutex_destroy(&self->mu);
        pthread_cond_destroy(&self->wake);
        for (int k = 0; k < p->nsql; k++) {
            if (self->binds) PyMem_RawFree(self->binds[k]);
            if (self->bound) PyMem_RawFree(self->bound[k]);
        }
        for (int k = 0; self->slots && k < p->ndraws; k++) PyMem_RawFree(self->slots[k].buf);
    }
    PyMem_RawFree(self->stmts);
    PyMem_RawFree(self->binds);
    PyMem_RawFree(self->bound);
    PyMem_RawFree(self->bound_ok);
    PyMem_RawFree(self->slots);
    PyMem_RawFree(self->values);
    bd_connection_options_free(self);
    user_leave(self);
    if (self->lane != NULL && bd_lane_close(self->counts, self->lane) < 0) PyErr_WriteUnraisable((PyObject *)self);
    self->lane = NULL;
    Py_CLEAR(self->program);
    Py_CLEAR(self->counts);
    Py_CLEAR(self->schedule);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* connect and prepare (no GIL). OUT_OK, OUT_ERROR (cannot connect), OUT_ELSEWHERE (another server than
 * `identity` answered) or OUT_PREPARE (a statement cannot be
 * prepared: the caller lets the driver meet it); code and message filled. */
static int user_connect(User *self, unsigned int *code, char *message) {
    int rc = bd_connection_open(self, code, message);
    return rc != OUT_OK ? rc : bd_statements_prepare(self, code, message);
}

static PyObject *User_connect(User *self, PyObject *unused) {
    if (self->program == NULL) { PyErr_SetString(PyExc_ValueError, "User not initialised"); return NULL; }
    if (self->running) { PyErr_SetString(PyExc_RuntimeError, "already running"); return NULL; }
    self->running = 1;
    bd_connection_close(self);
    unsigned int code = 0;
    char message[MESSAGE_MAX] = "";
    int outcome;
    Py_BEGIN_ALLOW_THREADS
    outcome = user_connect(self, &code, message);
    if (outcome == OUT_ERROR || outcome == OUT_ELSEWHERE) bd_connection_close(self);
    Py_END_ALLOW_THREADS
    self->running = 0;
    return Py_BuildValue("(iIN)", outcome, code, PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace"));
}

/* A paced program's wait before transaction tx (no GIL): the think time owed, then tx's keying time,
 * and the think time owed after it drawn. 0, or 1 when the user was stopped meanwhile. */
static int user_pause(User *self, const Tx *tx) {
    double wait_s = self->think_s + tx->keying_s;
    double u = rng_double(&self->rng);
    double think = -log(1.0 - u) * tx->think_mean_s;
    self->think_s = think < tx->think_max_s ? think : tx->think_max_s;
    long long until = now_ns() + (long long)(wait_s * 1e9);
    struct timespec ts = {until / 1000000000LL, until % 1000000000LL};
    pthread_mutex_lock(&self->mu);
    while (!__atomic_load_n(&self->stop, __ATOMIC_RELAXED) && now_ns() < until)
        if (pthread_cond_timedwait(&self->wake, &self->mu, &ts) == ETIMEDOUT) break;
    pthread_mutex_unlock(&self->mu);
    return __atomic_load_n(&self->stop, __ATOMIC_RELAXED);
}

/* a pause under way ends (any thread) */
static void user_wake(User *self) {
    pthread_mutex_lock(&self->mu);
    pthread_cond_broadcast(&self->wake);
    pthread_mutex_unlock(&self->mu);
}

/* run(retry) -> (outcome, code, message): transactions until one of them fails or `stop` is set.
 * retry: start again the transaction that failed (its type, start time and attempt kept). */
static PyObject *User_run(User *self, PyObject *args) {
    int retry;
    if (!PyArg_ParseTuple(args, "p", &retry)) return NULL;
    if (self->program == NULL) { PyErr_SetString(PyExc_ValueError, "User not initialised"); return NULL; }
    if (self->running) { PyErr_SetString(PyExc_RuntimeError, "already running"); return NULL; }
    if (self->mysql == NULL) return Py_BuildValue("(iIs)", OUT_LOST, (unsigned int)CR_SERVER_LOST, "not connected");
    self->running = 1;
    int outcome = OUT_STOPPED;
    unsigned int code = 0;
    char message[MESSAGE_MAX] = "";
    const char *bad = NULL;
    Counts *counts = self->counts;
    Schedule *sched = __atomic_load_n(&self->schedule, __ATOMIC_ACQUIRE);
    int slack = 0;
    int inside = self->inside;
    Py_BEGIN_ALLOW_THREADS
    if (sched != NULL && retry) bd_sched_resume(sched, &self->sched_state);
    for (;;) {
        if (!retry) {
            if (__atomic_load_n(&self->stop, __ATOMIC_RELAXED)) break;
            self->tx = pick_tx(self->program, &self->rng);
            self->attempt = 0;
            /* a schedule may be given while the user runs closed-loop (once, never taken back) */
            if (sched == NULL) sched = __atomic_load_n(&self->schedule, __ATOMIC_ACQUIRE);
            if (sched == NULL) {
                if (self->program->paced) {
                    /* a terminal's keying and think time: out of its response time, and out of
                     * the transactions (a quiet spell of paused users is no stall) */
                    if (inside) bd_counts_leave(counts, now_ns());
                    inside = 0;
                    if (user_pause(self, &self->program->txs[self->tx])) break;
                }
                self->t0 = now_ns();
            } else {
                if (!slack) {
                    /* due times kept to the microsecond: the kernel's default slack (50 us late on
                     * every wakeup) would be lag of the client's own making, at every rate */
                    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
                    slack = 1;
                }
                int got = bd_sched_claim(sched, &self->claim, &self->stop, &self->sched_state, &self->service,
                                         &self->t0, &self->send, counts, &inside);
                if (got < 0) { bad = "out of memory for an arrival's times"; break; }
                if (got == 0) break;
            }
        }
        if (!inside) {  /* a closed loop's user once per run(), an open loop's after a sleep */
            bd_counts_enter(counts, retry ? now_ns() : sched != NULL ? self->send : self->t0);
            inside = 1;
        }
        retry = 0;
        long long statements;
        int rolled_back = 0;
        code = bd_transaction(self, message, &statements, &rolled_back);
        if (code == 0) {
            long long end = now_ns();
            if (bd_lane_add(counts, self->lane, self->tx, (end - self->t0) / 1000, statements, end, rolled_back) < 0) {
                bad = "out of memory for a transaction's count";
                break;
            }
            if (sched != NULL) self->service = end - self->send;
            self->completed++;
            continue;
        }
        if (code == CR_OUT_OF_MEMORY) { bad = "out of memory"; break; }
        outcome = bd_lost(code) ? OUT_LOST : OUT_ERROR;
        if (outcome == OUT_ERROR && self->program->txs[self->tx].explicit_) {
            /* inside a transaction: rolled back before anything else; if that fails, the session is
             * in doubt and the first error is the one reported */
            unsigned int rc = bd_simple_query(self->mysql, "ROLLBACK", 8);
            if (rc != 0) outcome = bd_lost(rc) ? OUT_LOST : OUT_DOUBT;
            if (rc != 0 && bd_lost(rc)) { code = rc; bd_keep(message, mysql_error(self->mysql)); }
        }
        break;
    }
    if (sched != NULL && bd_sched_leave(sched, &self->sched_state, &self->service) < 0) bad = "out of memory";
    /* stopped: it waits on nothing; after an error it stays inside, retrying or reconnecting (a
     * server that cannot be reached is waited on) */
    self->inside = inside;
    if (outcome == OUT_STOPPED) user_leave(self);
    Py_END_ALLOW_THREADS
    self->running = 0;
    if (bad != NULL) return PyErr_NoMemory();
    return Py_BuildValue("(iIN)", outcome, code, PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace"));
}

/* Wakes the user's thread out of a blocking call (from another thread): the socket is shut down,
 * not closed, so its descriptor cannot name another connection before close(). */
static PyObject *User_interrupt(User *self, PyObject *unused) {
    __atomic_store_n(&self->stop, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&self->mu);
    if (self->mysql != NULL) {
        my_socket fd = mysql_get_socket(self->mysql);
        if ((int)fd >= 0) shutdown(fd, SHUT_RDWR);
    }
    pthread_cond_broadcast(&self->wake); /* pausing */
    pthread_mutex_unlock(&self->mu);
    if (self->schedule != NULL) bd_sched_wake(self->schedule, &self->claim); /* waiting for an arrival */
    Py_RETURN_NONE;
}

static PyObject *User_close(User *self, PyObject *unused) {
    if (self->running) { PyErr_SetString(PyExc_RuntimeError, "close() while running"); return NULL; }
    user_leave(self);
    if (self->program != NULL) {
        Py_BEGIN_ALLOW_THREADS
        bd_connection_close(self);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyObject *User_query_value(User *self, PyObject *args) {
    /* the first column of the first row of a text query, or None: for tests and the run's record of
     * the session (Ssl_cipher, CONNECTION_ID()) */
    const char *q;
    if (!PyArg_ParseTuple(args, "s", &q)) return NULL;
    if (self->running || self->mysql == NULL) { PyErr_SetString(PyExc_RuntimeError, "not connected, or running"); return NULL; }
    if (mysql_query(self->mysql, q) != 0) {
        PyErr_Format(PyExc_RuntimeError, "(%u) %s", mysql_errno(self->mysql), mysql_error(self->mysql));
        return NULL;
    }
    MYSQL_RES *res = mysql_store_result(self->mysql);
    if (res == NULL) Py_RETURN_NONE;
    MYSQL_ROW row = mysql_fetch_row(res);
    PyObject *out = row != NULL && row[0] != NULL ? PyUnicode_DecodeUTF8(row[0], (Py_ssize_t)strlen(row[0]), "replace")
                                                  : Py_NewRef(Py_None);
    mysql_free_result(res);
    return out;
}

static PyObject *User_get_cipher(User *self, void *closure) {
    const char *c = self->mysql != NULL ? mysql_get_ssl_cipher(self->mysql) : NULL;
    return c != NULL ? PyUnicode_FromString(c) : Py_NewRef(Py_None);
}

static PyObject *User_get_schedule(User *self, void *closure) {
    return Py_NewRef(self->schedule != NULL ? (PyObject *)self->schedule : Py_None);
}

/* A closed-loop user turned open-loop, even while it runs (it reads the pointer before each
 * transaction): once, never undone (its thread may be inside the schedule). */
static int User_set_schedule(User *self, PyObject *value, void *closure) {
    if (value == NULL || !PyObject_TypeCheck(value, &bd_ScheduleType) || !((Schedule *)value)->ready) {
        PyErr_SetString(PyExc_TypeError, "schedule is an initialised Schedule");
        return -1;
    }
    if (self->schedule == (Schedule *)value) return 0;
    if (self->schedule != NULL) { PyErr_SetString(PyExc_ValueError, "the user has a schedule already"); return -1; }
    Py_INCREF(value);
    __atomic_store_n(&self->schedule, (Schedule *)value, __ATOMIC_RELEASE);
    return 0;
}

static PyObject *User_get_stop(User *self, void *closure) {
    return PyBool_FromLong(__atomic_load_n(&self->stop, __ATOMIC_RELAXED));
}

static int User_set_stop(User *self, PyObject *value, void *closure) {
    if (value == NULL) { PyErr_SetString(PyExc_AttributeError, "stop cannot be deleted"); return -1; }
    int v = PyObject_IsTrue(value);
    if (v < 0) return -1;
    __atomic_store_n(&self->stop, v, __ATOMIC_RELAXED);
    if (v && self->program != NULL) user_wake(self); /* pausing */
    if (v && self->schedule != NULL) bd_sched_wake(self->schedule, &self->claim); /* waiting for an arrival */
    return 0;
}

static PyMethodDef User_methods[] = {
    {"connect", (PyCFunction)User_connect, METH_NOARGS,
     "connect() -> (outcome, code, message): connects and prepares (blocking, the GIL released)"},
    {"run", (PyCFunction)User_run, METH_VARARGS,
     "run(retry) -> (outcome, code, message): transactions until an error or the stop (blocking)"},
    {"interrupt", (PyCFunction)User_interrupt, METH_NOARGS, "stop, and wake a blocked call (any thread)"},
    {"close", (PyCFunction)User_close, METH_NOARGS, "close the connection (not while running)"},
    {"query_value", (PyCFunction)User_query_value, METH_VARARGS, "query_value(sql) -> str | None"},
    {NULL}};

static PyMemberDef User_members[] = {
    {"tx", T_LONGLONG, offsetof(User, tx), READONLY, "the transaction type in flight, or last run"},
    {"attempt", T_LONGLONG, offsetof(User, attempt), 0, "attempts of the transaction in flight before this one"},
    {"completed", T_LONGLONG, offsetof(User, completed), READONLY, "transactions completed"},
    {NULL}};

static PyGetSetDef User_getset[] = {
    {"stop", (getter)User_get_stop, (setter)User_set_stop, "no transaction starts once set", NULL},
    {"cipher", (getter)User_get_cipher, NULL, "the connection's TLS cipher, or None", NULL},
    {"schedule", (getter)User_get_schedule, (setter)User_set_schedule,
     "the Schedule its transactions wait for (None: closed loop); set once, even while it runs", NULL},
    {NULL}};

PyTypeObject bd_UserType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench_dsl.native._native.User",
    .tp_doc = "One virtual user: its libmariadb connection, prepared statements, generator and loop.",
    .tp_basicsize = sizeof(User),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)User_init,
    .tp_dealloc = (destructor)User_dealloc,
    .tp_traverse = (traverseproc)User_traverse,
    .tp_methods = User_methods,
    .tp_members = User_members,
    .tp_getset = User_getset,
};
