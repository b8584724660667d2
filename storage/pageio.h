/*
 * pageio.h -- how page bytes get from a relation's files into memory beyond
 *             a plain relfile_readv(): an I/O worker thread that runs those
 *             reads ahead of the caller, and mmap() windows of a segment.
 *
 * Entry points: pageio_worker_start/submit/wait/stop() for read-ahead;
 * pageio_map() and pageio_unmap() map and unmap a window.  The buffer
 * manager (bufmgr.c) decides which is used and when; this module only moves
 * bytes and reports errors with the file and block.
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
 * An I/O worker: a thread that runs relfile_readv() for its owner, so the
 * copy out of the page cache (or the wait for the disk) on one core overlaps
 * the scan on another, as PostgreSQL 18's io_method=worker does.  Up to
 * PAGEIO_QUEUE requests at a time, done in the order submitted: submit, go
 * on working, wait for the oldest when its pages are needed.  With a second
 * request queued, the worker goes straight on to it.  The worker touches
 * nothing but the frames it was given.
 */
#define PAGEIO_QUEUE 2

typedef struct PageIOWorker PageIOWorker;

/* Start a worker reading rf's files.  NULL if the thread cannot be made. */
PageIOWorker *pageio_worker_start(RelFile *rf);

/* Hand it blocks blkno .. blkno + n - 1 to read into frames (copied); fewer
 * than PAGEIO_QUEUE requests must be outstanding. */
void pageio_worker_submit(PageIOWorker *w, uint64_t blkno, uint32_t n,
                          void *const *frames);

/* Requests submitted and not yet waited for. */
unsigned pageio_worker_outstanding(const PageIOWorker *w);

/* Wait for the oldest request: its relfile_readv() result, calls and error. */
int pageio_worker_wait(PageIOWorker *w, uint32_t *calls, HsError *err);

/* Wait for every request, stop the thread and free it (NULL is fine). */
void pageio_worker_stop(PageIOWorker *w);

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
