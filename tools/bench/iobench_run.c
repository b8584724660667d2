/*
 * iobench_run.c -- making the test file, one measured run of seq-read,
 *                  rnd-rw or rnd-page under read or mmap, and the content
 *                  checksum (see iobench_run.h).
 *
 * Entry points: iob_file_ensure, iob_run, iob_checksum, and the names of
 * the enums (iob_test_name, iob_method_name, iob_sync_name,
 * iob_cache_name, iob_cache_mode).
 */
#include "iobench_run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "busguard.h"
#include "crc32.h"
#include "page.h"
#include "relfile.h"

#define IOB_PIECE     ((size_t)1 << 20)          /* bytes written or summed at a time */
#define IOB_FILL_SEED UINT64_C(0x696f62656e6368) /* "iobench": the file's bytes */
#define IOB_GOLDEN    UINT64_C(0x9E3779B97F4A7C15)

const char *const iob_test_names[] = {"seq-read", "rnd-rw", "rnd-page", NULL};
const char *const iob_method_names[] = {"read", "mmap", "io_uring", NULL};
const char *const iob_sync_names[] = {"none", "end", NULL};
const char *const iob_cache_names[] = {"stable", "cold", NULL};

const char *iob_test_name(IobTest test)
{
    return iob_test_names[test];
}

const char *iob_method_name(IobMethod method)
{
    return iob_method_names[method];
}

const char *iob_sync_name(IobSync sync)
{
    return iob_sync_names[sync];
}

const char *iob_cache_name(IobCache cache)
{
    return iob_cache_names[cache];
}

CacheMode iob_cache_mode(IobCache cache)
{
    return cache == IOB_CACHE_COLD ? CACHE_COLD : CACHE_WARM;
}

/* An open file under test, the buffers and where the counts go. */
typedef struct IobCtx {
    const IobConfig *c_cfg; /* what to run */
    int c_fd;               /* the file, or -1 */
    uint64_t c_size;        /* its length */
    unsigned char *c_map;   /* mmap: the whole file; read: NULL */
    unsigned char *c_buf;   /* a block is read (copied) into this */
    unsigned char *c_wbuf;  /* rnd-rw: a block is written from this */
    IobResult *c_res;       /* the counts */
} IobCtx;

/* splitmix64: one 64-bit add and two multiplies a number, full period. */
uint64_t iob_next(uint64_t *state)
{
    uint64_t z = (*state += IOB_GOLDEN);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Fill n bytes from the generator at *state; no byte is left zero. */
static void fill_random(unsigned char *p, size_t n, uint64_t *state)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = iob_next(state);
        memcpy(p + i, &w, 8);
    }
    for (uint64_t w = iob_next(state); i < n; i++, w >>= 8)
        p[i] = (unsigned char)w;
    for (i = 0; i < n; i++)
        p[i] = p[i] ? p[i] : 0xA5;
}

/* pwrite() all n bytes at off, or fail naming path. */
static int write_all(int fd, const unsigned char *p, size_t n, uint64_t off,
                     const char *path, HsError *err)
{
    while (n > 0) {
        ssize_t put = pwrite(fd, p, n, (off_t)off);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return hs_error_set(err, put < 0 ? -errno : -EIO, path, HS_NO_BLOCK,
                                "write at byte %llu: %s", (unsigned long long)off,
                                put < 0 ? strerror(errno) : "wrote nothing");
        p += put, n -= (size_t)put, off += (uint64_t)put;
    }
    return 0;
}

/*
 * Write size bytes of fill into fd and fsync it.  Piece k of 1 MiB is drawn
 * from a generator seeded by k alone, so the bytes at an offset are the same
 * whatever the file's size.
 */
static int write_fill(int fd, const char *path, uint64_t size,
                      const volatile sig_atomic_t *stop, HsError *err)
{
    unsigned char *buf = malloc(IOB_PIECE);
    int rc = 0;
    if (buf == NULL)
        return hs_error_set(err, -ENOMEM, path, HS_NO_BLOCK, "out of memory");
    for (uint64_t off = 0; off < size && rc == 0; off += IOB_PIECE) {
        if (stop != NULL && *stop) {
            rc = hs_error_set(err, HS_EINTR, path, HS_NO_BLOCK, "interrupted");
            break;
        }
        uint64_t state = IOB_FILL_SEED ^ (off / IOB_PIECE) * IOB_GOLDEN;
        size_t n = size - off < IOB_PIECE ? (size_t)(size - off) : IOB_PIECE;
        fill_random(buf, n, &state);
        rc = write_all(fd, buf, n, off, path, err);
    }
    free(buf);
    if (rc == 0 && fsync(fd) < 0)
        rc = hs_error_set(err, -errno, path, HS_NO_BLOCK, "fsync: %s", strerror(errno));
    return rc;
}

int iob_file_ensure(const char *path, uint64_t size, const volatile sig_atomic_t *stop,
                    bool *created, HsError *err)
{
    struct stat st;
    char tmp[PATH_MAX];
    *created = false;
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return hs_error_set(err, -EINVAL, path, HS_NO_BLOCK, "not a regular file");
        if ((uint64_t)st.st_size == size)
            return 0;
    } else if (errno != ENOENT) {
        return hs_error_set(err, -errno, path, HS_NO_BLOCK, "stat: %s",
                            strerror(errno));
    }
    if (snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)getpid()) >=
        (int)sizeof(tmp))
        return hs_error_set(err, -ENAMETOOLONG, path, HS_NO_BLOCK, "name too long");
    int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0)
        return hs_error_set(err, -errno, path, HS_NO_BLOCK, "create %s: %s", tmp,
                            strerror(errno));
    int rc = write_fill(fd, path, size, stop, err);
    if (close(fd) < 0 && rc == 0)
        rc = hs_error_set(err, -errno, path, HS_NO_BLOCK, "close: %s", strerror(errno));
    if (rc == 0 && rename(tmp, path) < 0)
        rc =
            hs_error_set(err, -errno, path, HS_NO_BLOCK, "rename: %s", strerror(errno));
    if (rc < 0)
        unlink(tmp);
    *created = rc == 0;
    return rc;
}

/* A pread/pwrite that moved fewer bytes than asked, as an error. */
static int short_io(const IobCtx *c, const char *what, ssize_t got, uint64_t off,
                    HsError *err)
{
    int code = got < 0 ? -errno : -EIO;
    return hs_error_set(err, code, c->c_cfg->ic_path,
                        (int64_t)(off / c->c_cfg->ic_block), "%s: %s", what,
                        got < 0 ? strerror(errno) : "short transfer");
}

/* Copy n bytes at off out of the file into the read buffer. */
static inline int get_block(IobCtx *c, uint64_t off, size_t n, HsError *err)
{
    uint64_t w;
    if (c->c_map != NULL) {
        memcpy(c->c_buf, c->c_map + off, n);
    } else {
        ssize_t got = pread(c->c_fd, c->c_buf, n, (off_t)off);
        if (got != (ssize_t)n)
            return short_io(c, "pread", got, off, err);
    }
    memcpy(&w, c->c_buf, sizeof(w)); /* the buffer is at least 32 bytes */
    c->c_res->ir_sum += w;
    c->c_res->ir_reads++;
    c->c_res->ir_bytes += n;
    return 0;
}

/*
 * Write operation i's block at off: the write buffer (drawn from the seed
 * before the clock started) stamped in its first and last 8 bytes with a
 * word drawn from (seed, i), so every write is distinct and deterministic.
 */
void iob_stamp_write(const IobConfig *cfg, unsigned char *buf, uint64_t i)
{
    size_t n = cfg->ic_block;
    uint64_t state = cfg->ic_seed ^ (i + 1) * IOB_GOLDEN;
    uint64_t w = iob_next(&state) | UINT64_C(0x0101010101010101);
    memcpy(buf, &w, sizeof(w));
    memcpy(buf + n - sizeof(w), &w, sizeof(w));
}

static inline int put_block(IobCtx *c, uint64_t off, uint64_t i, HsError *err)
{
    size_t n = c->c_cfg->ic_block;
    iob_stamp_write(c->c_cfg, c->c_wbuf, i);
    if (c->c_map != NULL) {
        memcpy(c->c_map + off, c->c_wbuf, n);
    } else {
        ssize_t put = pwrite(c->c_fd, c->c_wbuf, n, (off_t)off);
        if (put != (ssize_t)n)
            return short_io(c, "pwrite", put, off, err);
    }
    c->c_res->ir_writes++;
    c->c_res->ir_bytes += n;
    return 0;
}

/* Every block in order; the last one may be partial. */
static int seq_read(IobCtx *c, HsError *err)
{
    size_t bs = c->c_cfg->ic_block;
    for (uint64_t off = 0; off < c->c_size; off += bs) {
        size_t n = c->c_size - off < bs ? (size_t)(c->c_size - off) : bs;
        int rc = get_block(c, off, n, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ops random whole blocks; two draws an operation: where, and read or write. */
static int rnd_rw(IobCtx *c, HsError *err)
{
    const IobConfig *cfg = c->c_cfg;
    uint64_t nblocks = c->c_size / cfg->ic_block, state = cfg->ic_seed;
    for (uint64_t i = 0; i < cfg->ic_ops; i++) {
        uint64_t off = iob_next(&state) % nblocks * cfg->ic_block;
        bool write = iob_next(&state) % 100 < cfg->ic_write_pct;
        int rc =
            write ? put_block(c, off, i, err) : get_block(c, off, cfg->ic_block, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* seq-read or rnd-rw, with SIGBUS under the mapping caught around it. */
static int file_work(void *arg, HsError *err)
{
    IobCtx *c = arg;
    const IobConfig *cfg = c->c_cfg;
    if (cfg->ic_after_open)
        cfg->ic_after_open(cfg->ic_path, cfg->ic_hook_arg);
    if (cfg->ic_method == IOB_URING)
        return iob_uring_work(cfg, c->c_fd, c->c_size, c->c_res, err);
    return cfg->ic_test == IOB_SEQ_READ ? seq_read(c, err) : rnd_rw(c, err);
}

static bool file_locate(const void *arg, const void *addr, uint64_t *at)
{
    const IobCtx *c = arg;
    const unsigned char *a = addr;
    if (c->c_map == NULL || a < c->c_map || a >= c->c_map + c->c_size)
        return false;
    *at = (uint64_t)(a - c->c_map);
    return true;
}

/*
 * Open the file, and map it whole for mmap.  No madvise or fadvise: the
 * kernel's default read-ahead, as the 2002 experiment had (with the file in
 * the page cache the advice made no difference beyond the noise here).  On
 * failure nothing is left open.
 */
static int ctx_open(IobCtx *c, HsError *err)
{
    const IobConfig *cfg = c->c_cfg;
    bool rw = cfg->ic_test == IOB_RND_RW;
    if ((c->c_fd = relfile_open_regular(cfg->ic_path, rw ? O_RDWR : O_RDONLY,
                                        &c->c_size, err)) < 0)
        return c->c_fd;
    int rc = 0;
    if (rc == 0 && c->c_size < cfg->ic_block)
        rc = -EINVAL;
    if (rc == 0 && cfg->ic_method == IOB_MMAP) {
        void *p = mmap(NULL, c->c_size, PROT_READ | (rw ? PROT_WRITE : 0), MAP_SHARED,
                       c->c_fd, 0);
        rc = p == MAP_FAILED ? -errno : 0;
        c->c_map = p == MAP_FAILED ? NULL : p;
    }
    if (rc < 0) {
        close(c->c_fd);
        return hs_error_set(err, rc, cfg->ic_path, HS_NO_BLOCK, "%s",
                            rc == -EINVAL ? "shorter than one block" : strerror(-rc));
    }
    return 0;
}

/* Sync if asked (before the clock stops), unmap and close; keeps a first error. */
static int ctx_close(IobCtx *c, int rc, HsError *err)
{
    const char *path = c->c_cfg->ic_path;
    if (rc == 0 && c->c_cfg->ic_sync == IOB_SYNC_END) {
        if (c->c_map != NULL && msync(c->c_map, c->c_size, MS_SYNC) < 0)
            rc = hs_error_set(err, -errno, path, HS_NO_BLOCK, "msync: %s",
                              strerror(errno));
        else if (c->c_map == NULL && fsync(c->c_fd) < 0)
            rc = hs_error_set(err, -errno, path, HS_NO_BLOCK, "fsync: %s",
                              strerror(errno));
    }
    if (c->c_map != NULL)
        munmap(c->c_map, c->c_size);
    if (close(c->c_fd) < 0 && rc == 0)
        rc = hs_error_set(err, -errno, path, HS_NO_BLOCK, "close: %s", strerror(errno));
    return rc;
}

/* The pool for rnd-page: a quarter of the table (16 pages .. 128 MiB), so
 * that three random pages in four miss. */
static void page_options(const IobConfig *cfg, uint64_t table_bytes, BufMgrOptions *o)
{
    uint64_t pool = table_bytes / 4 / BLCKSZ * BLCKSZ;
    bufmgr_default_options(o);
    o->bo_access = cfg->ic_method == IOB_MMAP ? BUF_ACCESS_MMAP : BUF_ACCESS_READ;
    o->bo_strategy = BUF_STRATEGY_NORMAL;
    o->bo_io_combine_bytes = BLCKSZ; /* a miss is one pread of one page */
    o->bo_io_workers = 0;            /* nothing to read ahead at random */
    o->bo_mmap_chunk_bytes = 0;      /* map whole segments, as the file tests do */
    if (pool < 16 * BLCKSZ)
        pool = 16 * BLCKSZ;
    if (pool > BUFMGR_DEFAULT_POOL)
        pool = BUFMGR_DEFAULT_POOL;
    o->bo_pool_bytes = (size_t)pool;
    if (bufmgr_ring_bytes(o) > o->bo_pool_bytes / 2)
        o->bo_ring_bytes = o->bo_pool_bytes / 2 / BLCKSZ * BLCKSZ;
}

/* rnd-page: what the guarded loop works on. */
typedef struct PageRun {
    const IobConfig *pr_cfg;
    BufMgr *pr_bm;
    IobResult *pr_res;
} PageRun;

/* rnd-page: ops random pages pinned, one word looked at, released. */
static int page_work(void *arg, HsError *err)
{
    PageRun *pr = arg;
    uint64_t state = pr->pr_cfg->ic_seed, n = bufmgr_nblocks(pr->pr_bm);
    if (pr->pr_cfg->ic_after_open)
        pr->pr_cfg->ic_after_open(pr->pr_cfg->ic_path, pr->pr_cfg->ic_hook_arg);
    for (uint64_t i = 0; i < pr->pr_cfg->ic_ops; i++) {
        Buffer b;
        const void *page;
        uint64_t w;
        int rc = bufmgr_read(pr->pr_bm, iob_next(&state) % n, &b, &page, err);
        if (rc < 0)
            return rc;
        memcpy(&w, (const unsigned char *)page + 8, sizeof(w));
        pr->pr_res->ir_sum += w;
        bufmgr_release(pr->pr_bm, b);
        pr->pr_res->ir_reads++;
    }
    return 0;
}

static bool page_locate(const void *arg, const void *addr, uint64_t *blkno)
{
    return bufmgr_block_of_address(((const PageRun *)arg)->pr_bm, addr, blkno) == 0;
}

static int run_pages(const IobConfig *cfg, IobResult *res, HsError *err)
{
    uint64_t bytes;
    BufMgrOptions o;
    MeasureStart ms;
    PageRun pr = {.pr_cfg = cfg, .pr_res = res};
    BusGuard guard = {.bg_work = page_work,
                      .bg_locate = page_locate,
                      .bg_arg = &pr,
                      .bg_file = cfg->ic_path,
                      .bg_unit = BUSGUARD_BLOCK};
    int rc = file_total_bytes(cfg->ic_path, &bytes, err);
    if (rc < 0)
        return rc;
    page_options(cfg, bytes, &o);
    measure_start(&ms);
    if ((rc = bufmgr_open(&pr.pr_bm, cfg->ic_path, &o, err)) < 0)
        return rc;
    rc = busguard_run(&guard, err);
    res->ir_buf = *bufmgr_stats(pr.pr_bm);
    bufmgr_close(pr.pr_bm);
    measure_stop(&ms, &res->ir_m);
    res->ir_ops = res->ir_reads;
    res->ir_bytes = res->ir_reads * BLCKSZ;
    return rc;
}

/* The read and write buffers (page-aligned, as fio's), the write one drawn
 * from the seed. */
static int ctx_buffers(IobCtx *c, HsError *err)
{
    size_t bs = c->c_cfg->ic_block;
    uint64_t state = c->c_cfg->ic_seed;
    c->c_buf = aligned_alloc(4096, (bs + 4095) / 4096 * 4096);
    c->c_wbuf = aligned_alloc(4096, (bs + 4095) / 4096 * 4096);
    if (c->c_buf == NULL || c->c_wbuf == NULL)
        return hs_error_set(err, -ENOMEM, c->c_cfg->ic_path, HS_NO_BLOCK,
                            "out of memory");
    memset(c->c_buf, 0, bs);
    fill_random(c->c_wbuf, bs, &state);
    return 0;
}

void iob_fill_write_buffer(const IobConfig *cfg, unsigned char *buf)
{
    uint64_t state = cfg->ic_seed;
    fill_random(buf, cfg->ic_block, &state);
}

int iob_run(const IobConfig *cfg, IobResult *res, HsError *err)
{
    IobCtx c = {.c_cfg = cfg, .c_fd = -1, .c_res = res};
    MeasureStart ms;
    memset(res, 0, sizeof(*res));
    if (cfg->ic_method == IOB_URING &&
        (cfg->ic_test == IOB_RND_PAGE || cfg->ic_depth < 1 ||
         cfg->ic_depth > IOB_MAX_DEPTH))
        return hs_error_set(err, HS_EUSAGE, cfg->ic_path, HS_NO_BLOCK,
                            "io_uring runs seq-read and rnd-rw, at a depth of 1 to %d",
                            IOB_MAX_DEPTH);
    if (cfg->ic_test == IOB_RND_PAGE)
        return run_pages(cfg, res, err);
    int rc = ctx_buffers(&c, err);
    if (rc == 0) {
        measure_start(&ms);
        if ((rc = ctx_open(&c, err)) == 0) {
            BusGuard guard = {.bg_work = file_work,
                              .bg_locate = file_locate,
                              .bg_arg = &c,
                              .bg_file = cfg->ic_path,
                              .bg_unit = BUSGUARD_BYTE,
                              .bg_block_bytes = cfg->ic_block};
            rc = busguard_run(&guard, err);
            rc = ctx_close(&c, rc, err);
        }
        measure_stop(&ms, &res->ir_m);
    }
    res->ir_ops = res->ir_reads + res->ir_writes;
    free(c.c_buf);
    free(c.c_wbuf);
    return rc;
}

int iob_checksum(const char *path, uint32_t *crc, uint64_t *bytes, HsError *err)
{
    int fd = relfile_open_regular(path, O_RDONLY, NULL, err), rc = 0;
    if (fd < 0)
        return fd;
    unsigned char *buf = malloc(IOB_PIECE);
    uint32_t c = 0;
    *bytes = 0;
    if (buf == NULL)
        rc = hs_error_set(err, -ENOMEM, path, HS_NO_BLOCK, "out of memory");
    while (rc == 0) {
        ssize_t got = read(fd, buf, IOB_PIECE);
        if (got == 0)
            break;
        if (got < 0 && errno != EINTR)
            rc = hs_error_set(err, -errno, path, HS_NO_BLOCK, "read: %s",
                              strerror(errno));
        if (got > 0) {
            c = crc32_update(c, buf, (size_t)got);
            *bytes += (uint64_t)got;
        }
    }
    free(buf);
    close(fd);
    *crc = (uint32_t)c;
    return rc;
}
