/*
 * check_parallel.c -- the parallel sequential scan: every block claimed
 *                     exactly once, chunks as PostgreSQL sizes them, and
 *                     the same answer as one worker under every access
 *                     method, with more workers than CPUs, on tables with
 *                     fewer blocks than workers, one page, many segments; a
 *                     damaged page stops every worker, or is skipped.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapgen.h"
#include "parallel.h"
#include "testutil.h"

/* ---- allocation ------------------------------------------------------------ */

START_TEST(chunks_are_sized_as_postgresql_sizes_them)
{
    static const struct {
        uint64_t nblocks;
        uint32_t chunk;
    } c[] = {{0, 1},      {1, 1},       {2047, 1},       {4096, 2},
             {22656, 16}, {131072, 64}, {2000000, 1024}, {UINT64_C(1) << 40, 8192}};
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        ParallelScan ps;
        parallel_scan_init(&ps, c[i].nblocks, NULL);
        ck_assert_uint_eq(ps.ps_chunk, c[i].chunk);
    }
    /* one worker alone: ranges in order, the last chunks halving */
    ParallelScan ps;
    parallel_scan_init(&ps, 22656, NULL);
    ParallelClaim pc = {0};
    uint64_t start, end, next = 0, last_len = 16;
    while (parallel_scan_claim(&ps, &pc, &start, &end)) {
        ck_assert_uint_eq(start, next);
        ck_assert_uint_le(end - start, last_len);
        last_len = end - start;
        next = end;
    }
    ck_assert_uint_eq(next, 22656);
    ck_assert_uint_eq(last_len, 1); /* ramped all the way down */
}
END_TEST

typedef struct Claimer {
    ParallelScan *ps;
    _Atomic unsigned char *seen;
    uint64_t blocks;
} Claimer;

static void *claimer(void *arg)
{
    Claimer *c = arg;
    ParallelClaim pc = {0};
    uint64_t start, end;
    while (parallel_scan_claim(c->ps, &pc, &start, &end))
        for (uint64_t b = start; b < end; b++) {
            atomic_fetch_add(&c->seen[b], 1);
            c->blocks++;
        }
    return NULL;
}

/* Eight threads claiming at once: each block once, none left out. */
START_TEST(every_block_is_claimed_exactly_once)
{
    const uint64_t n = 100003;
    _Atomic unsigned char *seen = calloc(n, 1);
    ParallelScan ps;
    parallel_scan_init(&ps, n, NULL);
    Claimer c[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        c[i] = (Claimer){&ps, seen, 0};
        pthread_create(&t[i], NULL, claimer, &c[i]);
    }
    uint64_t total = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        total += c[i].blocks;
    }
    ck_assert_uint_eq(total, n);
    for (uint64_t b = 0; b < n; b++)
        ck_assert_msg(seen[b] == 1, "block %llu claimed %d times",
                      (unsigned long long)b, seen[b]);
    free(seen);
}
END_TEST

/* ---- whole scans ------------------------------------------------------------ */

static const Qual quals[] = {
    {.q_col = QUAL_K, .q_op = QUAL_GE, .q_value = 500000},
    {.q_col = QUAL_K, .q_op = QUAL_EQ, .q_value = -1},
    {.q_col = QUAL_ID, .q_op = QUAL_LE, .q_value = 1000},
};

/* Scan path with nworkers over options o (mmap: a buffer manager each). */
static int scan_with(const char *path, const BufMgrOptions *o, int nworkers,
                     const Qual *q, bool skip, ScanSink *sink, uint64_t *scanned,
                     uint64_t *pages, HsError *err)
{
    BufMgr *bms[8] = {0};
    ScanWorker w[8];
    memset(w, 0, sizeof(w));
    bool own = o->bo_access == BUF_ACCESS_MMAP;
    BufMgrOptions po = *o;
    po.bo_io_workers = 0; /* scan workers share no I/O worker (scan_run) */
    for (int i = 0; i < nworkers; i++) {
        if (i == 0 || own) {
            bms[i] = tu_open_bm(path, &po);
            if (!own)
                ck_assert_int_eq(bufmgr_set_shared(bms[0], err), 0);
        }
        w[i].sw_bm = own ? bms[i] : bms[0];
    }
    ParallelScan ps;
    parallel_scan_init(&ps, bufmgr_nblocks(bms[0]), NULL);
    ParallelPlan pp = {.pp_scan = &ps,
                       .pp_workers = w,
                       .pp_nworkers = nworkers,
                       .pp_qual = *q,
                       .pp_skip_corrupt = skip};
    int rc = executor_run_parallel(&pp, err);
    uint64_t skipped;
    executor_sum_workers(w, nworkers, sink, scanned, &skipped);
    *pages = 0;
    for (int i = 0; i < nworkers; i++) {
        *pages += w[i].sw_pages + w[i].sw_pages_skipped;
        if (bms[i]) {
            ck_assert_uint_eq(bufmgr_pins_held(bms[i]), 0);
            bufmgr_check_state(bms[i]);
            bufmgr_close(bms[i]);
        }
    }
    return rc;
}

/* _i: the table (one page; fewer blocks than workers; 188 pages; 16
 * segments of 20 pages) x the access (read with a ring, read with the whole
 * pool, mmap): 2, 3 and 5 workers give one worker's answer. */
START_TEST(any_number_of_workers_gives_the_same_answer)
{
    static const struct {
        uint64_t rows;
        unsigned pad;
        uint32_t seg;
    } t[] = {{30, 59, 0}, {200, 59, 0}, {6000, 200, 0}, {22501, 59, 20}};
    int ti = _i / 3, ai = _i % 3;
    const char *path =
        tu_make_heap("t", t[ti].rows, t[ti].pad, 100, 7, t[ti].seg, false);
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_seg_blocks = t[ti].seg ? t[ti].seg : RELFILE_SEG_BLOCKS;
    o.bo_access = ai == 2 ? BUF_ACCESS_MMAP : BUF_ACCESS_READ;
    o.bo_strategy = ai == 0 ? BUF_STRATEGY_RING : BUF_STRATEGY_NORMAL;
    o.bo_pool_bytes = 1 << 20;
    o.bo_ring_bytes = 256 << 10;
    o.bo_mmap_chunk_bytes = 64 << 10;
    for (size_t q = 0; q < sizeof(quals) / sizeof(quals[0]); q++) {
        ScanSink one = {0}, many;
        uint64_t scanned1, pages1, scanned, pages;
        HsError err;
        ck_assert_msg(scan_with(path, &o, 1, &quals[q], false, &one, &scanned1, &pages1,
                                &err) == 0,
                      "%s", err.msg);
        ck_assert_uint_eq(scanned1, t[ti].rows);
        const int counts[] = {2, 3, 5};
        for (int k = 0; k < 3; k++) {
            memset(&many, 0, sizeof(many));
            ck_assert_msg(scan_with(path, &o, counts[k], &quals[q], false, &many,
                                    &scanned, &pages, &err) == 0,
                          "%s", err.msg);
            ck_assert_uint_eq(scanned, scanned1);
            ck_assert_uint_eq(pages, pages1);
            ck_assert_uint_eq(many.sk_rows, one.sk_rows);
            ck_assert(many.sk_sum_v == one.sk_sum_v);
            ck_assert_uint_eq(many.sk_nsum_v, one.sk_nsum_v);
        }
    }
}
END_TEST

/* The CPUs this process may use, as the test starts, and its workers. */
static cpu_set_t process_cpus;
static ScanWorker *workers;

/* A guard that records, in the worker's own thread, whether that thread
 * may run on every CPU the process may (it is not pinned), then scans. */
static int check_affinity(ScanWorker *w, int (*work)(void *, HsError *), void *arg,
                          HsError *err)
{
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof(mine), &mine) != 0 ||
        !CPU_EQUAL(&mine, &process_cpus))
        return hs_error_set(err, -EPERM, NULL, HS_NO_BLOCK,
                            "worker %d may run on %d of the process's %d CPUs",
                            (int)(w - workers), CPU_COUNT(&mine),
                            CPU_COUNT(&process_cpus));
    return work(arg, err);
}

/* Workers are never pinned: each may run on any CPU the process may, so
 * the scheduler can move it away from another busy process. */
START_TEST(workers_may_run_on_every_allowed_cpu)
{
    ck_assert_int_eq(sched_getaffinity(0, sizeof(process_cpus), &process_cpus), 0);
    int ncpu = CPU_COUNT(&process_cpus);
    const char *path = tu_make_heap("t", 2000, 59, 100, 7, 0, false);
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_pool_bytes = 1 << 20;
    o.bo_io_workers = 0; /* as scan_run does for a parallel scan */
    BufMgr *bm = tu_open_bm(path, &o);
    HsError err;
    ck_assert_int_eq(bufmgr_set_shared(bm, &err), 0);
    const int counts[] = {1, 2, ncpu <= PARALLEL_MAX_WORKERS ? ncpu : 1};
    for (int k = 0; k < 3; k++) {
        int n = counts[k];
        ScanWorker w[PARALLEL_MAX_WORKERS];
        memset(w, 0, sizeof(w));
        for (int i = 0; i < n; i++)
            w[i].sw_bm = bm;
        workers = w;
        ParallelScan ps;
        parallel_scan_init(&ps, bufmgr_nblocks(bm), NULL);
        ParallelPlan pp = {.pp_scan = &ps,
                           .pp_workers = w,
                           .pp_nworkers = n,
                           .pp_qual = quals[0],
                           .pp_guard = check_affinity};
        ck_assert_msg(executor_run_parallel(&pp, &err) == 0, "%s", err.msg);
    }
    bufmgr_close(bm);
}
END_TEST

/* A damaged page: the scan fails naming it, whichever worker meets it, and
 * the others stop; skipping it, the rest is the answer. */
START_TEST(a_damaged_page_stops_every_worker_or_is_skipped)
{
    const char *path = tu_make_heap("d", 20000, 59, 100, 9, 0, false);
    int fd = open(path, O_RDWR);
    unsigned char c = 0x33;
    ck_assert_int_eq(pwrite(fd, &c, 1, 150 * BLCKSZ + 7000), 1);
    close(fd);
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_access = _i ? BUF_ACCESS_MMAP : BUF_ACCESS_READ;
    ScanSink sink = {0};
    uint64_t scanned, pages;
    HsError err;
    ck_assert_int_eq(
        scan_with(path, &o, 3, &quals[0], false, &sink, &scanned, &pages, &err),
        HS_ECORRUPT);
    ck_assert_int_eq(err.block, 150);
    ck_assert_ptr_nonnull(strstr(err.msg, "checksum mismatch"));
    ck_assert_int_eq(
        scan_with(path, &o, 3, &quals[1], true, &sink, &scanned, &pages, &err), 0);
    ck_assert_uint_eq(scanned, 20000 - 75);
    ck_assert_uint_eq(pages, 267);
}
END_TEST

/* The caller's stop flag (Ctrl-C) stops every worker: HS_EINTR. */
START_TEST(a_stop_flag_stops_every_worker)
{
    const char *path = tu_make_heap("s", 20000, 59, 100, 3, 0, false);
    BufMgrOptions o;
    bufmgr_default_options(&o);
    BufMgr *bm = tu_open_bm(path, &o);
    HsError err;
    ck_assert_int_eq(bufmgr_set_shared(bm, &err), 0);
    ScanWorker w[2];
    memset(w, 0, sizeof(w));
    w[0].sw_bm = w[1].sw_bm = bm;
    static volatile sig_atomic_t stop = 1; /* as if a signal came at once */
    ParallelScan ps;
    parallel_scan_init(&ps, bufmgr_nblocks(bm), &stop);
    ParallelPlan pp = {
        .pp_scan = &ps, .pp_workers = w, .pp_nworkers = 2, .pp_qual = quals[0]};
    ck_assert_int_eq(executor_run_parallel(&pp, &err), HS_EINTR);
    ck_assert_uint_lt(w[0].sw_pages + w[1].sw_pages, 267);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    bufmgr_close(bm);
}
END_TEST

static Suite *parallel_suite(void)
{
    Suite *s = suite_create("parallel");
    TCase *tc = tcase_create("claims");
    tcase_add_test(tc, chunks_are_sized_as_postgresql_sizes_them);
    tcase_add_test(tc, every_block_is_claimed_exactly_once);
    suite_add_tcase(s, tc);
    tc = tcase_create("scans");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, any_number_of_workers_gives_the_same_answer, 0, 12);
    tcase_add_loop_test(tc, a_damaged_page_stops_every_worker_or_is_skipped, 0, 2);
    tcase_add_test(tc, a_stop_flag_stops_every_worker);
    tcase_add_test(tc, workers_may_run_on_every_allowed_cpu);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(parallel_suite());
}
