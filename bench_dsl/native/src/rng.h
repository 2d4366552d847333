/* ---------------------------------------------------------------------------------------------- */
/* The generator: xoshiro256** (Blackman and Vigna), seeded through splitmix64. A user's values are */
/* reproducible from the run's seed and the user's number, whatever else runs.                     */
/* Header-only, as static inline functions: inlined where the users draw, as in one unit before.    */

#ifndef BD_RNG_H
#define BD_RNG_H

#include "native.h"

typedef struct { uint64_t s[4]; } Rng;

static inline uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline void rng_seed(Rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_next(Rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* uniform in [0, 1), 53 bits */
static inline double rng_double(Rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* uniform in [0, n), without bias (Lemire's multiply-and-reject); n > 0 */
static inline uint64_t rng_below(Rng *r, uint64_t n) {
    __uint128_t m = (__uint128_t)rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t floor = -n % n;
        while (low < floor) {
            m = (__uint128_t)rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

#endif
