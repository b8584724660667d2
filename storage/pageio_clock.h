/*
 * pageio_clock.h -- the simulated device latency (--io-latency): when a
 *                   request may complete, and a sleep until then.
 *
 * Entry points: pageio_now_ns(), pageio_deadline(), pageio_sleep_until().
 * Used by every I/O method (pageio_*.c); see pageio.h.
 *
 * A timed sleep on a virtual machine wakes late: here clock_nanosleep()
 * overshot by ~57 us at the median with a timer slack of 1 ns (110 us with
 * the default 50 us slack).  So each thread learns how late its sleeps
 * wake and asks to be woken that much early; it then waits the rest by a
 * spin of at most PAGEIO_SPIN_MAX_NS, never longer.  The lateness that is
 * left is returned to the caller, who reports it: a latency below what the
 * timer can resolve is simulated as long as the timer allows, and says so.
 */
#ifndef HEAPSCAN_PAGEIO_CLOCK_H
#define HEAPSCAN_PAGEIO_CLOCK_H

#include <stdint.h>

/* The longest a latency wait spins, after its sleep (5 us). */
#define PAGEIO_SPIN_MAX_NS 5000

/* CLOCK_MONOTONIC in ns. */
uint64_t pageio_now_ns(void);

/* The deadline of a request submitted now under --io-latency latency_us
 * (0 when there is none). */
uint64_t pageio_deadline(uint32_t latency_us);

/* Return no sooner than deadline (0: at once): a sleep, then a spin of at
 * most PAGEIO_SPIN_MAX_NS.  Returns how late it returned, in ns (0 when the
 * deadline had passed on entry: the request itself took longer). */
uint32_t pageio_sleep_until(uint64_t deadline);

#endif
