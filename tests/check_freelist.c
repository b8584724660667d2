/*
 * check_freelist.c -- replacement: the bulk-read ring keeps a scan inside
 *                     its frames, the clock sweep keeps what is used, and
 *                     a pool too small for look-ahead reads each page once.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bufmgr.h"
#include "readstream.h"
#include "testutil.h"

/* The tables these tests read, made by mkheap. */
static const char *t0(void) /* 10,000 rows of pad 59: 134 pages, one segment */
{
    return tu_make_heap("t0", 10000, 59, 100, 1, 0, false);
}
static const char *t2(void) /* 6,000 rows of pad 200: 188 pages */
{
    return tu_make_heap("t2", 6000, 200, 100, 3, 0, false);
}

START_TEST(ring_scan_never_holds_more_than_the_ring)
{
    /* without and with the I/O worker (_i), whose read-ahead must not evict
     * pages it read before they are used either */
    const char *path = t2(); /* 188 pages */
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_io_workers = _i;
    o.bo_pool_bytes = 8 << 20; /* 1024 frames: room for all, but the ring is forced */
    o.bo_strategy = BUF_STRATEGY_RING;
    o.bo_ring_bytes = 256 << 10; /* 32 frames */
    BufMgr *bm = tu_open_bm(path, &o);
    uint64_t n = bufmgr_nblocks(bm);
    tu_stream_all(bm);
    const BufStats *s = bufmgr_stats(bm);
    ck_assert_uint_eq(s->bs_frames_used, 32);
    ck_assert_uint_eq(s->bs_reads, n);
    ck_assert_uint_eq(s->bs_evictions, n - 32);
    /* a second scan finds only the ring's last 32 pages and reads the rest */
    tu_stream_all(bm);
    ck_assert_uint_le(s->bs_frames_used, 32);
    bufmgr_close(bm);
}
END_TEST

/* A pool of one batch (no ring): read-ahead would take its own unused
 * pages first, so it stays off and every page is read once. */
START_TEST(a_small_pool_reads_every_page_once)
{
    const char *path = t2(); /* 188 pages */
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_io_workers = _i;
    o.bo_pool_bytes = 128 << 10; /* 16 frames: one batch */
    o.bo_ring_bytes = 64 << 10;  /* unused, but must fit the pool */
    o.bo_strategy = BUF_STRATEGY_NORMAL;
    BufMgr *bm = tu_open_bm(path, &o);
    tu_stream_all(bm);
    ck_assert_uint_eq(bufmgr_stats(bm)->bs_reads, bufmgr_nblocks(bm));
    bufmgr_close(bm);
}
END_TEST

/* In a pool of 16 frames without a ring, a page used again and again
 * outlives 15 pages used once each; a pinned frame is never taken. */
START_TEST(the_clock_sweep_keeps_what_is_used)
{
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_pool_bytes = 16 * BLCKSZ;
    o.bo_ring_bytes = 8 * BLCKSZ;
    o.bo_io_combine_bytes = BLCKSZ;
    o.bo_strategy = BUF_STRATEGY_NORMAL;
    BufMgr *bm = tu_open_bm(t0(), &o);
    HsError err;
    Buffer b, pinned;
    const void *p;
    for (uint64_t blk = 0; blk < 16; blk++) {
        ck_assert_int_eq(bufmgr_read(bm, blk, &b, &p, &err), 0);
        bufmgr_release(bm, b);
    }
    for (int i = 0; i < 4; i++) { /* block 3: usage 5 */
        ck_assert_int_eq(bufmgr_read(bm, 3, &b, &p, &err), 0);
        bufmgr_release(bm, b);
    }
    ck_assert_int_eq(bufmgr_read(bm, 9, &pinned, &p, &err), 0); /* held throughout */
    const BufStats *s = bufmgr_stats(bm);
    for (uint64_t blk = 16; blk < 30; blk++) {
        ck_assert_int_eq(bufmgr_read(bm, blk, &b, &p, &err), 0);
        bufmgr_release(bm, b);
    }
    uint64_t reads = s->bs_reads;
    ck_assert_int_eq(bufmgr_read(bm, 3, &b, &p, &err), 0); /* still there */
    bufmgr_release(bm, b);
    ck_assert_int_eq(bufmgr_read(bm, 9, &b, &p, &err), 0); /* pinned: still there */
    bufmgr_release(bm, b);
    ck_assert_uint_eq(s->bs_reads, reads);
    ck_assert_int_eq(bufmgr_read(bm, 5, &b, &p, &err), 0); /* used once: evicted */
    bufmgr_release(bm, b);
    ck_assert_uint_eq(s->bs_reads, reads + 1);
    bufmgr_release(bm, pinned);
    bufmgr_close(bm);
}
END_TEST

static Suite *freelist_suite(void)
{
    Suite *s = suite_create("freelist");
    TCase *tc = tcase_create("freelist");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, ring_scan_never_holds_more_than_the_ring, 0, 2);
    tcase_add_loop_test(tc, a_small_pool_reads_every_page_once, 0, 2);
    tcase_add_test(tc, the_clock_sweep_keeps_what_is_used);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(freelist_suite());
}
