/*
 * iobench_run.h -- the read() vs mmap() microbenchmark's working parts, one
 *                  run at a time; iobench_matrix.c repeats and prepares the
 *                  cache, iobench_report.c prints, tools/iobench.c is the
 *                  command line.
 *
 * Entry points:
 *   iob_file_ensure() -- make the test file at a size, filled with
 *                        pseudo-random non-zero bytes (nothing sparse)
 *   iob_run()         -- one measured run of one test under one method
 *   iob_checksum()    -- zlib crc32 of a whole file, to show nothing was lost
 *   iob_*_name()      -- the names of the enums, beside them
 * See also: measure.c -- timing and the page cache; bufmgr.c -- rnd-page.
 *
 * The tests:
 *   seq-read  every block of the file in order (the last may be partial);
 *   rnd-rw    ops random block-aligned offsets, write_pct of them writes;
 *   rnd-page  ops random 8 KiB pages of a heap table through the buffer
 *             manager, under its read or its mmap access method.
 * The methods: read copies with pread()/pwrite() through one buffer; mmap
 * maps the whole file MAP_SHARED and memcpy()s out of and into the mapping;
 * io_uring keeps ic_depth reads and writes in flight, a buffer each
 * (iobench_uring.c; seq-read and rnd-rw).
 *
 * Invariant: the sequence of rnd-rw operations (offsets, read or write, and
 * the bytes each write puts down) is a pure function of (seed, block, file
 * size, ops, write_pct), whatever the method.  Each block ends up holding
 * the bytes of its last write, so running the sequence again leaves the file
 * as it was after the first run, and every method leaves byte-identical
 * files (io_uring never has two operations on one block in flight).
 */
#ifndef HEAPSCAN_IOBENCH_RUN_H
#define HEAPSCAN_IOBENCH_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bufmgr.h"
#include "hserror.h"
#include "measure.h"

#define IOB_MIN_BLOCK ((size_t)32)
#define IOB_MAX_BLOCK ((size_t)1 << 20)
#define IOB_MAX_DEPTH 256 /* io_uring: operations in flight, at most */

typedef enum IobTest {
    IOB_SEQ_READ, /* every block in order */
    IOB_RND_RW,   /* random blocks, some written */
    IOB_RND_PAGE, /* random pages of a heap table through the buffer manager */
} IobTest;

/* "seq-read", "rnd-rw", "rnd-page": the names, in the enum's order, NULL after. */
extern const char *const iob_test_names[];
const char *iob_test_name(IobTest test);

typedef enum IobMethod {
    IOB_READ,  /* pread/pwrite through one buffer */
    IOB_MMAP,  /* the file mapped whole, memcpy out and in */
    IOB_URING, /* io_uring, ic_depth operations in flight (not rnd-page) */
} IobMethod;

/* "read", "mmap", "io_uring", NULL. */
extern const char *const iob_method_names[];
const char *iob_method_name(IobMethod method);

typedef enum IobSync {
    IOB_SYNC_NONE, /* the clock stops when the last block is copied */
    IOB_SYNC_END,  /* fsync / msync(MS_SYNC) first */
} IobSync;

/* "none", "end", NULL. */
extern const char *const iob_sync_names[];
const char *iob_sync_name(IobSync sync);

/* How the page cache is prepared before each run (the 2002 benchmark's words). */
typedef enum IobCache {
    IOB_CACHE_STABLE, /* the file read once first: CACHE_WARM */
    IOB_CACHE_COLD,   /* evicted: CACHE_COLD */
} IobCache;

/* "stable", "cold", NULL. */
extern const char *const iob_cache_names[];
const char *iob_cache_name(IobCache cache);

/* The CacheMode an IobCache prepares. */
CacheMode iob_cache_mode(IobCache cache);

typedef struct IobConfig {
    const char *ic_path;   /* the file (rnd-page: a heap table) */
    IobTest ic_test;       /* what to do */
    IobMethod ic_method;   /* how to reach the bytes */
    size_t ic_block;       /* bytes a block: a power of two, 32 B .. 1 MiB */
    uint64_t ic_ops;       /* rnd-rw, rnd-page: operations */
    unsigned ic_write_pct; /* rnd-rw: percentage of operations that write */
    uint64_t ic_seed;      /* rnd-rw, rnd-page: the sequence derives from it */
    IobSync ic_sync;       /* whether the run syncs before the clock stops */
    unsigned ic_depth;     /* io_uring: operations in flight (1..IOB_MAX_DEPTH) */
    /* Called once the file is open (and mapped), before the first block;
     * tests shrink the file there.  NULL for none. */
    void (*ic_after_open)(const char *path, void *arg);
    void *ic_hook_arg;
} IobConfig;

typedef struct IobResult {
    uint64_t ir_ops;    /* blocks (pages) read or written */
    uint64_t ir_reads;  /* ... of them reads */
    uint64_t ir_writes; /* ... of them writes */
    uint64_t ir_bytes;  /* bytes copied in and out */
    uint64_t ir_sum;    /* a word of each block read, so no copy is optimized away */
    BufStats ir_buf;    /* rnd-page: the buffer manager's counters */
    Measure ir_m;       /* open to close, the sync included */
} IobResult;

/*
 * Make path a regular file of exactly size bytes unless it already is one:
 * written in 1 MiB pieces of pseudo-random bytes, none of them zero (the
 * same bytes for the same size, on any machine), into "path.tmp-PID",
 * fsynced and renamed into place.  *created says whether it was written.
 * Fails with -errno (the temporary file removed), -EINVAL if path exists
 * and is not a regular file, or HS_EINTR (the temporary file removed) as
 * soon as *stop (may be NULL) becomes non-zero, as a signal handler sets it.
 */
int iob_file_ensure(const char *path, uint64_t size, const volatile sig_atomic_t *stop,
                    bool *created, HsError *err);

/*
 * One run of cfg->ic_test under cfg->ic_method, timed from opening the file
 * to closing it.  The file must be at least one block long (rnd-page: a heap
 * table).  Returns 0 with *res filled, or a negative code with err naming
 * the file and, for a short read or write, the block.
 */
int iob_run(const IobConfig *cfg, IobResult *res, HsError *err);

/* What iobench_uring.c shares with iobench_run.c: the splitmix64 sequence,
 * and the bytes write i of a run puts down (the write buffer, drawn from the
 * seed, stamped with a word drawn from (seed, i) in its first and last 8
 * bytes). */
uint64_t iob_next(uint64_t *state);
void iob_fill_write_buffer(const IobConfig *cfg, unsigned char *buf);
void iob_stamp_write(const IobConfig *cfg, unsigned char *buf, uint64_t i);

/* seq-read or rnd-rw of cfg under io_uring on fd (size bytes), counts into
 * res (iobench_uring.c). */
int iob_uring_work(const IobConfig *cfg, int fd, uint64_t size, IobResult *res,
                   HsError *err);

/* zlib crc32 of every byte of path into *crc, its length into *bytes. */
int iob_checksum(const char *path, uint32_t *crc, uint64_t *bytes, HsError *err);

#endif
