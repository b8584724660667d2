/*
 * busguard.h -- run work that reads a file through mmap() with SIGBUS
 *               turned into an error.
 *
 * A mapping stays valid when its file shrinks, but touching a page past the
 * new end raises SIGBUS.  busguard_run() catches that signal while the work
 * runs and returns BUSGUARD_FAULT instead, with where the faulting address
 * lies in the file if the caller can say.  The work is abandoned mid-way
 * (siglongjmp), so whatever it must release belongs in its argument, not in
 * its locals, and what bg_locate reads must be stored before the access
 * that may fault (a signal fence after storing it).  One guard at a time per process:
 * the tools are single-threaded where they map files.
 */
#ifndef HEAPSCAN_BUSGUARD_H
#define HEAPSCAN_BUSGUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "hserror.h"

/* busguard_run()'s result when SIGBUS cut the work short. */
#define BUSGUARD_FAULT 1

typedef struct BusGuard {
    /* The work: 0 or a negative error code, as library calls return. */
    int (*bg_work)(void *arg, HsError *err);
    /*
     * Where addr lies in the file the work maps (a block or a byte offset,
     * as the caller reports it); false if addr is in none of its mappings.
     * Called in the signal handler: it must only read the argument.
     */
    bool (*bg_locate)(const void *arg, const void *addr, uint64_t *where);
    void *bg_arg;
} BusGuard;

/*
 * Run g->bg_work(g->bg_arg, err) with SIGBUS caught.  Returns the work's
 * result, or BUSGUARD_FAULT after a SIGBUS, with *located true and *where
 * set if bg_locate placed the address.  The previous SIGBUS action is
 * restored either way.  A SIGBUS sent by kill() goes to that previous
 * action, as it would have.
 */
int busguard_run(const BusGuard *g, bool *located, uint64_t *where, HsError *err);

#endif
