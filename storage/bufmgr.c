/*
 * bufmgr.c -- the buffer manager's switch: options, opening and closing,
 *             the counters, verification, and the calls every caller makes,
 *             each going through the access method's table (see bufmgr.h).
 *
 * See also: pool.c (the read access method), freelist.c (its replacement),
 * mapped.c (the mmap access method), readstream.c (a scan's look-ahead),
 * buf_internals.h (what they share).  The access method is chosen once, in
 * bufmgr_open(); no call tests which one it is.
 */
#include "bufmgr.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf_internals.h"
#include "page.h"

/* ---- verification, shared by both access methods ------------------------ */

int bufmgr_verify(const BufMgr *bm, const void *page, uint64_t blkno, uint32_t *crc,
                  HsError *err)
{
    PageFault f;
    char msg[200];
    if (page_verify(page, (uint32_t)blkno, bm->bm_opt.bo_checksum, &f) == PAGE_OK) {
        if (crc != NULL) /* the checksum's own CRC when it is heapscan's */
            *crc = f.crc != 0 ? f.crc : page_crc(page, (uint32_t)blkno);
        return 0;
    }
    return hs_error_set(err, HS_ECORRUPT, bm->bm_rel.rf_path, (int64_t)blkno, "%s",
                        page_fault_describe(&f, msg, sizeof(msg)));
}

void bufmgr_count_verify(BufMgr *bm, int rc)
{
    bm->bm_stats.bs_pages_verified++;
    bm->bm_stats.bs_verify_failures += rc < 0;
}

/* ---- options ---------------------------------------------------------------- */

const char *const bufmgr_access_names[] = {[BUF_ACCESS_READ] = "read",
                                           [BUF_ACCESS_MMAP] = "mmap",
                                           [BUF_ACCESS_MMAP + 1] = NULL};

const char *bufmgr_access_name(BufAccess a)
{
    return bufmgr_access_names[a];
}

const char *const bufmgr_strategy_names[] = {[BUF_STRATEGY_AUTO] = "auto",
                                             [BUF_STRATEGY_NORMAL] = "normal",
                                             [BUF_STRATEGY_RING] = "ring",
                                             [BUF_STRATEGY_RING + 1] = NULL};

const char *bufmgr_strategy_name(BufStrategy s)
{
    return bufmgr_strategy_names[s];
}

void bufmgr_default_options(BufMgrOptions *o)
{
    *o = (BufMgrOptions){
        .bo_access = BUF_ACCESS_READ,
        .bo_pool_bytes = BUFMGR_DEFAULT_POOL,
        .bo_ring_bytes = BUFMGR_RING_AUTO,
        .bo_strategy = BUF_STRATEGY_AUTO,
        .bo_io_combine_bytes = BUFMGR_DEFAULT_IO_COMBINE,
        .bo_mmap_chunk_bytes = BUFMGR_DEFAULT_MMAP_CHUNK,
        .bo_advice = PAGEIO_ADV_NORMAL,
        .bo_verify = true,
        .bo_checksum = PAGE_CHECKSUM_HEAPSCAN,
        .bo_io_workers = BUFMGR_IO_WORKERS_AUTO,
        .bo_io_method = BUFMGR_IO_METHOD_AUTO,
        .bo_io_depth = BUFMGR_DEFAULT_IO_DEPTH,
        .bo_seg_blocks = RELFILE_SEG_BLOCKS,
    };
}

size_t bufmgr_ring_bytes(const BufMgrOptions *o)
{
    if (o->bo_ring_bytes != BUFMGR_RING_AUTO)
        return o->bo_ring_bytes;
    size_t ring = BUFMGR_DEFAULT_RING;
    if (o->bo_io_method == PAGEIO_URING) { /* room for the reads in flight */
        size_t grown = ring + (size_t)o->bo_io_depth * o->bo_io_combine_bytes;
        size_t half = o->bo_pool_bytes / 2 / BLCKSZ * BLCKSZ;
        ring = grown < half ? grown : half > ring ? half : ring;
    }
    return ring;
}

/* The I/O options' own rules; NULL when they hold. */
static const char *check_io_options(const BufMgrOptions *o)
{
    int m = o->bo_io_method;
    if (m < BUFMGR_IO_METHOD_AUTO || m > PAGEIO_URING)
        return "io-method must be sync, worker or io_uring";
    if (o->bo_io_workers < BUFMGR_IO_WORKERS_AUTO || o->bo_io_workers > 1)
        return "io-workers must be 0, 1 or auto";
    if ((o->bo_io_workers == 1 && m != BUFMGR_IO_METHOD_AUTO && m != PAGEIO_WORKER) ||
        (o->bo_io_workers == 0 && m == PAGEIO_WORKER))
        return "io-workers contradicts io-method (io-workers 1 is io-method worker, "
               "0 is sync)";
    if (o->bo_io_depth < 1 || o->bo_io_depth > PAGEIO_MAX_DEPTH)
        return "io-depth must be 1 to 256 reads in flight";
    if (o->bo_io_latency_us > PAGEIO_MAX_LATENCY_US)
        return "io-latency must be at most 1000000 us (1 s)";
    if (o->bo_access == BUF_ACCESS_MMAP &&
        (m == PAGEIO_URING || o->bo_direct || o->bo_io_latency_us > 0))
        return "io-method io_uring, direct and io-latency need read access (mmap "
               "issues no reads: its page faults do)";
    return NULL;
}

int bufmgr_check_options(const BufMgrOptions *o, const char *path, HsError *err)
{
    const char *bad = NULL;
    size_t ring = bufmgr_ring_bytes(o);
    if (o->bo_pool_bytes < 16 * BLCKSZ || o->bo_pool_bytes % BLCKSZ != 0 ||
        o->bo_pool_bytes / BLCKSZ > BUFMGR_MAX_FRAMES)
        bad = "the pool must be a whole number of pages, at least 16 and at most 8 TiB";
    else if (ring < BLCKSZ || ring % BLCKSZ != 0 || ring > o->bo_pool_bytes / 2)
        bad = "the ring must be a whole number of pages, at most half the pool";
    else if (o->bo_io_combine_bytes < BLCKSZ || o->bo_io_combine_bytes % BLCKSZ != 0 ||
             o->bo_io_combine_bytes > (size_t)PAGEIO_MAX_PAGES * BLCKSZ)
        bad = "io-combine must be a whole number of pages up to 1 MiB";
    else if ((bad = check_io_options(o)) != NULL)
        ;
    else if ((unsigned)o->bo_checksum > PAGE_CHECKSUM_NONE)
        bad = "the checksum must be heapscan, postgres or none";
    else if (o->bo_mmap_chunk_bytes % BLCKSZ != 0)
        bad = "the mmap chunk must be a whole number of pages";
    else if (o->bo_access == BUF_ACCESS_READ && o->bo_io_combine_bytes > ring &&
             o->bo_strategy != BUF_STRATEGY_NORMAL)
        bad = "io-combine must not exceed the ring";
    if (bad)
        return hs_error_set(err, HS_EUSAGE, path, HS_NO_BLOCK, "%s", bad);
    return 0;
}

/* ---- opening and closing ----------------------------------------------- */

/* Block 0 must at least look like a PostgreSQL page, or this is no heap table. */
static int check_heap_header(BufMgr *bm, HsError *err)
{
    _Alignas(8) unsigned char page[BLCKSZ];
    int rc = relfile_read(&bm->bm_rel, 0, 1, page, err);
    if (rc < 0)
        return rc;
    PageFault f;
    if (page_verify(page, 0, PAGE_CHECKSUM_NONE, &f) == PAGE_BAD_HEADER) {
        const PageHeaderData *h = page_header(page);
        if (h->pd_pagesize_version != PAGE_SIZE_VERSION)
            return hs_error_set(err, HS_ENOTHEAP, bm->bm_rel.rf_path, 0,
                                "not a heap table: no PostgreSQL page header "
                                "(pd_pagesize_version 0x%04x, expected 0x%04x)",
                                h->pd_pagesize_version, PAGE_SIZE_VERSION);
    }
    return 0;
}

int bufmgr_open(BufMgr **out, const char *path, const BufMgrOptions *o, HsError *err)
{
    int rc;
    *out = NULL;
    if ((rc = bufmgr_check_options(o, path, err)) < 0)
        return rc;
    BufMgr *bm = calloc(1, sizeof(*bm));
    if (bm == NULL)
        return hs_error_set(err, -ENOMEM, path, HS_NO_BLOCK, "out of memory");
    bm->bm_opt = *o;
    bm->bm_combine = (uint32_t)(o->bo_io_combine_bytes / BLCKSZ);
    bm->bm_am =
        o->bo_access == BUF_ACCESS_MMAP ? &bufmgr_map_methods : &bufmgr_pool_methods;
    if ((rc = relfile_open(&bm->bm_rel, path, o->bo_seg_blocks, err)) < 0) {
        free(bm);
        return rc;
    }
    if (relfile_nblocks(&bm->bm_rel) == 0)
        rc = hs_error_set(err, HS_ENOTHEAP, path, HS_NO_BLOCK,
                          "empty file: not a heap table (no pages)");
    else if ((rc = check_heap_header(bm, err)) == 0)
        rc = bm->bm_am->am_open(bm, err);
    if (rc < 0) {
        bufmgr_close(bm);
        return rc;
    }
    *out = bm;
    return 0;
}

void bufmgr_close(BufMgr *bm)
{
    if (bm == NULL)
        return;
    bm->bm_am->am_close(bm);
    relfile_close(&bm->bm_rel);
    read_stream_free_all(bm); /* streams a scan cut short left: memory only */
    if (bm->bm_shared) {
        pthread_cond_destroy(&bm->bm_pool.bp_io_done);
        pthread_mutex_destroy(&bm->bm_mutex);
    }
    free(bm);
}

/* ---- one page at a time ---------------------------------------------------- */

/* Bring in the run a read of blkno needs (a one-page run: no look-ahead
 * here, that is the read stream's) and hand its page out. */
int bufmgr_read(BufMgr *bm, uint64_t blkno, Buffer *buf, const void **page,
                HsError *err)
{
    BufRun run;
    int rc;
    bufmgr_check(bm);
    if (blkno >= relfile_nblocks(&bm->bm_rel))
        return hs_error_set(err, -EINVAL, bm->bm_rel.rf_path, (int64_t)blkno,
                            "block beyond the end of the relation (%llu pages)",
                            (unsigned long long)relfile_nblocks(&bm->bm_rel));
    if ((rc = bm->bm_am->am_start(bm, NULL, blkno, 1, blkno + 1, &run, err)) < 0)
        return rc;
    if (run.br_io) { /* in this thread: any thread may call this */
        rc = pageio_read(bm->bm_io, &run.br_req, err);
        bm->bm_am->am_complete(bm, &run, rc);
        if (rc < 0)
            return rc;
    }
    if ((rc = bm->bm_am->am_accept(bm, &run, 0, err)) < 0)
        return rc;
    *buf = run.br_buf[0];
    *page = run.br_page[0];
    return 0;
}

void bufmgr_release(BufMgr *bm, Buffer buf)
{
    bm->bm_am->am_release(bm, buf);
}

int bufmgr_recheck(BufMgr *bm, Buffer buf, const void *page, uint64_t blkno,
                   HsError *err)
{
    return bm->bm_am->am_recheck(bm, buf, page, blkno, err);
}

/* ---- what callers may ask -------------------------------------------------- */

uint64_t bufmgr_nblocks(const BufMgr *bm)
{
    return relfile_nblocks(&bm->bm_rel);
}

bool bufmgr_uses_ring(const BufMgr *bm)
{
    return bm->bm_opt.bo_access == BUF_ACCESS_READ && bm->bm_pool.bp_use_ring;
}

int bufmgr_set_shared(BufMgr *bm, HsError *err)
{
    if (bm->bm_opt.bo_access != BUF_ACCESS_READ)
        return hs_error_set(err, HS_EUSAGE, bm->bm_rel.rf_path, HS_NO_BLOCK,
                            "only read access shares a buffer manager between "
                            "threads: with mmap each worker maps its own windows");
    if (bm->bm_shared)
        return 0;
    if (pthread_mutex_init(&bm->bm_mutex, NULL) != 0)
        return hs_error_set(err, -EAGAIN, bm->bm_rel.rf_path, HS_NO_BLOCK,
                            "cannot set up a lock for a shared pool");
    if (pthread_cond_init(&bm->bm_pool.bp_io_done, NULL) != 0) {
        pthread_mutex_destroy(&bm->bm_mutex);
        return hs_error_set(err, -EAGAIN, bm->bm_rel.rf_path, HS_NO_BLOCK,
                            "cannot set up a condition variable for a shared pool");
    }
    bm->bm_shared = true;
    return 0;
}

int bufmgr_io_workers(const BufMgr *bm)
{
    return bm->bm_io != NULL && pageio_method(bm->bm_io) == PAGEIO_WORKER;
}

PageIOMethod bufmgr_io_method(const BufMgr *bm)
{
    return bm->bm_io != NULL ? pageio_method(bm->bm_io) : PAGEIO_SYNC;
}

uint32_t bufmgr_frames(const BufMgr *bm)
{
    return bm->bm_am->am_frames(bm);
}

const BufStats *bufmgr_stats(const BufMgr *bm)
{
    return &bm->bm_stats;
}

void bufmgr_stats_snapshot(BufMgr *bm, BufStats *out)
{
    bufmgr_lock(bm);
    *out = bm->bm_stats;
    bufmgr_unlock(bm);
}

const char *bufmgr_path(const BufMgr *bm)
{
    return bm->bm_rel.rf_path;
}

uint32_t bufmgr_pins_held(const BufMgr *bm)
{
    return bm->bm_am->am_pins_held(bm);
}

int bufmgr_block_of_address(const BufMgr *bm, const void *addr, uint64_t *blkno)
{
    return bm->bm_am->am_block_of_address(bm, addr, blkno);
}

/* ---- invariants ------------------------------------------------------------ */

void bufmgr_set_checking(BufMgr *bm, bool on)
{
    bm->bm_checking = on;
}

void bufmgr_check_state(const BufMgr *bm)
{
    BufMgr *locked = (BufMgr *)bm; /* the lock is not part of the state */
    bufmgr_lock(locked);
    bm->bm_am->am_check_state(bm);
    bufmgr_unlock(locked);
}

void bufmgr_check(const BufMgr *bm)
{
#ifndef NDEBUG
    if (bm->bm_checking)
        bufmgr_check_state(bm);
#else
    (void)bm;
#endif
}
