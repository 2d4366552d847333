/* Hist: one HDR histogram of response times, in the layout of HdrHistogram's (bench_dsl.measure.txstats:
 * 1 us to an hour at 3 significant digits), recorded in C and handed to Python encoded as
 * HdrHistogram's V2 compressed base64 (hdr.c), which hdrh decodes and merges as it merges its own. */

#ifndef BD_HDR_H
#define BD_HDR_H

#include "native.h"

#define HDR_HIGHEST 3600000000LL   /* HIGHEST_US: a longer one is counted as an hour, as Python clips it */
#define HDR_SIGNIFICANT 3
#define HDR_HALF_MAGNITUDE 10      /* sub-buckets of 2,048 (enough for 3 digits), half of them 1,024 */
#define HDR_BUCKETS 22             /* 2,048 x 2^21 > HDR_HIGHEST */
#define HDR_COUNTS ((HDR_BUCKETS + 1) << HDR_HALF_MAGNITUDE)

typedef struct {
    int64_t counts[HDR_COUNTS];
    int64_t total;
    int lo, hi;                    /* the lowest and highest counters recorded into (lo > hi: none) */
} Hist;

/* the counter of a value, as hdrh's _counts_index_for (lowest trackable 1: unit magnitude 0) */
static inline int hdr_index(int64_t v) {
    int bucket = 64 - __builtin_clzll((uint64_t)v | ((1ULL << (HDR_HALF_MAGNITUDE + 1)) - 1)) - (HDR_HALF_MAGNITUDE + 1);
    return ((bucket + 1) << HDR_HALF_MAGNITUDE) + (int)(v >> bucket) - (1 << HDR_HALF_MAGNITUDE);
}

static inline void hdr_record(Hist *h, int64_t us, int64_t n) {
    if (us < 0) us = 0;
    if (us > HDR_HIGHEST) us = HDR_HIGHEST;
    int i = hdr_index(us);
    h->counts[i] += n;
    h->total += n;
    if (i < h->lo) h->lo = i;
    if (i > h->hi) h->hi = i;
}

BD_INTERNAL void bd_hdr_init(Hist *h);
BD_INTERNAL void bd_hdr_reset(Hist *h);
BD_INTERNAL PyObject *bd_hdr_encode(const Hist *h);

#endif
