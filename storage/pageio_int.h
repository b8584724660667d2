/*
 * pageio_int.h -- what the I/O methods share, and nobody else sees: the
 *                 table of functions each method fills, and the PageIO
 *                 that pageio.c's switch hands them.
 *
 *   pageio.c        -- the switch: names, open (picks a table), the calls
 *                      every caller makes, each through the table
 *   pageio_sync.c   -- reads in the caller's thread, at submit
 *   pageio_worker.c -- an I/O worker thread fed through semaphores
 *   pageio_uring.c  -- io_uring, many requests in flight
 *   pageio_clock.c  -- the simulated latency (pageio_clock.h)
 *   pageio_map.c    -- mmap windows (no method: the page faults do the I/O)
 *
 * A method never looks at another's state, and the switch never tests
 * which method it holds.
 */
#ifndef HEAPSCAN_PAGEIO_INT_H
#define HEAPSCAN_PAGEIO_INT_H

#include "pageio.h"

typedef struct PageIOMethods {
    /* Set up io->io_state for cfg; fail with err naming the method to use
     * instead, or -EAGAIN when only a fallback to sync will do. */
    int (*pm_open)(PageIO *io, const PageIOConfig *cfg, HsError *err);
    /* Wait for every request outstanding, then free io->io_state. */
    void (*pm_close)(PageIO *io);
    unsigned (*pm_max_in_flight)(const PageIO *io);
    /* Start r (fewer than max in flight are outstanding; r->pr_deadline set). */
    void (*pm_submit)(PageIO *io, PageIORequest *r);
    /* Finish r: r->pr_rc, pr_calls, pr_err, pr_inline, pr_waited filled. */
    void (*pm_wait)(PageIO *io, PageIORequest *r);
} PageIOMethods;

struct PageIO {
    const PageIOMethods *io_methods; /* chosen at open */
    PageIOMethod io_method;          /* and its name (after any fallback) */
    RelFile *io_rel;                 /* the relation read */
    uint32_t io_latency_us;          /* --io-latency (0: none) */
    void *io_state;                  /* the method's own */
};

extern const PageIOMethods pageio_sync_methods;
extern const PageIOMethods pageio_worker_methods;
extern const PageIOMethods pageio_uring_methods;

/* pageio_sync.c: relfile_readv() of r in this thread, then the simulated
 * latency's sleep: r's result fields filled (pageio_read() and the sync
 * method; io_uring with every slot taken). */
void pageio_read_in_line(PageIO *io, PageIORequest *r);

#endif
