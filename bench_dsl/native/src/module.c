/* The hot path of fixed-statement workloads (sysbench's tests, custom), in C over libmariadb's
 * prepared-statement API, as sysbench's drv_mysql.c runs its threads: each virtual user is a thread
 * of its own that connects with libmariadb (TLS, authentication plugins and compression are the
 * library's), prepares its statements, then loops over transactions with the GIL released, drawing
 * every value in C with a generator seeded per user. Python is called only for what is rare: an
 * error, a lost connection, the end of the run (bench_dsl/native/executor.py applies the policy).
 *
 * Why C and a thread per user: on a machine where the client shares the cores with the server, the
 * client's CPU per transaction is throughput taken from the server, and a thread blocked in recv()
 * on its own socket is woken where its server thread answered (one event loop reading many sockets
 * woke the server's threads across cores: 0.43 rescheduling interrupts per transaction against
 * sysbench's 0.1, measured on 2 cores).
 *
 * Types:
 *   Counts   response times recorded into HDR histograms, and statements, per transaction type
 *            (each user's thread appends records to a lane of its own; take() reads what they
 *            published, the GIL held, never waits for them, and hands each histogram over
 *            encoded); and the quiet spans between completions (a stalled server: see quiet()).
 *   Program  a workload's transactions as data (bench_dsl/language/statements.py, flattened by executor.py):
 *            statements, the values drawn for them, and the weights of the types. Shared by the
 *            users of a process (so are its sequences).
 *   Schedule the arrivals of an open-loop (`rate`) run: due times at a target rate, shared by the
 *            users of a process; each transaction waits for one, and its latency runs from its due
 *            time (what was late because the client or the server was, is counted, not omitted).
 *   User     one virtual user: its connection, prepared statements, generator and loop.
 *
 * Units (one extension module, built from all of them: setup.py lists them; the headers are private):
 *   native.h          what all include: the headers, BD_INTERNAL, now_ns()
 *   hdr.c             an HDR histogram's encoding (hdr.h: its layout and recording)
 *   counts.c          Counts' lanes and queue: the writers (users' threads) and the reader (take())
 *   counts_type.c     the Counts type, and its test-only entry points
 *   rng.h             the generator
 *   draws.c           the draws: what a value is drawn from, and drawing one
 *   program.c         the Program type: a workload's transactions read from Python
 *   schedule.c        the Schedule's timeline and its users' claims
 *   schedule_type.c   the Schedule type, and its test-only entry points
 *   connection.c      a user's connection: options, TLS, transport, the server's identity
 *   statements.c      a user's statements: prepared, bound, executed; one transaction
 *   user.c            the User type and its loop (run())
 *   load.c            a table's rows drawn and written from C (sysbench's tables, `fill`)
 *   testing.c         the threads of the test-only entry points
 *   module.c          this: the module, its functions, and the types registered
 */

#include "user.h"

/* ---------------------------------------------------------------------------------------------- */

/* sample(draw, seed, n) -> list: n values of one draw, from a generator seeded as a user's is; what
 * the tests compare with sysbench's own distributions */
static PyObject *module_sample(PyObject *mod, PyObject *args) {
    PyObject *spec;
    unsigned long long seed;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!Kn", &PyTuple_Type, &spec, &seed, &n)) return NULL;
    Draw g;
    if (bd_draw_from(spec, &g) < 0) { bd_draw_free(&g); return NULL; }
    Rng r;
    rng_seed(&r, (uint64_t)seed);
    long long sequence = g.lo;
    Slot s = {0};
    PyObject *out = PyList_New(n);
    for (Py_ssize_t k = 0; out != NULL && k < n; k++) {
        if (bd_draw_value(&g, &r, &sequence, &s) < 0) { Py_CLEAR(out); PyErr_NoMemory(); break; }
        PyObject *v = s.t == V_INT ? PyLong_FromLongLong(s.i) : s.t == V_REAL ? PyFloat_FromDouble(s.d)
                    : s.t == V_TEXT ? PyUnicode_DecodeUTF8(s.buf, (Py_ssize_t)s.len, "strict") : Py_NewRef(Py_None);
        if (v == NULL) { Py_CLEAR(out); break; }
        PyList_SET_ITEM(out, k, v);
    }
    PyMem_RawFree(s.buf);
    bd_draw_free(&g);
    return out;
}

static PyObject *module_client_version(PyObject *mod, PyObject *unused) {
    return PyUnicode_FromString(mysql_get_client_info());
}

static PyMethodDef module_methods[] = {
    {"sample", module_sample, METH_VARARGS, "sample(draw, seed, n) -> n values of a draw"},
    {"client_version", module_client_version, METH_NOARGS, "libmariadb's version"},
    {"fill", bd_fill, METH_VARARGS,
     "fill(options, head, draws, rows, seed) -> (outcome, code, message): rows of the draws' values sent after "
     "head as multi-row INSERTs, from C on a connection of its own (blocking, the GIL released)"},
    {NULL}};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "bench_dsl.native._native",
    "The hot path of fixed-statement workloads: a thread per user over libmariadb.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    /* once, before any thread: libmariadb's global state (and its TLS library's) */
    if (mysql_library_init(0, NULL, NULL) != 0) {
        PyErr_SetString(PyExc_ImportError, "libmariadb could not initialise");
        return NULL;
    }
    if (PyType_Ready(&bd_CountsType) < 0 || PyType_Ready(&bd_ProgramType) < 0 ||
        PyType_Ready(&bd_ScheduleType) < 0 || PyType_Ready(&bd_UserType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL) return NULL;
    PyTypeObject *types[] = {&bd_CountsType, &bd_ProgramType, &bd_ScheduleType, &bd_UserType};
    const char *names[] = {"Counts", "Program", "Schedule", "User"};
    for (int k = 0; k < 4; k++) {
        Py_INCREF(types[k]);
        if (PyModule_AddObject(m, names[k], (PyObject *)types[k]) < 0) { Py_DECREF(types[k]); Py_DECREF(m); return NULL; }
    }
    PyModule_AddIntConstant(m, "STOPPED", OUT_STOPPED);
    PyModule_AddIntConstant(m, "ERROR", OUT_ERROR);
    PyModule_AddIntConstant(m, "LOST", OUT_LOST);
    PyModule_AddIntConstant(m, "DOUBT", OUT_DOUBT);
    PyModule_AddIntConstant(m, "PREPARE", OUT_PREPARE);
    PyModule_AddIntConstant(m, "ELSEWHERE", OUT_ELSEWHERE);
    return m;
}
