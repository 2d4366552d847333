/* User: one virtual user, what its units share (user.c: the Python type and its loop; connection.c:
 * its connection; statements.c: its statements over it). */

#ifndef BD_USER_H
#define BD_USER_H

#include "native.h"
#include "counts.h"
#include "draws.h"
#include "program.h"
#include "rng.h"
#include "schedule.h"

#define MESSAGE_MAX 512

/* what run() and connect() say */
enum { OUT_OK = 0, OUT_STOPPED = 0, OUT_ERROR = 1, OUT_LOST = 2, OUT_DOUBT = 3, OUT_PREPARE = 4, OUT_ELSEWHERE = 5 };

typedef struct {
    long long i;
    int32_t i32;
    double d;
    unsigned long len;
    int type;                /* the MYSQL_TYPE_ it was last bound as (0 before the first) */
    const void *buffer;      /* and where from */
} Bound;

typedef struct {
    PyObject_HEAD
    Program *program;
    Counts *counts;
    Schedule *schedule;      /* open loop: each transaction waits for an arrival; NULL: closed loop */
    int sched_state;         /* S_OUT, S_IDLE or S_BUSY, under the schedule's mutex */
    long long send, service; /* the transaction's send time; the last one's service time (-1: none) */
    MYSQL *mysql;
    MYSQL_STMT **stmts;
    MYSQL_BIND **binds;      /* per statement */
    Bound **bound;
    char *bound_ok;          /* per statement: its binds are the library's */
    Slot *slots;
    Rng rng;
    int stop;                /* read by the user's thread before each transaction */
    int running;
    pthread_mutex_t mu;      /* guards mysql against interrupt() while it is replaced */
    long long tx, attempt, completed, t0;
    /* the connection's options */
    char *host, *user, *password, *database, *unix_socket, *ssl_mode, *ssl_ca, *ssl_cert, *ssl_key, *charset;
    char *identity_sql, *identity; /* what the server must answer to identity_sql, its values tab-separated */
    unsigned int port, connect_timeout;
    int compress;
    Claim claim;             /* its place among the schedule's waiting users; last: the closed loop's
                              * fields keep the offsets (and cache lines) they had without it */
    int inside;              /* counted in counts as inside a transaction (bench_dsl/measure/stalls.py) */
    Lane *lane;              /* where its thread writes its completions (counts.h) */
    long long *values;       /* its own values, which the program's user(k) draws give */
    int nvalues;
    pthread_cond_t wake;     /* with mu: a pause ends early when the user is stopped */
    double think_s;          /* a paced program's: the think time owed before the next transaction */
} User;

BD_INTERNAL extern PyTypeObject bd_UserType;

/* connection.c */
BD_INTERNAL int bd_connection_options(User *self, PyObject *options);
BD_INTERNAL void bd_connection_options_free(User *self);
BD_INTERNAL int bd_connection_open(User *self, unsigned int *code, char *message);
BD_INTERNAL void bd_connection_close(User *self);
BD_INTERNAL Py_ssize_t bd_keep(char *message, const char *text);
BD_INTERNAL int bd_lost(unsigned int code);

/* statements.c */
BD_INTERNAL int bd_statements_prepare(User *self, unsigned int *code, char *message);
BD_INTERNAL unsigned int bd_simple_query(MYSQL *m, const char *q, unsigned long n);
BD_INTERNAL unsigned int bd_transaction(User *self, char *message, long long *statements, int *rolled_back);

/* load.c */
BD_INTERNAL PyObject *bd_fill(PyObject *mod, PyObject *args);

#endif
