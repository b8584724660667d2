/*
 * pool.c -- the read access method: a pool of 8 KiB frames, a descriptor
 *           per frame, a hash from block to frame, pins, and reads into
 *           frames (see buf_internals.h).
 *
 * Entry points: the bufmgr_pool_methods table, which bufmgr.c calls
 * through.  See also: freelist.c -- which frame a new page goes into;
 * pageio.c -- the reads themselves; readstream.c -- which runs are started
 * ahead of time.
 *
 * Invariants (pool_check() asserts them when checking is on):
 *   - a frame in the hash is BD_VALID or BD_IN_FLIGHT, under its block,
 *     once, and no two frames hold the same block;
 *   - a frame being read (BD_IN_FLIGHT) is pinned, so no victim search
 *     takes it, and nobody hands its page out before the read is over: a
 *     thread that asks for it meanwhile pins it and waits (shared pool:
 *     bp_io_done) until the read is over, as PostgreSQL's WaitIO(); if the
 *     read failed, it gets the reader's error (BD_IO_ERROR);
 *   - a BD_IO_ERROR frame is out of the hash and pinned only by waiters
 *     that have yet to see the error; the last of them frees it;
 *   - a pinned frame is never a victim; pins are released once each;
 *   - the ring's slots hold frames of the pool (at most bp_ring_size of
 *     them, so a ring scan never uses more).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf_internals.h"
#include "page.h"

/* ---- the hash: block to frame ---------------------------------------------- */

static inline uint32_t bucket_of(const BufPool *p, uint64_t blkno)
{
    return (uint32_t)((blkno * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & p->bp_bucket_mask;
}

static int32_t hash_lookup(const BufPool *p, uint64_t blkno)
{
    for (int32_t f = p->bp_buckets[bucket_of(p, blkno)]; f >= 0;
         f = p->bp_desc[f].bd_next)
        if (p->bp_desc[f].bd_blkno == blkno)
            return f;
    return -1;
}

static void hash_insert(BufPool *p, int32_t f)
{
    uint32_t b = bucket_of(p, p->bp_desc[f].bd_blkno);
    p->bp_desc[f].bd_next = p->bp_buckets[b];
    p->bp_buckets[b] = f;
}

static void hash_remove(BufPool *p, int32_t f)
{
    int32_t *link = &p->bp_buckets[bucket_of(p, p->bp_desc[f].bd_blkno)];
    while (*link != f)
        link = &p->bp_desc[*link].bd_next;
    *link = p->bp_desc[f].bd_next;
}

void pool_invalidate(BufMgr *bm, int32_t f)
{
    BufDesc *d = &bm->bm_pool.bp_desc[f];
    assert(d->bd_pins == 0);
    if (d->bd_flags & (BD_VALID | BD_IN_FLIGHT))
        hash_remove(&bm->bm_pool, f);
    d->bd_flags &= BD_EVER_USED;
    d->bd_usage = 0;
}

static unsigned char *frame_page(const BufPool *p, int32_t f)
{
    return p->bp_frames + (size_t)f * BLCKSZ;
}

/* ---- starting a run: pins, and frames for what is to be read ------------- */

/* The frame holding blkno with its page there (not being read), or -1. */
static int32_t lookup_valid(const BufPool *p, uint64_t blkno)
{
    int32_t f = hash_lookup(p, blkno);
    return f >= 0 && (p->bp_desc[f].bd_flags & BD_VALID) ? f : -1;
}

/* Pin blkno (frame f, pinned already if first_pinned) and the blocks after
 * it whose pages are in the pool too (up to max, before end): a run with
 * nothing to read. */
static void pin_hits(BufMgr *bm, uint64_t blkno, int32_t f, bool first_pinned,
                     uint32_t max, uint64_t end, BufRun *run)
{
    BufPool *p = &bm->bm_pool;
    uint32_t n = 0;
    do {
        assert(p->bp_desc[f].bd_flags & BD_VALID);
        if (n > 0 || !first_pinned)
            p->bp_desc[f].bd_pins++;
        run->br_buf[n] = f;
        run->br_page[n++] = frame_page(p, f);
    } while (n < max && blkno + n < end && (f = lookup_valid(p, blkno + n)) >= 0);
    run->br_npages = n;
    run->br_io = false;
}

/* Drop a pin of frame f that a failed read left in BD_IO_ERROR; the last
 * one frees the error and the frame. */
static void unpin_failed(BufPool *p, int32_t f)
{
    BufDesc *d = &p->bp_desc[f];
    if (--d->bd_pins > 0)
        return;
    if (d->bd_ioerr != NULL && --d->bd_ioerr->be_refs == 0)
        free(d->bd_ioerr);
    d->bd_ioerr = NULL;
    d->bd_flags &= BD_EVER_USED;
    d->bd_usage = 0;
}

/*
 * Frame f holds blkno and is being read: wait until the read is over, with
 * f pinned so it keeps its block (the lock held, released while waiting).
 * 0 with f pinned and valid, or the read's error with nothing pinned.  A
 * pool not shared has only this thread, whose own read ahead it is: it
 * cannot wait for itself.
 */
static int wait_for_read(BufMgr *bm, int32_t f, uint64_t blkno, HsError *err)
{
    BufPool *p = &bm->bm_pool;
    BufDesc *d = &p->bp_desc[f];
    if (!bm->bm_shared)
        return hs_error_set(err, -EDEADLK, bm->bm_rel.rf_path, (int64_t)blkno,
                            "the block is being read ahead by this thread's own "
                            "read stream: end the stream first");
    d->bd_pins++;
    p->bp_io_waiters++;
    bm->bm_stats.bs_io_waits++;
    while (d->bd_flags & BD_IN_FLIGHT)
        pthread_cond_wait(&p->bp_io_done, &bm->bm_mutex);
    p->bp_io_waiters--;
    if (!(d->bd_flags & BD_IO_ERROR))
        return 0;
    int rc;
    if (d->bd_ioerr != NULL) {
        rc = d->bd_ioerr->be_err.code;
        if (err != NULL)
            *err = d->bd_ioerr->be_err;
    } else {
        rc = hs_error_set(err, -EIO, bm->bm_rel.rf_path, (int64_t)blkno,
                          "another thread's read of this block failed (its "
                          "error was lost: out of memory)");
    }
    unpin_failed(p, f);
    return rc;
}

/* Claim frames for blkno and the blocks after it the pool does not have (up
 * to max, before end), each pinned and in the hash as in flight: a run to be
 * read with one request.  0 frames when every frame is pinned. */
static void claim_frames(BufMgr *bm, BufAccessStrategy *st, uint64_t blkno,
                         uint32_t max, uint64_t end, BufRun *run)
{
    BufPool *p = &bm->bm_pool;
    uint32_t n = 0;
    while (n < max && blkno + n < end && (n == 0 || hash_lookup(p, blkno + n) < 0)) {
        int32_t f = freelist_victim(bm, st);
        if (f < 0)
            break;
        BufDesc *d = &p->bp_desc[f];
        if (!(d->bd_flags & BD_EVER_USED))
            bm->bm_stats.bs_frames_used++;
        d->bd_pins = 1;
        d->bd_blkno = blkno + n;
        d->bd_flags = BD_IN_FLIGHT | BD_EVER_USED;
        hash_insert(p, f);
        run->br_buf[n] = f;
        run->br_page[n++] = frame_page(p, f);
    }
    run->br_npages = n;
    run->br_io = true;
    run->br_req =
        (PageIORequest){.pr_blkno = blkno, .pr_n = n, .pr_pages = run->br_page};
}

static int pool_start(BufMgr *bm, BufAccessStrategy *st, uint64_t blkno, uint32_t max,
                      uint64_t end, BufRun *run, HsError *err)
{
    run->br_blkno = blkno;
    run->br_next = 0;
    run->br_async = false;
    run->br_req.pr_submitted = false;
    bufmgr_lock(bm);
    int32_t f = hash_lookup(&bm->bm_pool, blkno);
    bool waited = false;
    if (f >= 0 && (bm->bm_pool.bp_desc[f].bd_flags & BD_IN_FLIGHT)) {
        int rc = wait_for_read(bm, f, blkno, err);
        if (rc < 0) {
            bufmgr_unlock(bm);
            return rc;
        }
        waited = true;
    }
    if (f >= 0)
        pin_hits(bm, blkno, f, waited, max, end, run);
    else
        claim_frames(bm, st ? st : &bm->bm_pool.bp_own, blkno, max, end, run);
    bufmgr_unlock(bm);
    if (run->br_npages == 0)
        return hs_error_set(err, -ENOBUFS, bm->bm_rel.rf_path, (int64_t)blkno,
                            "no unpinned buffers available (%u frames)",
                            bm->bm_pool.bp_nframes);
    return 0;
}

/* ---- finishing a read, and handing pages out ------------------------------ */

/* Frame f's read failed with the run's error: out of the hash; unpinned
 * and forgotten, or, when threads wait for it, kept for them with the
 * error (*shared, allocated for the first such frame). */
static void fail_frame(BufMgr *bm, int32_t f, const PageIORequest *r,
                       BufIOError **shared)
{
    BufDesc *d = &bm->bm_pool.bp_desc[f];
    hash_remove(&bm->bm_pool, f);
    d->bd_flags = BD_EVER_USED;
    d->bd_usage = 0;
    if (--d->bd_pins == 0)
        return;
    if (*shared == NULL && (*shared = malloc(sizeof(**shared))) != NULL)
        **shared = (BufIOError){.be_err = r->pr_err, .be_refs = 0};
    d->bd_ioerr = *shared; /* NULL: no memory to keep the message in */
    if (*shared != NULL)
        (*shared)->be_refs++;
    d->bd_flags |= BD_IO_ERROR;
}

static void pool_complete(BufMgr *bm, BufRun *run, int rc)
{
    BufPool *p = &bm->bm_pool;
    const PageIORequest *r = &run->br_req;
    BufIOError *shared = NULL;
    bufmgr_lock(bm);
    bm->bm_stats.bs_read_calls += r->pr_calls;
    if (r->pr_deadline != 0) {
        BufStats *s = &bm->bm_stats;
        s->bs_latency_waits++;
        s->bs_latency_late_ns += r->pr_late_ns;
        s->bs_latency_late_max_ns = r->pr_late_ns > s->bs_latency_late_max_ns
                                        ? r->pr_late_ns
                                        : s->bs_latency_late_max_ns;
    }
    for (uint32_t i = 0; i < run->br_npages; i++) {
        if (rc < 0) {
            fail_frame(bm, run->br_buf[i], r, &shared);
            continue;
        }
        BufDesc *d = &p->bp_desc[run->br_buf[i]];
        d->bd_flags = (uint8_t)((d->bd_flags & ~BD_IN_FLIGHT) | BD_VALID);
    }
    if (rc == 0) {
        bm->bm_stats.bs_reads += run->br_npages;
        bm->bm_stats.bs_bytes_read += (uint64_t)run->br_npages * BLCKSZ;
    }
    if (p->bp_io_waiters > 0)
        pthread_cond_broadcast(&p->bp_io_done);
    bufmgr_unlock(bm);
}

/* The page is pinned by the run, so nobody takes its frame while it is
 * verified outside the lock (a crc32 of 8 KiB: not to be done holding it). */
static int pool_accept(BufMgr *bm, BufRun *run, uint32_t i, HsError *err)
{
    BufPool *p = &bm->bm_pool;
    int32_t f = run->br_buf[i];
    BufDesc *d = &p->bp_desc[f];
    bufmgr_lock(bm);
    if (!run->br_io)
        bm->bm_stats.bs_hits++;
    bool check = bm->bm_opt.bo_verify && !(d->bd_flags & BD_VERIFIED);
    bufmgr_unlock(bm);
    int rc =
        check ? bufmgr_verify(bm, run->br_page[i], run->br_blkno + i, NULL, err) : 0;
    bufmgr_lock(bm);
    if (check)
        bufmgr_count_verify(bm, rc);
    if (rc < 0) {
        if (--d->bd_pins == 0)
            pool_invalidate(bm, f); /* not kept: asking again reads it again */
    } else {
        d->bd_flags |= check ? BD_VERIFIED : 0;
        /* a ring reuses a frame only if nobody else has used it: count to 1 */
        if (p->bp_use_ring ? d->bd_usage == 0 : d->bd_usage < BM_MAX_USAGE)
            d->bd_usage++;
    }
    bufmgr_unlock(bm);
    return rc;
}

/* A frame is this process's copy: nothing writes it while it is pinned. */
static int pool_recheck(BufMgr *bm, Buffer buf, const void *page, uint64_t blkno,
                        HsError *err)
{
    (void)bm, (void)buf, (void)page, (void)blkno, (void)err;
    return 0;
}

static void pool_release(BufMgr *bm, Buffer buf)
{
    BufDesc *d = &bm->bm_pool.bp_desc[buf];
    bufmgr_lock(bm);
    assert(buf >= 0 && (uint32_t)buf < bm->bm_pool.bp_nframes && d->bd_pins > 0);
    d->bd_pins--;
    bufmgr_unlock(bm);
}

/* ---- opening and closing --------------------------------------------------- */

/* A ring for st when the pool's scans use rings. */
static int strategy_init(BufMgr *bm, BufAccessStrategy *st, HsError *err)
{
    *st = (BufAccessStrategy){0};
    if (!bm->bm_pool.bp_use_ring)
        return 0;
    st->st_ring_size = (uint32_t)(bufmgr_ring_bytes(&bm->bm_opt) / BLCKSZ);
    st->st_ring_used = st->st_ring_size;
    st->st_ring = malloc(st->st_ring_size * sizeof(int32_t));
    if (st->st_ring == NULL)
        return hs_error_set(err, -ENOMEM, bm->bm_rel.rf_path, HS_NO_BLOCK,
                            "out of memory");
    memset(st->st_ring, 0xff, st->st_ring_size * sizeof(int32_t));
    return 0;
}

/* Rings, when the scans will use them: the strategy says so, or (auto) the
 * table is larger than a quarter of the pool, as PostgreSQL's BAS_BULKREAD. */
static int open_ring(BufMgr *bm, HsError *err)
{
    BufPool *p = &bm->bm_pool;
    const BufMgrOptions *o = &bm->bm_opt;
    p->bp_use_ring = o->bo_strategy == BUF_STRATEGY_RING ||
                     (o->bo_strategy == BUF_STRATEGY_AUTO &&
                      relfile_nblocks(&bm->bm_rel) > p->bp_nframes / 4);
    return strategy_init(bm, &p->bp_own, err);
}

BufAccessStrategy *bufmgr_strategy_new(BufMgr *bm, HsError *err)
{
    BufAccessStrategy *st = malloc(sizeof(*st));
    if (st == NULL) {
        hs_error_set(err, -ENOMEM, bm->bm_rel.rf_path, HS_NO_BLOCK, "out of memory");
        return NULL;
    }
    *st = (BufAccessStrategy){0};
    if (bm->bm_opt.bo_access != BUF_ACCESS_READ)
        return st;
    /* an I/O worker or an io_uring is one thread's: a scan sharing bm gets
     * its own (sync is no state at all: bm's serves every thread) */
    if (strategy_init(bm, st, err) < 0 ||
        (pageio_method(bm->bm_io) != PAGEIO_SYNC &&
         pageio_open(&st->st_io, &bm->bm_rel, &bm->bm_iocfg, err) < 0)) {
        bufmgr_strategy_free(st);
        return NULL;
    }
    return st;
}

void bufmgr_strategy_free(BufAccessStrategy *st)
{
    if (st != NULL) {
        pageio_close(st->st_io); /* its reads are over before the frames go */
        free(st->st_ring);
    }
    free(st);
}

/*
 * How runs are read: --io-method, or as --io-workers says; auto reads in
 * line.  Handing each run to an I/O worker costs a wake-up on the other CPU
 * and a page CRC'd from the other core's cache, and on the machine measured
 * that cost more than the overlapped copy saved, idle and beside a busy
 * process alike (docs/performance.md, D1).
 */
static PageIOMethod io_method(const BufMgrOptions *o)
{
    if (o->bo_io_method != BUFMGR_IO_METHOD_AUTO)
        return (PageIOMethod)o->bo_io_method;
    return o->bo_io_workers > 0 ? PAGEIO_WORKER : PAGEIO_SYNC;
}

/* --direct: O_DIRECT on every segment, if the frames are aligned as the file
 * system needs (they are page-aligned: the pool is one anonymous mapping). */
static int open_direct(BufMgr *bm, HsError *err)
{
    uint32_t align;
    long page = sysconf(_SC_PAGESIZE);
    int rc = relfile_set_direct(&bm->bm_rel, &align, err);
    if (rc == 0 && (page <= 0 || align > (uint32_t)page || (uint32_t)page % align != 0))
        rc = hs_error_set(err, -EINVAL, bm->bm_rel.rf_path, HS_NO_BLOCK,
                          "O_DIRECT (--direct) here needs %u-byte aligned buffers, "
                          "more than the pool's %ld-byte aligned frames",
                          align, page);
    return rc;
}

static int open_io(BufMgr *bm, HsError *err)
{
    const BufMgrOptions *o = &bm->bm_opt;
    int rc = o->bo_direct ? open_direct(bm, err) : 0;
    bm->bm_iocfg = (PageIOConfig){.pc_method = io_method(o),
                                  .pc_depth = o->bo_io_depth,
                                  .pc_latency_us = o->bo_io_latency_us};
    return rc < 0 ? rc : pageio_open(&bm->bm_io, &bm->bm_rel, &bm->bm_iocfg, err);
}

static int pool_open(BufMgr *bm, HsError *err)
{
    BufPool *p = &bm->bm_pool;
    const BufMgrOptions *o = &bm->bm_opt;
    p->bp_nframes = (uint32_t)(o->bo_pool_bytes / BLCKSZ);
    uint32_t nb = 1;
    while (nb < p->bp_nframes * 2)
        nb <<= 1;
    p->bp_bucket_mask = nb - 1;
    /* anonymous memory: frames cost RSS only once a page lands in them */
    p->bp_frames = mmap(NULL, o->bo_pool_bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p->bp_desc = calloc(p->bp_nframes, sizeof(BufDesc));
    p->bp_buckets = malloc((size_t)nb * sizeof(int32_t));
    if (p->bp_frames == MAP_FAILED || !p->bp_desc || !p->bp_buckets) {
        if (p->bp_frames == MAP_FAILED)
            p->bp_frames = NULL;
        return hs_error_set(err, -ENOMEM, bm->bm_rel.rf_path, HS_NO_BLOCK,
                            "cannot allocate a pool of %zu bytes", o->bo_pool_bytes);
    }
    memset(p->bp_buckets, 0xff, (size_t)nb * sizeof(int32_t));
    int rc = open_ring(bm, err);
    return rc < 0 ? rc : open_io(bm, err);
}

static void pool_close(BufMgr *bm)
{
    BufPool *p = &bm->bm_pool;
    pageio_close(bm->bm_io); /* waits for its reads: before their frames go away */
    bm->bm_io = NULL;
    if (p->bp_frames)
        munmap(p->bp_frames, bm->bm_opt.bo_pool_bytes);
    free(p->bp_desc);
    free(p->bp_buckets);
    free(p->bp_own.st_ring);
}

/* ---- the rest of the table ------------------------------------------------- */

static uint32_t pool_frames(const BufMgr *bm)
{
    return bm->bm_pool.bp_nframes;
}

static uint32_t pool_pins_held(const BufMgr *bm)
{
    uint32_t pins = 0;
    for (uint32_t f = 0; f < bm->bm_pool.bp_nframes; f++)
        pins += bm->bm_pool.bp_desc[f].bd_pins;
    return pins;
}

static int pool_block_of_address(const BufMgr *bm, const void *addr, uint64_t *blkno)
{
    (void)bm, (void)addr, (void)blkno;
    return -1; /* frames are anonymous memory: no SIGBUS comes from them */
}

/* The invariants in the banner above. */
static void pool_check(const BufMgr *bm)
{
    const BufPool *p = &bm->bm_pool;
    uint32_t in_hash = 0, held = 0;
    for (uint32_t b = 0; b <= p->bp_bucket_mask; b++)
        for (int32_t f = p->bp_buckets[b]; f >= 0; f = p->bp_desc[f].bd_next) {
            const BufDesc *d = &p->bp_desc[f];
            assert((uint32_t)f < p->bp_nframes);
            assert(d->bd_flags & (BD_VALID | BD_IN_FLIGHT));
            assert(bucket_of(p, d->bd_blkno) == b);
            assert(hash_lookup(p, d->bd_blkno) == f); /* the first, so the only */
            in_hash++;
        }
    for (uint32_t f = 0; f < p->bp_nframes; f++) {
        const BufDesc *d = &p->bp_desc[f];
        held += (d->bd_flags & (BD_VALID | BD_IN_FLIGHT)) != 0;
        assert(!(d->bd_flags & BD_IN_FLIGHT) || d->bd_pins > 0);
        assert(d->bd_usage <= BM_MAX_USAGE);
    }
    assert(held == in_hash);
    const BufAccessStrategy *st = &p->bp_own;
    assert(st->st_ring == NULL || (st->st_ring_used <= st->st_ring_size &&
                                   st->st_ring_pos < st->st_ring_used));
    for (uint32_t i = 0; st->st_ring != NULL && i < st->st_ring_size; i++)
        assert(st->st_ring[i] >= -1 && st->st_ring[i] < (int32_t)p->bp_nframes);
    (void)in_hash, (void)held;
}

const BufAccessMethods bufmgr_pool_methods = {
    .am_open = pool_open,
    .am_close = pool_close,
    .am_start = pool_start,
    .am_complete = pool_complete,
    .am_accept = pool_accept,
    .am_release = pool_release,
    .am_recheck = pool_recheck,
    .am_frames = pool_frames,
    .am_pins_held = pool_pins_held,
    .am_block_of_address = pool_block_of_address,
    .am_check_state = pool_check,
};
