/*
 * seqscan.h -- the SeqScan node: every visible tuple of a relation, in
 *              block order, filtered by a qual, pulled one row at a time.
 *
 * Entry points: seqscan_begin(), seqscan_next(), seqscan_end(); and
 * executor_run(), which drives a scan into a ScanSink (count the rows,
 * sum v).  Below it: a read stream (readstream.h) of the relation's pages
 * and bufmgr_release(); the node never learns which access method supplied
 * a page.
 *
 * Page at a time, as PostgreSQL's heapgettup_pagemode(): when the node
 * moves onto a page it pins it, walks its line pointers once, and keeps the
 * offsets of the visible tuples that satisfy the qual; rows are then handed
 * out from that list while the page stays pinned.
 *
 * Visibility (heap_tuple_visibility()): as PostgreSQL's once every
 * transaction has ended.  Hint bits, frozen xids and lock-only xmax decide
 * most tuples; a stopped cluster's pg_xact (ss_xact) decides the rest.  A
 * tuple nothing decides stops the scan with HS_EREFUSED naming the block,
 * the item and the xid: never a guess.  On a PD_ALL_VISIBLE page every
 * normal tuple is visible without looking, as PostgreSQL does.
 *
 * Every visible tuple is checked to be a row of t (heap_tuple_check()),
 * whether or not the qual passes it, so a table of another schema is
 * refused on its first visible tuple.  The common case (committed, never
 * deleted, no nulls, pad inline: every tuple mkheap writes) costs one test
 * of the header word and one of pad's length byte.
 *
 * Line pointers are read once, bounds-checked where they are read (even
 * when verification is off) and kept as read, so bytes that are not a heap
 * page, or a page changing under an mmap scan, give an error, never a read
 * outside the page.
 */
#ifndef HEAPSCAN_SEQSCAN_H
#define HEAPSCAN_SEQSCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "bufmgr.h"
#include "heap.h"
#include "qual.h"
#include "readstream.h"

enum {
    SEQSCAN_DONE = 0,    /* no more rows */
    SEQSCAN_ROW = 1,     /* *row holds the next matching row */
    SEQSCAN_SKIPPED = 2, /* a damaged page was skipped; err says which and why */
};

/* A matching tuple of the current page: its line pointer as it was read
 * (lp_off, lp_len) in the low 32 bits, its 1-based number in the high 32
 * (one store in the tuple loop). */
typedef uint64_t ScanItem;

struct ParallelScan;

typedef struct SeqScan {
    BufMgr *ss_bm; /* where pages come from (NULL: seqscan_walk_page() only) */
    BufAccessStrategy *ss_strategy;   /* how its new pages go into the pool */
    struct ParallelScan *ss_parallel; /* the shared allocation of a parallel
                                         scan's blocks, or NULL: all of them */
    uint32_t ss_claim_chunk;          /* parallel: this worker's chunk size */
    uint64_t ss_claim_last;           /* parallel: the end of its last range */
    ReadStream *ss_stream; /* its pages in block order (begun by the first next) */
    const char *ss_path;   /* the relation, for messages */
    PgXact *ss_xact;       /* the cluster's transaction status, or NULL */
    Qual ss_qual;
    QualRange ss_range;   /* ss_qual compiled for the tuple loop */
    bool ss_skip_corrupt; /* skip pages that fail verification, and go on */
    bool ss_fast;         /* take the common case's short way (tests turn it off to
                             check it against the full decision) */
    uint64_t ss_nblocks;  /* pages in the relation */
    uint64_t ss_next_blk; /* one past the page being walked (0 before the first) */
    unsigned ss_ranges;   /* serial: ranges begun (the one of all blocks: 0 or 1) */
    Buffer ss_buf;        /* the pinned current page, or INVALID_BUFFER */
    const unsigned char *ss_page;
    ScanItem ss_match[MAX_HEAP_TUPLES_PER_PAGE]; /* matching tuples of the page */
    unsigned ss_nmatch, ss_pos;
    uint64_t ss_rows_scanned;  /* visible tuples the qual was tested on */
    uint64_t ss_pages_scanned; /* pages walked */
    uint64_t ss_pages_skipped; /* pages skipped as damaged */
} SeqScan;

/* Make ss a scan of no pages yet, of relation path (for messages), for
 * seqscan_walk_page(): fuzzing and tests walk pages they hold in memory. */
void seqscan_init(SeqScan *ss, const char *path, PgXact *xact, const Qual *qual);

/*
 * Walk the 8192 bytes at page as block blkno: count its visible tuples into
 * ss_rows_scanned and keep the matching ones in ss_match (ss_nmatch of
 * them).  0, or a negative code as seqscan_next() says.  Reads nothing
 * outside the page, whatever it holds.
 */
int seqscan_walk_page(SeqScan *ss, const void *page, uint64_t blkno, HsError *err);

/* Start a scan of every block of bm's relation.  xact (may be NULL) is the
 * stopped cluster the relation belongs to, for tuples hint bits do not
 * decide. */
void seqscan_begin(SeqScan *ss, BufMgr *bm, PgXact *xact, const Qual *qual,
                   bool skip_corrupt);

/*
 * The next row matching the qual: SEQSCAN_ROW with *row filled (row->pad
 * points into the pinned page, valid until the next call), SEQSCAN_DONE at
 * the end, SEQSCAN_SKIPPED when skip_corrupt let a damaged page go (err says
 * which; call again to go on), or a negative code with err filled:
 * HS_ECORRUPT for a page that fails verification or a line pointer out of
 * bounds, HS_EREFUSED for a tuple whose visibility nothing decides or that
 * is not a row of t (never skipped: they are not damage).
 */
int seqscan_next(SeqScan *ss, HeapRow *row, HsError *err);

/* Start one worker's part of a parallel scan: the ranges it claims from
 * ps, read through bm with strategy st (see parallel.h). */
void seqscan_begin_parallel(SeqScan *ss, BufMgr *bm, BufAccessStrategy *st,
                            struct ParallelScan *ps, PgXact *xact, const Qual *qual,
                            bool skip_corrupt);

/* Release the current page, if any, and end the stream. */
void seqscan_end(SeqScan *ss);

/* sum(v), exact: 2^31 rows of int8 need 95 bits, so 128. */
__extension__ typedef __int128 ScanSum;

/* What a scan hands its rows to: the query the 1998 experiment timed
 * returns nothing, so counting and summing is all a sink needs. */
typedef struct ScanSink {
    uint64_t sk_rows;   /* rows returned: count(*) */
    ScanSum sk_sum_v;   /* sum(v) of those whose v is not null */
    uint64_t sk_nsum_v; /* how many those are: sum(v) is NULL when 0, as in SQL */
} ScanSink;

/* Format v exactly in decimal into buf (at least 41 bytes). */
const char *scan_sum_format(ScanSum v, char *buf, size_t len);

/*
 * Run ss to the end into sink.  on_skip (may be NULL) is told of each
 * skipped page.  Returns 0 or the first error.
 */
int executor_run(SeqScan *ss, ScanSink *sink,
                 void (*on_skip)(const HsError *err, void *arg), void *arg,
                 HsError *err);

#endif
