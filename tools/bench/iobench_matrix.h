/*
 * iobench_matrix.h -- a measured row of the read() vs mmap() benchmark (one
 *                     configuration run several times, the cache prepared
 *                     the same way before each run) and the 2002
 *                     benchmark's whole grid of them.
 *
 * Entry points: iob_measure_row() measures one row; iob_matrix_file() runs
 * the grid's twelve file rows on one file, iob_matrix_pages() its two
 * rnd-page rows on a heap table, each handing every row to the caller as
 * soon as it is measured (iobench prints it then).
 * See also: iobench_run.c -- one run; iobench_report.c -- printing rows.
 */
#ifndef HEAPSCAN_IOBENCH_MATRIX_H
#define HEAPSCAN_IOBENCH_MATRIX_H

#include "iobench_run.h"
#include "measure.h"

#define IOB_MAX_RUNS 100 /* runs of one row */

/* One measured row. */
typedef struct IobRow {
    IobConfig rw_cfg;        /* what is run */
    IobCache rw_cache;       /* how the cache is prepared before each run */
    unsigned rw_runs;        /* runs, 1..IOB_MAX_RUNS */
    uint64_t rw_file_bytes;  /* the file's length, after the runs */
    IobResult rw_res;        /* the last run's counts (the same every run) */
    MeasureSpread rw_spread; /* wall, CPU and faults over the runs */
    bool rw_has_crc;         /* rw_crc is set (not for rnd-page, which only reads) */
    uint32_t rw_crc;         /* crc32 of the file after the runs */
} IobRow;

/*
 * Run r->rw_cfg r->rw_runs times, the page cache prepared before each, and
 * fill in the rest of *r.  0, or a negative code with err filled.
 */
int iob_measure_row(IobRow *r, HsError *err);

/* Told of each row of the grid once it is measured. */
typedef void (*IobRowDone)(const IobRow *r, void *arg);

/*
 * The grid's file rows on path (which must exist): seq-read then rnd-rw,
 * blocks 1K, 4K, 32 B, read then mmap, each otherwise as base (ops, seed,
 * runs, cache, ...).  After an rnd-rw pair both methods must have left the
 * same bytes (the sequence is idempotent): -EIO if they did not.
 */
int iob_matrix_file(const IobRow *base, const char *path, IobRowDone done, void *arg,
                    HsError *err);

/* The grid's rnd-page rows, read then mmap, on the heap table at table. */
int iob_matrix_pages(const IobRow *base, const char *table, IobRowDone done, void *arg,
                     HsError *err);

#endif
