/*
 * seqscan.c -- the SeqScan node (see seqscan.h).
 */
#include "seqscan.h"

#include "parallel.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Where pad's varlena header starts when nothing is null. */
#define PLAIN_PAD_OFF (HEAP_TUPLE_HOFF + HEAP_DATA_PAD_OFF)

void seqscan_init(SeqScan *ss, const char *path, PgXact *xact, const Qual *qual)
{
    memset(ss, 0, sizeof(*ss));
    ss->ss_path = path;
    ss->ss_xact = xact;
    ss->ss_qual = *qual;
    ss->ss_range = qual_compile(qual);
    ss->ss_fast = true;
    ss->ss_buf = INVALID_BUFFER;
}

void seqscan_begin(SeqScan *ss, BufMgr *bm, PgXact *xact, const Qual *qual,
                   bool skip_corrupt)
{
    seqscan_init(ss, bufmgr_path(bm), xact, qual);
    ss->ss_bm = bm;
    ss->ss_skip_corrupt = skip_corrupt;
    ss->ss_nblocks = bufmgr_nblocks(bm);
}

static void release_page(SeqScan *ss)
{
    if (ss->ss_buf != INVALID_BUFFER) {
        bufmgr_release(ss->ss_bm, ss->ss_buf);
        ss->ss_buf = INVALID_BUFFER;
    }
}

/*
 * Done with the current page, whose rows have all been returned: make sure
 * it still holds what was verified (a mapped page is the file, which may
 * be written in place meanwhile), then release it.  A change is an error
 * that no --ignore-checksum-failure skips: rows from the page are out.
 */
static int finish_page(SeqScan *ss, HsError *err)
{
    int rc = 0;
    if (ss->ss_buf != INVALID_BUFFER)
        rc = bufmgr_recheck(ss->ss_bm, ss->ss_buf, ss->ss_page, ss->ss_next_blk - 1,
                            err);
    release_page(ss);
    return rc;
}

/*
 * The rest of the common case once heap_tuple_is_plain() holds: pad has a
 * 1-byte header (its length, header included, in the top 7 bits, the low
 * bit set) and ends exactly at the tuple's end.  One compare: the header
 * byte a tuple of len bytes must have.  len > PLAIN_PAD_OFF is known.
 */
static inline bool plain_pad_fits(const unsigned char *t, unsigned len)
{
    return t[PLAIN_PAD_OFF] == ((len - PLAIN_PAD_OFF) << 1 | 1);
}

/* Does a tuple of len bytes at off leave the page, or not hold a header? */
static bool off_page(ptrdiff_t off, unsigned len)
{
    return off + len > BLCKSZ || len < sizeof(HeapTupleHeaderData);
}

/* Reword err (from heap or pgxact) as a refusal of item of block blkno. */
static int refuse_item(SeqScan *ss, uint64_t blkno, unsigned item, HsError *err)
{
    char what[sizeof(err->file) + sizeof(err->msg) + 4];
    snprintf(what, sizeof(what), "%s%s%s", err->file, err->file[0] ? ": " : "",
             err->msg);
    return hs_error_set(err, err->code, ss->ss_path, (int64_t)blkno, "item %u: %s",
                        item, what);
}

/* What decide_tuple() found. */
enum { TUPLE_INVISIBLE = 0, TUPLE_VISIBLE = 1, TUPLE_PASSES = 2 };

/*
 * A tuple the common case does not decide: its visibility in full, then
 * whether it is a row of t and passes the qual.  TUPLE_INVISIBLE,
 * TUPLE_VISIBLE, TUPLE_PASSES (visible and the qual passes it), or a
 * negative code with err naming the item.
 */
static int decide_tuple(SeqScan *ss, uint64_t blkno, unsigned item,
                        const unsigned char *t, unsigned len, bool all_visible,
                        HsError *err)
{
    if (off_page(t - ss->ss_page, len))
        return hs_error_set(err, HS_ECORRUPT, ss->ss_path, (int64_t)blkno,
                            "line pointer %u out of bounds (lp_off %u, lp_len %u)",
                            item, (unsigned)(t - ss->ss_page), len);
    if (!all_visible) {
        HeapTupleHeaderData h;
        memcpy(&h, t, sizeof(h));
        int vis = heap_tuple_visibility(&h, ss->ss_xact, err);
        if (vis <= 0)
            return vis < 0 ? refuse_item(ss, blkno, item, err) : TUPLE_INVISIBLE;
    }
    HeapRow row;
    char why[200];
    if (heap_tuple_check(t, len, &row, why, sizeof(why)) < 0)
        return hs_error_set(err, HS_EREFUSED, ss->ss_path, (int64_t)blkno,
                            "item %u: not a row of t (id int4, k int4, v int8, pad "
                            "text): %s",
                            item, why);
    return qual_row_test(&ss->ss_qual, &row) ? TUPLE_PASSES : TUPLE_VISIBLE;
}

/*
 * Walk the line pointers of block blkno once: count the visible tuples,
 * keep those that satisfy the qual.  A line pointer that leaves the page,
 * or one too short for a tuple header, is an error; so is a visible tuple
 * that is not a row of t, or one whose visibility nothing decides.  wide
 * (the qual's column is v) is a constant in each caller, so the qual's load
 * is chosen once, not per tuple.
 */
static inline __attribute__((always_inline)) int
collect_items(SeqScan *ss, uint64_t blkno, unsigned nitems, bool all_visible, bool wide,
              HsError *err)
{
    const unsigned char *page = ss->ss_page;
    const ItemId *lp = page_linp_const(page);
    const uint64_t lo = ss->ss_range.qr_lo, span = ss->ss_range.qr_span;
    const unsigned col = ss->ss_range.qr_off;
    const bool negate = ss->ss_range.qr_negate;
    const uint64_t mask = heap_plain_mask(all_visible),
                   want = heap_plain_want(all_visible);
    ScanItem *match = ss->ss_match;
    const bool fast = ss->ss_fast;
    unsigned nmatch = 0, visible = 0;

    for (unsigned i = 0; i < nitems; i++) {
        ItemId id = lp[i]; /* read once: the page may change under an mmap scan */
        if (item_id_flags(id) != LP_NORMAL)
            continue;
        unsigned off = item_id_off(id), len = item_id_len(id);
        const unsigned char *t = page + off;
        bool pass;
        if (fast && off + len <= BLCKSZ && len > PLAIN_PAD_OFF &&
            heap_tuple_matches(t, mask, want) && plain_pad_fits(t, len)) {
            int64_t x;
            if (wide) {
                memcpy(&x, t + col, 8);
            } else {
                int32_t x32;
                memcpy(&x32, t + col, 4);
                x = x32;
            }
            pass = ((uint64_t)x - lo <= span) != negate;
        } else {
            int rc = decide_tuple(ss, blkno, i + 1, t, len, all_visible, err);
            if (rc <= TUPLE_INVISIBLE) {
                if (rc < 0)
                    return rc;
                continue;
            }
            pass = rc == TUPLE_PASSES;
        }
        visible++;
        match[nmatch] = (ScanItem)id | (ScanItem)(i + 1) << 32;
        nmatch += pass; /* kept only if it passes */
    }
    ss->ss_rows_scanned += visible;
    ss->ss_nmatch = nmatch;
    return 0;
}

static int collect_page_items(SeqScan *ss, uint64_t blkno, unsigned nitems,
                              bool all_visible, HsError *err)
{
    return ss->ss_range.qr_wide
               ? collect_items(ss, blkno, nitems, all_visible, true, err)
               : collect_items(ss, blkno, nitems, all_visible, false, err);
}

int seqscan_walk_page(SeqScan *ss, const void *page, uint64_t blkno, HsError *err)
{
    ss->ss_page = page;
    const PageHeaderData *ph = page_header(ss->ss_page);
    uint16_t lower = ph->pd_lower; /* read once */
    unsigned nitems = lower <= SIZE_OF_PAGE_HEADER
                          ? 0
                          : (lower - SIZE_OF_PAGE_HEADER) / sizeof(ItemId);
    if (lower > BLCKSZ || nitems > MAX_HEAP_TUPLES_PER_PAGE)
        return hs_error_set(err, HS_ECORRUPT, ss->ss_path, (int64_t)blkno,
                            "invalid page header (pd_lower %u)", lower);
    const bool all_visible = (ph->pd_flags & PD_ALL_VISIBLE) != 0;
    int rc = collect_page_items(ss, blkno, nitems, all_visible, err);
    if (rc == 0) {
        ss->ss_pages_scanned++;
        ss->ss_pos = 0;
    }
    return rc;
}

/* A page that failed: skip it (SEQSCAN_SKIPPED) when damage may be skipped,
 * else the error. */
static int page_failed(SeqScan *ss, int rc)
{
    ss->ss_nmatch = ss->ss_pos = 0;
    if (rc == HS_ECORRUPT && ss->ss_skip_corrupt) {
        ss->ss_pages_skipped++;
        return SEQSCAN_SKIPPED;
    }
    return rc;
}

void seqscan_begin_parallel(SeqScan *ss, BufMgr *bm, BufAccessStrategy *st,
                            struct ParallelScan *ps, PgXact *xact, const Qual *qual,
                            bool skip_corrupt)
{
    seqscan_begin(ss, bm, xact, qual, skip_corrupt);
    ss->ss_strategy = st;
    ss->ss_parallel = ps;
}

/*
 * The stream of the next range to scan: all blocks, the first time, for a
 * serial scan; the next range this worker claims, for a parallel one.
 * 0 with ss_stream NULL when there is none left.
 */
static int next_range(SeqScan *ss, HsError *err)
{
    uint64_t start = 0, end = ss->ss_nblocks;
    read_stream_end(ss->ss_stream);
    ss->ss_stream = NULL;
    if (ss->ss_parallel != NULL) {
        ParallelClaim pc = {ss->ss_claim_chunk, ss->ss_claim_last};
        bool more = parallel_scan_claim(ss->ss_parallel, &pc, &start, &end);
        ss->ss_claim_chunk = pc.pc_chunk, ss->ss_claim_last = pc.pc_last;
        if (!more)
            return 0;
    } else if (ss->ss_ranges++ > 0) {
        return 0;
    }
    ss->ss_stream = read_stream_begin(ss->ss_bm, ss->ss_strategy, start, end, err);
    return ss->ss_stream == NULL ? err->code : 0;
}

/* Move onto the next page of the stream, or of the next range's.
 * SEQSCAN_DONE at the end. */
static int advance_page(SeqScan *ss, HsError *err)
{
    const void *page;
    uint64_t blkno;
    int rc = finish_page(ss, err);
    if (rc < 0)
        return rc;
    if (ss->ss_parallel != NULL && parallel_scan_stopped(ss->ss_parallel))
        return SEQSCAN_DONE; /* another worker failed, or a stop was asked */
    while (ss->ss_stream == NULL || (rc = read_stream_next(ss->ss_stream, &ss->ss_buf,
                                                           &page, &blkno, err)) == 0) {
        if ((rc = next_range(ss, err)) < 0)
            return rc;
        if (ss->ss_stream == NULL)
            return SEQSCAN_DONE;
    }
    if (rc < 0) {
        ss->ss_buf = INVALID_BUFFER;
        return page_failed(ss, rc);
    }
    ss->ss_next_blk = blkno + 1;
    if ((rc = seqscan_walk_page(ss, page, blkno, err)) < 0) {
        release_page(ss);
        return page_failed(ss, rc);
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
    ScanItem m = ss->ss_match[ss->ss_pos++];
    ItemId id = (ItemId)m;
    const unsigned char *t = ss->ss_page + item_id_off(id);
    unsigned len = item_id_len(id);
    if (ss->ss_fast && len > PLAIN_PAD_OFF && heap_tuple_is_plain(t, true) &&
        plain_pad_fits(t, len)) { /* no nulls, a short pad: at fixed offsets */
        memcpy(&row->id, t + HEAP_TUPLE_HOFF, 4);
        memcpy(&row->k, t + HEAP_TUPLE_HOFF + 4, 4);
        memcpy(&row->v, t + HEAP_TUPLE_HOFF + 8, 8);
        row->pad = (const char *)t + PLAIN_PAD_OFF + 1;
        row->pad_len = len - PLAIN_PAD_OFF - 1;
        row->nulls = 0;
        row->pad_form = HEAP_PAD_PLAIN;
        return SEQSCAN_ROW;
    }
    char why[200];
    /* checked when the page was walked: only bytes changing since fail here */
    if (heap_tuple_check(t, len, row, why, sizeof(why)) < 0)
        return hs_error_set(err, HS_EREFUSED, ss->ss_path,
                            (int64_t)(ss->ss_next_blk - 1),
                            "item %u is no longer a row of t (%s): the page changed "
                            "during the scan",
                            (unsigned)(m >> 32), why);
    return SEQSCAN_ROW;
}

void seqscan_end(SeqScan *ss)
{
    release_page(ss);
    read_stream_end(ss->ss_stream);
    ss->ss_stream = NULL;
}

const char *scan_sum_format(ScanSum v, char *buf, size_t len)
{
    char digits[48];
    size_t n = 0;
    /* work on the magnitude as unsigned: -(INT128_MIN) does not fit */
    __extension__ unsigned __int128 m =
        v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
    do {
        digits[n++] = (char)('0' + (int)(m % 10));
        m /= 10;
    } while (m != 0);
    size_t w = 0;
    if (v < 0 && w + 1 < len)
        buf[w++] = '-';
    while (n > 0 && w + 1 < len)
        buf[w++] = digits[--n];
    buf[w] = '\0';
    return buf;
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
            if (!(row.nulls & HEAP_NULL_V)) {
                sink->sk_sum_v += row.v;
                sink->sk_nsum_v++;
            }
        } else if (rc == SEQSCAN_SKIPPED) {
            if (on_skip)
                on_skip(err, arg);
        } else {
            seqscan_end(ss);
            return rc;
        }
    }
}
