/*
 * readstream.c -- a range of blocks, in order, with reads combined and
 *                 started ahead (see readstream.h).
 *
 * The stream keeps a queue of runs (buf_internals.h) covering consecutive
 * blocks: the one being handed out first, then the ones started ahead (up
 * to three with the I/O worker, up to io-depth with io_uring; the queue is
 * allocated for as many).  A run is pinned pages already there, or frames
 * whose read was submitted to the I/O method.  Reads are waited for oldest
 * first, the order the pages are handed out in; io_uring completes them in
 * any order meanwhile.  A run needed at once (nothing was started ahead of
 * it) is read now: no hand-over to pay for.
 */
#include "readstream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf_internals.h"

#define READ_STREAM_WORKER_RUNS                                                        \
    4 /* the I/O worker's queue: the run being                                         \
         handed out and up to 3 ahead */

struct ReadStream {
    BufMgr *rs_bm;                 /* where the pages come from */
    BufAccessStrategy *rs_st;      /* and how new pages go into its pool */
    PageIO *rs_io;                 /* how its runs are read (read access) */
    ReadStream *rs_next, *rs_prev; /* bm's list of streams */
    uint64_t rs_end;               /* blocks up to here */
    uint64_t rs_ahead;             /* the first block no run covers yet */
    unsigned rs_depth;             /* reads in flight ahead, at most */
    unsigned rs_cur;               /* ... for now (io_uring adapts it) */
    bool rs_adapt;                 /* io_uring: rs_cur follows the reads */
    unsigned rs_head, rs_nruns;    /* the queue of runs, in block order */
    unsigned rs_maxruns;           /* the queue's size */
    unsigned rs_inflight;          /* runs submitted and not waited for */
    BufRun rs_run[];               /* the queue */
};

static void fit_ring(ReadStream *rs);

/* The k-th run of the queue (0: the one being handed out). */
static BufRun *run_at(ReadStream *rs, unsigned k)
{
    return &rs->rs_run[(rs->rs_head + k) % rs->rs_maxruns];
}

/* The I/O method of st's reads: its own (a worker or an io_uring of a
 * thread sharing bm), else bm's. */
static PageIO *stream_io(const BufMgr *bm, const BufAccessStrategy *st)
{
    return st != NULL && st->st_io != NULL ? st->st_io : bm->bm_io;
}

/*
 * The I/O worker's depth: none where look-ahead would evict its own pages
 * before they are used (a ring under two runs; a pool under three, whose
 * clock sweep takes unused read-ahead pages first: their usage is 0).
 */
static unsigned worker_depth(const BufMgr *bm, const BufAccessStrategy *st,
                             unsigned want)
{
    if (st->st_ring != NULL ? st->st_ring_size < 2 * bm->bm_combine
                            : bm->bm_pool.bp_nframes < 3 * bm->bm_combine)
        return 0;
    return want < READ_STREAM_WORKER_RUNS - 1 ? want : READ_STREAM_WORKER_RUNS - 1;
}

/*
 * io_uring's depth: io-depth, or fewer when the frames would not hold the
 * runs in flight besides the one being handed out (a ring), and two more
 * (the whole pool, as above) -- else look-ahead evicts its own pages.  The
 * default ring grows to hold io-depth runs (BUFMGR_RING_AUTO), so only a
 * ring or a pool set smaller cuts the depth.
 */
static unsigned uring_depth(const BufMgr *bm, const BufAccessStrategy *st,
                            unsigned want)
{
    uint32_t frames = st->st_ring != NULL ? st->st_ring_size : bm->bm_pool.bp_nframes;
    uint32_t spare = st->st_ring != NULL ? 1 : 2, runs = frames / bm->bm_combine;
    uint32_t fit = runs > spare ? runs - spare : 0;
    return want < fit ? want : fit;
}

unsigned read_stream_depth(const BufMgr *bm, const BufAccessStrategy *st)
{
    const PageIO *io = stream_io(bm, st);
    if (bm->bm_opt.bo_access != BUF_ACCESS_READ || io == NULL)
        return 0;
    st = st != NULL ? st : &bm->bm_pool.bp_own;
    unsigned want = pageio_max_in_flight(io);
    if (pageio_method(io) == PAGEIO_URING)
        return uring_depth(bm, st, want);
    return want <= 1 ? 0 : worker_depth(bm, st, want);
}

/* Runs the queue of a stream of [start, end) holds: the I/O worker's fixed
 * four; for io_uring the one being handed out and depth ahead, but no more
 * than about cover the range (a parallel scan's ranges may be a few pages
 * each, and a run takes 1.5 KiB). */
static unsigned queue_size(const BufMgr *bm, const PageIO *io, unsigned depth,
                           uint64_t start, uint64_t end)
{
    if (io == NULL || pageio_method(io) != PAGEIO_URING)
        return READ_STREAM_WORKER_RUNS;
    uint64_t cover =
        end > start ? (end - start + bm->bm_combine - 1) / bm->bm_combine : 0;
    return cover + 2 < depth + 2 ? (unsigned)cover + 2 : depth + 2;
}

ReadStream *read_stream_begin(BufMgr *bm, BufAccessStrategy *st, uint64_t start,
                              uint64_t end, HsError *err)
{
    uint64_t n = bufmgr_nblocks(bm);
    end = end < n ? end : n;
    PageIO *io = stream_io(bm, st);
    unsigned depth = read_stream_depth(bm, st);
    unsigned maxruns = queue_size(bm, io, depth, start, end);
    ReadStream *rs = malloc(sizeof(*rs) + maxruns * sizeof(BufRun));
    if (rs == NULL) {
        hs_error_set(err, -ENOMEM, bm->bm_rel.rf_path, HS_NO_BLOCK, "out of memory");
        return NULL;
    }
    rs->rs_bm = bm;
    rs->rs_st = st;
    rs->rs_io = io;
    rs->rs_end = end;
    rs->rs_ahead = start;
    rs->rs_depth = depth;
    rs->rs_maxruns = maxruns;
    rs->rs_adapt = depth > 0 && pageio_method(io) == PAGEIO_URING;
    rs->rs_cur = rs->rs_adapt ? 1 : depth;
    rs->rs_head = rs->rs_nruns = rs->rs_inflight = 0;
    if (rs->rs_adapt)
        fit_ring(rs);
    bufmgr_lock(bm);
    rs->rs_prev = NULL;
    if ((rs->rs_next = bm->bm_streams) != NULL)
        rs->rs_next->rs_prev = rs;
    bm->bm_streams = rs;
    bufmgr_unlock(bm);
    return rs;
}

void read_stream_free_all(BufMgr *bm)
{
    while (bm->bm_streams != NULL) {
        ReadStream *rs = bm->bm_streams;
        bm->bm_streams = rs->rs_next;
        free(rs);
    }
}

/*
 * io_uring: the ring's slots in use follow the depth -- room for the runs
 * in flight and the one handed out, never under the default ring -- so a
 * scan whose reads the page cache answers recycles 256 KiB that stay in
 * the CPU's cache, as sync does.
 */
static void fit_ring(ReadStream *rs)
{
    BufMgr *bm = rs->rs_bm;
    BufAccessStrategy *st = rs->rs_st != NULL ? rs->rs_st : &bm->bm_pool.bp_own;
    if (st->st_ring == NULL)
        return;
    uint32_t want = (rs->rs_cur + 1) * bm->bm_combine,
             base = BUFMGR_DEFAULT_RING / BLCKSZ;
    want = want > base ? want : base;
    bufmgr_lock(bm);
    st->st_ring_used = want < st->st_ring_size ? want : st->st_ring_size;
    st->st_ring_pos %= st->st_ring_used;
    bufmgr_unlock(bm);
}

/*
 * io_uring's depth follows its reads, as PostgreSQL's read stream distance
 * does: it doubles when the caller had to wait for a read (a disk, or the
 * simulated latency, is behind them) and drops by one when a read was
 * complete as its submit returned (the page cache had it: the kernel
 * copied it then, and pages copied further ahead only leave the CPU's
 * cache before they are used -- a 2.3 MiB ring instead of 256 KiB cost a
 * warm scan 15% here).
 */
static void adapt_depth(ReadStream *rs, const PageIORequest *r)
{
    unsigned cur = rs->rs_cur;
    if (r->pr_waited)
        cur = 2 * cur < rs->rs_depth ? 2 * cur : rs->rs_depth;
    else if (r->pr_inline && cur > 1)
        cur--;
    if (cur != rs->rs_cur) {
        rs->rs_cur = cur;
        fit_ring(rs);
    }
}

/* Append the run starting at rs_ahead to the queue.  ahead: submit its read
 * to the I/O method; else read it now, in this thread. */
static int start_run(ReadStream *rs, bool ahead, HsError *err)
{
    BufMgr *bm = rs->rs_bm;
    BufRun *run = run_at(rs, rs->rs_nruns);
    int rc = bm->bm_am->am_start(bm, rs->rs_st, rs->rs_ahead, bm->bm_combine,
                                 rs->rs_end, run, err);
    if (rc < 0)
        return rc;
    rs->rs_nruns++;
    rs->rs_ahead += run->br_npages;
    if (!run->br_io)
        return 0;
    if (ahead) {
        run->br_async = pageio_method(rs->rs_io) != PAGEIO_SYNC;
        pageio_submit(rs->rs_io, &run->br_req);
        rs->rs_inflight++;
        return 0;
    }
    rc = pageio_read(rs->rs_io, &run->br_req, err); /* not the ring's: no adapting */
    bm->bm_am->am_complete(bm, run, rc);
    if (rc < 0)
        run->br_next = run->br_npages; /* its pins are gone with it */
    return rc;
}

/* Start runs ahead of block b while the depth allows and fewer pages lie
 * ahead of it than a run (the worker) or the depth's runs (io_uring). */
static void look_ahead(ReadStream *rs, uint64_t b)
{
    uint64_t distance =
        (uint64_t)rs->rs_bm->bm_combine * (rs->rs_adapt ? rs->rs_cur : 1);
    while (rs->rs_inflight < rs->rs_cur && rs->rs_nruns < rs->rs_maxruns &&
           rs->rs_ahead < rs->rs_end && rs->rs_ahead - b <= distance) {
        HsError ignored; /* every frame pinned: no look-ahead for now */
        if (start_run(rs, true, &ignored) < 0)
            return;
    }
}

/* Wait for run, the oldest in flight, and complete it. */
static int finish_read(ReadStream *rs, BufRun *run, HsError *err)
{
    BufMgr *bm = rs->rs_bm;
    int rc = pageio_wait(rs->rs_io, &run->br_req, err);
    rs->rs_inflight--;
    if (rs->rs_adapt)
        adapt_depth(rs, &run->br_req);
    bm->bm_am->am_complete(bm, run, rc);
    if (rc < 0)
        run->br_next = run->br_npages;
    return rc;
}

/*
 * Start loading every cache line of the page the caller will want next.
 * A mapped page comes straight from the page cache in memory, a page kept
 * in the pool may have left the CPU caches, and one the I/O worker read is
 * in the other core's; the tuple loop alone keeps only a few lines in
 * flight (it waits on each line pointer's tuple in turn), and prefetching
 * the next page while this one is scanned hides that.  A page this thread
 * has just read is in its own caches already.  A prefetch never faults.
 */
static void prefetch_next(ReadStream *rs, const BufRun *run, uint32_t i)
{
    const unsigned char *p;
    if (run->br_io && !run->br_async)
        return;
    if (i + 1 < run->br_npages)
        p = run->br_page[i + 1];
    else if (rs->rs_nruns > 1 && !run_at(rs, 1)->br_req.pr_submitted)
        p = run_at(rs, 1)->br_page[0];
    else
        return;
    for (unsigned o = 0; o < BLCKSZ; o += 64)
        __builtin_prefetch(p + o);
}

/* Wait for every read in flight and unpin every page not handed out. */
static void drain(ReadStream *rs)
{
    BufMgr *bm = rs->rs_bm;
    for (unsigned k = 0; k < rs->rs_nruns; k++) {
        BufRun *run = run_at(rs, k);
        if (run->br_req.pr_submitted && finish_read(rs, run, NULL) < 0)
            continue;
        for (uint32_t j = run->br_next; j < run->br_npages; j++)
            bm->bm_am->am_release(bm, run->br_buf[j]);
        run->br_next = run->br_npages;
    }
    rs->rs_head = rs->rs_nruns = 0;
}

/* An error other than a damaged page ends the stream: nothing stays pinned
 * or in flight, and nothing more is handed out. */
static int stream_failed(ReadStream *rs, int rc)
{
    drain(rs);
    rs->rs_ahead = rs->rs_end;
    return rc;
}

int read_stream_next(ReadStream *rs, Buffer *buf, const void **page, uint64_t *blkno,
                     HsError *err)
{
    BufMgr *bm = rs->rs_bm;
    int rc;
    bufmgr_check(bm);
    while (rs->rs_nruns > 0 && run_at(rs, 0)->br_next == run_at(rs, 0)->br_npages) {
        rs->rs_head = (rs->rs_head + 1) % rs->rs_maxruns;
        rs->rs_nruns--;
    }
    if (rs->rs_nruns == 0) {
        if (rs->rs_ahead >= rs->rs_end)
            return 0;
        if ((rc = start_run(rs, false, err)) < 0)
            return rc == -ENOBUFS ? rc : stream_failed(rs, rc);
    }
    BufRun *run = run_at(rs, 0);
    uint32_t i = run->br_next;
    if (run->br_req.pr_submitted) {
        look_ahead(rs, run->br_blkno + i); /* queue the next first: no pause */
        if ((rc = finish_read(rs, run, err)) < 0)
            return stream_failed(rs, rc);
    }
    run->br_next++;
    if ((rc = bm->bm_am->am_accept(bm, run, i, err)) < 0)
        return rc; /* that page is dropped; the next call goes on after it */
    *buf = run->br_buf[i];
    *page = run->br_page[i];
    *blkno = run->br_blkno + i;
    look_ahead(rs, *blkno);
    prefetch_next(rs, run, i);
    return 1;
}

void read_stream_end(ReadStream *rs)
{
    if (rs == NULL)
        return;
    BufMgr *bm = rs->rs_bm;
    drain(rs);
    bufmgr_lock(bm);
    if (rs->rs_prev)
        rs->rs_prev->rs_next = rs->rs_next;
    else
        bm->bm_streams = rs->rs_next;
    if (rs->rs_next)
        rs->rs_next->rs_prev = rs->rs_prev;
    bufmgr_unlock(bm);
    free(rs);
}
