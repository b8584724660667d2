/*
 * check_pageio.c -- the I/O methods (in line, the I/O worker, io_uring) and
 *                   mmap windows: every request gets its own pages and
 *                   result, whatever the method; errors name the block; a
 *                   simulated latency holds every request back.  The
 *                   io_uring method's faults: check_pageio_uring.c.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pageio.h"
#include "testutil.h"

static RelFile rf;
static unsigned char a[4 * BLCKSZ], b[4 * BLCKSZ];
static void *fa[4], *fb[4];

/* A relation of 20 numbered pages in segments of 8, open in rf. */
static void setup(void)
{
    HsError err;
    tu_setup();
    tu_write_rel(tu_path("r"), 8, 20, false);
    ck_assert_int_eq(relfile_open(&rf, tu_path("r"), 8, &err), 0);
    for (int i = 0; i < 4; i++) {
        fa[i] = a + (size_t)i * BLCKSZ;
        fb[i] = b + (size_t)i * BLCKSZ;
    }
}

static void teardown(void)
{
    relfile_close(&rf);
    tu_teardown();
}

/* Open method m (io_uring at depth 4) over rf, or fail the test. */
static PageIO *open_method(PageIOMethod m)
{
    PageIO *io;
    HsError err;
    PageIOConfig cfg = {.pc_method = m, .pc_depth = 4};
    ck_assert_int_eq(pageio_open(&io, &rf, &cfg, &err), 0);
    return io;
}

static void assert_numbered(const unsigned char *buf, uint64_t first, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint64_t blk;
        memcpy(&blk, buf + (size_t)i * BLCKSZ, 8);
        ck_assert_uint_eq(blk, first + i);
        ck_assert_uint_eq(buf[(size_t)i * BLCKSZ + BLCKSZ - 1], 0xab);
    }
}

/* Two requests at a time, oldest waited for first, each with its own
 * result: one crosses into segment 1, one runs past the end. */
START_TEST(requests_complete_in_order_with_their_own_results)
{
    PageIOMethod m = (PageIOMethod)_i; /* sync, worker, io_uring */
    HsError err;
    PageIO *io = open_method(m);
    ck_assert_int_eq(pageio_method(io), m);
    ck_assert_uint_eq(pageio_max_in_flight(io), m == PAGEIO_WORKER ? PAGEIO_WORKER_DEPTH
                                                : m == PAGEIO_URING ? 4
                                                                    : 1);
    for (int round = 0; round < 3; round++) {
        PageIORequest ra = {.pr_blkno = 6, .pr_n = 4, .pr_pages = fa};
        PageIORequest rb = {.pr_blkno = 17, .pr_n = 4, .pr_pages = fb};
        memset(a, 0, sizeof(a));
        pageio_submit(io, &ra);
        if (m == PAGEIO_SYNC) { /* one at a time: its submit did the read */
            ck_assert_int_eq(pageio_wait(io, &ra, &err), 0);
            pageio_submit(io, &rb);
        } else {
            pageio_submit(io, &rb);
            ck_assert_int_eq(pageio_wait(io, &ra, &err), 0);
        }
        ck_assert_uint_eq(ra.pr_calls, 2); /* one preadv per segment */
        assert_numbered(a, 6, 4);
        ck_assert_int_eq(pageio_wait(io, &rb, &err), -EINVAL);
        ck_assert_int_eq(rb.pr_rc, -EINVAL);
        ck_assert_int_eq(err.block, 17);
    }
    /* lives until the close, which waits for it (the worker writes its result) */
    PageIORequest left = {.pr_blkno = 0, .pr_n = 4, .pr_pages = fa};
    if (m != PAGEIO_SYNC) {
        usleep(5000); /* the worker sleeps, and is woken */
        pageio_submit(io, &left);
    }
    pageio_close(io); /* with a request outstanding: it is waited for */
    io = open_method(m);
    usleep(5000);
    pageio_close(io); /* while the worker sleeps */
}
END_TEST

/* pageio_read() reads in the caller's thread whatever the method, beside
 * requests in flight. */
START_TEST(a_read_now_beside_one_in_flight)
{
    HsError err;
    PageIO *io = open_method(PAGEIO_WORKER);
    PageIORequest ra = {.pr_blkno = 0, .pr_n = 4, .pr_pages = fa};
    PageIORequest rb = {.pr_blkno = 12, .pr_n = 4, .pr_pages = fb};
    pageio_submit(io, &ra);
    ck_assert_int_eq(pageio_read(io, &rb, &err), 0);
    ck_assert_uint_eq(rb.pr_calls, 1);
    assert_numbered(b, 12, 4);
    ck_assert_int_eq(pageio_wait(io, &ra, &err), 0);
    assert_numbered(a, 0, 4);
    pageio_close(io);
}
END_TEST

/* A window never runs past its segment or the relation. */
START_TEST(windows_stop_at_the_segment_and_the_end)
{
    PageIOWindow w;
    HsError err;
    ck_assert_int_eq(pageio_map(&rf, 5, 100, PAGEIO_ADV_SEQUENTIAL, &w, &err), 0);
    ck_assert_uint_eq(w.pw_first, 5);
    ck_assert_uint_eq(w.pw_npages, 3); /* 5, 6, 7: segment 0 ends at 8 */
    assert_numbered(w.pw_base, 5, 3);
    pageio_unmap(&w);
    ck_assert_ptr_null(w.pw_base);
    pageio_unmap(&w); /* twice is fine */
    ck_assert_int_eq(pageio_map(&rf, 16, 100, PAGEIO_ADV_POPULATE, &w, &err), 0);
    ck_assert_uint_eq(w.pw_npages, 4); /* 16..19: the relation ends at 20 */
    assert_numbered(w.pw_base, 16, 4);
    pageio_unmap(&w);
    ck_assert_int_eq(pageio_map(&rf, 20, 1, PAGEIO_ADV_NORMAL, &w, &err), -EINVAL);
    ck_assert_int_eq(err.block, 20);
}
END_TEST

/* --io-latency: no request completes sooner than the latency after its
 * submit, under every method (_i); the read itself is real. */
START_TEST(a_simulated_latency_holds_every_request_back)
{
    PageIO *io;
    HsError err;
    PageIOConfig cfg = {
        .pc_method = (PageIOMethod)_i, .pc_depth = 4, .pc_latency_us = 20000};
    ck_assert_int_eq(pageio_open(&io, &rf, &cfg, &err), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    PageIORequest ra = {.pr_blkno = 0, .pr_n = 4, .pr_pages = fa};
    PageIORequest rb = {.pr_blkno = 12, .pr_n = 4, .pr_pages = fb};
    ck_assert_int_eq(pageio_read(io, &ra, &err), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    ck_assert_msg(s >= 0.020, "read in %f s", s);
    assert_numbered(a, 0, 4);
    pageio_submit(io, &rb);
    ck_assert_int_eq(pageio_wait(io, &rb, &err), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    s = (double)(t0.tv_sec - t1.tv_sec) + (t0.tv_nsec - t1.tv_nsec) * 1e-9;
    ck_assert_msg(s >= 0.020, "submitted and waited for in %f s", s);
    assert_numbered(b, 12, 4);
    pageio_close(io);
}
END_TEST

START_TEST(names_follow_the_enums)
{
    ck_assert_str_eq(pageio_method_names[PAGEIO_SYNC], "sync");
    ck_assert_str_eq(pageio_method_names[PAGEIO_WORKER], "worker");
    ck_assert_str_eq(pageio_method_name(PAGEIO_URING), "io_uring");
    ck_assert_ptr_null(pageio_method_names[PAGEIO_URING + 1]);
    ck_assert_str_eq(pageio_advice_name(PAGEIO_ADV_WILLNEED), "willneed");
    ck_assert_ptr_null(pageio_advice_names[PAGEIO_ADV_POPULATE + 1]);
}
END_TEST

/* The I/O methods this build has: io_uring only with liburing. */
#define NMETHODS (HEAPSCAN_HAVE_URING ? 3 : 2)

static Suite *pageio_suite(void)
{
    Suite *s = suite_create("pageio");
    TCase *tc = tcase_create("methods");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, requests_complete_in_order_with_their_own_results, 0,
                        NMETHODS);
    tcase_add_loop_test(tc, a_simulated_latency_holds_every_request_back, 0, NMETHODS);
    tcase_add_test(tc, a_read_now_beside_one_in_flight);
    tcase_add_test(tc, windows_stop_at_the_segment_and_the_end);
    tcase_add_test(tc, names_follow_the_enums);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(pageio_suite());
}
