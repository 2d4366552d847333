/* The user's statements over its connection: the program's statements prepared, their values bound
 * (as sysbench binds them) and executed, and one transaction of them. */

#include "user.h"

/* prepare the program's statements on the connection just made (no GIL). OUT_OK, OUT_ERROR (the
 * connection failed) or OUT_PREPARE (a statement cannot be prepared: the caller lets the driver meet
 * it); code and message filled. */
int bd_statements_prepare(User *self, unsigned int *code, char *message) {
    Program *p = self->program;
    MYSQL *m = self->mysql;
    if (!p->autocommit && mysql_autocommit(m, 0) != 0) {
        *code = mysql_errno(m);
        bd_keep(message, mysql_error(m));
        return OUT_ERROR;
    }
    for (int k = 0; k < p->nsql; k++) {
        if (p->nparams[k] < 0) continue; /* never executed */
        MYSQL_STMT *st = mysql_stmt_init(m);
        if (st == NULL) {
            *code = CR_OUT_OF_MEMORY;
            bd_keep(message, "out of memory for a statement");
            return OUT_ERROR;
        }
        self->stmts[k] = st;
        if (mysql_stmt_prepare(st, p->sql[k], p->sqllen[k]) != 0) {
            *code = mysql_stmt_errno(st);
            bd_keep(message, mysql_stmt_error(st));
            return bd_lost(*code) ? OUT_ERROR : OUT_PREPARE;
        }
        if ((int)mysql_stmt_param_count(st) != p->nparams[k]) {
            *code = 0;
            snprintf(message, MESSAGE_MAX, "the statement takes %lu values, the workload gives %d: %.200s",
                     mysql_stmt_param_count(st), p->nparams[k], p->sql[k]);
            return OUT_PREPARE;
        }
    }
    return OUT_OK;
}

/* The first column of the first row of the result the statement just produced, as an integer, into
 * *value (left alone when there is no row, or it is NULL); its rows are then read off the wire by the
 * caller. 0, or the error code. */
static unsigned int first_value(MYSQL_STMT *st, long long *value) {
    enum { COLUMNS_MAX = 64 };
    unsigned int n = mysql_stmt_field_count(st);
    if (n > COLUMNS_MAX) n = COLUMNS_MAX; /* never: TPC-C's New-Order answers three */
    MYSQL_BIND b[COLUMNS_MAX];
    char skip[COLUMNS_MAX][8];
    unsigned long len[COLUMNS_MAX];
    my_bool null0 = 0;
    long long v = 0;
    memset(b, 0, sizeof(MYSQL_BIND) * n);
    b[0].buffer_type = MYSQL_TYPE_LONGLONG;
    b[0].buffer = &v;
    b[0].is_null = &null0;
    for (unsigned int k = 1; k < n; k++) { /* the others into a few bytes, truncated: never read */
        b[k].buffer_type = MYSQL_TYPE_STRING;
        b[k].buffer = skip[k];
        b[k].buffer_length = sizeof(skip[k]);
        b[k].length = &len[k];
    }
    if (mysql_stmt_bind_result(st, b) != 0) return mysql_stmt_errno(st);
    int rc = mysql_stmt_fetch(st);
    if (rc == 1) return mysql_stmt_errno(st);
    if ((rc == 0 || rc == MYSQL_DATA_TRUNCATED) && !null0) *value = v;
    return 0;
}

/* The captures of the result the statement just produced, stored (mysql_stmt_store_result), into
 * the user's slots: its row count, a column of its first or middle row (an integer, or the first
 * row's as text; NULL when there is no such row), or all its rows as a JSON array of arrays (NULL
 * when there are none: an execution `when` that slot is sent only if there were). 0, or the error
 * code. */
static unsigned int capture_rows(User *self, MYSQL_STMT *st, const Exec *e) {
    enum { COLUMNS_MAX = 32, TEXT_MAX = 40 };
    if (mysql_stmt_store_result(st) != 0) return mysql_stmt_errno(st);
    unsigned long long rows = mysql_stmt_num_rows(st);
    unsigned int n = mysql_stmt_field_count(st);
    if (n > COLUMNS_MAX) n = COLUMNS_MAX;
    MYSQL_BIND b[COLUMNS_MAX];
    char text[COLUMNS_MAX][TEXT_MAX];
    unsigned long len[COLUMNS_MAX];
    my_bool null[COLUMNS_MAX];
    memset(b, 0, sizeof(MYSQL_BIND) * n);
    for (unsigned int k = 0; k < n; k++) { /* as text, which a JSON number or an integer is read from */
        b[k].buffer_type = MYSQL_TYPE_STRING;
        b[k].buffer = text[k];
        b[k].buffer_length = TEXT_MAX - 1;
        b[k].length = &len[k];
        b[k].is_null = &null[k];
    }
    if (n > 0 && mysql_stmt_bind_result(st, b) != 0) return mysql_stmt_errno(st);
    for (int c = 0; c < e->ncaps; c++) {
        const Capture *cap = &e->caps[c];
        Slot *s = &self->slots[cap->slot];
        if (cap->kind == CAP_ROWS) {
            bd_slot_int(s, (long long)rows);
        } else if (cap->kind == CAP_FIRST || cap->kind == CAP_MIDDLE || cap->kind == CAP_FIRST_TEXT) {
            s->t = V_NULL;
            if (rows == 0 || (unsigned int)cap->column >= n) continue;
            /* the middle one: position n/2 rounded up, counted from 1 (TPC-C 2.5.2.2) */
            mysql_stmt_data_seek(st, cap->kind == CAP_MIDDLE ? (rows - 1) / 2 : 0);
            int rc = mysql_stmt_fetch(st);
            if (rc == 1) return mysql_stmt_errno(st);
            if (rc == MYSQL_NO_DATA || null[cap->column]) continue;
            size_t l = len[cap->column] < TEXT_MAX - 1 ? len[cap->column] : TEXT_MAX - 1;
            text[cap->column][l] = 0;
            if (cap->kind != CAP_FIRST_TEXT) {
                bd_slot_int(s, strtoll(text[cap->column], NULL, 10));
            } else {
                if (bd_slot_room(s, l + 1) < 0) return CR_OUT_OF_MEMORY;
                memcpy(s->buf, text[cap->column], l);
                s->t = V_TEXT;
                s->len = l;
            }
        } else if (cap->kind == CAP_ROWS_JSON) {
            s->t = V_NULL;
            if (rows == 0) continue;
            if (bd_slot_room(s, (size_t)rows * (n * TEXT_MAX + 3) + 2) < 0) return CR_OUT_OF_MEMORY;
            size_t at = 0;
            s->buf[at++] = '[';
            mysql_stmt_data_seek(st, 0);
            for (unsigned long long r = 0; r < rows; r++) {
                int rc = mysql_stmt_fetch(st);
                if (rc == 1) return mysql_stmt_errno(st);
                if (rc == MYSQL_NO_DATA) break;
                s->buf[at++] = r ? ',' : '[';
                if (r) s->buf[at++] = '[';
                for (unsigned int k = 0; k < n; k++) {
                    if (k) s->buf[at++] = ',';
                    size_t l = null[k] ? 4 : len[k] < TEXT_MAX - 1 ? len[k] : TEXT_MAX - 1;
                    memcpy(s->buf + at, null[k] ? "null" : text[k], l);
                    at += l;
                }
                s->buf[at++] = ']';
            }
            s->buf[at++] = ']';
            s->t = V_TEXT;
            s->len = at;
        }
    }
    return 0;
}

/* one execution of statement si with its parameters from the slots (no GIL); 0, or the error code.
 * An execution that says the transaction's outcome (Exec.outcome) sets *rolled_back from it. */
static unsigned int execute(User *self, int si, const Exec *e, int *rolled_back) {
    MYSQL_STMT *st = self->stmts[si];
    MYSQL_BIND *b = self->binds[si];
    Bound *bd = self->bound[si];
    int rebind = !self->bound_ok[si];
    for (int k = 0; k < e->nparams; k++) {
        const Slot *s = &self->slots[e->params[k].draw];
        Bound *x = &bd[k];
        const void *buffer = NULL;
        int type = MYSQL_TYPE_NULL;
        switch (s->t) {
        case V_INT: {
            long long v = s->i + e->params[k].plus;
            if (v >= INT32_MIN && v <= INT32_MAX) {
                /* a key as sysbench binds it (MYSQL_TYPE_LONG): 4 bytes, not 8 */
                x->i32 = (int32_t)v;
                buffer = &x->i32;
                type = MYSQL_TYPE_LONG;
            } else {
                x->i = v;
                buffer = &x->i;
                type = MYSQL_TYPE_LONGLONG;
            }
            break;
        }
        case V_REAL: x->d = s->d + (double)e->params[k].plus; buffer = &x->d; type = MYSQL_TYPE_DOUBLE; break;
        case V_TEXT: x->len = (unsigned long)s->len; buffer = s->buf; type = MYSQL_TYPE_STRING; break;
        default: break;
        }
        if (type != x->type || buffer != x->buffer) {
            rebind = 1;
            x->type = type;
            x->buffer = buffer;
            memset(&b[k], 0, sizeof(MYSQL_BIND));
            b[k].buffer = (void *)buffer;
            b[k].buffer_type = (enum enum_field_types)type;
            if (type == MYSQL_TYPE_STRING) {
                b[k].length = &x->len;
                b[k].buffer_length = s->cap;
            }
        }
    }
    if (rebind) {
        if (mysql_stmt_bind_param(st, b) != 0) return mysql_stmt_errno(st);
        self->bound_ok[si] = 1;
    }
    if (mysql_stmt_execute(st) != 0) return mysql_stmt_errno(st);
    int told = !e->outcome, captured = e->ncaps == 0;
    for (int c = 0; c < e->ncaps; c++)
        if (e->caps[c].kind == CAP_INSERT_ID) bd_slot_int(&self->slots[e->caps[c].slot], (long long)mysql_stmt_insert_id(st));
    for (;;) { /* every result, read to its end */
        if (mysql_stmt_field_count(st) > 0) {
            if (!captured) {
                unsigned int err = capture_rows(self, st, e);
                if (err != 0) return err;
                captured = 1;
            }
            if (!told) {
                long long kept = 1;
                unsigned int err = first_value(st, &kept);
                if (err != 0) return err;
                *rolled_back = kept == 0;
                told = 1;
            }
            /* Rows are never looked at: free_result reads them off the wire and drops each packet
             * where store_result would copy it into a result set first (rows of the range selects
             * are most of what an OLTP client reads). It clears the connection's error before it
             * reads, so an error packet in the middle of the rows, or a lost connection, is then
             * the connection's error, not the statement's. */
            mysql_stmt_free_result(st);
            unsigned int err = mysql_errno(self->mysql);
            if (err != 0) return err;
        }
        if (!mysql_stmt_more_results(st)) break;
        int rc = mysql_stmt_next_result(st);
        if (rc > 0) return mysql_stmt_errno(st);
        if (rc < 0) break;
    }
    return 0;
}

unsigned int bd_simple_query(MYSQL *m, const char *q, unsigned long n) {
    return mysql_real_query(m, q, n) != 0 ? mysql_errno(m) : 0;
}

/* One transaction, drawn and sent (no GIL). 0, or the error code with its message in message;
 * *statements counts what was sent, *rolled_back whether the transaction said it rolled back. */
unsigned int bd_transaction(User *self, char *message, long long *statements, int *rolled_back) {
    Program *p = self->program;
    const Tx *tx = &p->txs[self->tx];
    MYSQL *m = self->mysql;
    unsigned int code = 0;
    *statements = 0;
    if (tx->explicit_ && p->autocommit) {
        if ((code = bd_simple_query(m, "BEGIN", 5)) != 0) { bd_keep(message, mysql_error(m)); return code; }
        (*statements)++;
    }
    for (int s = 0; s < tx->nsteps; s++) {
        const Step *st = &tx->steps[s];
        int table = st->tables > 1 ? (int)rng_below(&self->rng, (uint64_t)st->tables) : 0;
        for (int rep = 0; rep < st->count; rep++) {
            for (int d = 0; d < st->ndraws; d++) {
                int k = st->draws[d];
                const Draw *g = &p->draws[k];
                int rc = g->kind >= D_USER
                    ? bd_user_draw(g, &self->rng, self->values, self->nvalues, self->slots, &self->slots[k])
                    : bd_draw_value(g, &self->rng, &p->sequences[k], &self->slots[k]);
                if (rc < 0) {
                    bd_keep(message, "out of memory for a value");
                    return CR_OUT_OF_MEMORY;
                }
            }
            for (int e = 0; e < st->nexecs; e++) {
                const Exec *ex = &st->execs[e];
                if (ex->when >= 0 && self->slots[ex->when].t <= V_NULL) continue; /* nothing to send it for */
                int si = ex->stmt[table];
                code = execute(self, si, ex, rolled_back);
                if (code != 0) {
                    MYSQL_STMT *failed = self->stmts[si];
                    bd_keep(message, mysql_stmt_errno(failed) ? mysql_stmt_error(failed) : mysql_error(m));
                    return code;
                }
                (*statements)++;
            }
        }
    }
    if (tx->explicit_) {
        int keep = !tx->has_keep || self->slots[tx->keep_a].i >= self->slots[tx->keep_b].i + tx->keep_plus;
        if ((code = keep ? bd_simple_query(m, "COMMIT", 6) : bd_simple_query(m, "ROLLBACK", 8)) != 0) {
            bd_keep(message, mysql_error(m));
            return code;
        }
        *rolled_back |= !keep;
        (*statements)++;
    }
    return 0;
}
