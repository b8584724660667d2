/*
 * bufmgr.h -- the buffer manager: pinned pages of one relation, from a pool
 *             of frames filled with read(), or straight from mmap() windows.
 *
 * Entry points:
 *   bufmgr_open()    -- open a relation and choose its page access method
 *   bufmgr_read()    -- find or bring in the requested page, verify it if it
 *                       is new to us, pin it and return a pointer to it
 *   bufmgr_release() -- unpin it
 * A sequential scan reads through a read stream instead (readstream.h),
 * which keeps reads of consecutive blocks in flight ahead of the scan.
 * See also: pool.c and freelist.c -- the read access method; mapped.c --
 * the mmap one; pageio.c -- the system calls; page.c -- verification.
 *
 * The access method is chosen once, at open, through a table of functions
 * (as PostgreSQL's smgr switch or SQLite's pager getter); callers get a
 * pinned page pointer and release it, and never learn where it came from.
 *
 * read: a pool of frames (default 128 MiB, like shared_buffers), a
 *   descriptor per frame (block, pins, usage count, flags), a hash from
 *   block to frame, victims chosen by clock sweep over usage counts (a pinned
 *   frame is never a victim).  When the table is larger than a quarter of the
 *   pool (or with BUF_STRATEGY_RING), misses recycle a small ring of frames
 *   (default 256 KiB, so it stays in L2 cache) instead of flooding the pool,
 *   as PostgreSQL's BAS_BULKREAD does.  Reads go through an I/O method
 *   (pageio.h): in line, or an I/O worker thread that a read stream keeps
 *   busy ahead of the scan.
 * mmap: the segment files are mapped in windows of a fixed size (or whole);
 *   a page is a pointer into its window, no copy; a window is not unmapped
 *   while a page in it is pinned.
 *
 * Invariant: no caller ever sees a page that came from the file without it
 * having passed page_verify() (unless verification is off): on its first
 * use after it was read into a frame, or for mmap after its window was
 * mapped.  bufmgr_check_state() asserts the rest (pool.c, mapped.c).
 *
 * One relation per buffer manager: a buffer tag is just the block number.
 */
#ifndef HEAPSCAN_BUFMGR_H
#define HEAPSCAN_BUFMGR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hserror.h"
#include "page.h"
#include "pageio.h"

#define BUFMGR_DEFAULT_POOL ((size_t)128 << 20)
#define BUFMGR_DEFAULT_RING ((size_t)256 << 10)
/*
 * bo_ring_bytes: BUFMGR_DEFAULT_RING, and with io_uring that plus io-depth x
 * io-combine (at most half the pool), as PostgreSQL 18 sizes a bulk-read
 * ring: the reads in flight hold their frames, so a ring that cannot hold
 * them evicts its own pages before they are used (see read_stream_depth()).
 */
#define BUFMGR_RING_AUTO        ((size_t)0)
#define BUFMGR_DEFAULT_IO_DEPTH 16 /* PostgreSQL's effective_io_concurrency */
#define BUFMGR_DEFAULT_IO_COMBINE                                                      \
    ((size_t)128 << 10) /* PostgreSQL 17's io_combine_limit */
#define BUFMGR_DEFAULT_MMAP_CHUNK ((size_t)8 << 20)
#define BUFMGR_MAX_FRAMES                                                              \
    (UINT32_C(1) << 30) /* 8 TiB; the hash has 2x buckets in 32 bits */

/* bo_io_workers: no I/O worker unless asked for (see pool.c's io_method()). */
#define BUFMGR_IO_WORKERS_AUTO (-1)

/* bo_io_method: sync or worker, as bo_io_workers says (its default). */
#define BUFMGR_IO_METHOD_AUTO (-1)

typedef enum BufAccess { BUF_ACCESS_READ, BUF_ACCESS_MMAP } BufAccess;

/* "read", "mmap": the names, in the enum's order, NULL after the last. */
extern const char *const bufmgr_access_names[];
const char *bufmgr_access_name(BufAccess a);

typedef enum BufStrategy {
    BUF_STRATEGY_AUTO,   /* ring when the table is over a quarter of the pool */
    BUF_STRATEGY_NORMAL, /* always the whole pool */
    BUF_STRATEGY_RING,   /* always the ring */
} BufStrategy;

/* "auto", "normal", "ring", NULL. */
extern const char *const bufmgr_strategy_names[];
const char *bufmgr_strategy_name(BufStrategy s);

typedef struct BufMgrOptions {
    BufAccess bo_access;
    size_t bo_pool_bytes;       /* read: the pool's size */
    size_t bo_ring_bytes;       /* read: the bulk-read ring's size, or
                                   BUFMGR_RING_AUTO */
    BufStrategy bo_strategy;    /* read: ring or whole pool */
    size_t bo_io_combine_bytes; /* read: most bytes one read brings in (a whole
                                   number of pages, at most PAGEIO_MAX_PAGES) */
    size_t bo_mmap_chunk_bytes; /* mmap: window size; 0 maps each segment whole */
    PageIOAdvice bo_advice;     /* mmap: madvise for each window */
    bool bo_verify;             /* verify pages from the file */
    PageChecksum bo_checksum;   /* which checksum verification checks (heapscan's
                                   by default; postgres or none for files a
                                   PostgreSQL server wrote) */
    int bo_io_workers;          /* read: 1 = an I/O worker thread reads the next
                                   io-combine batch of a scan ahead, 0 = none,
                                   BUFMGR_IO_WORKERS_AUTO = none (the default:
                                   reading in line measured faster) */
    int bo_io_method;           /* read: a PageIOMethod (io_uring, or sync or
                                   worker, which bo_io_workers must not
                                   contradict), or BUFMGR_IO_METHOD_AUTO */
    unsigned bo_io_depth;       /* read, io_uring: combined reads in flight,
                                   1..PAGEIO_MAX_DEPTH (a scan may use fewer:
                                   read_stream_depth()) */
    bool bo_direct;             /* read: O_DIRECT, bypassing the page cache */
    uint32_t bo_io_latency_us;  /* read: a simulated device -- every read
                                   request completes no sooner than this
                                   after its submit (benchmarks; 0: none) */
    uint32_t bo_seg_blocks;     /* pages per segment file */
} BufMgrOptions;

/* The defaults above, read access, verification on, reads in line, the
 * ring auto, io-depth 16, 1 GiB segments. */
void bufmgr_default_options(BufMgrOptions *o);

/* The bulk-read ring a scan with options o gets, in bytes (resolving
 * BUFMGR_RING_AUTO). */
size_t bufmgr_ring_bytes(const BufMgrOptions *o);

typedef struct BufStats {
    uint64_t bs_hits;       /* pins of a page already in memory and seen before */
    uint64_t bs_reads;      /* pages brought in from the file (mmap: first touches) */
    uint64_t bs_read_calls; /* preadv() calls (mmap: mmap() calls) */
    uint64_t bs_bytes_read; /* bytes read (mmap: bytes mapped) */
    uint64_t bs_evictions;  /* valid pages replaced (mmap: windows unmapped) */
    uint64_t bs_pages_verified;  /* pages checked by page_verify() */
    uint64_t bs_verify_failures; /* ... that failed */
    uint64_t bs_frames_used;   /* frames that ever held a page (mmap: windows mapped at
                                  once, at most) */
    uint64_t bs_io_waits;      /* pins that waited for another thread's read
                                  of the page (a shared pool) */
    uint64_t bs_latency_waits; /* --io-latency: reads held back */
    uint64_t bs_latency_late_ns;     /* ... how late they completed in all (the
                                        sleeps' overshoot past each deadline) */
    uint64_t bs_latency_late_max_ns; /* ... and the latest */
} BufStats;

typedef int32_t Buffer;
#define INVALID_BUFFER ((Buffer)-1)

typedef struct BufMgr BufMgr;
typedef struct BufAccessStrategy BufAccessStrategy;

/*
 * Check o's ranges (the one place they are checked): 0, or HS_EUSAGE with
 * the reason, path naming the table.  bufmgr_open() calls it; a tool may
 * call it first, to report a usage error before doing anything else.
 */
int bufmgr_check_options(const BufMgrOptions *o, const char *path, HsError *err);

/*
 * Open the relation at path.  Fails with HS_EUSAGE for options out of
 * range, -errno or HS_ENOTHEAP from relfile_open(), or HS_ENOTHEAP if block
 * 0 does not carry a PostgreSQL page header (the file is not a heap table).
 */
int bufmgr_open(BufMgr **bm, const char *path, const BufMgrOptions *o, HsError *err);

uint64_t bufmgr_nblocks(const BufMgr *bm);

/* Whether misses recycle the ring (read access). */
bool bufmgr_uses_ring(const BufMgr *bm);

/* I/O worker threads reading ahead (0 or 1). */
int bufmgr_io_workers(const BufMgr *bm);

/* How reads are done (read access; PAGEIO_SYNC for mmap). */
PageIOMethod bufmgr_io_method(const BufMgr *bm);

/* Frames in the pool (read) or pages per window (mmap). */
uint32_t bufmgr_frames(const BufMgr *bm);

/*
 * Pin block blkno and set *page to its 8192 bytes and *buf to the handle to
 * release.  On failure nothing is pinned and the error names the block:
 * HS_ECORRUPT when the page fails verification (err->msg says how), else
 * -errno.  A page that failed is not kept: asking again reads it again.
 */
int bufmgr_read(BufMgr *bm, uint64_t blkno, Buffer *buf, const void **page,
                HsError *err);

/* Unpin a page returned by bufmgr_read(). */
void bufmgr_release(BufMgr *bm, Buffer buf);

/*
 * Before releasing pinned page blkno (at page, buffer buf): does it still
 * hold what was verified?  A frame of the pool is a private copy that
 * nothing else writes: always 0.  A mapped page is the file itself, which a
 * writer may change in place while it is used: with verification on its
 * CRC-32 is computed again and compared with the one taken when it was
 * verified, and a difference is HS_ECORRUPT naming the block.  A change
 * undone before this call, or any change without verification, goes
 * unseen: that window stays open under mmap (docs/format.md).
 */
int bufmgr_recheck(BufMgr *bm, Buffer buf, const void *page, uint64_t blkno,
                   HsError *err);

/* The counters so far (read them when no other thread uses bm). */
const BufStats *bufmgr_stats(const BufMgr *bm);

/* A copy of the counters, taken under bm's lock: safe while other threads
 * use a shared bm. */
void bufmgr_stats_snapshot(BufMgr *bm, BufStats *out);

/* Pins held right now (a leak check for tests). */
uint32_t bufmgr_pins_held(const BufMgr *bm);

/*
 * The block whose mapped page holds addr (mmap access), for turning a
 * SIGBUS into an error naming the block.  Returns 0 or -1 if addr is not in
 * any window.  Async-signal-safe: it only reads the window table.
 */
int bufmgr_block_of_address(const BufMgr *bm, const void *addr, uint64_t *blkno);

/* The relation's path (for messages). */
const char *bufmgr_path(const BufMgr *bm);

/* Unmap, free and close everything; safe after an error or a SIGBUS. */
void bufmgr_close(BufMgr *bm);

/*
 * Let several threads use bm at once (the workers of a parallel scan, read
 * access: they share the pool).  Every call then takes bm's lock, never
 * while a page is copied or verified.  A thread that asks for a block
 * another is reading waits for that read (and gets its error if it
 * failed): no page is handed out before it is read and verified.  Each
 * thread that reads through a stream brings its own strategy
 * (bufmgr_strategy_new()): an I/O worker or an io_uring is one thread's.
 * HS_EUSAGE for mmap access, whose windows are per scan: each worker opens
 * its own buffer manager.
 */
int bufmgr_set_shared(BufMgr *bm, HsError *err);

/* A strategy of its own for a scan that shares bm with others: its own
 * ring when bm's scans use rings (so two scans' rings do not evict each
 * other's pages), else the whole pool.  NULL with err when out of memory. */
BufAccessStrategy *bufmgr_strategy_new(BufMgr *bm, HsError *err);
void bufmgr_strategy_free(BufAccessStrategy *st);

/*
 * Assert the buffer manager's invariants (pool.c and mapped.c list them):
 * the hash and the descriptors agree, frames being read are pinned, pins
 * are never released twice, a ring holds frames of the pool.  With checking
 * on (tests), every call checks them first; builds with NDEBUG never do.
 */
void bufmgr_check_state(const BufMgr *bm);
void bufmgr_set_checking(BufMgr *bm, bool on);

#endif
