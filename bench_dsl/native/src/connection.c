/* The user's connection: its options, libmariadb's connection with its TLS and the transport the
 * address names, the server's identity checked, and closing it. */

#include "user.h"

static void free_text(char **s) {
    if (*s != NULL) {
        memset(*s, 0, strlen(*s)); /* a password does not outlive its user in memory */
        PyMem_RawFree(*s);
        *s = NULL;
    }
}

/* options[key] as an owned C string (NULL when absent or None); 0, or -1 with an exception set */
static int text_option(PyObject *options, const char *key, char **out) {
    free_text(out);
    PyObject *v = PyDict_GetItemString(options, key); /* borrowed */
    if (v == NULL || v == Py_None) return 0;
    Py_ssize_t n;
    const char *u = PyUnicode_Check(v) ? PyUnicode_AsUTF8AndSize(v, &n) : NULL;
    if (u == NULL) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "option %s is a str", key);
        return -1;
    }
    if ((Py_ssize_t)strlen(u) != n) { PyErr_Format(PyExc_ValueError, "option %s holds a NUL", key); return -1; }
    *out = PyMem_RawMalloc((size_t)n + 1);
    if (*out == NULL) { PyErr_NoMemory(); return -1; }
    memcpy(*out, u, (size_t)n + 1);
    return 0;
}

static int int_option(PyObject *options, const char *key, unsigned int *out, unsigned int fallback) {
    PyObject *v = PyDict_GetItemString(options, key);
    if (v == NULL || v == Py_None) { *out = fallback; return 0; }
    long x = PyLong_AsLong(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    *out = (unsigned int)x;
    return 0;
}

/* the options of User(): each of them, into the user (the texts owned); 0, or -1 with an exception set */
int bd_connection_options(User *self, PyObject *options) {
    if (text_option(options, "host", &self->host) < 0 || text_option(options, "user", &self->user) < 0 ||
        text_option(options, "password", &self->password) < 0 || text_option(options, "database", &self->database) < 0 ||
        text_option(options, "unix_socket", &self->unix_socket) < 0 ||
        text_option(options, "ssl_mode", &self->ssl_mode) < 0 || text_option(options, "ssl_ca", &self->ssl_ca) < 0 ||
        text_option(options, "ssl_cert", &self->ssl_cert) < 0 || text_option(options, "ssl_key", &self->ssl_key) < 0 ||
        text_option(options, "charset", &self->charset) < 0 ||
        text_option(options, "identity_sql", &self->identity_sql) < 0 ||
        text_option(options, "identity", &self->identity) < 0 ||
        int_option(options, "port", &self->port, 3306) < 0 ||
        int_option(options, "connect_timeout", &self->connect_timeout, 10) < 0)
        return -1;
    unsigned int compress;
    if (int_option(options, "compress", &compress, 0) < 0) return -1;
    self->compress = compress != 0;
    return 0;
}

/* the texts of the options freed, a password wiped first */
void bd_connection_options_free(User *self) {
    char **texts[] = {&self->host, &self->user, &self->password, &self->database, &self->unix_socket,
                      &self->ssl_mode, &self->ssl_ca, &self->ssl_cert, &self->ssl_key, &self->charset,
                      &self->identity_sql, &self->identity};
    for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) free_text(texts[k]);
}

/* the statements and the connection closed, if any (no GIL); mysql is cleared under mu (interrupt()) */
void bd_connection_close(User *self) {
    Program *p = self->program;
    if (self->stmts != NULL) {
        for (int k = 0; p != NULL && k < p->nsql; k++)
            if (self->stmts[k] != NULL) mysql_stmt_close(self->stmts[k]);
        memset(self->stmts, 0, sizeof(MYSQL_STMT *) * (size_t)(p ? p->nsql : 0));
    }
    if (self->bound_ok != NULL && p != NULL) memset(self->bound_ok, 0, (size_t)p->nsql);
    pthread_mutex_lock(&self->mu);
    MYSQL *m = self->mysql;
    self->mysql = NULL;
    pthread_mutex_unlock(&self->mu);
    if (m != NULL) mysql_close(m);
}

/* text into message (MESSAGE_MAX), truncated if need be; its length */
Py_ssize_t bd_keep(char *message, const char *text) {
    size_t n = strlen(text);
    if (n >= MESSAGE_MAX) n = MESSAGE_MAX - 1;
    memcpy(message, text, n);
    message[n] = 0;
    return (Py_ssize_t)n;
}

/* the connection cannot go on: lost, or any error of the client library itself (2000-2999: out of
 * sync, a packet it could not read...), after which the session's state is unknown */
int bd_lost(unsigned int code) {
    return code >= CR_MIN_ERROR && code <= CR_MAX_ERROR;
}

/* the TLS options of the address, as the mysql client reads --ssl-mode (dsn.py has checked them:
 * VERIFY_* always comes with ssl-ca, files never without a mode) */
static void set_tls(User *self, MYSQL *m) {
    const char *mode = self->ssl_mode;
    if (mode == NULL || strcmp(mode, "DISABLED") == 0 || strcmp(mode, "PREFERRED") == 0) return; /* plain */
    my_bool yes = 1, no = 0;
    int verify_ca = strcmp(mode, "VERIFY_CA") == 0, verify_identity = strcmp(mode, "VERIFY_IDENTITY") == 0;
    /* REQUIRED: encrypted, nothing verified (libmariadb checks the chain whenever it is given a CA,
     * so the CA is given only from VERIFY_CA up); VERIFY_IDENTITY: the host name too */
    mysql_ssl_set(m, self->ssl_key, self->ssl_cert, verify_ca || verify_identity ? self->ssl_ca : NULL, NULL, NULL);
    mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &yes);
    mysql_optionsv(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, verify_identity ? &yes : &no);
}

/* OUT_OK when the server answers identity_sql with `identity`; OUT_ELSEWHERE with what it answered
 * in message; OUT_ERROR when it could not be asked (no GIL) */
static int same_server(User *self, MYSQL *m, unsigned int *code, char *message) {
    if (mysql_real_query(m, self->identity_sql, (unsigned long)strlen(self->identity_sql)) != 0) {
        *code = mysql_errno(m);
        bd_keep(message, mysql_error(m));
        return OUT_ERROR;
    }
    MYSQL_RES *res = mysql_store_result(m);
    if (res == NULL) {
        *code = mysql_errno(m);
        bd_keep(message, *code ? mysql_error(m) : "no answer to the server's identity");
        return OUT_ERROR;
    }
    MYSQL_ROW row = mysql_fetch_row(res);
    unsigned long *lengths = mysql_fetch_lengths(res);
    unsigned int n = mysql_num_fields(res);
    char found[4352]; /* a host name, a port and a data directory (PATH_MAX) */
    size_t at = 0;
    for (unsigned int k = 0; row != NULL && k < n; k++) { /* truncated to the buffer: a long answer differs */
        if (k > 0 && at < sizeof(found) - 1) found[at++] = '\t';
        size_t len = row[k] ? (size_t)lengths[k] : 0, room = sizeof(found) - 1 - at;
        if (len > room) len = room;
        if (len) memcpy(found + at, row[k], len);
        at += len;
    }
    found[at] = 0;
    mysql_free_result(res);
    if (row != NULL && strcmp(found, self->identity) == 0) return OUT_OK;
    *code = 0;
    bd_keep(message, found);
    return OUT_ELSEWHERE;
}

/* A user's reads block in recv(): libmariadb's socket transport reads with MSG_DONTWAIT and, when
 * nothing has arrived yet (nearly always: the server is still working), poll()s and reads again. Three
 * system calls for every answer where one does, at a cost the client pays on each statement (measured
 * at 64 users: 4 calls a transaction for 2, 15% less client CPU per transaction). The socket is a
 * blocking one once connected; a read that still finds nothing (a read timeout set on the socket, or
 * a transport left non-blocking) goes to the library's own read, which waits as it always did. Only
 * for the library's plain socket transport: a TLS or other transport keeps its own reads. */
#if defined(MARIADB_PACKAGE_VERSION_ID) && __has_include(<ma_pvio.h>)
#include <ma_pvio.h>
#define BD_BLOCKING_READS 1

static PVIO_METHODS blocking_methods;      /* the socket transport's, with read replaced */
static PVIO_METHODS *socket_methods;       /* the socket transport's own */
static pthread_mutex_t methods_mu = PTHREAD_MUTEX_INITIALIZER;

static ssize_t blocking_read(MARIADB_PVIO *pvio, uchar *buffer, size_t length) {
    my_socket fd;
    if (socket_methods->get_handle(pvio, &fd) == 0) {
        ssize_t r;
        do r = recv(fd, buffer, length, 0); while (r == -1 && errno == EINTR);
        if (r != -1 || (errno != EAGAIN && errno != EWOULDBLOCK)) return r;
    }
    return socket_methods->read(pvio, buffer, length);
}

static void use_blocking_reads(MYSQL *m) {
    MARIADB_PVIO *pvio = m->net.pvio;
    if (pvio == NULL || pvio->ctls != NULL || pvio->methods == NULL || pvio->methods->read == NULL ||
        pvio->methods->get_handle == NULL || (pvio->type != PVIO_TYPE_SOCKET && pvio->type != PVIO_TYPE_UNIXSOCKET))
        return;
    pthread_mutex_lock(&methods_mu);
    if (socket_methods == NULL && pvio->methods != &blocking_methods) {
        socket_methods = pvio->methods;
        blocking_methods = *socket_methods;
        blocking_methods.read = blocking_read;
    }
    if (pvio->methods == socket_methods) pvio->methods = &blocking_methods;
    pthread_mutex_unlock(&methods_mu);
}
#else
#define BD_BLOCKING_READS 0
static void use_blocking_reads(MYSQL *m) { (void)m; }
#endif

enum { FIRST_NOT_YET, FIRST_AUTHENTICATED, FIRST_FAILED };
static pthread_mutex_t first_connect = PTHREAD_MUTEX_INITIALIZER;
static int first_state;

/* connect, and ask the server who it is (no GIL). OUT_OK, OUT_ERROR (cannot connect) or OUT_ELSEWHERE
 * (another server than `identity` answered); code and message filled. The connection is the user's
 * (self->mysql, for interrupt()) from the moment it is made, also when it is then refused. */
int bd_connection_open(User *self, unsigned int *code, char *message) {
    MYSQL *m = mysql_init(NULL);
    if (m == NULL) { *code = CR_OUT_OF_MEMORY; bd_keep(message, "out of memory for a connection"); return OUT_ERROR; }
    unsigned int timeout = self->connect_timeout;
    mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    if (self->charset != NULL) mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, self->charset);
    if (self->compress) mysql_optionsv(m, MYSQL_OPT_COMPRESS, NULL);
    set_tls(self, m);
    /* The transport the address names, never the library's guess: libmariadb takes the host
     * "localhost" for its default socket and drops the port, which once sent every user to another
     * server than the one at localhost:PORT (issue 38). A socket only when the address gives one. */
    unsigned int protocol = self->unix_socket ? MYSQL_PROTOCOL_SOCKET : MYSQL_PROTOCOL_TCP;
    mysql_optionsv(m, MYSQL_OPT_PROTOCOL, &protocol);
    const char *host = self->unix_socket ? "localhost" : self->host;
    /* libmariadb loads an authentication plugin (client_ed25519 ...) at the first connection that
     * needs it, and two threads doing so at once fail one of them ("it is already loaded": a
     * loader's connections opening together did). The first connection of the process goes alone;
     * the others wait for it, then go together: after it authenticated, what the server asks for is
     * loaded; after it failed, they try as they always did (never one after another, each waiting
     * for a server that does not answer). */
    int alone = 0;
    if (__atomic_load_n(&first_state, __ATOMIC_ACQUIRE) == FIRST_NOT_YET) {
        pthread_mutex_lock(&first_connect);
        alone = __atomic_load_n(&first_state, __ATOMIC_ACQUIRE) == FIRST_NOT_YET;
        if (!alone) pthread_mutex_unlock(&first_connect);
    }
    MYSQL *connected = mysql_real_connect(m, host, self->user, self->password, self->database, self->port,
                                          self->unix_socket, 0);
    if (alone) {
        __atomic_store_n(&first_state, connected != NULL ? FIRST_AUTHENTICATED : FIRST_FAILED, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&first_connect);
    }
    if (connected == NULL) {
        *code = mysql_errno(m);
        bd_keep(message, mysql_error(m));
        mysql_close(m);
        return OUT_ERROR;
    }
    use_blocking_reads(m);
    pthread_mutex_lock(&self->mu);
    self->mysql = m;
    pthread_mutex_unlock(&self->mu);
    if (self->identity_sql != NULL) return same_server(self, m, code, message);
    return OUT_OK;
}
