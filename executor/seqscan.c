/*
 * seqscan.c -- the SeqScan node (see seqscan.h).
 */
#include "seqscan.h"

#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX512_LOOP 1
#else
#define HAVE_AVX512_LOOP 0
#endif

/* The smallest tuple of t: header, id, k, v and a 1-byte varlena header. */
#define MIN_TUPLE_LEN (HEAP_TUPLE_HOFF + HEAP_DATA_PAD_OFF + 1)

void seqscan_begin(SeqScan *ss, BufMgr *bm, const Qual *qual, bool skip_corrupt,
                   TupleLoop loop)
{
    memset(ss, 0, sizeof(*ss));
    ss->ss_bm = bm;
    ss->ss_qual = *qual;
    ss->ss_range = qual_compile(qual);
    ss->ss_skip_corrupt = skip_corrupt;
    ss->ss_loop = tuple_loop_resolve(loop);
    ss->ss_nblocks = bufmgr_nblocks(bm);
    ss->ss_buf = INVALID_BUFFER;
    bufmgr_scan_hint(bm, 0, ss->ss_nblocks);
}

bool tuple_loop_available(TupleLoop loop)
{
    if (loop != TUPLE_LOOP_AVX512)
        return true;
#if HAVE_AVX512_LOOP
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}

TupleLoop tuple_loop_resolve(TupleLoop loop)
{
    if (loop == TUPLE_LOOP_SCALAR)
        return loop;
    /* auto, or avx512 asked for where the CPU lacks it (callers check first) */
    return tuple_loop_available(TUPLE_LOOP_AVX512) ? TUPLE_LOOP_AVX512
                                                   : TUPLE_LOOP_SCALAR;
}

const char *tuple_loop_name(TupleLoop loop)
{
    static const char *const names[] = {
        [TUPLE_LOOP_AUTO] = "auto",
        [TUPLE_LOOP_SCALAR] = "scalar",
        [TUPLE_LOOP_AVX512] = "avx512",
    };
    return names[loop];
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
static int collect_scalar(SeqScan *ss, uint64_t blkno, unsigned nitems,
                          bool all_visible, HsError *err)
{
    const unsigned char *page = ss->ss_page;
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
    ss->ss_nmatch = nmatch;
    return 0;
}

#if HAVE_AVX512_LOOP
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,popcnt")))

/* Lanes of x (eight int64) in [lo, lo + span], as one unsigned compare. */
AVX512 static inline __mmask8 in_range8(__m512i x, __m512i lo, __m512i span)
{
    return _mm512_cmple_epu64_mask(_mm512_sub_epi64(x, lo), span);
}

/*
 * The same walk, 16 line pointers at a time: decode them in vector
 * registers, gather the 16 tuples' t_infomask and the qual's column, and
 * compress the passing offsets into ss_match.  Only the common case is
 * done here: it returns false, with no count changed, for a page with a
 * line pointer out of bounds or a tuple whose visibility needs more than
 * "xmin committed and xmax invalid" (the scalar loop then does the page and
 * reports the error exactly).  Gathers are masked to the normal line
 * pointers, and those were checked to lie in the page first.
 */
AVX512 static bool collect_avx512(SeqScan *ss, unsigned nitems, bool all_visible)
{
    const unsigned char *page = ss->ss_page;
    const QualRange rt = ss->ss_range;
    const ItemId *lp = page_linp_const(page);
    const __m512i lanes =
        _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i both = _mm512_set1_epi32(HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID);
    const __m512i lo = _mm512_set1_epi64((long long)rt.qr_lo);
    const __m512i span = _mm512_set1_epi64((long long)rt.qr_span);
    const __m512i col = _mm512_set1_epi32((int)rt.qr_off);
    uint16_t *match = ss->ss_match; /* unused until ss_nmatch says so */
    unsigned nmatch = 0, visible = 0;

    for (unsigned i = 0; i < nitems; i += 16) {
        __mmask16 in =
            (__mmask16)(nitems - i >= 16 ? 0xffff : (1u << (nitems - i)) - 1);
        __m512i w = _mm512_maskz_loadu_epi32(in, lp + i);
        __m512i flags =
            _mm512_and_si512(_mm512_srli_epi32(w, 15), _mm512_set1_epi32(3));
        __mmask16 normal =
            _mm512_mask_cmpeq_epi32_mask(in, flags, _mm512_set1_epi32(LP_NORMAL));
        __m512i off = _mm512_and_si512(w, _mm512_set1_epi32(0x7fff));
        __m512i len = _mm512_srli_epi32(w, 17);
        __mmask16 bad =
            _mm512_mask_cmpgt_epu32_mask(normal, _mm512_add_epi32(off, len),
                                         _mm512_set1_epi32(BLCKSZ)) |
            _mm512_mask_cmplt_epu32_mask(normal, len, _mm512_set1_epi32(MIN_TUPLE_LEN));
        if (bad)
            return false;
        if (!all_visible) {
            __m512i at = _mm512_add_epi32(
                off, _mm512_set1_epi32(offsetof(HeapTupleHeaderData, t_infomask)));
            __m512i mask = _mm512_mask_i32gather_epi32(zero, normal, at, page, 1);
            if (_mm512_mask_cmpeq_epi32_mask(normal, _mm512_and_si512(mask, both),
                                             both) != normal)
                return false;
        }
        visible += (unsigned)__builtin_popcount(normal);

        __m512i at = _mm512_add_epi32(off, col);
        __m512i xlo, xhi;
        if (rt.qr_wide) {
            xlo = _mm512_mask_i32gather_epi64(zero, (__mmask8)normal,
                                              _mm512_castsi512_si256(at), page, 1);
            xhi =
                _mm512_mask_i32gather_epi64(zero, (__mmask8)(normal >> 8),
                                            _mm512_extracti64x4_epi64(at, 1), page, 1);
        } else {
            __m512i x = _mm512_mask_i32gather_epi32(zero, normal, at, page, 1);
            xlo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(x));
            xhi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(x, 1));
        }
        __mmask16 pass = (__mmask16)(in_range8(xlo, lo, span) |
                                     (unsigned)in_range8(xhi, lo, span) << 8);
        if (rt.qr_negate)
            pass = (__mmask16)~pass;
        pass = rt.qr_empty ? 0 : pass & normal;

        unsigned npass = (unsigned)__builtin_popcount(pass);
        __m512i idx = _mm512_maskz_compress_epi32(
            pass, _mm512_add_epi32(lanes, _mm512_set1_epi32((int)i)));
        _mm256_mask_storeu_epi16(match + nmatch, (__mmask16)((1u << npass) - 1),
                                 _mm512_cvtepi32_epi16(idx));
        nmatch += npass;
    }
    ss->ss_rows_scanned += visible;
    ss->ss_nmatch = nmatch;
    return true;
}
#endif

static int collect_page(SeqScan *ss, uint64_t blkno, HsError *err)
{
    const PageHeaderData *ph = page_header(ss->ss_page);
    unsigned nitems = page_max_offset(ss->ss_page);
    if (ph->pd_lower > BLCKSZ || nitems > MAX_HEAP_TUPLES_PER_PAGE)
        return hs_error_set(err, HS_ECORRUPT, bufmgr_path(ss->ss_bm), (int64_t)blkno,
                            "invalid page header (pd_lower %u)", ph->pd_lower);
    const bool all_visible = (ph->pd_flags & PD_ALL_VISIBLE) != 0;
    int rc = 0;
#if HAVE_AVX512_LOOP
    if (ss->ss_loop != TUPLE_LOOP_AVX512 || !collect_avx512(ss, nitems, all_visible))
#endif
        rc = collect_scalar(ss, blkno, nitems, all_visible, err);
    if (rc == 0) {
        ss->ss_pages_scanned++;
        ss->ss_pos = 0;
    }
    return rc;
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
