/*
 * check_pageio_uring.c -- the io_uring I/O method under faults: short
 *                         reads resumed, EIO, an end of file and a
 *                         cancellation reported with the block, an io_uring
 *                         the kernel refuses, reads in flight when a stream
 *                         ends or a parallel scan stops; and O_DIRECT, read
 *                         and refused.
 *
 * Fault injection: this suite is linked with -Wl,--wrap for liburing's
 * io_uring_queue_init_params() and __io_uring_get_cqe() (every CQE
 * pageio_uring.c takes comes through the latter), so a test can refuse
 * the ring or rewrite the result of the Nth completion.
 *
 * Arguments: "direct" runs the O_DIRECT reads only, and exits 77 (SKIP)
 * where the temporary directory's file system refuses O_DIRECT; "refused"
 * mounts a file system that refuses it (ramfs; tmpfs before Linux 6.6) and
 * exits 77 where none can be mounted (not root) or all accept it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bufmgr.h"
#include "pageio.h"
#include "parallel.h"
#include "readstream.h"
#include "testutil.h"

/* ---- the wraps ------------------------------------------------------------- */

int __real_io_uring_queue_init_params(unsigned entries, struct io_uring *ring,
                                      struct io_uring_params *p);
int __wrap_io_uring_queue_init_params(unsigned entries, struct io_uring *ring,
                                      struct io_uring_params *p);
int __real___io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                              unsigned submit, unsigned wait_nr, sigset_t *sigmask);
int __wrap___io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                              unsigned submit, unsigned wait_nr, sigset_t *sigmask);

#define SHORT_BY 4096 /* inject.res: the completion says 4 KiB fewer bytes */

#define MAX_FAULTS 16

static int init_fails; /* io_uring_queue_init_params fails with this (-errno) */
static struct {
    bool armed;          /* any fault set (else completions are not even counted:
                            a parallel scan's threads take them at once) */
    bool on[MAX_FAULTS]; /* rewrite the Nth completion taken (1-based) */
    int res[MAX_FAULTS]; /* with this result (-errno, 0: an end of file), or
                            SHORT_BY */
    int seen;            /* completions taken so far */
} inject;

int __wrap_io_uring_queue_init_params(unsigned entries, struct io_uring *ring,
                                      struct io_uring_params *p)
{
    if (init_fails != 0)
        return init_fails;
    return __real_io_uring_queue_init_params(entries, ring, p);
}

int __wrap___io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                              unsigned submit, unsigned wait_nr, sigset_t *sigmask)
{
    int rc = __real___io_uring_get_cqe(ring, cqe_ptr, submit, wait_nr, sigmask);
    if (rc != 0 || *cqe_ptr == NULL || !inject.armed || ++inject.seen >= MAX_FAULTS ||
        !inject.on[inject.seen])
        return rc;
    struct io_uring_cqe *c = *cqe_ptr; /* the CQ ring is mapped writable */
    c->res = inject.res[inject.seen] == SHORT_BY ? c->res - SHORT_BY
                                                 : inject.res[inject.seen];
    return rc;
}

/* From now on, the nth completion taken gets result res (nth 0: no faults). */
static void arm(int nth, int res)
{
    memset(&inject, 0, sizeof(inject));
    inject.armed = nth > 0;
    inject.on[nth] = nth > 0;
    inject.res[nth] = res;
}

/* And the nth as well. */
static void arm_also(int nth, int res)
{
    inject.armed = inject.on[nth] = true;
    inject.res[nth] = res;
}

/* ---- a relation of numbered pages ---------------------------------------- */

static RelFile rf;
static unsigned char a[20 * BLCKSZ];
static void *fa[20];

/* 20 numbered pages (testutil.h) in segments of 8, open in rf. */
static void setup(void)
{
    HsError err;
    tu_setup();
    tu_write_rel(tu_path("r"), 8, 20, false);
    ck_assert_int_eq(relfile_open(&rf, tu_path("r"), 8, &err), 0);
    for (int i = 0; i < 20; i++)
        fa[i] = a + (size_t)i * BLCKSZ;
    init_fails = 0;
    arm(0, 0);
}

static void teardown(void)
{
    relfile_close(&rf);
    tu_teardown();
}

static PageIO *open_uring(unsigned depth)
{
    PageIO *io;
    HsError err;
    PageIOConfig cfg = {.pc_method = PAGEIO_URING, .pc_depth = depth};
    ck_assert_msg(pageio_open(&io, &rf, &cfg, &err) == 0, "%s", err.msg);
    return io;
}

static void assert_numbered(uint64_t first, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint64_t blk;
        memcpy(&blk, a + (size_t)i * BLCKSZ, 8);
        ck_assert_uint_eq(blk, first + i);
        ck_assert_uint_eq(a[(size_t)i * BLCKSZ + BLCKSZ - 1], 0xab);
    }
}

/* A read of blocks 2..17 (three segments: three READVs) with fault f injected
 * into completion nth: its result, err filled. */
static int read_with(int nth, int res, PageIORequest *r, HsError *err)
{
    PageIO *io = open_uring(4);
    memset(a, 0, sizeof(a));
    *r = (PageIORequest){.pr_blkno = 2, .pr_n = 16, .pr_pages = fa};
    arm(nth, res);
    pageio_submit(io, r);
    int rc = pageio_wait(io, r, err);
    arm(0, 0);
    pageio_close(io);
    return rc;
}

/* ---- faults ---------------------------------------------------------------- */

/* A short completion is resubmitted for the rest: every page arrives, one
 * more read is counted. */
START_TEST(a_short_read_is_resumed)
{
    PageIORequest r;
    HsError err;
    ck_assert_int_eq(read_with(0, 0, &r, &err), 0);
    ck_assert_uint_eq(r.pr_calls, 3); /* 2..7, 8..15, 16..17 */
    assert_numbered(2, 16);
    for (int nth = 1; nth <= 3; nth++) {
        ck_assert_int_eq(read_with(nth, SHORT_BY, &r, &err), 0);
        ck_assert_uint_eq(r.pr_calls, 4);
        assert_numbered(2, 16);
    }
}
END_TEST

/* EIO, an end of file (a read of 0 bytes after a short one), a cancelled
 * request: each an error naming the segment file and the first block not
 * read. */
START_TEST(failures_name_the_block)
{
    PageIORequest r;
    HsError err;
    ck_assert_int_eq(read_with(2, -EIO, &r, &err), -EIO);
    ck_assert_int_eq(err.block, 8); /* the second part: segment 1 */
    ck_assert_str_eq(err.file, tu_path("r.1"));
    ck_assert_ptr_nonnull(strstr(err.msg, "Input/output error"));

    ck_assert_int_eq(read_with(3, -ECANCELED, &r, &err), -ECANCELED);
    ck_assert_int_eq(err.block, 16);
    ck_assert_str_eq(err.file, tu_path("r.2"));
    ck_assert_ptr_nonnull(strstr(err.msg, "cancelled"));

    /* part one short by 4 KiB, then its resubmission finds the end: the
     * block the missing half page belongs to */
    PageIO *io = open_uring(4);
    r = (PageIORequest){.pr_blkno = 2, .pr_n = 16, .pr_pages = fa};
    arm(1, SHORT_BY);
    arm_also(4, 0); /* the resubmitted READV comes back last */
    pageio_submit(io, &r);
    ck_assert_int_eq(pageio_wait(io, &r, &err), -EIO);
    ck_assert_int_eq(err.block, 7);
    ck_assert_str_eq(err.file, tu_path("r"));
    ck_assert_ptr_nonnull(strstr(err.msg, "unexpected end of file"));
    arm(0, 0);
    pageio_close(io);
}
END_TEST

/* Requests complete in any order and are waited for in any order; depth 1
 * takes one at a time; a request past the end fails alone. */
START_TEST(requests_are_waited_for_in_any_order)
{
    static unsigned char b[4][4 * BLCKSZ];
    void *fb[4][4];
    PageIORequest r[4];
    HsError err;
    PageIO *io = open_uring(4);
    ck_assert_uint_eq(pageio_max_in_flight(io), 4);
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 4; i++)
            fb[k][i] = b[k] + (size_t)i * BLCKSZ;
        r[k] =
            (PageIORequest){.pr_blkno = (uint64_t)k * 5, .pr_n = 4, .pr_pages = fb[k]};
        pageio_submit(io, &r[k]);
    }
    for (int k = 3; k >= 0; k--) {
        ck_assert_int_eq(pageio_wait(io, &r[k], &err), 0);
        uint64_t blk;
        memcpy(&blk, b[k] + 3 * BLCKSZ, 8);
        ck_assert_uint_eq(blk, (uint64_t)k * 5 + 3);
    }
    PageIORequest past = {.pr_blkno = 18, .pr_n = 4, .pr_pages = fb[0]};
    ck_assert_int_eq(pageio_read(io, &past, &err), -EINVAL);
    ck_assert_int_eq(err.block, 18);
    pageio_close(io);
    io = open_uring(1);
    ck_assert_int_eq(pageio_read(io, &r[2], &err), 0);
    pageio_submit(io, &r[1]);
    pageio_close(io); /* with one outstanding: waited for */
}
END_TEST

/* More requests than the depth (several streams or single reads sharing one
 * buffer manager): the ones over are read in line, with their own results;
 * and two streams over one io_uring interleaved, with single reads between,
 * each get their pages. */
START_TEST(more_requests_than_the_depth_are_read_in_line)
{
    static unsigned char b[3][4 * BLCKSZ];
    void *fb[3][4];
    PageIORequest r[3];
    HsError err;
    PageIO *io = open_uring(2);
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 4; i++)
            fb[k][i] = b[k] + (size_t)i * BLCKSZ;
        r[k] = (PageIORequest){
            .pr_blkno = k == 2 ? 18 : (uint64_t)k * 5, .pr_n = 4, .pr_pages = fb[k]};
        pageio_submit(io, &r[k]);
    }
    ck_assert_int_eq(pageio_wait(io, &r[2], &err), -EINVAL); /* in line, past the end */
    ck_assert_int_eq(err.block, 18);
    for (int k = 1; k >= 0; k--)
        ck_assert_int_eq(pageio_wait(io, &r[k], &err), 0);
    pageio_close(io);

    const char *path = tu_make_heap("t2", 10000, 59, 100, 1, 0, false);
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_io_method = PAGEIO_URING;
    o.bo_io_depth = 2;
    o.bo_io_combine_bytes = 16 << 10;
    o.bo_io_latency_us = 200; /* so the depth grows */
    BufMgr *bm = tu_open_bm(path, &o);
    ReadStream *rs[2] = {read_stream_begin(bm, NULL, 0, 60, &err),
                         read_stream_begin(bm, NULL, 60, 134, &err)};
    uint64_t next[2] = {0, 60}, blk;
    Buffer buf, one;
    const void *page;
    for (int step = 0; step < 60; step++)
        for (int s = 0; s < 2; s++) {
            ck_assert_int_eq(read_stream_next(rs[s], &buf, &page, &blk, &err), 1);
            ck_assert_uint_eq(blk, next[s]++);
            bufmgr_release(bm, buf);
            /* a block the first stream handed out (one a stream is still
             * reading may not be asked for: the pool does not wait for
             * another's read) */
            ck_assert_int_eq(bufmgr_read(bm, next[0] - 1, &one, &page, &err), 0);
            bufmgr_release(bm, one);
        }
    read_stream_end(rs[0]);
    read_stream_end(rs[1]);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    ck_assert_uint_eq(bufmgr_stats(bm)->bs_verify_failures, 0);
    bufmgr_close(bm);
}
END_TEST

/* The kernel refuses io_uring (seccomp, kernel.io_uring_disabled, an old
 * kernel): an error naming the method to use instead, never a fallback. */
START_TEST(an_io_uring_refused_names_the_alternative)
{
    static const int why[] = {-ENOSYS, -EPERM, -EINVAL};
    for (int i = 0; i < 3; i++) {
        PageIO *io = NULL;
        HsError err;
        PageIOConfig cfg = {.pc_method = PAGEIO_URING, .pc_depth = 16};
        init_fails = why[i];
        ck_assert_int_eq(pageio_open(&io, &rf, &cfg, &err), why[i]);
        ck_assert_ptr_null(io);
        ck_assert_msg(strstr(err.msg, "--io-method sync") != NULL, "%s", err.msg);
    }
    /* and through the buffer manager, as seqscan opens it */
    const char *t = tu_make_heap("t", 2000, 59, 100, 1, 0, false);
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_io_method = PAGEIO_URING;
    BufMgr *bm = NULL;
    HsError err;
    ck_assert_int_eq(bufmgr_open(&bm, t, &o, &err), -EINVAL);
    ck_assert_ptr_null(bm);
    ck_assert_msg(strstr(err.msg, "io_uring is not available") != NULL, "%s", err.msg);
    init_fails = 0;
}
END_TEST

/* ---- through the read stream ----------------------------------------------- */

static const char *t0(void) /* 10,000 rows of pad 59: 134 pages */
{
    return tu_make_heap("t0", 10000, 59, 100, 1, 0, false);
}

static BufMgr *open_bm(const char *path, unsigned depth, uint32_t latency_us)
{
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_io_method = PAGEIO_URING;
    o.bo_io_depth = depth;
    o.bo_io_combine_bytes = 64 << 10;
    o.bo_io_latency_us = latency_us;
    return tu_open_bm(path, &o);
}

/* A read ahead that fails (the nth completion): the stream's error names its
 * block when the scan gets there; nothing stays pinned or in flight. */
START_TEST(a_failed_read_ahead_names_its_block)
{
    BufMgr *bm = open_bm(t0(), 8, 1000); /* the latency lets the depth grow */
    HsError err;
    ReadStream *rs = read_stream_begin(bm, NULL, 0, bufmgr_nblocks(bm), &err);
    Buffer buf;
    const void *page;
    uint64_t blk, got = 0;
    int rc;
    arm(4, -EIO); /* the fifth read, blocks 32..39: the first, with nothing in
                     flight, is read in line, so the ring's fourth */
    while ((rc = read_stream_next(rs, &buf, &page, &blk, &err)) == 1) {
        ck_assert_uint_eq(blk, got++);
        bufmgr_release(bm, buf);
    }
    arm(0, 0);
    ck_assert_int_eq(rc, -EIO);
    ck_assert_int_eq(err.block, 32);
    ck_assert_uint_eq(got, 32);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    read_stream_end(rs);
    ck_assert_uint_eq(tu_stream_all(bm), 134); /* the pool is fine after it */
    bufmgr_close(bm);
}
END_TEST

/* A stream ended early -- Ctrl-C stops a scan this way -- while reads are in
 * flight (each takes 20 ms: the simulated latency) waits for them before
 * their frames are unpinned and reused; the pages read after are right. */
START_TEST(a_stream_ended_with_reads_in_flight_waits_for_them)
{
    BufMgr *bm = open_bm(t0(), 64, 20000);
    HsError err;
    for (int taken = 1; taken <= 9; taken += 8) {
        ReadStream *rs = read_stream_begin(bm, NULL, 0, bufmgr_nblocks(bm), &err);
        Buffer buf;
        const void *page;
        uint64_t blk;
        for (int i = 0; i < taken; i++) {
            ck_assert_int_eq(read_stream_next(rs, &buf, &page, &blk, &err), 1);
            bufmgr_release(bm, buf);
        }
        read_stream_end(rs); /* with runs in flight */
        ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
        bufmgr_check_state(bm);
    }
    ck_assert_uint_eq(tu_stream_all(bm), 134);
    ck_assert_uint_eq(bufmgr_stats(bm)->bs_verify_failures, 0);
    bufmgr_close(bm);
}
END_TEST

/* A parallel scan over io_uring: each worker's strategy has its own ring;
 * the answer is sync's, and a stop flag stops them all, nothing pinned. */
START_TEST(a_parallel_scan_has_a_ring_per_worker)
{
    const char *path = tu_make_heap("p", 20000, 59, 100, 3, 0, false);
    static const Qual q = {.q_col = QUAL_K, .q_op = QUAL_GE, .q_value = 500000};
    ScanSink want = {0};
    for (int run = 0; run < 3; run++) { /* sync; io_uring; io_uring stopped */
        BufMgrOptions o;
        bufmgr_default_options(&o);
        o.bo_io_method = run == 0 ? PAGEIO_SYNC : PAGEIO_URING;
        BufMgr *bm = tu_open_bm(path, &o);
        HsError err;
        ck_assert_int_eq(bufmgr_set_shared(bm, &err), 0);
        ScanWorker w[2];
        memset(w, 0, sizeof(w));
        w[0].sw_bm = w[1].sw_bm = bm;
        static volatile sig_atomic_t stop;
        stop = run == 2;
        ParallelScan ps;
        parallel_scan_init(&ps, bufmgr_nblocks(bm), &stop);
        ParallelPlan pp = {
            .pp_scan = &ps, .pp_workers = w, .pp_nworkers = 2, .pp_qual = q};
        int rc = executor_run_parallel(&pp, &err);
        ScanSink sink;
        uint64_t scanned, skipped;
        executor_sum_workers(w, 2, &sink, &scanned, &skipped);
        if (run == 2) {
            ck_assert_int_eq(rc, HS_EINTR);
        } else {
            ck_assert_msg(rc == 0, "%s", err.msg);
            ck_assert_uint_eq(scanned, 20000);
            if (run == 0)
                want = sink;
            ck_assert_uint_eq(sink.sk_rows, want.sk_rows);
            ck_assert(sink.sk_sum_v == want.sk_sum_v);
        }
        ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
        bufmgr_close(bm);
    }
}
END_TEST

/* ---- O_DIRECT ---------------------------------------------------------------- */

/* Direct reads give what buffered reads give, with the same counters, under
 * sync and io_uring (and the worker, which reads as sync does). */
START_TEST(direct_reads_match_buffered_ones)
{
    const char *path = tu_make_heap("d", 22501, 59, 100, 6, 20, false);
    uint64_t calls = 0;
    for (int m = 0; m < 3; m++)
        for (int direct = 0; direct < 2; direct++) {
            BufMgrOptions o;
            bufmgr_default_options(&o);
            o.bo_io_method = m;
            o.bo_direct = direct;
            o.bo_seg_blocks = 20;
            BufMgr *bm = tu_open_bm(path, &o);
            ck_assert_uint_eq(tu_stream_all(bm), 301);
            const BufStats *s = bufmgr_stats(bm);
            ck_assert_uint_eq(s->bs_pages_verified, 301);
            ck_assert_uint_eq(s->bs_verify_failures, 0);
            if (calls == 0)
                calls = s->bs_read_calls;
            ck_assert_uint_eq(s->bs_read_calls, calls);
            bufmgr_close(bm);
        }
}
END_TEST

/* Whether O_DIRECT opens in dir. */
static bool direct_works_in(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/heapscan-odirect-probe-%ld", dir, (long)getpid());
    int fd = open(p, O_CREAT | O_RDWR, 0600);
    if (fd < 0)
        return false;
    close(fd);
    fd = open(p, O_RDONLY | O_DIRECT);
    unlink(p);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

static char refusing[64];    /* the file system mounted that refuses O_DIRECT */
static char refused_mnt[64]; /* where direct_is_refused_clearly mounts it */

/* The mount point, made before the test's process is forked and removed
 * after it ends, in the runner's process: a failed assertion ends the
 * test's process before its own umount, and its checked teardown with it. */
static void refused_setup(void)
{
    snprintf(refused_mnt, sizeof(refused_mnt), "/tmp/heapscan-refused-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(refused_mnt));
}

static void refused_teardown(void)
{
    umount2(refused_mnt, MNT_DETACH); /* EINVAL when the test unmounted it */
    rmdir(refused_mnt);
}

/* A file system that refuses O_DIRECT: seqscan --direct fails naming the
 * option and says what to do instead; without --direct it scans. */
START_TEST(direct_is_refused_clearly)
{
    char t[128];
    ck_assert_int_eq(mount("heapscan-test", refused_mnt, refusing, 0, NULL), 0);
    snprintf(t, sizeof(t), "%s/t", refused_mnt);
    TuRun *r = tu_runl(0, tu_tool("MKHEAP"), "-q", "--rows", "3000", t, (char *)NULL);
    ck_assert_int_eq(r->status, 0);
    static const char *const methods[] = {"sync", "io_uring"};
    for (int i = 0; i < 2; i++) {
        r = tu_runl(0, tu_tool("SEQSCAN"), "--direct", "--io-method", methods[i], t,
                    (char *)NULL);
        ck_assert_int_eq(r->status, 1);
        ck_assert_msg(strstr(r->err, "refuses O_DIRECT (--direct)") != NULL, "%s",
                      r->err);
        ck_assert_msg(strstr(r->err, "without --direct") != NULL, "%s", r->err);
    }
    r = tu_runl(0, tu_tool("SEQSCAN"), t, (char *)NULL);
    ck_assert_int_eq(r->status, 0);
    umount(refused_mnt);
}
END_TEST

/* A file system that refuses O_DIRECT which this process can mount: ramfs
 * (every kernel), tmpfs (before Linux 6.6).  false, with why, if none. */
static bool find_refusing_fs(char *why, size_t len)
{
    char mnt[] = "/tmp/heapscan-odirect-XXXXXX";
    static const char *const fs[] = {"tmpfs", "ramfs"};
    if (mkdtemp(mnt) == NULL) {
        snprintf(why, len, "mkdtemp: %s", strerror(errno));
        return false;
    }
    snprintf(why, len, "cannot mount a tmpfs or ramfs (not root?)");
    for (int i = 0; i < 2 && refusing[0] == '\0'; i++) {
        if (mount("heapscan-probe", mnt, fs[i], 0, NULL) != 0)
            continue;
        snprintf(why, len, "every file system mountable here accepts O_DIRECT");
        if (!direct_works_in(mnt))
            snprintf(refusing, sizeof(refusing), "%s", fs[i]);
        umount(mnt);
    }
    rmdir(mnt);
    return refusing[0] != '\0';
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    char why[256];
    Suite *s = suite_create(strcmp(mode, "direct") == 0    ? "pageio_uring-direct"
                            : strcmp(mode, "refused") == 0 ? "direct-refused"
                                                           : "pageio_uring");
    TCase *tc = tcase_create(mode[0] ? mode : "uring");
    tcase_set_timeout(tc, 120);
    if (strcmp(mode, "direct") == 0) {
        const char *tmp = getenv("TMPDIR");
        tu_require(direct_works_in(tmp && *tmp ? tmp : "/tmp"), TU_NEED_OTHER,
                   "the temporary directory's file system refuses O_DIRECT");
        tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
        tcase_add_test(tc, direct_reads_match_buffered_ones);
    } else if (strcmp(mode, "refused") == 0) {
        tu_require(find_refusing_fs(why, sizeof(why)), TU_NEED_OTHER, "%s", why);
        tcase_add_unchecked_fixture(tc, refused_setup, refused_teardown);
        tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
        tcase_add_test(tc, direct_is_refused_clearly);
    } else {
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, a_short_read_is_resumed);
        tcase_add_test(tc, failures_name_the_block);
        tcase_add_test(tc, requests_are_waited_for_in_any_order);
        tcase_add_test(tc, more_requests_than_the_depth_are_read_in_line);
        tcase_add_test(tc, an_io_uring_refused_names_the_alternative);
        tcase_add_test(tc, a_failed_read_ahead_names_its_block);
        tcase_add_test(tc, a_stream_ended_with_reads_in_flight_waits_for_them);
        tcase_add_test(tc, a_parallel_scan_has_a_ring_per_worker);
    }
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
