/*
 * fiorun.h -- fio (the standard I/O benchmark, Debian's fio) reading a
 *             table sequentially, as the comparison's check on heapscan's
 *             own readers: psync or io_uring, buffered or O_DIRECT.
 *
 * Entry points: fio_available() -- is fio on PATH; fio_read() -- one run.
 * See also: extcmd.c -- how it is run; compare.c -- its rows.
 *
 * fio reads whole blocks: a file's last partial block of fj_block bytes is
 * left out (the default table is a whole number of 128 KiB blocks).
 * fio takes about 160 ms here to start and stop (measured on an 8 KiB
 * file), more than a warm read of the default table, so a run's time is
 * fio's own runtime (milliseconds: its terse output has no finer total),
 * and the user and system time are its process's (wait4).  fio is told to
 * leave the page cache as the caller prepared it (invalidate=0).
 */
#ifndef HEAPSCAN_FIORUN_H
#define HEAPSCAN_FIORUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hserror.h"
#include "measure.h"

/* One fio job: every byte of the relation's segments, in order. */
typedef struct FioJob {
    const char *fj_engine; /* "psync" or "io_uring" */
    size_t fj_block;       /* bytes a read */
    unsigned fj_depth;     /* reads in flight (psync: 1) */
    bool fj_direct;        /* O_DIRECT */
} FioJob;

/* Whether an executable fio is on PATH. */
bool fio_available(void);

/*
 * Run job over the relation path (all its segments): 0 with *m filled (its
 * wall time fio's runtime), or a negative code: fio failed or reported an
 * error, or read other than the relation's bytes in whole blocks.
 */
int fio_read(const char *path, uint64_t bytes, const FioJob *job, Measure *m,
             HsError *err);

#endif
