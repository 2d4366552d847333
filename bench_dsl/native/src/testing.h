/* What the test-only entry points of Counts and Schedule share (tests/unit/test_native_counts.py):
 * a word a thread waits on until another sets it, and many threads at once (testing.c). Nothing in a
 * run calls them. */

#ifndef BD_TESTING_H
#define BD_TESTING_H

#include "native.h"

/* A test's writer threads (Counts._hammer, Schedule._hammer): thread k of them runs `main` on its
 * own Hammer, `first` k, over `each` items, and sets `failed` when out of memory. */
typedef struct {
    void *target;
    long long first, each;
    int failed;
} Hammer;

BD_INTERNAL void bd_word_wait(uint32_t *word);
BD_INTERNAL void bd_word_set(uint32_t *word);
BD_INTERNAL PyObject *bd_hammer_run(void *(*main)(void *), void *target, int threads, long long each);

#endif
