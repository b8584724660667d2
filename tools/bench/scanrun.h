/*
 * scanrun.h -- one measured sequential scan of a table: prepare the cache,
 *              open the buffer manager, run the SeqScan node into a sink,
 *              close, and report every figure.  seqscan and the comparison
 *              both run scans through here.
 *
 * A file that shrinks under an mmap window raises SIGBUS when the missing
 * page is touched, by the buffer manager or by the executor.  scan_run()
 * catches it, turns the faulting address into the block it belongs to, and
 * fails with an error naming that block instead of dying.
 *
 * With sc_workers > 1 the scan is parallel (executor/parallel.h): read
 * access shares one buffer manager between the workers (each with its own
 * ring, no I/O worker: the scan workers are the CPUs' work), mmap gives
 * each its own; every worker runs under its own SIGBUS guard.
 *
 * Entry point: scan_run().
 * See also: scanreport.c -- what seqscan prints of it; compare.c -- the
 * comparison's seqscan rows.
 */
#ifndef HEAPSCAN_SCANRUN_H
#define HEAPSCAN_SCANRUN_H

#include <stdbool.h>
#include <stdint.h>

#include "bufmgr.h"
#include "measure.h"
#include "parallel.h"
#include "qual.h"
#include "seqscan.h"

typedef struct ScanConfig {
    const char *sc_path;
    BufMgrOptions sc_bufopt;
    Qual sc_qual;
    bool sc_skip_corrupt; /* --ignore-checksum-failure */
    CacheMode sc_cache;   /* how to prepare the page cache before the run */
    PgXact *sc_xact;      /* --pgdata: the stopped cluster's transactions (or NULL) */
    int sc_workers;       /* --workers: threads scanning together (0 or 1: one) */
    volatile sig_atomic_t *sc_stop; /* stops a parallel scan when set (or NULL) */
    /* told of each page skipped under sc_skip_corrupt (may be NULL) */
    void (*sc_on_skip)(const HsError *err, void *arg);
    void *sc_arg;
    /* tests only: called after open, before the scan (may be NULL) */
    void (*sc_before_scan)(BufMgr *bm, void *arg);
} ScanConfig;

typedef struct ScanResult {
    uint64_t sr_pages;         /* pages in the table */
    uint64_t sr_bytes;         /* bytes in the table */
    uint64_t sr_rows_scanned;  /* visible tuples tested */
    uint64_t sr_rows_returned; /* rows that passed the qual */
    ScanSum sr_sum_v;          /* sum(v) of them, exact */
    uint64_t sr_nsum_v;        /* rows whose v was summed (0: sum(v) is NULL) */
    uint64_t sr_pages_skipped; /* damaged pages skipped */
    double sr_resident_before; /* page-cache residency when the run started */
    bool sr_ring;              /* the bulk-read ring was used */
    int sr_io_workers;         /* I/O worker threads the scan had (read access) */
    PageIOMethod sr_io_method; /* how its reads were done (read access) */
    unsigned sr_io_depth;      /* reads its stream kept in flight ahead, at most */
    int sr_workers;            /* threads that scanned (1: a serial scan) */
    uint64_t sr_worker_pages[PARALLEL_MAX_WORKERS]; /* pages each walked */
    double sr_worker_seconds[PARALLEL_MAX_WORKERS]; /* and how long each took */
    BufStats sr_buf;                                /* the buffer manager's counters */
    Measure sr_m; /* what the scan cost (open to close) */
} ScanResult;

/* One scan; 0, or a negative code with err naming the file and block. */
int scan_run(const ScanConfig *cfg, ScanResult *res, HsError *err);

#endif
