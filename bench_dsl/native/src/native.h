/* What every unit of the C executor (the extension module bench_dsl.native._native; module.c has its
 * overview) includes first: the headers, Python.h first, and what all the units use. One extension
 * module built from several units: what a unit shares with the others is bd_-prefixed and declared
 * BD_INTERNAL in the unit's header, so that the module still exports PyInit__native alone and calls
 * between units stay direct under -fPIC (a hidden symbol cannot be interposed: no PLT). */

#ifndef BD_NATIVE_H
#define BD_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <mysql.h>
#include <errmsg.h>

#define BD_INTERNAL __attribute__((visibility("hidden")))

static inline long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
