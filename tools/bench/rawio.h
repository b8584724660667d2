/*
 * rawio.h -- the raw ways of reading a file that a scan is measured
 *            against, written in C so they can be timed in-process and
 *            checked against the commands they mirror:
 *
 *   raw_wc()     lines, words and bytes, as wc(1) counts them in the C locale
 *   raw_lines()  newlines only, as wc -l
 *   raw_read()   a read() loop at a block size, as dd bs=N of=/dev/null
 *   raw_load()   every byte into memory, for timing CPU work without I/O
 *   raw_mmap()   mmap() in chunks, look at the bytes, munmap()
 *   raw_direct() O_DIRECT reads into an aligned buffer, past the page cache
 *   raw_run()    any of them, chosen by RawMethod (rawread and the comparison)
 *
 * Each reads every segment of a relation (FILE, FILE.1, ...; a plain file is
 * its own only segment) and returns what it saw, so tests can check it
 * really read everything.
 */
#ifndef HEAPSCAN_RAWIO_H
#define HEAPSCAN_RAWIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hserror.h"

typedef struct RawResult {
    uint64_t rr_bytes;   /* bytes read or looked at */
    uint64_t rr_calls;   /* read() or mmap() calls that returned data */
    uint64_t rr_full;    /* reads that filled the block (dd's "N+" records) */
    uint64_t rr_partial; /* reads that returned less (dd's "+M" records) */
    uint64_t rr_lines;   /* newlines (wc, lines) */
    uint64_t rr_words;   /* words (wc) */
    uint64_t rr_sum;     /* sum of the words looked at (keeps the loads alive) */
    uint32_t rr_crc;     /* crc32 of every byte, when asked for */
} RawResult;

/* What raw_mmap() does with a mapped chunk. */
typedef enum RawTouch {
    RAW_TOUCH_LINE, /* load one 8-byte word per 64-byte cache line */
    RAW_TOUCH_BYTE, /* load every byte (as 8-byte words) */
    RAW_TOUCH_CRC,  /* crc32 of every byte (crc32.h) */
} RawTouch;

/* "line", "byte", "crc": the names, in the enum's order, NULL after the last. */
extern const char *const raw_touch_names[];
const char *raw_touch_name(RawTouch touch);

/* The readers, for a caller that picks one at run time. */
typedef enum RawMethod {
    RAW_WC,     /* raw_wc() */
    RAW_LINES,  /* raw_lines() */
    RAW_READ,   /* raw_read(), no crc */
    RAW_MMAP,   /* raw_mmap(), every byte touched */
    RAW_DIRECT, /* raw_direct() */
} RawMethod;

/* "wc", "lines", "read", "mmap", "direct", NULL (rawread's --method). */
extern const char *const raw_method_names[];
const char *raw_method_name(RawMethod method);

/*
 * Count as wc(1) in the C locale: lines are '\n's; a word starts at a
 * printable character (isprint) that follows white space (isspace) or the
 * start, and other bytes neither start nor end a word (GNU coreutils 9.1).
 */
int raw_wc(const char *path, RawResult *r, HsError *err);

/* Count '\n's, as wc -l. */
int raw_lines(const char *path, RawResult *r, HsError *err);

/*
 * Read every segment into one buffer of malloc'd memory (*buf, *len; the
 * caller frees it): for timing work on bytes already in memory, with no
 * I/O and no page faults in the timed part.
 */
int raw_load(const char *path, unsigned char **buf, size_t *len, HsError *err);

/* read() every segment with a buffer of block bytes (crc32 them if crc). */
int raw_read(const char *path, size_t block, bool crc, RawResult *r, HsError *err);

/*
 * mmap() every segment in chunks of chunk bytes (0: whole files), touch, unmap.
 * A segment that shrinks under its mapping is an error naming the byte.
 */
int raw_mmap(const char *path, size_t chunk, RawTouch touch, RawResult *r,
             HsError *err);

/* raw_mmap(), calling after_map(segment, arg) between each mmap() and the
 * touch (tests shrink the file there). */
int raw_mmap_hooked(const char *path, size_t chunk, RawTouch touch,
                    void (*after_map)(const char *segment, void *arg), void *arg,
                    RawResult *r, HsError *err);

/* read() with O_DIRECT, block bytes at a time into a 4 KiB-aligned buffer;
 * HS_EUSAGE if block is not a multiple of 4096. */
int raw_direct(const char *path, size_t block, RawResult *r, HsError *err);

/*
 * Run reader method over path: block is the buffer (RAW_READ, RAW_DIRECT)
 * or the chunk (RAW_MMAP, 0 for whole files) and is not used by RAW_WC and
 * RAW_LINES.
 */
int raw_run(RawMethod method, const char *path, size_t block, RawResult *r,
            HsError *err);

#endif
