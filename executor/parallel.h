/*
 * parallel.h -- a sequential scan on several threads, as PostgreSQL's
 *               parallel seq scan: workers claim ranges of blocks from one
 *               shared counter, each scans its ranges through its own read
 *               stream into its own sink, and the answers are added up.
 *
 * Entry points: parallel_scan_init() and parallel_scan_claim() (the block
 * allocation, shared by the workers), executor_run_parallel() (start a
 * thread per worker, wait for them, say how it went).  See also:
 * seqscan.h -- the node each worker runs; bufmgr.h -- bufmgr_set_shared()
 * and bufmgr_strategy_new(), how workers share one pool.
 *
 * Allocation, as PostgreSQL 14's table_block_parallelscan_nextpage():
 * blocks are claimed in chunks from one atomic counter, the chunk being the
 * next power of two of nblocks / 2048, at most 8192 blocks; each worker
 * halves its chunk once fewer than 64 of its chunks are left, so the
 * workers finish together.  Every block is claimed exactly once.
 *
 * The first worker to fail (a page that fails verification, a SIGBUS, an
 * I/O error) stops the others at their next page, and so does the
 * caller's stop flag (Ctrl-C); the first error is the answer.
 */
#ifndef HEAPSCAN_PARALLEL_H
#define HEAPSCAN_PARALLEL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "seqscan.h"

#define PARALLEL_MAX_WORKERS     64
#define PARALLEL_NCHUNKS         2048 /* PostgreSQL's PARALLEL_SEQSCAN_NCHUNKS */
#define PARALLEL_MAX_CHUNK       8192 /* PARALLEL_SEQSCAN_MAX_CHUNK_SIZE */
#define PARALLEL_RAMPDOWN_CHUNKS 64   /* PARALLEL_SEQSCAN_RAMPDOWN_CHUNKS */

typedef struct ParallelScan {
    uint64_t ps_nblocks;      /* blocks in the relation */
    uint32_t ps_chunk;        /* the chunk a worker starts with */
    _Atomic uint64_t ps_next; /* blocks claimed so far */
    _Atomic bool ps_stop;     /* stop: a worker failed, or the caller asked */
    volatile sig_atomic_t *ps_stop_flag; /* the caller's (a signal's), or NULL */
} ParallelScan;

/* A worker's side of the allocation: its chunk size, and where it is. */
typedef struct ParallelClaim {
    uint32_t pc_chunk; /* its current chunk (0 before its first claim) */
    uint64_t pc_last;  /* the end of its last range */
} ParallelClaim;

void parallel_scan_init(ParallelScan *ps, uint64_t nblocks,
                        volatile sig_atomic_t *stop_flag);

/* The next range [*start, *end) for the worker of pc; false when every
 * block is claimed or the scan was stopped. */
bool parallel_scan_claim(ParallelScan *ps, ParallelClaim *pc, uint64_t *start,
                         uint64_t *end);

/* Has the scan been stopped (a worker failed, or the caller's flag)? */
bool parallel_scan_stopped(ParallelScan *ps);

/* One worker: what it reads through, and what it found. */
typedef struct ScanWorker {
    BufMgr *sw_bm;             /* in: its buffer manager (shared for read access) */
    ScanSink sw_sink;          /* out: its rows and sum of v */
    uint64_t sw_rows_scanned;  /* out: visible tuples it tested */
    uint64_t sw_pages;         /* out: pages it walked */
    uint64_t sw_pages_skipped; /* out: damaged pages it skipped */
    double sw_seconds;         /* out: from its start to its end */
    int sw_rc;                 /* out: 0 or its error */
    HsError sw_err;            /* out: that error */
} ScanWorker;

typedef struct ParallelPlan {
    ParallelScan *pp_scan;  /* the shared allocation */
    ScanWorker *pp_workers; /* pp_nworkers of them */
    int pp_nworkers;
    PgXact *pp_xact; /* the stopped cluster, or NULL */
    Qual pp_qual;
    bool pp_skip_corrupt;
    /* told of each skipped page, from the worker's thread (may be NULL) */
    void (*pp_on_skip)(const HsError *err, void *arg);
    void *pp_arg;
    /* runs work(arg) for worker w in its thread (NULL: directly); the tools
     * pass a SIGBUS guard, whose fault becomes the worker's error */
    int (*pp_guard)(ScanWorker *w, int (*work)(void *arg, HsError *err), void *arg,
                    HsError *err);
} ParallelPlan;

/*
 * Run the plan: a thread per worker, each scanning ranges it claims; wait
 * for all.  0, or the first worker's error in err.  The workers' sinks are
 * theirs to add up (executor_sum_workers()).
 */
int executor_run_parallel(const ParallelPlan *pp, HsError *err);

/* The workers' answers and counts added up into sink and *scanned. */
void executor_sum_workers(const ScanWorker *w, int n, ScanSink *sink, uint64_t *scanned,
                          uint64_t *skipped);

#endif
