/*
 * pageio_uring.h -- what pageio.c and pageio_uring.c share, and nobody else
 *                   sees: the io_uring method's calls (pageio.c's switch
 *                   makes them) and the simulated latency's clock.
 *
 * Entry points: pageio_uring_open(), _submit(), _wait(), _close() (see
 * pageio_uring.c); pageio_deadline() and pageio_wait_until() (pageio.c).
 */
#ifndef HEAPSCAN_PAGEIO_URING_H
#define HEAPSCAN_PAGEIO_URING_H

#include <stdbool.h>
#include <stdint.h>

#include "pageio.h"

typedef struct PageIOUring PageIOUring;

/*
 * Set up a ring for up to depth requests over rf.  Fails with -errno and a
 * message that names the method to use instead when the kernel refuses
 * io_uring (seccomp, kernel.io_uring_disabled, a kernel before 5.6) or the
 * build has no liburing.
 */
int pageio_uring_open(PageIOUring **u, RelFile *rf, unsigned depth, HsError *err);

/* Requests it may have in flight. */
unsigned pageio_uring_depth(const PageIOUring *u);

/* Whether every slot is taken (depth requests in flight). */
bool pageio_uring_full(const PageIOUring *u);

/* Hand r to the kernel (fewer than depth outstanding); it is done no sooner
 * than deadline (CLOCK_MONOTONIC ns, 0: no simulated latency). */
void pageio_uring_submit(PageIOUring *u, PageIORequest *r, uint64_t deadline);

/* Wait for r, any outstanding request: its result, err naming the file and
 * block on failure. */
int pageio_uring_wait(PageIOUring *u, PageIORequest *r, HsError *err);

/* Wait for every request in flight, then tear the ring down (NULL is fine). */
void pageio_uring_close(PageIOUring *u);

/* CLOCK_MONOTONIC in ns. */
uint64_t pageio_now_ns(void);

/* The deadline of a request submitted now under --io-latency latency_us
 * (0 when there is none). */
uint64_t pageio_deadline(uint32_t latency_us);

/* Return no sooner than deadline (slept, then spun: see pageio.c). */
void pageio_wait_until(uint64_t deadline);

#endif
