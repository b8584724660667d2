/*
 * check_readstream.c -- a scan's pages in block order, reads combined up to
 *                       io-combine and started ahead by the I/O worker or
 *                       io_uring; every I/O method gives the same pages and
 *                       counters; failures name the block and leave nothing
 *                       pinned.
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
#include "crc32.h"
#include "readstream.h"
#include "testutil.h"

/* Read with I/O method m: 0 sync, 1 the I/O worker, 2 io_uring (depth 16). */
static void set_method(BufMgrOptions *o, int m)
{
    static const int methods[] = {PAGEIO_SYNC, PAGEIO_WORKER, PAGEIO_URING};
    o->bo_io_method = methods[m];
}

/* The tables these tests read, made by mkheap. */
static const char *t0(void) /* 10,000 rows of pad 59: 134 pages, one segment */
{
    return tu_make_heap("t0", 10000, 59, 100, 1, 0, false);
}
static const char *t5(void) /* 22,501 rows, 20 pages a segment: 301 pages in 16 */
{
    return tu_make_heap("t5", 22501, 59, 100, 6, 20, false);
}

START_TEST(read_calls_follow_io_combine)
{
    /* the same under each I/O method (_i) */
    const char *path = t0(); /* 134 pages, one segment */
    const size_t combine[] = {8 << 10, 16 << 10, 64 << 10, 128 << 10};
    for (int i = 0; i < 4; i++) {
        BufMgrOptions o;
        bufmgr_default_options(&o);
        set_method(&o, _i);
        o.bo_io_combine_bytes = combine[i];
        BufMgr *bm = tu_open_bm(path, &o);
        uint64_t n = bufmgr_nblocks(bm), per = combine[i] / BLCKSZ;
        tu_stream_all(bm);
        ck_assert_uint_eq(bufmgr_stats(bm)->bs_read_calls, (n + per - 1) / per);
        ck_assert_uint_eq(bufmgr_stats(bm)->bs_reads, n);
        bufmgr_close(bm);
    }
    /* across segments, a preadv never spans two files: 20-page segments
     * read 16 + 4 at a time, 15 full segments and a last one of 1 page */
    const char *seg = t5();
    BufMgrOptions o;
    bufmgr_default_options(&o);
    set_method(&o, _i);
    o.bo_seg_blocks = 20;
    BufMgr *bm = tu_open_bm(seg, &o);
    ck_assert_uint_eq(bufmgr_nblocks(bm), 301);
    tu_stream_all(bm);
    ck_assert_uint_eq(bufmgr_stats(bm)->bs_read_calls, 15 * 2 + 1);
    bufmgr_close(bm);
}
END_TEST

/* A read ahead that fails (the file shrank: a short read, then the end)
 * while the next is queued, by the worker or io_uring (_i): the error names
 * the first missing block, and no frame stays pinned. */
START_TEST(a_failed_read_ahead_leaves_no_pins)
{
    const char *path = t0(); /* 134 pages */
    BufMgrOptions o;
    bufmgr_default_options(&o);
    set_method(&o, 1 + _i);
    o.bo_ring_bytes = 256 << 10;
    o.bo_strategy = BUF_STRATEGY_RING; /* 32 frames: two batches of 16 */
    BufMgr *bm = tu_open_bm(path, &o);
    uint64_t n = bufmgr_nblocks(bm);
    ck_assert_int_eq(truncate(path, 100 * BLCKSZ), 0);
    HsError err;
    ReadStream *rs = read_stream_begin(bm, NULL, 0, n, &err);
    ck_assert_ptr_nonnull(rs);
    int rc;
    uint64_t got = 0, b;
    Buffer buf;
    const void *page;
    while ((rc = read_stream_next(rs, &buf, &page, &b, &err)) == 1) {
        ck_assert_uint_eq(b, got++);
        bufmgr_release(bm, buf);
    }
    ck_assert_int_lt(rc, 0);
    ck_assert_int_eq(err.block, 100);
    ck_assert_uint_le(got, 100);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    ck_assert_int_eq(read_stream_next(rs, &buf, &page, &b, &err), 0); /* it ended */
    read_stream_end(rs);
    bufmgr_close(bm);
}
END_TEST

/* A stream of [10, 80) hands out exactly those blocks in order under each
 * access method and I/O method (_i: read, read with the worker, mmap, read
 * with io_uring); one ended early leaves nothing pinned. */
START_TEST(a_stream_hands_out_its_range_in_order)
{
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_access = _i == 2 ? BUF_ACCESS_MMAP : BUF_ACCESS_READ;
    o.bo_io_workers = _i == 1;
    o.bo_io_method = _i == 3 ? PAGEIO_URING : BUFMGR_IO_METHOD_AUTO;
    o.bo_mmap_chunk_bytes = 64 << 10;
    BufMgr *bm = tu_open_bm(t0(), &o);
    HsError err;
    ReadStream *rs = read_stream_begin(bm, NULL, 10, 80, &err);
    ck_assert_ptr_nonnull(rs);
    Buffer b;
    const void *p;
    uint64_t blk, want = 10;
    while (read_stream_next(rs, &b, &p, &blk, &err) == 1) {
        ck_assert_uint_eq(blk, want++);
        bufmgr_release(bm, b);
    }
    ck_assert_uint_eq(want, 80);
    read_stream_end(rs);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    rs = read_stream_begin(bm, NULL, 0, 1000, &err); /* clamped to the 134 pages */
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(read_stream_next(rs, &b, &p, &blk, &err), 1);
        bufmgr_release(bm, b);
    }
    read_stream_end(rs); /* early: runs started ahead are let go */
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    ck_assert_uint_eq(tu_stream_all(bm), 134);
    bufmgr_close(bm);
}
END_TEST

/* A page that fails verification is that block's HS_ECORRUPT, and the next
 * call goes on with the block after it (under each I/O method). */
START_TEST(a_damaged_page_is_skipped_and_the_stream_goes_on)
{
    const char *path = t0();
    int fd = open(path, O_RDWR);
    unsigned char c = 0x77;
    ck_assert_int_eq(pwrite(fd, &c, 1, 33 * BLCKSZ + 6000), 1);
    close(fd);
    BufMgrOptions o;
    bufmgr_default_options(&o);
    set_method(&o, _i);
    BufMgr *bm = tu_open_bm(path, &o);
    HsError err;
    ReadStream *rs = read_stream_begin(bm, NULL, 0, bufmgr_nblocks(bm), &err);
    Buffer b;
    const void *p;
    uint64_t blk, n = 0;
    int rc;
    while ((rc = read_stream_next(rs, &b, &p, &blk, &err)) != 0) {
        if (rc < 0) {
            ck_assert_int_eq(rc, HS_ECORRUPT);
            ck_assert_int_eq(err.block, 33);
            ck_assert_uint_eq(n, 33);
            continue;
        }
        ck_assert_uint_ne(blk, 33);
        n++;
        bufmgr_release(bm, b);
    }
    ck_assert_uint_eq(n, 133);
    read_stream_end(rs);
    ck_assert_uint_eq(bufmgr_stats(bm)->bs_verify_failures, 1);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    bufmgr_close(bm);
}
END_TEST

#if HEAPSCAN_HAVE_URING
/* Every page of bm in order, folded into one CRC, with its counters. */
static uint32_t stream_crc(BufMgr *bm, uint64_t *pages)
{
    HsError err;
    ReadStream *rs = read_stream_begin(bm, NULL, 0, bufmgr_nblocks(bm), &err);
    Buffer b;
    const void *p;
    uint64_t blk;
    uint32_t crc = 0;
    int rc;
    *pages = 0;
    while ((rc = read_stream_next(rs, &b, &p, &blk, &err)) == 1) {
        ck_assert_uint_eq(blk, (*pages)++);
        crc = crc32_update(crc, p, BLCKSZ);
        bufmgr_release(bm, b);
    }
    ck_assert_msg(rc == 0, "%s", err.msg);
    read_stream_end(rs);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    return crc;
}

/* io_uring at depth 1, 2 and 64 (_i) reads what sync reads, with the same
 * counters: tables smaller than one combined read, exactly one, many
 * segments of 20 pages, and segments of 3 pages (every read split). */
START_TEST(io_uring_at_any_depth_reads_what_sync_reads)
{
    static const unsigned depth[] = {1, 2, 64};
    const char *tables[] = {
        tu_make_heap("small", 375, 59, 100, 1, 0, false), /* 5 pages */
        tu_make_heap("one", 1200, 59, 100, 2, 0, false),  /* 16: one read */
        t5(),                                             /* 301 in 16 */
        tu_make_heap("tiny", 3000, 59, 100, 3, 3, false), /* 40 in 14 */
    };
    static const uint32_t seg[] = {0, 0, 20, 3};
    static const uint64_t pages[] = {5, 16, 301, 40};
    for (int t = 0; t < 4; t++) {
        uint32_t crc[2];
        BufStats st[2];
        for (int m = 0; m < 2; m++) {
            BufMgrOptions o;
            bufmgr_default_options(&o);
            o.bo_io_method = m ? PAGEIO_URING : PAGEIO_SYNC;
            o.bo_io_depth = depth[_i];
            if (seg[t])
                o.bo_seg_blocks = seg[t];
            BufMgr *bm = tu_open_bm(tables[t], &o);
            uint64_t n;
            crc[m] = stream_crc(bm, &n);
            ck_assert_uint_eq(n, pages[t]);
            st[m] = *bufmgr_stats(bm);
            bufmgr_close(bm);
        }
        ck_assert_uint_eq(crc[1], crc[0]);
        ck_assert_uint_eq(st[1].bs_reads, st[0].bs_reads);
        ck_assert_uint_eq(st[1].bs_read_calls, st[0].bs_read_calls);
        ck_assert_uint_eq(st[1].bs_pages_verified, pages[t]);
    }
}
END_TEST

/* The depth a stream keeps in flight is what its frames hold: io_uring's
 * default ring grows for io-depth, a ring or pool set smaller cuts it (to
 * none), and sync and mmap have none, the worker two. */
START_TEST(the_depth_is_what_the_frames_hold)
{
    static const struct {
        int method;
        BufAccess access;
        size_t ring, pool;
        BufStrategy strategy;
        unsigned want;
    } c[] = {
        {PAGEIO_URING, BUF_ACCESS_READ, BUFMGR_RING_AUTO, 128 << 20, BUF_STRATEGY_RING,
         16},
        {PAGEIO_URING, BUF_ACCESS_READ, 1 << 20, 128 << 20, BUF_STRATEGY_RING, 7},
        {PAGEIO_URING, BUF_ACCESS_READ, 256 << 10, 128 << 20, BUF_STRATEGY_RING, 1},
        {PAGEIO_URING, BUF_ACCESS_READ, 128 << 10, 128 << 20, BUF_STRATEGY_RING, 0},
        {PAGEIO_URING, BUF_ACCESS_READ, 128 << 10, 384 << 10, BUF_STRATEGY_NORMAL, 1},
        {PAGEIO_URING, BUF_ACCESS_READ, 128 << 10, 256 << 10, BUF_STRATEGY_NORMAL, 0},
        {PAGEIO_WORKER, BUF_ACCESS_READ, BUFMGR_RING_AUTO, 128 << 20, BUF_STRATEGY_RING,
         2},
        {PAGEIO_SYNC, BUF_ACCESS_READ, BUFMGR_RING_AUTO, 128 << 20, BUF_STRATEGY_RING,
         0},
        {BUFMGR_IO_METHOD_AUTO, BUF_ACCESS_MMAP, 0, 128 << 20, BUF_STRATEGY_AUTO, 0},
    };
    const char *path = t0();
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        BufMgrOptions o;
        bufmgr_default_options(&o);
        o.bo_io_method = c[i].method;
        o.bo_access = c[i].access;
        o.bo_ring_bytes = c[i].ring;
        o.bo_pool_bytes = c[i].pool;
        o.bo_strategy = c[i].strategy;
        BufMgr *bm = tu_open_bm(path, &o);
        ck_assert_msg(read_stream_depth(bm, NULL) == c[i].want, "case %zu: depth %u", i,
                      read_stream_depth(bm, NULL));
        ck_assert_uint_eq(tu_stream_all(bm), 134);
        bufmgr_close(bm);
    }
}
END_TEST
#endif

/* The I/O methods this build has: io_uring only with liburing. */
#define NMETHODS (HEAPSCAN_HAVE_URING ? 3 : 2)

static Suite *readstream_suite(void)
{
    Suite *s = suite_create("readstream");
    TCase *tc = tcase_create("readstream");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, read_calls_follow_io_combine, 0, NMETHODS);
    tcase_add_loop_test(tc, a_failed_read_ahead_leaves_no_pins, 0, NMETHODS - 1);
    tcase_add_loop_test(tc, a_stream_hands_out_its_range_in_order, 0, NMETHODS + 1);
    tcase_add_loop_test(tc, a_damaged_page_is_skipped_and_the_stream_goes_on, 0,
                        NMETHODS);
#if HEAPSCAN_HAVE_URING
    tcase_add_loop_test(tc, io_uring_at_any_depth_reads_what_sync_reads, 0, 3);
    tcase_add_test(tc, the_depth_is_what_the_frames_hold);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(readstream_suite());
}
