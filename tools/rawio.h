/*
 * rawio.h -- the raw ways of reading a file that a scan is measured
 *            against: a read() loop at a block size, and mmap() in chunks
 *            touching one word per cache line; each optionally with a zlib
 *            crc32 over the bytes, the cost a verifying scan adds.
 *
 * They read a file (every segment of a relation, as the scan does) and
 * return what they saw, so a test can check they really read it all.
 */
#ifndef HEAPSCAN_RAWIO_H
#define HEAPSCAN_RAWIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hserror.h"

typedef struct RawResult {
    uint64_t rr_bytes; /* bytes read or touched */
    uint64_t rr_calls; /* read() or mmap() calls */
    uint64_t rr_sum;   /* sum of the words looked at (keeps the loads alive) */
    uint32_t rr_crc;   /* crc32 of every byte, when asked for */
} RawResult;

/* read() every segment of path with a buffer of block bytes. */
int raw_read(const char *path, size_t block, bool crc, RawResult *r, HsError *err);

/*
 * mmap() every segment of path in chunks of chunk bytes (0: whole files),
 * load one 8-byte word per 64-byte cache line (or crc32 every byte), unmap.
 */
int raw_mmap(const char *path, size_t chunk, bool crc, RawResult *r, HsError *err);

#endif
