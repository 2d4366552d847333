/* Issue 43 section 2's question, measured: would several connections per thread (libmariadb's
 * non-blocking API, MYSQL_OPT_NONBLOCK with mysql_stmt_execute_start/_cont and
 * mysql_stmt_store_result_start/_cont, answered together by one epoll_wait) cost the client less per
 * point select than a thread per connection, as the executor runs today? Both modes here are bare
 * loops: no timing, no counting beyond one atomic add. Run by bench/nonblocking.py, which builds
 * it in a temporary directory, starts a throwaway server and runs sysbench beside it.
 *
 *     nonblocking_probe threads|mux CONNECTIONS THREADS SECONDS HOST PORT USER DATABASE
 *     (the password in $PROBE_PASSWORD: never in argv) */
#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>

static const char *host, *user, *pass, *db; static unsigned port;
static atomic_long done_tx; static atomic_int stop;
static int rows = 10000;

typedef struct { MYSQL *m; MYSQL_STMT *st; MYSQL_BIND pb, rb; int id; char c[130]; unsigned long clen; int state; unsigned rnd; } Conn;

static void conn_open(Conn *c, int nonblock) {
    c->m = mysql_init(NULL);
    if (nonblock) mysql_options(c->m, MYSQL_OPT_NONBLOCK, 0);
    unsigned proto = MYSQL_PROTOCOL_TCP; mysql_options(c->m, MYSQL_OPT_PROTOCOL, &proto);
    if (!mysql_real_connect(c->m, host, user, pass, db, port, NULL, 0)) { fprintf(stderr, "connect: %s\n", mysql_error(c->m)); exit(1); }
    c->st = mysql_stmt_init(c->m);
    const char *q = "SELECT c FROM sbtest1 WHERE id=?";
    if (mysql_stmt_prepare(c->st, q, strlen(q))) { fprintf(stderr, "prepare: %s\n", mysql_stmt_error(c->st)); exit(1); }
    memset(&c->pb, 0, sizeof c->pb); c->pb.buffer_type = MYSQL_TYPE_LONG; c->pb.buffer = &c->id;
    mysql_stmt_bind_param(c->st, &c->pb);
    memset(&c->rb, 0, sizeof c->rb); c->rb.buffer_type = MYSQL_TYPE_STRING; c->rb.buffer = c->c; c->rb.buffer_length = sizeof c->c; c->rb.length = &c->clen;
    mysql_stmt_bind_result(c->st, &c->rb);
    c->rnd = (unsigned)(uintptr_t)c;
}

static void *thread_mode(void *arg) {
    Conn c; conn_open(&c, 0);
    while (!atomic_load(&stop)) {
        c.id = rand_r(&c.rnd) % rows + 1;
        if (mysql_stmt_execute(c.st)) { fprintf(stderr, "exec %s\n", mysql_stmt_error(c.st)); exit(1); }
        mysql_stmt_store_result(c.st);
        while (mysql_stmt_fetch(c.st) == 0) {}
        mysql_stmt_free_result(c.st);
        atomic_fetch_add_explicit(&done_tx, 1, memory_order_relaxed);
    }
    return NULL;
}

typedef struct { int n; } MuxArg;
// state: 0 idle -> start execute; 1 executing; 2 storing
static int step(Conn *c, int status_in) {
    int err, status;
    for (;;) {
        if (c->state == 0) {
            c->id = rand_r(&c->rnd) % rows + 1;
            status = mysql_stmt_execute_start(&err, c->st);
            if (status) { c->state = 1; return status; }
            c->state = 2; status = mysql_stmt_store_result_start(&err, c->st);
            if (status) return status;
        } else if (c->state == 1) {
            status = mysql_stmt_execute_cont(&err, c->st, status_in);
            if (status) return status;
            c->state = 2; status = mysql_stmt_store_result_start(&err, c->st);
            if (status) return status;
        } else {
            status = mysql_stmt_store_result_cont(&err, c->st, status_in);
            if (status) return status;
        }
        while (mysql_stmt_fetch(c->st) == 0) {}
        mysql_stmt_free_result(c->st);
        atomic_fetch_add_explicit(&done_tx, 1, memory_order_relaxed);
        c->state = 0;
        if (atomic_load(&stop)) return 0;
    }
}

static void *mux_mode(void *arg) {
    int n = ((MuxArg *)arg)->n;
    Conn *cs = calloc(n, sizeof(Conn));
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        conn_open(&cs[i], 1);
        struct epoll_event e = {.events = EPOLLIN, .data.ptr = &cs[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, mysql_get_socket(cs[i].m), &e);
    }
    for (int i = 0; i < n; i++) step(&cs[i], 0);
    struct epoll_event evs[256];
    long waits = 0;
    while (!atomic_load(&stop)) {
        int k = epoll_wait(ep, evs, 256, 100);
        waits++;
        for (int j = 0; j < k; j++) {
            Conn *c = evs[j].data.ptr;
            int st = 0;
            if (evs[j].events & EPOLLIN) st |= MYSQL_WAIT_READ;
            if (evs[j].events & EPOLLOUT) st |= MYSQL_WAIT_WRITE;
            int r = step(c, st);
            if (r & MYSQL_WAIT_WRITE) { fprintf(stderr, "write wait\n"); }
        }
    }
    fprintf(stderr, "waits %ld\n", waits);
    return NULL;
}

static double cpu_s(void) { struct rusage r; getrusage(RUSAGE_SELF, &r); return r.ru_utime.tv_sec + r.ru_utime.tv_usec/1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec/1e6; }

int main(int argc, char **argv) {
    pass = getenv("PROBE_PASSWORD");
    if (argc < 9 || pass == NULL) { fprintf(stderr, "usage: see the file's head\n"); return 2; }
    const char *mode = argv[1]; int conns = atoi(argv[2]), threads = atoi(argv[3]), secs = atoi(argv[4]);
    host = argv[5]; port = atoi(argv[6]); user = argv[7]; db = argv[8];
    mysql_library_init(0, NULL, NULL);
    pthread_t t[1024]; MuxArg ma[64];
    if (!strcmp(mode, "threads")) { for (int i = 0; i < conns; i++) pthread_create(&t[i], NULL, thread_mode, NULL); threads = conns; }
    else for (int i = 0; i < threads; i++) { ma[i].n = conns / threads; pthread_create(&t[i], NULL, mux_mode, &ma[i]); }
    sleep(2);
    long tx0 = atomic_load(&done_tx); double c0 = cpu_s();
    sleep(secs);
    long tx1 = atomic_load(&done_tx); double c1 = cpu_s();
    atomic_store(&stop, 1);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double tps = (tx1 - tx0) / (double)secs;
    printf("%s conns=%d threads=%d tps=%.0f cpu_us_per_tx=%.2f\n", mode, conns, threads, tps, (c1 - c0) * 1e6 / (tx1 - tx0));
    return 0;
}
