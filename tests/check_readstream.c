/*
 * check_readstream.c -- a scan's pages in block order, reads combined up to
 *                       io-combine and started ahead by the I/O worker;
 *                       failures name the block and leave nothing pinned.
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
static const char *t5(void) /* 22,501 rows, 20 pages a segment: 301 pages in 16 */
{
    return tu_make_heap("t5", 22501, 59, 100, 6, 20, false);
}

START_TEST(read_calls_follow_io_combine)
{
    /* the same with and without the I/O worker (_i) */
    const char *path = t0(); /* 134 pages, one segment */
    const size_t combine[] = {8 << 10, 16 << 10, 64 << 10, 128 << 10};
    for (int i = 0; i < 4; i++) {
        BufMgrOptions o;
        bufmgr_default_options(&o);
        o.bo_io_workers = _i;
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
    o.bo_io_workers = _i;
    o.bo_seg_blocks = 20;
    BufMgr *bm = tu_open_bm(seg, &o);
    ck_assert_uint_eq(bufmgr_nblocks(bm), 301);
    tu_stream_all(bm);
    ck_assert_uint_eq(bufmgr_stats(bm)->bs_read_calls, 15 * 2 + 1);
    bufmgr_close(bm);
}
END_TEST

/* A worker's read that fails (the file shrank) while the next is queued:
 * the error names the first missing block, and no frame stays pinned. */
START_TEST(a_failed_read_ahead_leaves_no_pins)
{
    const char *path = t0(); /* 134 pages */
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_io_workers = 1;
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
 * access method and I/O method (_i: read, read with the worker, mmap); one
 * ended early leaves nothing pinned. */
START_TEST(a_stream_hands_out_its_range_in_order)
{
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_access = _i == 2 ? BUF_ACCESS_MMAP : BUF_ACCESS_READ;
    o.bo_io_workers = _i == 1;
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
 * call goes on with the block after it (with and without the worker). */
START_TEST(a_damaged_page_is_skipped_and_the_stream_goes_on)
{
    const char *path = t0();
    int fd = open(path, O_RDWR);
    unsigned char c = 0x77;
    ck_assert_int_eq(pwrite(fd, &c, 1, 33 * BLCKSZ + 6000), 1);
    close(fd);
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_io_workers = _i;
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

static Suite *readstream_suite(void)
{
    Suite *s = suite_create("readstream");
    TCase *tc = tcase_create("readstream");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, read_calls_follow_io_combine, 0, 2);
    tcase_add_test(tc, a_failed_read_ahead_leaves_no_pins);
    tcase_add_loop_test(tc, a_stream_hands_out_its_range_in_order, 0, 3);
    tcase_add_loop_test(tc, a_damaged_page_is_skipped_and_the_stream_goes_on, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(readstream_suite());
}
