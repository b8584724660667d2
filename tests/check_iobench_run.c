/*
 * check_iobench_run.c -- the read() vs mmap() benchmark's library
 *                        (tools/bench/iobench_run.c, iobench_matrix.c): the
 *                        file it makes, one run of each test, a measured row,
 *                        the grid's cross-check of the methods, the names of
 *                        its enums, and a file shrunk under the mapping.  No
 *                        timing is checked: the machines are shared.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iobench_matrix.h"
#include "testutil.h"

static void setup(void)
{
    tu_setup();
}

/* Make path a test file of size bytes; it must not exist yet. */
static void make_file(const char *path, uint64_t size)
{
    HsError err;
    bool created;
    ck_assert_msg(iob_file_ensure(path, size, NULL, &created, &err) == 0, "%s",
                  err.msg);
    ck_assert(created);
}

/* A small heap table: 6000 rows at 75 a page are 80 pages. */
static const char *make_table(void)
{
    const char *t = tu_path("t.heap");
    TuRun *r = tu_runl(0, tu_tool("MKHEAP"), "-q", "--rows", "6000", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    return t;
}

START_TEST(file_is_made_once_and_left_alone)
{
    const char *f = tu_path("f");
    HsError err;
    bool created;
    make_file(f, 100000);
    ck_assert_int_eq(tu_file_size(f), 100000);
    ck_assert_int_eq(iob_file_ensure(f, 100000, NULL, &created, &err), 0);
    ck_assert(!created);
    uint32_t crc;
    uint64_t bytes;
    ck_assert_int_eq(iob_checksum(f, &crc, &bytes, &err), 0);
    ck_assert_uint_eq(bytes, 100000);
    /* a stop that is already set: nothing is left behind */
    volatile sig_atomic_t stop = 1;
    ck_assert_int_eq(iob_file_ensure(tu_path("g"), 1 << 20, &stop, &created, &err),
                     HS_EINTR);
    ck_assert_str_eq(tu_list_dir(tu_dir), "f\n");
}
END_TEST

START_TEST(one_run_counts_its_operations)
{
    const char *f = tu_path("f");
    make_file(f, 64 << 10);
    for (int m = IOB_READ; m <= (HEAPSCAN_HAVE_URING ? IOB_URING : IOB_MMAP); m++) {
        IobConfig cfg = {.ic_path = f,
                         .ic_test = IOB_SEQ_READ,
                         .ic_method = (IobMethod)m,
                         .ic_block = 4096,
                         .ic_seed = 1,
                         .ic_depth = 4};
        IobResult res;
        HsError err;
        ck_assert_int_eq(iob_run(&cfg, &res, &err), 0);
        ck_assert_uint_eq(res.ir_ops, 16);
        ck_assert_uint_eq(res.ir_bytes, 64 << 10);
        cfg.ic_test = IOB_RND_RW;
        cfg.ic_ops = 500;
        cfg.ic_write_pct = 100;
        cfg.ic_sync = IOB_SYNC_END;
        ck_assert_int_eq(iob_run(&cfg, &res, &err), 0);
        ck_assert_uint_eq(res.ir_writes, 500);
        ck_assert_uint_eq(res.ir_reads, 0);
    }
}
END_TEST

START_TEST(a_row_is_measured_and_checksummed)
{
    const char *f = tu_path("f");
    make_file(f, 32 << 10);
    IobRow r = {.rw_cfg = {.ic_path = f,
                           .ic_test = IOB_RND_RW,
                           .ic_method = IOB_MMAP,
                           .ic_block = 1024,
                           .ic_ops = 100,
                           .ic_write_pct = 50,
                           .ic_seed = 3},
                .rw_cache = IOB_CACHE_COLD,
                .rw_runs = 3};
    HsError err;
    ck_assert_msg(iob_measure_row(&r, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(r.rw_file_bytes, 32 << 10);
    ck_assert(r.rw_has_crc);
    uint32_t crc;
    uint64_t bytes;
    ck_assert_int_eq(iob_checksum(f, &crc, &bytes, &err), 0);
    ck_assert_uint_eq(r.rw_crc, crc);
    ck_assert(r.rw_spread.mp_wall.sp_min <= r.rw_spread.mp_wall.sp_med &&
              r.rw_spread.mp_wall.sp_med <= r.rw_spread.mp_wall.sp_max);
    r.rw_runs = 0;
    ck_assert_int_eq(iob_measure_row(&r, &err), HS_EUSAGE);
    r.rw_runs = IOB_MAX_RUNS + 1;
    ck_assert_int_eq(iob_measure_row(&r, &err), HS_EUSAGE);
}
END_TEST

/* Each row of the grid is handed over as soon as it is measured. */
static void count_row(const IobRow *r, void *arg)
{
    int *n = arg;
    ck_assert_int_eq(r->rw_runs, 1);
    (*n)++;
}

START_TEST(the_grid_runs_every_row)
{
    const char *f = tu_path("g"), *t = make_table();
    make_file(f, 64 << 10);
    IobRow base = {
        .rw_cfg = {.ic_block = 1024, .ic_ops = 200, .ic_write_pct = 50, .ic_seed = 1},
        .rw_runs = 1};
    HsError err;
    int n = 0;
    ck_assert_msg(iob_matrix_file(&base, f, count_row, &n, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(n, 12);
    ck_assert_msg(iob_matrix_pages(&base, t, count_row, &n, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(n, 14);
}
END_TEST

#if HEAPSCAN_HAVE_URING
/* io_uring gives what read gives: the same sums of seq-read (with a last
 * partial block), the same file after rnd-rw with reads among the writes,
 * at depth 1 and 64; and refuses rnd-page and a depth out of range. */
START_TEST(io_uring_gives_what_read_gives)
{
    const char *f = tu_path("f");
    static const unsigned depth[] = {1, 64};
    for (int d = 0; d < 2; d++) {
        IobResult want[2], got[2];
        uint32_t crc[2];
        for (int m = 0; m < 2; m++) {
            make_file(f, (64 << 10) + 100);
            IobConfig cfg = {.ic_path = f,
                             .ic_test = IOB_SEQ_READ,
                             .ic_method = m ? IOB_URING : IOB_READ,
                             .ic_block = 4096,
                             .ic_ops = 3000,
                             .ic_write_pct = 30,
                             .ic_seed = 5,
                             .ic_depth = depth[d]};
            IobResult *r = m ? got : want;
            HsError err;
            uint64_t bytes;
            ck_assert_msg(iob_run(&cfg, &r[0], &err) == 0, "%s", err.msg);
            cfg.ic_test = IOB_RND_RW;
            ck_assert_msg(iob_run(&cfg, &r[1], &err) == 0, "%s", err.msg);
            ck_assert_int_eq(iob_checksum(f, &crc[m], &bytes, &err), 0);
            unlink(f);
        }
        ck_assert_uint_eq(got[0].ir_ops, 17);
        ck_assert_uint_eq(got[0].ir_bytes, (64 << 10) + 100);
        ck_assert_uint_eq(got[0].ir_sum, want[0].ir_sum);
        ck_assert_uint_eq(got[1].ir_reads, want[1].ir_reads);
        ck_assert_uint_eq(got[1].ir_writes, want[1].ir_writes);
        ck_assert_uint_eq(got[1].ir_sum, want[1].ir_sum);
        ck_assert_uint_eq(crc[1], crc[0]);
    }
    IobConfig cfg = {.ic_path = make_table(),
                     .ic_test = IOB_RND_PAGE,
                     .ic_method = IOB_URING,
                     .ic_ops = 10,
                     .ic_depth = 4};
    IobResult res;
    HsError err;
    ck_assert_int_eq(iob_run(&cfg, &res, &err), HS_EUSAGE);
    cfg.ic_test = IOB_SEQ_READ;
    cfg.ic_depth = 0;
    ck_assert_int_eq(iob_run(&cfg, &res, &err), HS_EUSAGE);
}
END_TEST
#endif

START_TEST(names_beside_the_enums)
{
    ck_assert_str_eq(iob_test_name(IOB_RND_PAGE), "rnd-page");
    ck_assert_ptr_null(iob_test_names[IOB_RND_PAGE + 1]);
    ck_assert_str_eq(iob_method_name(IOB_MMAP), "mmap");
    ck_assert_str_eq(iob_method_name(IOB_URING), "io_uring");
    ck_assert_ptr_null(iob_method_names[IOB_URING + 1]);
    ck_assert_str_eq(iob_sync_name(IOB_SYNC_END), "end");
    ck_assert_ptr_null(iob_sync_names[IOB_SYNC_END + 1]);
    ck_assert_str_eq(iob_cache_name(IOB_CACHE_STABLE), "stable");
    ck_assert_ptr_null(iob_cache_names[IOB_CACHE_COLD + 1]);
    ck_assert_int_eq(iob_cache_mode(IOB_CACHE_STABLE), CACHE_WARM);
    ck_assert_int_eq(iob_cache_mode(IOB_CACHE_COLD), CACHE_COLD);
}
END_TEST

/* The file shrinks to two pages once it is open and mapped. */
static void shrink_to_two_pages(const char *path, void *arg)
{
    (void)arg;
    ck_assert_int_eq(truncate(path, 2 * 8192), 0);
}

/* A file that shrinks under the mapping ends the run with an error naming
 * where, never a SIGBUS; under read the same is a short read. */
START_TEST(a_file_shrunk_under_the_mapping_is_an_error)
{
    const char *f = tu_path("f");
    for (int t = 0; t < 2; t++) {
        for (int m = 0; m < 2; m++) {
            make_file(f, 256 << 10);
            IobConfig cfg = {.ic_path = f,
                             .ic_test = t ? IOB_RND_RW : IOB_SEQ_READ,
                             .ic_method = m ? IOB_MMAP : IOB_READ,
                             .ic_block = 4096,
                             .ic_ops = 1000,
                             .ic_write_pct = 50,
                             .ic_seed = 1,
                             .ic_after_open = shrink_to_two_pages};
            IobResult res;
            HsError err;
            int rc = iob_run(&cfg, &res, &err);
            ck_assert_int_eq(rc, m ? -EFAULT : -EIO); /* read: a short read */
            ck_assert_str_eq(err.file, f);
            ck_assert_int_eq(unlink(f), 0); /* made afresh for the next run */
            if (m == 0)
                continue;
            unsigned long long at;
            char rest[64];
            ck_assert_int_eq(
                sscanf(err.msg, "SIGBUS at byte %llu: %63[^\n]", &at, rest), 2);
            ck_assert_str_eq(rest, "the file shrank under the mapping");
            ck_assert_uint_ge(at, 2 * 8192);
            ck_assert_uint_lt(at, 256 << 10);
            ck_assert_int_eq(err.block, (int64_t)(at / 4096));
        }
    }

    /* rnd-page under mmap: the block */
    const char *table = make_table();
    IobConfig cfg = {.ic_path = table,
                     .ic_test = IOB_RND_PAGE,
                     .ic_method = IOB_MMAP,
                     .ic_ops = 2000,
                     .ic_seed = 1,
                     .ic_after_open = shrink_to_two_pages};
    IobResult res;
    HsError err;
    ck_assert_int_eq(iob_run(&cfg, &res, &err), -EFAULT);
    ck_assert_str_eq(err.file, table);
    ck_assert_int_ge(err.block, 2);
    ck_assert_str_eq(
        err.msg, "SIGBUS reading the mapped page: the file shrank under the mapping");
    ck_assert_uint_lt(res.ir_reads, 2000);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("iobench_run");
    TCase *tc = tcase_create("iobench_run");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, file_is_made_once_and_left_alone);
    tcase_add_test(tc, one_run_counts_its_operations);
    tcase_add_test(tc, a_row_is_measured_and_checksummed);
    tcase_add_test(tc, the_grid_runs_every_row);
    tcase_add_test(tc, names_beside_the_enums);
#if HEAPSCAN_HAVE_URING
    tcase_add_test(tc, io_uring_gives_what_read_gives);
#endif
    tcase_add_test(tc, a_file_shrunk_under_the_mapping_is_an_error);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
