/* Hist's encoding: HdrHistogram's V2 format (what hdrh's encode() writes and its decode() reads,
 * bench_dsl/measure/hdrwire.py reads without hdrh): a 40-byte header, the counters up to the highest
 * one recorded as ZigZag LEB128-64b9B integers (a run of empty counters as one negative), deflated
 * by zlib behind an 8-byte header, in base64: byte for byte what hdrh's encode() writes. */

#include "hdr.h"
#include <zlib.h>

#define V2_ENCODING_COOKIE 0x1c849313u     /* V2_ENCODING_COOKIE_BASE | 0x10 */
#define V2_COMPRESSION_COOKIE 0x1c849314u  /* V2_COMPRESSION_COOKIE_BASE | 0x10 */
#define PAYLOAD_HEADER 40
#define EXTERNAL_HEADER 8

/* a histogram with nothing recorded, from memory as allocated */
void bd_hdr_init(Hist *h) {
    memset(h->counts, 0, sizeof h->counts);
    h->total = 0;
    h->lo = HDR_COUNTS;
    h->hi = -1;
}

/* emptied again: only the counters between the lowest and the highest recorded are cleared */
void bd_hdr_reset(Hist *h) {
    if (h->hi >= h->lo) memset(&h->counts[h->lo], 0, (size_t)(h->hi - h->lo + 1) * sizeof(int64_t));
    h->total = 0;
    h->lo = HDR_COUNTS;
    h->hi = -1;
}

static unsigned char *put32(unsigned char *p, uint32_t v) {
    for (int k = 3; k >= 0; k--) *p++ = (unsigned char)(v >> (8 * k));
    return p;
}

static unsigned char *put64(unsigned char *p, uint64_t v) {
    for (int k = 7; k >= 0; k--) *p++ = (unsigned char)(v >> (8 * k));
    return p;
}

/* one ZigZag LEB128-64b9B integer: 7 bits a byte, the ninth byte all 8 */
static unsigned char *put_varint(unsigned char *p, int64_t signed_value) {
    uint64_t v = ((uint64_t)signed_value << 1) ^ (uint64_t)(signed_value >> 63);
    for (int k = 0; k < 8; k++) {
        if ((v >> 7) == 0) { *p++ = (unsigned char)v; return p; }
        *p++ = (unsigned char)((v & 0x7f) | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static PyObject *base64_str(const unsigned char *in, size_t n) {
    PyObject *out = PyUnicode_New((Py_ssize_t)((n + 2) / 3 * 4), 127);
    if (out == NULL) return NULL;
    Py_UCS1 *o = PyUnicode_1BYTE_DATA(out);
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = ((uint32_t)in[i] << 16) | ((uint32_t)in[i + 1] << 8) | in[i + 2];
        *o++ = B64[v >> 18]; *o++ = B64[(v >> 12) & 63]; *o++ = B64[(v >> 6) & 63]; *o++ = B64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        *o++ = B64[v >> 18]; *o++ = B64[(v >> 12) & 63];
        *o++ = i + 1 < n ? B64[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    return out;
}

/* The histogram in HdrHistogram's V2 compressed base64, or None when nothing was recorded (as
 * TxStats.to_wire sends none). The GIL held. */
PyObject *bd_hdr_encode(const Hist *h) {
    if (h->total == 0) Py_RETURN_NONE;
    size_t n = (size_t)h->hi + 1;
    size_t raw_max = PAYLOAD_HEADER + n * 9;
    unsigned char *raw = PyMem_Malloc(raw_max);
    if (raw == NULL) return PyErr_NoMemory();
    unsigned char *p = raw + PAYLOAD_HEADER;
    for (size_t i = 0; i < n;) {
        int64_t c = h->counts[i++];
        if (c == 0) {
            int64_t zeros = 1;
            while (i < n && h->counts[i] == 0) { zeros++; i++; }
            p = put_varint(p, -zeros);  /* a run of one too, as hdrh writes it */
        } else {
            p = put_varint(p, c);
        }
    }
    size_t payload = (size_t)(p - raw - PAYLOAD_HEADER);
    double ratio = 1.0;
    uint64_t ratio_bits;
    memcpy(&ratio_bits, &ratio, sizeof ratio_bits);
    unsigned char *q = put32(raw, V2_ENCODING_COOKIE);
    q = put32(q, (uint32_t)payload);
    q = put32(q, 0);                     /* normalizing index offset */
    q = put32(q, HDR_SIGNIFICANT);
    q = put64(q, 1);                     /* lowest trackable */
    q = put64(q, (uint64_t)HDR_HIGHEST);
    put64(q, ratio_bits);                /* integer to double conversion ratio */
    uLongf zlen = compressBound((uLong)(PAYLOAD_HEADER + payload));
    unsigned char *z = PyMem_Malloc(EXTERNAL_HEADER + zlen);
    if (z == NULL) { PyMem_Free(raw); return PyErr_NoMemory(); }
    int rc = compress2(z + EXTERNAL_HEADER, &zlen, raw, (uLong)(PAYLOAD_HEADER + payload), Z_DEFAULT_COMPRESSION);
    PyMem_Free(raw);
    if (rc != Z_OK) { PyMem_Free(z); PyErr_SetString(PyExc_RuntimeError, "zlib could not compress a histogram"); return NULL; }
    put32(put32(z, V2_COMPRESSION_COOKIE), (uint32_t)zlen);
    PyObject *out = base64_str(z, EXTERNAL_HEADER + zlen);
    PyMem_Free(z);
    return out;
}
