/*
 * seqscan.h -- the SeqScan node: every visible tuple of a relation, in
 *              block order, filtered by a qual, pulled one row at a time.
 *
 * Entry points: seqscan_begin(), seqscan_next(), seqscan_end(); and
 * executor_run(), which drives a scan into a ScanSink (count the rows,
 * sum v).  Below it: bufmgr_read()/bufmgr_release() only; the node never
 * learns which access method supplied a page.
 *
 * Page at a time, as PostgreSQL's heapgettup_pagemode(): when the node
 * moves onto a page it pins it, walks its line pointers once, and keeps the
 * offsets of the visible tuples that satisfy the qual; rows are then handed
 * out from that list while the page stays pinned.
 *
 * Visibility without a commit log: a tuple is visible when its xmin is
 * committed or frozen (HEAP_XMIN_COMMITTED, or t_xmin 2) and it has no
 * deleter (HEAP_XMAX_INVALID, or t_xmax 0).  On a PD_ALL_VISIBLE page every
 * normal tuple is visible without looking, as PostgreSQL does.
 *
 * Line pointers are bounds-checked even when verification is off, so bytes
 * that are not a heap page give an error, never a crash or a wrong row.
 */
#ifndef HEAPSCAN_SEQSCAN_H
#define HEAPSCAN_SEQSCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "bufmgr.h"
#include "heap.h"
#include "qual.h"

enum {
    SEQSCAN_DONE = 0,    /* no more rows */
    SEQSCAN_ROW = 1,     /* *row holds the next matching row */
    SEQSCAN_SKIPPED = 2, /* a damaged page was skipped; err says which and why */
};

/*
 * The loop that walks a page's line pointers.  Both give the same answer:
 * scalar, one line pointer at a time, anywhere; avx512, 16 at a time with
 * gathers, on CPUs with AVX-512 F, BW and VL (it leaves the rare page with
 * a bad line pointer, or tuples without the committed/xmax-invalid hint
 * bits, to the scalar loop).  auto: the fastest this CPU has.
 */
typedef enum TupleLoop {
    TUPLE_LOOP_AUTO,
    TUPLE_LOOP_SCALAR,
    TUPLE_LOOP_AVX512
} TupleLoop;

/* Can this CPU run loop? (auto and scalar: always.) */
bool tuple_loop_available(TupleLoop loop);
/* The loop a scan asked to run loop runs: auto (or avx512 where the CPU
 * lacks it) becomes the fastest this CPU has. */
TupleLoop tuple_loop_resolve(TupleLoop loop);
/* "auto", "scalar", "avx512". */
const char *tuple_loop_name(TupleLoop loop);

typedef struct SeqScan {
    BufMgr *ss_bm;
    Qual ss_qual;
    QualRange ss_range;   /* ss_qual compiled for the tuple loop */
    bool ss_skip_corrupt; /* skip pages that fail verification, and go on */
    TupleLoop ss_loop;    /* resolved: scalar or avx512 */
    uint64_t ss_nblocks;  /* pages in the relation */
    uint64_t ss_next_blk; /* the next page to move onto */
    Buffer ss_buf;        /* the pinned current page, or INVALID_BUFFER */
    const unsigned char *ss_page;
    uint16_t ss_match[MAX_HEAP_TUPLES_PER_PAGE]; /* offsets of matching tuples */
    unsigned ss_nmatch, ss_pos;
    uint64_t ss_rows_scanned;  /* visible tuples the qual was tested on */
    uint64_t ss_pages_scanned; /* pages walked */
    uint64_t ss_pages_skipped; /* pages skipped as damaged */
} SeqScan;

/* Start a scan of every block of bm's relation, walking pages with loop
 * (as tuple_loop_resolve() resolves it). */
void seqscan_begin(SeqScan *ss, BufMgr *bm, const Qual *qual, bool skip_corrupt,
                   TupleLoop loop);

/*
 * The next row matching the qual: SEQSCAN_ROW with *row filled (row->pad
 * points into the pinned page, valid until the next call), SEQSCAN_DONE at
 * the end, SEQSCAN_SKIPPED when skip_corrupt let a damaged page go (err says
 * which; call again to go on), or a negative code with err filled.
 */
int seqscan_next(SeqScan *ss, HeapRow *row, HsError *err);

/* Release the current page, if any. */
void seqscan_end(SeqScan *ss);

/* What a scan hands its rows to: the seed's query returns nothing, so
 * counting and summing is all a sink needs. */
typedef struct ScanSink {
    uint64_t sk_rows; /* rows returned */
    int64_t sk_sum_v; /* sum(v) of them, exact */
} ScanSink;

/*
 * Run ss to the end into sink.  on_skip (may be NULL) is told of each
 * skipped page.  Returns 0 or the first error.
 */
int executor_run(SeqScan *ss, ScanSink *sink,
                 void (*on_skip)(const HsError *err, void *arg), void *arg,
                 HsError *err);

#endif
