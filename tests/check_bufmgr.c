/*
 * check_bufmgr.c -- the buffer manager through its public calls, both
 *                   access methods: counters, pins, mmap windows, what is
 *                   refused, and the invariants bufmgr_check_state()
 *                   asserts (every call here runs with checking on).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
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

START_TEST(second_scan_with_a_big_pool_reads_nothing)
{
    const char *path = t0(); /* 134 pages */
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_pool_bytes = 8 << 20; /* 1024 frames: 134 pages are under a quarter */
    BufMgr *bm = tu_open_bm(path, &o);
    uint64_t n = bufmgr_nblocks(bm);
    ck_assert_uint_eq(n, 134);
    ck_assert(!bufmgr_uses_ring(bm));
    tu_stream_all(bm);
    const BufStats *s = bufmgr_stats(bm);
    ck_assert_uint_eq(s->bs_reads, n);
    ck_assert_uint_eq(s->bs_hits, 0);
    ck_assert_uint_eq(s->bs_bytes_read, n * BLCKSZ);
    ck_assert_uint_eq(s->bs_evictions, 0);
    ck_assert_uint_eq(s->bs_pages_verified, n);
    tu_stream_all(bm);
    ck_assert_uint_eq(s->bs_reads, n);          /* nothing more was read */
    ck_assert_uint_eq(s->bs_hits, n);           /* every page was a hit */
    ck_assert_uint_eq(s->bs_pages_verified, n); /* and not verified again */
    bufmgr_close(bm);
}
END_TEST

START_TEST(auto_strategy_rings_over_a_quarter_of_the_pool)
{
    const char *path = t0(); /* 134 pages */
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_pool_bytes = (size_t)4 * 134 * BLCKSZ; /* table is exactly a quarter */
    BufMgr *bm = tu_open_bm(path, &o);
    ck_assert(!bufmgr_uses_ring(bm));
    bufmgr_close(bm);
    o.bo_pool_bytes = (size_t)4 * 133 * BLCKSZ; /* a page over a quarter */
    bm = tu_open_bm(path, &o);
    ck_assert(bufmgr_uses_ring(bm));
    bufmgr_close(bm);
}
END_TEST

START_TEST(mmap_maps_one_window_per_chunk)
{
    const char *path = t0(); /* 134 pages */
    const struct {
        size_t chunk;
        uint64_t calls;
    } c[] = {{8 << 10, 134}, {64 << 10, 17}, {8 << 20, 1}, {0, 1}};
    for (int i = 0; i < 4; i++) {
        BufMgrOptions o;
        bufmgr_default_options(&o);
        o.bo_access = BUF_ACCESS_MMAP;
        o.bo_mmap_chunk_bytes = c[i].chunk;
        BufMgr *bm = tu_open_bm(path, &o);
        tu_stream_all(bm);
        const BufStats *s = bufmgr_stats(bm);
        ck_assert_uint_eq(s->bs_read_calls, c[i].calls);
        ck_assert_uint_eq(s->bs_reads, 134);
        ck_assert_uint_eq(s->bs_pages_verified, 134);
        ck_assert_uint_eq(s->bs_bytes_read, 134 * BLCKSZ);
        ck_assert_uint_le(s->bs_frames_used, 4);
        bufmgr_close(bm);
    }
}
END_TEST

START_TEST(pinned_window_is_not_unmapped)
{
    const char *path = t0();
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_access = BUF_ACCESS_MMAP;
    o.bo_mmap_chunk_bytes = 8 << 10; /* a window per page, 4 mapped at most */
    BufMgr *bm = tu_open_bm(path, &o);
    HsError err;
    Buffer b0, b;
    const void *p0, *p;
    ck_assert_int_eq(bufmgr_read(bm, 0, &b0, &p0, &err), 0);
    unsigned char copy[BLCKSZ];
    memcpy(copy, p0, BLCKSZ);
    /* walk far past the window limit while block 0 stays pinned */
    for (uint64_t blk = 1; blk < 100; blk++) {
        ck_assert_int_eq(bufmgr_read(bm, blk, &b, &p, &err), 0);
        bufmgr_release(bm, b);
    }
    ck_assert_int_eq(memcmp(p0, copy, BLCKSZ), 0); /* still mapped, same bytes */
    uint64_t blk;
    ck_assert_int_eq(bufmgr_block_of_address(bm, (const char *)p0 + 100, &blk), 0);
    ck_assert_uint_eq(blk, 0);
    /* with every window pinned there is no room, and it says so */
    Buffer held[3];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(bufmgr_read(bm, 200 + (uint64_t)i - 100, &held[i], &p, &err),
                         0);
    ck_assert_int_eq(bufmgr_read(bm, 120, &b, &p, &err), -ENOBUFS);
    for (int i = 0; i < 3; i++)
        bufmgr_release(bm, held[i]);
    bufmgr_release(bm, b0);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    bufmgr_close(bm);
}
END_TEST

START_TEST(all_frames_pinned_is_an_error_not_a_hang)
{
    const char *path = t0();
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_pool_bytes = 16 * BLCKSZ;
    o.bo_ring_bytes = 8 * BLCKSZ;
    o.bo_io_combine_bytes = BLCKSZ;
    o.bo_strategy = BUF_STRATEGY_NORMAL;
    BufMgr *bm = tu_open_bm(path, &o);
    HsError err;
    Buffer b[16];
    const void *p;
    for (int i = 0; i < 16; i++)
        ck_assert_int_eq(bufmgr_read(bm, (uint64_t)i, &b[i], &p, &err), 0);
    Buffer extra;
    ck_assert_int_eq(bufmgr_read(bm, 16, &extra, &p, &err), -ENOBUFS);
    ck_assert_int_eq(err.block, 16);
    /* pinning a page already in the pool still works */
    ck_assert_int_eq(bufmgr_read(bm, 3, &extra, &p, &err), 0);
    bufmgr_release(bm, extra);
    for (int i = 0; i < 16; i++)
        bufmgr_release(bm, b[i]);
    ck_assert_int_eq(bufmgr_read(bm, 16, &extra, &p, &err), 0);
    bufmgr_release(bm, extra);
    bufmgr_close(bm);
}
END_TEST

START_TEST(files_that_are_not_tables)
{
    BufMgrOptions o;
    bufmgr_default_options(&o);
    BufMgr *bm;
    HsError err;

    int fd = open(tu_path("empty"), O_CREAT | O_WRONLY, 0644);
    close(fd);
    ck_assert_int_eq(bufmgr_open(&bm, tu_path("empty"), &o, &err), HS_ENOTHEAP);
    ck_assert_ptr_nonnull(strstr(err.msg, "empty file"));

    fd = open(tu_path("text"), O_CREAT | O_WRONLY, 0644);
    char line[64];
    for (int i = 0; i < 2 * BLCKSZ / 16; i++) {
        snprintf(line, sizeof(line), "line %09d\n", i);
        ck_assert_int_eq(write(fd, line, 16), 16);
    }
    close(fd);
    ck_assert_int_eq(bufmgr_open(&bm, tu_path("text"), &o, &err), HS_ENOTHEAP);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a heap table"));
    ck_assert_int_eq(err.block, 0);

    fd = open(tu_path("odd"), O_CREAT | O_WRONLY, 0644);
    ck_assert_int_eq(ftruncate(fd, 3 * BLCKSZ + 1), 0);
    close(fd);
    ck_assert_int_eq(bufmgr_open(&bm, tu_path("odd"), &o, &err), HS_ENOTHEAP);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a multiple of 8192"));
}
END_TEST

/* Each limit is checked where it is kept, once: the tools only parse. */
START_TEST(options_are_checked_where_they_are_kept)
{
    const char *path = t0();
    static const struct {
        size_t combine, ring, pool;
        const char *why;
    } bad[] = {
        {2 << 20, 256 << 10, 128 << 20,
         "io-combine must be a whole number of pages up to 1 MiB"},
        {12345, 256 << 10, 128 << 20, "io-combine must be a whole number of pages"},
        {128 << 10, 64 << 10, 128 << 20, "io-combine must not exceed the ring"},
        {8 << 10, 256 << 10, 64 << 10,
         "the pool must be a whole number of pages, at least 16"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        BufMgrOptions o;
        bufmgr_default_options(&o);
        o.bo_io_combine_bytes = bad[i].combine;
        o.bo_ring_bytes = bad[i].ring;
        o.bo_pool_bytes = bad[i].pool;
        BufMgr *bm;
        HsError err;
        ck_assert_int_eq(bufmgr_open(&bm, path, &o, &err), HS_EUSAGE);
        ck_assert_msg(strstr(err.msg, bad[i].why) != NULL, "%s", err.msg);
    }
    ck_assert_str_eq(bufmgr_access_name(BUF_ACCESS_MMAP), "mmap");
    ck_assert_str_eq(bufmgr_strategy_names[BUF_STRATEGY_RING], "ring");
    ck_assert_ptr_null(bufmgr_access_names[BUF_ACCESS_MMAP + 1]);
}
END_TEST

/* The I/O options too: io-depth, io-latency, contradicting io-workers, and
 * what mmap access cannot do; the ring io_uring gets by default. */
START_TEST(io_options_are_checked_where_they_are_kept)
{
    const char *path = t0();
    static const struct {
        int method, workers;
        unsigned depth;
        uint32_t latency;
        bool mmap, direct;
        const char *why;
    } bad[] = {
        {PAGEIO_URING, BUFMGR_IO_WORKERS_AUTO, 0, 0, false, false, "io-depth must be"},
        {PAGEIO_URING, BUFMGR_IO_WORKERS_AUTO, 257, 0, false, false,
         "io-depth must be"},
        {PAGEIO_URING, 1, 16, 0, false, false, "io-workers contradicts io-method"},
        {PAGEIO_SYNC, BUFMGR_IO_WORKERS_AUTO, 16, 1000001, false, false, "io-latency"},
        {PAGEIO_URING + 1, BUFMGR_IO_WORKERS_AUTO, 16, 0, false, false,
         "io-method must"},
        {BUFMGR_IO_METHOD_AUTO, BUFMGR_IO_WORKERS_AUTO, 16, 0, true, true,
         "read access"},
        {BUFMGR_IO_METHOD_AUTO, BUFMGR_IO_WORKERS_AUTO, 16, 5, true, false,
         "read access"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        BufMgrOptions o;
        bufmgr_default_options(&o);
        o.bo_io_method = bad[i].method;
        o.bo_io_workers = bad[i].workers;
        o.bo_io_depth = bad[i].depth;
        o.bo_io_latency_us = bad[i].latency;
        o.bo_access = bad[i].mmap ? BUF_ACCESS_MMAP : BUF_ACCESS_READ;
        o.bo_direct = bad[i].direct;
        BufMgr *bm;
        HsError err;
        ck_assert_int_eq(bufmgr_open(&bm, path, &o, &err), HS_EUSAGE);
        ck_assert_msg(strstr(err.msg, bad[i].why) != NULL, "%s", err.msg);
    }
    BufMgrOptions o;
    bufmgr_default_options(&o);
    ck_assert_uint_eq(bufmgr_ring_bytes(&o), 256 << 10);
    o.bo_io_method = PAGEIO_URING; /* PostgreSQL 18: 256 KiB + depth x combine */
    ck_assert_uint_eq(bufmgr_ring_bytes(&o), (256 << 10) + 16 * (128 << 10));
    o.bo_pool_bytes = 1 << 20; /* at most half the pool */
    ck_assert_uint_eq(bufmgr_ring_bytes(&o), 512 << 10);
    o.bo_ring_bytes = 64 << 10; /* as given */
    ck_assert_uint_eq(bufmgr_ring_bytes(&o), 64 << 10);
}
END_TEST

/* With checking on, every call asserts the invariants: a workload of
 * scans, single reads, pins held across them, a damaged page and a ring,
 * under each access method (_i), runs without one firing; and the state is
 * consistent afterwards. */
START_TEST(invariants_hold_through_every_call)
{
    const char *path = t2();
    int fd = open(path, O_RDWR);
    unsigned char c = 0x5a;
    ck_assert_int_eq(pwrite(fd, &c, 1, 50 * BLCKSZ + 4000), 1); /* damage block 50 */
    close(fd);
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_access = _i ? BUF_ACCESS_MMAP : BUF_ACCESS_READ;
    o.bo_pool_bytes = 512 << 10; /* 64 frames for 188 pages: a ring, evictions */
    o.bo_ring_bytes = 256 << 10;
    o.bo_mmap_chunk_bytes = 64 << 10;
    BufMgr *bm = tu_open_bm(path, &o);
    HsError err;
    Buffer held, b;
    const void *p;
    ck_assert_int_eq(bufmgr_read(bm, 7, &held, &p, &err), 0);
    for (int pass = 0; pass < 2; pass++) {
        ReadStream *rs = read_stream_begin(bm, NULL, 0, bufmgr_nblocks(bm), &err);
        uint64_t blk;
        int rc, failures = 0;
        while ((rc = read_stream_next(rs, &b, &p, &blk, &err)) != 0) {
            if (rc < 0) {
                ck_assert_int_eq(rc, HS_ECORRUPT);
                ck_assert_int_eq(err.block, 50);
                failures++;
                continue;
            }
            bufmgr_release(bm, b);
        }
        read_stream_end(rs);
        ck_assert_int_eq(failures, 1);
        ck_assert_int_eq(bufmgr_read(bm, 50, &b, &p, &err), HS_ECORRUPT);
        ck_assert_int_eq(bufmgr_read(bm, 120, &b, &p, &err), 0);
        bufmgr_release(bm, b);
    }
    bufmgr_check_state(bm);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 1); /* block 7 */
    bufmgr_release(bm, held);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    bufmgr_close(bm);
}
END_TEST

#ifndef NDEBUG
/* A pin released twice is a bug the buffer manager catches. */
START_TEST(a_second_release_is_caught)
{
    BufMgrOptions o;
    bufmgr_default_options(&o);
    BufMgr *bm = tu_open_bm(t0(), &o);
    HsError err;
    Buffer b;
    const void *p;
    ck_assert_int_eq(bufmgr_read(bm, 1, &b, &p, &err), 0);
    bufmgr_release(bm, b);
    bufmgr_release(bm, b); /* aborts */
}
END_TEST
#endif

/* ---- a pool shared by threads: reads in flight are waited for ---------- */

/*
 * preadv64 is wrapped (tests/meson.build): a read of the armed offset holds
 * on until `armed_waiters` other threads wait for its page (the buffer
 * manager's bs_io_waits says so), then fails with EIO or goes on.
 */
ssize_t __real_preadv64(int fd, const struct iovec *iov, int n, off_t off);
ssize_t __wrap_preadv64(int fd, const struct iovec *iov, int n, off_t off);

static BufMgr *armed_bm;
static off_t armed_off = -1;
static unsigned armed_waiters;
static bool armed_fail;

ssize_t __wrap_preadv64(int fd, const struct iovec *iov, int n, off_t off)
{
    if (armed_bm != NULL && off == armed_off) {
        BufStats s;
        for (int ms = 0; ms < 10000; ms++) { /* at most 10 s: then the test fails */
            bufmgr_stats_snapshot(armed_bm, &s);
            if (s.bs_io_waits >= armed_waiters)
                break;
            usleep(1000);
        }
        if (armed_fail) {
            errno = EIO;
            return -1;
        }
    }
    return __real_preadv64(fd, iov, n, off);
}

/* One thread of the shared-pool tests. */
typedef struct Reader {
    BufMgr *bm;
    const unsigned char *file; /* the table's bytes, to compare pages with */
    uint64_t first;            /* the block it asks for first */
    int rc;                    /* that read's result */
    HsError err;               /* and its error */
    bool stream;               /* then stream every block, own strategy */
    bool pages_ok;             /* every page it got matched the file */
} Reader;

static void *reader_main(void *arg)
{
    Reader *r = arg;
    Buffer buf;
    const void *page;
    r->pages_ok = true;
    r->rc = bufmgr_read(r->bm, r->first, &buf, &page, &r->err);
    if (r->rc == 0) {
        r->pages_ok = memcmp(page, r->file + r->first * BLCKSZ, BLCKSZ) == 0;
        bufmgr_release(r->bm, buf);
    }
    if (!r->stream)
        return NULL;
    HsError err;
    BufAccessStrategy *st = bufmgr_strategy_new(r->bm, &err);
    ReadStream *rs =
        st ? read_stream_begin(r->bm, st, 0, bufmgr_nblocks(r->bm), &err) : NULL;
    uint64_t blk, want = 0;
    int rc;
    while (rs != NULL && (rc = read_stream_next(rs, &buf, &page, &blk, &err)) == 1) {
        r->pages_ok &=
            blk == want++ && memcmp(page, r->file + blk * BLCKSZ, BLCKSZ) == 0;
        bufmgr_release(r->bm, buf);
    }
    r->pages_ok &= rs != NULL && want == bufmgr_nblocks(r->bm);
    read_stream_end(rs);
    bufmgr_strategy_free(st);
    return NULL;
}

/* Start n readers of block `first` (and then, if stream, of every block)
 * through bm, wait for them. */
static void run_readers(Reader *r, int n, BufMgr *bm, const unsigned char *file,
                        uint64_t first, bool stream)
{
    pthread_t tid[4];
    for (int i = 0; i < n; i++) {
        r[i] = (Reader){.bm = bm, .file = file, .first = first, .stream = stream};
        ck_assert_int_eq(pthread_create(&tid[i], NULL, reader_main, &r[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
}

/* Open the 134-page table for n threads (a pool that holds it all, or a
 * ring each when ring): its bytes in *file. */
static BufMgr *open_shared(const char *path, bool ring, unsigned char **file)
{
    size_t len;
    *file = tu_read_file(path, &len);
    ck_assert_uint_eq(len, 134 * BLCKSZ);
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_pool_bytes = ring ? 64 * BLCKSZ : 8 << 20;
    o.bo_io_combine_bytes = 4 * BLCKSZ;
    o.bo_ring_bytes = 16 * BLCKSZ;
    o.bo_strategy = ring ? BUF_STRATEGY_RING : BUF_STRATEGY_NORMAL;
    BufMgr *bm = tu_open_bm(path, &o);
    HsError err;
    ck_assert_int_eq(bufmgr_set_shared(bm, &err), 0);
    return bm;
}

/*
 * 2 to 4 threads (_i) ask for one block at once: one reads it, the others
 * wait for that read (counted) and get the same verified page; then each
 * streams every block through its own strategy, the others' reads in flight
 * waited for, and every page they get is the file's.
 */
START_TEST(threads_wait_for_a_read_in_flight)
{
    int n = _i;
    unsigned char *file;
    const char *path = t0();
    BufMgr *bm = open_shared(path, false, &file);
    Reader r[4];
    armed_off = 7 * BLCKSZ, armed_waiters = (unsigned)n - 1, armed_fail = false;
    armed_bm = bm;
    run_readers(r, n, bm, file, 7, false);
    armed_bm = NULL;
    BufStats s;
    bufmgr_stats_snapshot(bm, &s);
    ck_assert_uint_eq(s.bs_io_waits, (unsigned)n - 1);
    ck_assert_uint_eq(s.bs_reads, 1);              /* read once, */
    ck_assert_uint_eq(s.bs_hits, (unsigned)n - 1); /* the others waited for it */
    for (int i = 0; i < n; i++) {
        ck_assert_msg(r[i].rc == 0, "%s", r[i].err.msg);
        ck_assert(r[i].pages_ok);
    }
    for (int loop = 0; loop < 2; loop++) { /* a pool that holds it, then rings */
        if (loop == 1) {
            bufmgr_close(bm);
            free(file);
            bm = open_shared(path, true, &file);
        }
        run_readers(r, n, bm, file, 0, true);
        for (int i = 0; i < n; i++)
            ck_assert_msg(r[i].rc == 0 && r[i].pages_ok, "reader %d of %d, loop %d", i,
                          n, loop);
        bufmgr_stats_snapshot(bm, &s);
        ck_assert_uint_eq(s.bs_verify_failures, 0);
        if (loop == 0)
            ck_assert_uint_eq(s.bs_reads, 134); /* each block read once */
        ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    }
    bufmgr_close(bm);
    free(file);
}
END_TEST

/* The read the others wait for fails: each of them gets the reader's error,
 * naming the block, and nothing stays pinned; asked again, it is read. */
START_TEST(a_failed_read_fails_its_waiters_too)
{
    int n = _i;
    unsigned char *file;
    BufMgr *bm = open_shared(t0(), false, &file);
    Reader r[4];
    armed_off = 7 * BLCKSZ, armed_waiters = (unsigned)n - 1, armed_fail = true;
    armed_bm = bm;
    run_readers(r, n, bm, file, 7, false);
    armed_bm = NULL;
    BufStats s;
    bufmgr_stats_snapshot(bm, &s);
    ck_assert_uint_eq(s.bs_io_waits, (unsigned)n - 1);
    ck_assert_uint_eq(s.bs_reads, 0);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(r[i].rc, -EIO);
        ck_assert_int_eq(r[i].err.block, 7);
        ck_assert_str_eq(r[i].err.msg, r[0].err.msg);
        ck_assert_str_eq(r[i].err.file, r[0].err.file);
    }
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    run_readers(r, 1, bm, file, 7, false); /* disarmed: read afresh */
    ck_assert_msg(r[0].rc == 0 && r[0].pages_ok, "%s", r[0].err.msg);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    bufmgr_close(bm);
    free(file);
}
END_TEST

/* Not shared: a read ahead of this thread's own stream cannot be waited
 * for (the thread would wait for itself); the error says so. */
START_TEST(a_thread_cannot_wait_for_its_own_read_ahead)
{
    BufMgrOptions o;
    bufmgr_default_options(&o);
    o.bo_io_method = PAGEIO_WORKER;
    o.bo_io_combine_bytes = 4 * BLCKSZ;
    o.bo_pool_bytes = 8 << 20;
    BufMgr *bm = tu_open_bm(t0(), &o);
    HsError err;
    ReadStream *rs = read_stream_begin(bm, NULL, 0, bufmgr_nblocks(bm), &err);
    Buffer buf, other;
    const void *page;
    uint64_t blk;
    ck_assert_int_eq(read_stream_next(rs, &buf, &page, &blk, &err), 1);
    ck_assert_uint_eq(read_stream_depth(bm, NULL), 2); /* blocks 4..11 in flight */
    int rc = bufmgr_read(bm, 5, &other, &page, &err);
    if (rc == 0) /* the worker was done with it already: a plain hit */
        bufmgr_release(bm, other);
    else
        ck_assert_int_eq(rc, -EDEADLK);
    bufmgr_release(bm, buf);
    read_stream_end(rs);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    bufmgr_close(bm);
}
END_TEST

static Suite *bufmgr_suite(void)
{
    Suite *s = suite_create("bufmgr");
    TCase *tc = tcase_create("bufmgr");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, second_scan_with_a_big_pool_reads_nothing);
    tcase_add_test(tc, auto_strategy_rings_over_a_quarter_of_the_pool);
    tcase_add_test(tc, mmap_maps_one_window_per_chunk);
    tcase_add_test(tc, pinned_window_is_not_unmapped);
    tcase_add_test(tc, all_frames_pinned_is_an_error_not_a_hang);
    tcase_add_test(tc, files_that_are_not_tables);
    tcase_add_test(tc, options_are_checked_where_they_are_kept);
    tcase_add_test(tc, io_options_are_checked_where_they_are_kept);
    tcase_add_loop_test(tc, invariants_hold_through_every_call, 0, 2);
    tcase_add_loop_test(tc, threads_wait_for_a_read_in_flight, 2, 5);
    tcase_add_loop_test(tc, a_failed_read_fails_its_waiters_too, 2, 5);
    tcase_add_test(tc, a_thread_cannot_wait_for_its_own_read_ahead);
#ifndef NDEBUG
    tcase_add_test_raise_signal(tc, a_second_release_is_caught, SIGABRT);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(bufmgr_suite());
}
