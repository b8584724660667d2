/*
 * pageio.h -- how page bytes get from a relation's files into memory: the
 *             I/O methods that run read requests (in line, or on an I/O
 *             worker thread ahead of the caller), and mmap() windows of a
 *             segment.
 *
 * Entry points: pageio_open(), pageio_submit(), pageio_wait(),
 * pageio_close() run reads; pageio_map() and pageio_unmap() map and unmap
 * a window.  The buffer manager decides what is read and when (its read
 * stream, readstream.c, keeps requests in flight); this module only moves
 * bytes and reports errors with the file and block.  A future I/O method
 * (io_uring) is one more PageIOMethod here.
 */
#ifndef HEAPSCAN_PAGEIO_H
#define HEAPSCAN_PAGEIO_H

#include <stdbool.h>
#include <stdint.h>

#include "relfile.h"

typedef enum PageIOAdvice {
    PAGEIO_ADV_NORMAL = 0, /* madvise(MADV_NORMAL): the kernel's default readahead */
    PAGEIO_ADV_SEQUENTIAL, /* MADV_SEQUENTIAL: aggressive readahead, early drop */
    PAGEIO_ADV_WILLNEED,   /* MADV_WILLNEED: start reading the window now */
    PAGEIO_ADV_POPULATE,   /* MAP_POPULATE: fault the whole window in at mmap() */
} PageIOAdvice;

/* "normal", "sequential", "willneed", "populate", NULL. */
extern const char *const pageio_advice_names[];
const char *pageio_advice_name(PageIOAdvice a);

/*
 * The most pages one read request brings in (1 MiB): the upper bound of
 * io-combine, checked once where the option is (bufmgr_open()).
 */
#define PAGEIO_MAX_PAGES 128

/* How reads are done. */
typedef enum PageIOMethod {
    PAGEIO_SYNC,   /* relfile_readv() in the caller's thread, at submit */
    PAGEIO_WORKER, /* an I/O worker thread, while the caller works on */
} PageIOMethod;

/* "sync", "worker", NULL. */
extern const char *const pageio_method_names[];

/*
 * One read: blocks pr_blkno .. pr_blkno + pr_n - 1 into pr_pages[0 ..
 * pr_n - 1] (each BLCKSZ bytes, anywhere), and how it went.  The caller
 * owns it and keeps it where it is from submit to wait.
 */
typedef struct PageIORequest {
    uint64_t pr_blkno;     /* the first block */
    uint32_t pr_n;         /* pages, 1..PAGEIO_MAX_PAGES */
    void *const *pr_pages; /* where each goes */
    bool pr_submitted;     /* submitted and not yet waited for */
    int pr_rc;             /* after wait: 0 or the read's error */
    uint32_t pr_calls;     /* after wait: the system calls it took */
} PageIORequest;

/*
 * An I/O method for one relation.  PAGEIO_WORKER is a thread that runs the
 * reads for its owner, so the copy out of the page cache (or the wait for
 * the disk) on one core overlaps the scan on another, as PostgreSQL 18's
 * io_method=worker does: up to PAGEIO_QUEUE requests at a time, done in the
 * order submitted, the next one started as soon as one is done.  It touches
 * nothing but the pages it was given.
 */
#define PAGEIO_QUEUE 2

typedef struct PageIO PageIO;

/*
 * Open method m over rf.  A worker thread that cannot be started falls
 * back to PAGEIO_SYNC (pageio_method() says which it is).
 */
int pageio_open(PageIO **io, RelFile *rf, PageIOMethod m, HsError *err);

PageIOMethod pageio_method(const PageIO *io);

/* Requests that may be submitted and not yet waited for: 1 for sync (its
 * submit reads at once), PAGEIO_QUEUE for the worker. */
unsigned pageio_max_in_flight(const PageIO *io);

/* Start r (sync: do it).  Fewer than pageio_max_in_flight() may be
 * outstanding. */
void pageio_submit(PageIO *io, PageIORequest *r);

/* Read r now, in the caller's thread, whatever the method: its result, with
 * err (may be NULL) naming the file and block on failure. */
int pageio_read(PageIO *io, PageIORequest *r, HsError *err);

/* Wait for r, which must be the oldest outstanding request: its result, with
 * err (may be NULL) naming the file and block on failure. */
int pageio_wait(PageIO *io, PageIORequest *r, HsError *err);

/* Wait for every outstanding request, stop the thread and free io (NULL
 * is fine). */
void pageio_close(PageIO *io);

/* A mapped window: npages pages of one segment, starting at block first. */
typedef struct PageIOWindow {
    uint64_t pw_first;  /* first block it holds */
    uint32_t pw_npages; /* pages it holds */
    void *pw_base;      /* the mapping (NULL when not mapped) */
    size_t pw_len;      /* bytes mapped */
} PageIOWindow;

/*
 * Map up to want pages starting at block first, never past the end of
 * first's segment or of the relation, read-only and shared, with the
 * advice given.
 */
int pageio_map(RelFile *rf, uint64_t first, uint32_t want, PageIOAdvice adv,
               PageIOWindow *w, HsError *err);

/* Unmap a window (no-op if it is not mapped). */
void pageio_unmap(PageIOWindow *w);

#endif
