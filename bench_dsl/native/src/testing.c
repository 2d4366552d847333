/* The test-only entry points' threads (testing.h): nothing in a run calls them. */

#include "testing.h"

void bd_word_wait(uint32_t *word) {
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == 0)
        syscall(SYS_futex, word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0);
}

void bd_word_set(uint32_t *word) {
    __atomic_store_n(word, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
}

/* `threads` threads without the GIL, at once, each its Hammer; returns when all have */
PyObject *bd_hammer_run(void *(*main)(void *), void *target, int threads, long long each) {
    Hammer *hs = PyMem_Calloc((size_t)threads, sizeof(Hammer));
    pthread_t *ids = PyMem_Calloc((size_t)threads, sizeof(pthread_t));
    if (hs == NULL || ids == NULL) { PyMem_Free(hs); PyMem_Free(ids); return PyErr_NoMemory(); }
    int started = 0, failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; started < threads; started++) {
        hs[started] = (Hammer){target, started, each, 0};
        if (pthread_create(&ids[started], NULL, main, &hs[started]) != 0) break;
    }
    for (int k = 0; k < started; k++) {
        pthread_join(ids[k], NULL);
        failed |= hs[k].failed;
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(hs);
    PyMem_Free(ids);
    if (started < threads) { PyErr_SetString(PyExc_OSError, "pthread_create"); return NULL; }
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}
