/*
 * busguard.h -- run work that reads a file through mmap() with SIGBUS
 *               turned into the project's error.
 *
 * Entry point: busguard_run().  Used by every mmap reader: scanrun.c (the
 * scan's windows), rawio.c (raw_mmap), iobench_run.c (its mapped file and
 * rnd-page through the buffer manager).
 *
 * A mapping stays valid when its file shrinks, but touching a page past the
 * new end raises SIGBUS.  busguard_run() catches that signal while the work
 * runs and fails with -EFAULT instead, the error naming where the faulting
 * address lies in the file if the caller can say: the one SIGBUS message of
 * the project is made here, so every reader says it the same way.  The work
 * is abandoned mid-way (siglongjmp), so whatever it must release belongs in
 * its argument, not in its locals, and what bg_locate reads must be stored
 * before the access that may fault (a signal fence after storing it).  One
 * guard at a time per thread; threads may each run one (the workers of a
 * parallel scan), since a SIGBUS goes to the thread whose access faulted.
 */
#ifndef HEAPSCAN_BUSGUARD_H
#define HEAPSCAN_BUSGUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "hserror.h"

/* What bg_locate tells, and so what the error names. */
typedef enum BusGuardUnit {
    BUSGUARD_BLOCK, /* the block of the page: "SIGBUS reading the mapped page" */
    BUSGUARD_BYTE,  /* the byte offset in the file: "SIGBUS at byte N" */
} BusGuardUnit;

typedef struct BusGuard {
    /* The work: 0 or a negative error code, as library calls return. */
    int (*bg_work)(void *arg, HsError *err);
    /*
     * Where addr lies in the file the work maps, in bg_unit; false if addr
     * is in none of its mappings.  Called in the signal handler: it must
     * only read the argument.
     */
    bool (*bg_locate)(const void *arg, const void *addr, uint64_t *where);
    void *bg_arg;              /* the work's state, given to both */
    const void *bg_locate_arg; /* given to bg_locate instead, if not NULL */
    const char *bg_file;       /* the file the error is about */
    BusGuardUnit bg_unit;      /* what bg_locate's answer counts */
    uint64_t bg_block_bytes;   /* BUSGUARD_BYTE: the block size, so the error
                                  names the block too (0: no block) */
} BusGuard;

/*
 * Run g->bg_work(g->bg_arg, err) with SIGBUS caught.  Returns the work's
 * result, or -EFAULT after a SIGBUS, with err naming g->bg_file and:
 *   BUSGUARD_BLOCK, located: the block, "SIGBUS reading the mapped page:
 *     the file shrank under the mapping";
 *   BUSGUARD_BYTE, located: "SIGBUS at byte N: the file shrank under the
 *     mapping", and the block N / bg_block_bytes when that is not 0;
 *   not located: "SIGBUS outside the mapping".
 * The previous SIGBUS action is restored either way.  A SIGBUS sent by
 * kill() goes to that previous action, as it would have.
 */
int busguard_run(const BusGuard *g, HsError *err);

#endif
