/*
 * pageio.h -- how page bytes get from a relation's files into memory: the
 *             I/O methods that run read requests (in line, on an I/O
 *             worker thread ahead of the caller, or through io_uring with
 *             many in flight), and mmap() windows of a segment.
 *
 * Entry points: pageio_open(), pageio_submit(), pageio_wait(),
 * pageio_read(), pageio_close() run reads; pageio_map() and pageio_unmap()
 * map and unmap a window (pageio_map.c).  The buffer manager decides what
 * is read and when (its read stream, readstream.c, keeps requests in
 * flight); this module only moves bytes and reports errors with the file
 * and block.
 *
 * The method is chosen once, at pageio_open(), as a table of functions
 * (pageio_int.h): pageio_sync.c, pageio_worker.c, pageio_uring.c.  Each
 * request carries its own result, call count and error, so nothing about
 * one request is kept in the PageIO between its submit and its wait.
 * See also: relfile.c -- the segment files, and relfile_set_direct() for
 * O_DIRECT; pageio_clock.c -- the simulated latency.
 *
 * Threads: a PageIO is used by one thread (the one that submits and
 * waits); pageio_read() alone may be called from any thread, beside the
 * owner's requests (it reads in the caller's thread).
 *
 * --io-latency is a simulation: every request completes no earlier than
 * the latency after it was submitted, whatever the method, so a device
 * with that latency is emulated with the real data behind it.  The wait is
 * a sleep, never a spin; how late the sleeps woke is reported per request.
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

/* How reads are done (PostgreSQL 18's io_method names). */
typedef enum PageIOMethod {
    PAGEIO_SYNC,   /* relfile_readv() in the caller's thread, at submit */
    PAGEIO_WORKER, /* an I/O worker thread, while the caller works on */
    PAGEIO_URING,  /* io_uring: up to pc_depth requests in flight, completed in
                      any order */
} PageIOMethod;

/* "sync", "worker", "io_uring", NULL. */
extern const char *const pageio_method_names[];
const char *pageio_method_name(PageIOMethod m);

/*
 * The most requests io_uring keeps in flight (PostgreSQL caps
 * effective_io_concurrency at 1000; 256 combined reads of 1 MiB are 256 MiB
 * in flight, more than any pool here holds).
 */
#define PAGEIO_MAX_DEPTH 256

/* The longest simulated latency (1 s): a longer one is a typo. */
#define PAGEIO_MAX_LATENCY_US 1000000

/*
 * The I/O worker's requests in flight: the one it reads and the next,
 * queued, so it goes from one straight on to the next while its owner
 * works on the pages of an earlier one.
 */
#define PAGEIO_WORKER_DEPTH 2

/* What pageio_open() opens. */
typedef struct PageIOConfig {
    PageIOMethod pc_method; /* how reads are done */
    unsigned pc_depth;      /* PAGEIO_URING: requests in flight, at most
                               (1..PAGEIO_MAX_DEPTH) */
    uint32_t pc_latency_us; /* a simulated device: no request completes
                               sooner after its submit (0: none) */
} PageIOConfig;

/*
 * One read: blocks pr_blkno .. pr_blkno + pr_n - 1 into pr_pages[0 ..
 * pr_n - 1] (each BLCKSZ bytes, anywhere), and how it went.  The caller
 * fills the first three fields, owns the request and keeps it where it is
 * from its submit until it is waited for or the PageIO is closed; the
 * method writes the rest.
 */
typedef struct PageIORequest {
    uint64_t pr_blkno;     /* the first block */
    uint32_t pr_n;         /* pages, 1..PAGEIO_MAX_PAGES */
    void *const *pr_pages; /* where each goes */
    bool pr_submitted;     /* submitted and not yet waited for */
    uint64_t pr_deadline;  /* --io-latency: done no sooner (CLOCK_MONOTONIC ns;
                              0: none), set at submit */
    int pr_rc;             /* after wait: 0 or the read's error */
    uint32_t pr_calls;     /* after wait: the reads it took (system calls, or
                              io_uring requests: one per segment it touches,
                              more after a short read) */
    bool pr_inline;        /* after wait: it was complete when its submit
                              returned (sync; io_uring when the page cache
                              had it all), with no latency simulated */
    bool pr_waited;        /* after wait: the caller had to wait for it (the
                              disk, the worker, or the simulated latency) */
    uint32_t pr_late_ns;   /* after wait, with --io-latency: how long after
                              its deadline it completed (the sleep's overshoot) */
    unsigned pr_slot;      /* the method's own: io_uring's slot */
    HsError pr_err;        /* after wait, when pr_rc < 0: the file, the block
                              and what went wrong */
} PageIORequest;

typedef struct PageIO PageIO;

/*
 * Open cfg's method over rf.  A worker thread that cannot be started falls
 * back to PAGEIO_SYNC (pageio_method() says which it is); an io_uring that
 * cannot be set up (a kernel without it, seccomp, kernel.io_uring_disabled,
 * a build without liburing) is an error saying to use another method, never
 * a silent fallback.
 */
int pageio_open(PageIO **io, RelFile *rf, const PageIOConfig *cfg, HsError *err);

PageIOMethod pageio_method(const PageIO *io);

/* Whether io_uring can be set up here (built with liburing, and the kernel
 * lets this process have a ring): the benchmarks leave its rows out if not. */
bool pageio_uring_available(void);

/* Requests that may be submitted and not yet waited for: 1 for sync (its
 * submit reads at once), PAGEIO_WORKER_DEPTH for the worker, pc_depth for
 * io_uring. */
unsigned pageio_max_in_flight(const PageIO *io);

/* Start r (sync: do it).  Fewer than pageio_max_in_flight() may be
 * outstanding.  r's pages must stay where they are until it is waited for:
 * the kernel or the worker writes into them meanwhile. */
void pageio_submit(PageIO *io, PageIORequest *r);

/* Wait for r: its result, with err (may be NULL) a copy of r->pr_err on
 * failure.  Sync and worker: r must be the oldest outstanding request;
 * io_uring: any (the others' completions are kept for their own wait). */
int pageio_wait(PageIO *io, PageIORequest *r, HsError *err);

/* Read r now, in the caller's thread, whatever the method and whoever owns
 * io (any thread may; requests in flight are left alone), held back by the
 * simulated latency as any request: its result, err as pageio_wait(). */
int pageio_read(PageIO *io, PageIORequest *r, HsError *err);

/* Wait for every outstanding request, stop the thread or the ring and free
 * io (NULL is fine).  A request not waited for is complete or cancelled
 * when this returns: its pages are no longer written. */
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
