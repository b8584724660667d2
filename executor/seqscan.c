/*
 * seqscan.c -- the SeqScan node (see seqscan.h).
 */
#include "seqscan.h"

#include <string.h>

/* The smallest tuple of t: header, id, k, v and a 1-byte varlena header. */
#define MIN_TUPLE_LEN (HEAP_TUPLE_HOFF + HEAP_DATA_PAD_OFF + 1)

void seqscan_begin(SeqScan *ss, BufMgr *bm, const Qual *qual, bool skip_corrupt)
{
    memset(ss, 0, sizeof(*ss));
    ss->ss_bm = bm;
    ss->ss_qual = *qual;
    ss->ss_range = qual_compile(qual);
    ss->ss_skip_corrupt = skip_corrupt;
    ss->ss_nblocks = bufmgr_nblocks(bm);
    ss->ss_buf = INVALID_BUFFER;
    bufmgr_scan_hint(bm, 0, ss->ss_nblocks);
}

static void release_page(SeqScan *ss)
{
    if (ss->ss_buf != INVALID_BUFFER) {
        bufmgr_release(ss->ss_bm, ss->ss_buf);
        ss->ss_buf = INVALID_BUFFER;
    }
}

static inline bool tuple_visible(const HeapTupleHeaderData *h)
{
    /* the common case first: committed (or frozen) and never deleted */
    const uint16_t both = HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID;
    if ((h->t_infomask & both) == both)
        return true;
    bool xmin_ok =
        (h->t_infomask & HEAP_XMIN_COMMITTED) || h->t_xmin == FROZEN_TRANSACTION_ID;
    bool xmax_ok = (h->t_infomask & HEAP_XMAX_INVALID) || h->t_xmax == 0;
    return xmin_ok && xmax_ok;
}

/*
 * Walk the line pointers of block blkno once: count the visible tuples,
 * keep the offsets of those that satisfy the qual.  A line pointer that
 * leaves the page, or a tuple too short to be one of t's, is an error.
 */
static int collect_page(SeqScan *ss, uint64_t blkno, HsError *err)
{
    const unsigned char *page = ss->ss_page;
    const PageHeaderData *ph = page_header(page);
    unsigned nitems = page_max_offset(page);
    if (ph->pd_lower > BLCKSZ || nitems > MAX_HEAP_TUPLES_PER_PAGE)
        return hs_error_set(err, HS_ECORRUPT, bufmgr_path(ss->ss_bm), (int64_t)blkno,
                            "invalid page header (pd_lower %u)", ph->pd_lower);
    const bool all_visible = (ph->pd_flags & PD_ALL_VISIBLE) != 0;
    const QualRange rt = ss->ss_range;
    const ItemId *lp = page_linp_const(page);
    unsigned nmatch = 0, visible = 0;

    for (unsigned i = 0; i < nitems; i++) {
        ItemId id = lp[i];
        if (item_id_flags(id) != LP_NORMAL)
            continue;
        unsigned off = item_id_off(id), len = item_id_len(id);
        if (off + len > BLCKSZ || len < MIN_TUPLE_LEN)
            return hs_error_set(err, HS_ECORRUPT, bufmgr_path(ss->ss_bm),
                                (int64_t)blkno,
                                "line pointer %u out of bounds (lp_off %u, lp_len %u)",
                                i + 1, off, len);
        const unsigned char *t = page + off;
        if (!all_visible && !tuple_visible((const HeapTupleHeaderData *)t))
            continue;
        visible++;
        ss->ss_match[nmatch] = (uint16_t)(i + 1);
        nmatch += qual_range_test(&rt, t); /* kept only if it passes */
    }
    ss->ss_rows_scanned += visible;
    ss->ss_pages_scanned++;
    ss->ss_nmatch = nmatch;
    ss->ss_pos = 0;
    return 0;
}

/* Move onto the next page. SEQSCAN_DONE at the end. */
static int advance_page(SeqScan *ss, HsError *err)
{
    release_page(ss);
    if (ss->ss_next_blk >= ss->ss_nblocks)
        return SEQSCAN_DONE;
    uint64_t blkno = ss->ss_next_blk++;
    const void *page;
    int rc = bufmgr_read(ss->ss_bm, blkno, &ss->ss_buf, &page, err);
    if (rc < 0) {
        ss->ss_buf = INVALID_BUFFER;
        ss->ss_nmatch = ss->ss_pos = 0;
        if (rc == HS_ECORRUPT && ss->ss_skip_corrupt) {
            ss->ss_pages_skipped++;
            return SEQSCAN_SKIPPED;
        }
        return rc;
    }
    ss->ss_page = page;
    if ((rc = collect_page(ss, blkno, err)) < 0) {
        release_page(ss);
        if (rc == HS_ECORRUPT && ss->ss_skip_corrupt) {
            ss->ss_pages_skipped++;
            return SEQSCAN_SKIPPED;
        }
        return rc;
    }
    return SEQSCAN_ROW; /* a page is ready (maybe with no matches) */
}

int seqscan_next(SeqScan *ss, HeapRow *row, HsError *err)
{
    while (ss->ss_pos >= ss->ss_nmatch) {
        int rc = advance_page(ss, err);
        if (rc != SEQSCAN_ROW)
            return rc;
    }
    unsigned off = ss->ss_match[ss->ss_pos++];
    ItemId id = page_item_id(ss->ss_page, off);
    if (heap_tuple_deform(ss->ss_page + item_id_off(id), item_id_len(id), row) < 0)
        return hs_error_set(err, HS_ECORRUPT, bufmgr_path(ss->ss_bm),
                            (int64_t)(ss->ss_next_blk - 1),
                            "tuple %u is not a row of t (id int4, k int4, v int8, "
                            "pad text)",
                            off);
    return SEQSCAN_ROW;
}

void seqscan_end(SeqScan *ss)
{
    release_page(ss);
}

int executor_run(SeqScan *ss, ScanSink *sink,
                 void (*on_skip)(const HsError *err, void *arg), void *arg,
                 HsError *err)
{
    HeapRow row;
    for (;;) {
        int rc = seqscan_next(ss, &row, err);
        if (rc == SEQSCAN_ROW) {
            sink->sk_rows++;
            sink->sk_sum_v += row.v;
        } else if (rc == SEQSCAN_SKIPPED) {
            if (on_skip)
                on_skip(err, arg);
        } else {
            seqscan_end(ss);
            return rc;
        }
    }
}
