/* Loading: a table's rows drawn and written from C (bench_dsl/native/loader.py: sysbench's tables and
 * a custom workload's `fill`, a range of rows a call, each call on a thread and a connection of its
 * own). The values come from the draws a user's statements use (draws.c), and go out as multi-row
 * INSERTs over the same connection code as a user's. Drawing the rows in Python, and escaping them
 * in the driver, cost the client 1.5 s of CPU for sysbench's 200,000 rows, taken from a server that
 * shares the cores (sysbench's own prepare: 0.16 s). */

#include "user.h"

#define STATEMENT_BYTES (256 * 1024)  /* a statement's rows, but one row longer: under max_allowed_packet */

/* a loader connects as a user does (connection.c), and is no Python object: only the connection's
 * fields of its User are used */
typedef struct {
    User u;
    Draw *draws;
    Slot *slots;
    long long *sequences;
    int n;
    char *sql, *row;        /* the statement, and one row being written */
    size_t sql_cap, row_cap, sql_len, row_len;
} Loader;

static int grow(char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t cap2 = *cap ? *cap : 4096;
    while (cap2 < need) cap2 *= 2;
    char *b = PyMem_RawRealloc(*buf, cap2);
    if (b == NULL) return -1;
    *buf = b;
    *cap = cap2;
    return 0;
}

/* one row's values, as SQL text, into l->row: numbers as they are, text quoted and escaped by the
 * library for the connection's character set, NULL for none. 0, or -1 when out of memory. */
static int write_row(Loader *l, Rng *r) {
    l->row_len = 0;
    if (grow(&l->row, &l->row_cap, 2) < 0) return -1;
    l->row[l->row_len++] = '(';
    for (int k = 0; k < l->n; k++) {
        Slot *s = &l->slots[k];
        if (bd_draw_value(&l->draws[k], r, &l->sequences[k], s) < 0) return -1;
        size_t need = l->row_len + (s->t == V_TEXT ? 2 * s->len + 4 : 40);
        if (grow(&l->row, &l->row_cap, need) < 0) return -1;
        char *p = l->row + l->row_len;
        if (k > 0) *p++ = ',';
        switch (s->t) {
        case V_INT: p += sprintf(p, "%lld", s->i); break;
        case V_REAL: p += sprintf(p, "%.17g", s->d); break;
        case V_TEXT:
            *p++ = '\'';
            p += mysql_real_escape_string(l->u.mysql, p, s->buf, (unsigned long)s->len);
            *p++ = '\'';
            break;
        default: memcpy(p, "NULL", 4); p += 4; break;
        }
        l->row_len = (size_t)(p - l->row);
    }
    l->row[l->row_len++] = ')';
    return 0;
}

static int send_statement(Loader *l, size_t head, unsigned int *code, char *message) {
    if (l->sql_len == head) return OUT_OK;
    if (mysql_real_query(l->u.mysql, l->sql, (unsigned long)l->sql_len) != 0) {
        *code = mysql_errno(l->u.mysql);
        bd_keep(message, mysql_error(l->u.mysql));
        return bd_lost(*code) ? OUT_LOST : OUT_ERROR;
    }
    l->sql_len = head;
    return OUT_OK;
}

static int fill(Loader *l, const char *head, size_t head_len, long long rows, uint64_t seed, unsigned int *code,
                char *message) {
    int rc = bd_connection_open(&l->u, code, message);
    if (rc != OUT_OK) return rc;
    Rng r;
    rng_seed(&r, seed);
    if (grow(&l->sql, &l->sql_cap, STATEMENT_BYTES) < 0) goto oom;
    memcpy(l->sql, head, head_len);
    l->sql_len = head_len;
    for (long long j = 0; j < rows; j++) {
        if (write_row(l, &r) < 0) goto oom;
        if (l->sql_len > head_len && l->sql_len + 1 + l->row_len > STATEMENT_BYTES &&
            (rc = send_statement(l, head_len, code, message)) != OUT_OK)
            return rc;
        if (grow(&l->sql, &l->sql_cap, l->sql_len + 1 + l->row_len) < 0) goto oom;
        if (l->sql_len > head_len) l->sql[l->sql_len++] = ',';
        memcpy(l->sql + l->sql_len, l->row, l->row_len);
        l->sql_len += l->row_len;
    }
    return send_statement(l, head_len, code, message);
oom:
    *code = CR_OUT_OF_MEMORY;
    bd_keep(message, "out of memory for the rows to load");
    return OUT_ERROR;
}

static void loader_free(Loader *l) {
    for (int k = 0; k < l->n; k++) {
        if (l->draws) bd_draw_free(&l->draws[k]);
        if (l->slots) PyMem_RawFree(l->slots[k].buf);
    }
    PyMem_RawFree(l->draws);
    PyMem_RawFree(l->slots);
    PyMem_RawFree(l->sequences);
    PyMem_RawFree(l->sql);
    PyMem_RawFree(l->row);
    bd_connection_options_free(&l->u);
}

/* fill(options, head, draws, rows, seed) -> (outcome, code, message): `rows` rows, each the values
 * of `draws` ((name, *arguments) each, as a Program's: a sequence starts at its first argument),
 * sent after `head` ("INSERT INTO t (a, b) VALUES ") as multi-row statements, on a connection of
 * its own made with a user's options (executor.options), the GIL released. The same rows for the
 * same draws and seed. */
PyObject *bd_fill(PyObject *mod, PyObject *args) {
    PyObject *options, *draws;
    const char *head;
    Py_ssize_t head_len;
    long long rows;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "O!s#O!LK", &PyDict_Type, &options, &head, &head_len, &PyList_Type, &draws, &rows,
                          &seed))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(draws);
    if (n < 1 || n > 4096 || rows < 0 || head_len < 1 || head_len >= STATEMENT_BYTES / 2) {
        PyErr_SetString(PyExc_ValueError, "1 to 4,096 draws, rows from 0, and a statement's head");
        return NULL;
    }
    Loader l;
    memset(&l, 0, sizeof l);
    l.draws = PyMem_RawCalloc((size_t)n, sizeof(Draw));
    l.slots = PyMem_RawCalloc((size_t)n, sizeof(Slot));
    l.sequences = PyMem_RawCalloc((size_t)n, sizeof(long long));
    if (l.draws == NULL || l.slots == NULL || l.sequences == NULL) { loader_free(&l); return PyErr_NoMemory(); }
    for (; l.n < n; l.n++) {
        if (bd_draw_from(PyList_GET_ITEM(draws, l.n), &l.draws[l.n]) < 0) { l.n++; loader_free(&l); return NULL; }
        l.sequences[l.n] = l.draws[l.n].lo;  /* a sequence's start; the other draws keep none */
    }
    if (bd_connection_options(&l.u, options) < 0 || pthread_mutex_init(&l.u.mu, NULL) != 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_OSError, "pthread_mutex_init");
        loader_free(&l);
        return NULL;
    }
    unsigned int code = 0;
    char message[MESSAGE_MAX] = "";
    int outcome;
    Py_BEGIN_ALLOW_THREADS
    outcome = fill(&l, head, (size_t)head_len, rows, (uint64_t)seed, &code, message);
    bd_connection_close(&l.u);
    Py_END_ALLOW_THREADS
    pthread_mutex_destroy(&l.u.mu);
    loader_free(&l);
    return Py_BuildValue("(iIN)", outcome, code, PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace"));
}
