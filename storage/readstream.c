/*
 * readstream.c -- a range of blocks, in order, with reads combined and
 *                 started ahead (see readstream.h).
 *
 * The stream keeps a queue of runs (buf_internals.h) covering consecutive
 * blocks: the one being handed out first, then up to three started ahead.
 * A run is pinned pages already there, or frames whose read was submitted
 * to the I/O method.  Reads are waited for oldest first, which is the order
 * they were submitted in.  A run needed at once (nothing was started ahead
 * of it) is read in this thread: no hand-over to pay for.
 */
#include "readstream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf_internals.h"

#define READ_STREAM_MAX_RUNS 4 /* the run being handed out and up to 3 ahead */

struct ReadStream {
    BufMgr *rs_bm;                       /* where the pages come from */
    BufAccessStrategy *rs_st;            /* and how new pages go into its pool */
    ReadStream *rs_next, *rs_prev;       /* bm's list of streams */
    uint64_t rs_end;                     /* blocks up to here */
    uint64_t rs_ahead;                   /* the first block no run covers yet */
    unsigned rs_depth;                   /* reads in flight ahead, at most */
    unsigned rs_head, rs_nruns;          /* the queue of runs, in block order */
    unsigned rs_inflight;                /* runs submitted and not waited for */
    BufRun rs_run[READ_STREAM_MAX_RUNS]; /* the queue */
};

/* The k-th run of the queue (0: the one being handed out). */
static BufRun *run_at(ReadStream *rs, unsigned k)
{
    return &rs->rs_run[(rs->rs_head + k) % READ_STREAM_MAX_RUNS];
}

/* Reads that may be in flight ahead of the caller: none with an I/O method
 * that reads at submit, nor where look-ahead would evict its own pages
 * before they are used (a ring under two runs; a pool under three, whose
 * clock sweep takes unused read-ahead pages first: their usage is 0). */
static unsigned look_ahead_depth(const BufMgr *bm, const BufAccessStrategy *st)
{
    if (bm->bm_io == NULL || pageio_max_in_flight(bm->bm_io) <= 1)
        return 0;
    const BufPool *p = &bm->bm_pool;
    if (st->st_ring != NULL ? st->st_ring_size < 2 * bm->bm_combine
                            : p->bp_nframes < 3 * bm->bm_combine)
        return 0;
    unsigned d = pageio_max_in_flight(bm->bm_io);
    return d < READ_STREAM_MAX_RUNS - 1 ? d : READ_STREAM_MAX_RUNS - 1;
}

ReadStream *read_stream_begin(BufMgr *bm, BufAccessStrategy *st, uint64_t start,
                              uint64_t end, HsError *err)
{
    ReadStream *rs = malloc(sizeof(*rs));
    if (rs == NULL) {
        hs_error_set(err, -ENOMEM, bm->bm_rel.rf_path, HS_NO_BLOCK, "out of memory");
        return NULL;
    }
    uint64_t n = bufmgr_nblocks(bm);
    rs->rs_bm = bm;
    rs->rs_st = st;
    rs->rs_end = end < n ? end : n;
    rs->rs_ahead = start;
    rs->rs_depth = bm->bm_opt.bo_access == BUF_ACCESS_READ
                       ? look_ahead_depth(bm, st ? st : &bm->bm_pool.bp_own)
                       : 0;
    rs->rs_head = rs->rs_nruns = rs->rs_inflight = 0;
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
        run->br_async = pageio_method(bm->bm_io) != PAGEIO_SYNC;
        pageio_submit(bm->bm_io, &run->br_req);
        rs->rs_inflight++;
        return 0;
    }
    rc = pageio_read(bm->bm_io, &run->br_req, err);
    bm->bm_am->am_complete(bm, run, rc);
    if (rc < 0)
        run->br_next = run->br_npages; /* its pins are gone with it */
    return rc;
}

/* Start runs ahead of block b while fewer than a run's worth of pages lie
 * ahead of it and the depth allows. */
static void look_ahead(ReadStream *rs, uint64_t b)
{
    while (rs->rs_inflight < rs->rs_depth && rs->rs_nruns < READ_STREAM_MAX_RUNS &&
           rs->rs_ahead < rs->rs_end && rs->rs_ahead - b <= rs->rs_bm->bm_combine) {
        HsError ignored; /* every frame pinned: no look-ahead for now */
        if (start_run(rs, true, &ignored) < 0)
            return;
    }
}

/* Wait for run, the oldest in flight, and complete it. */
static int finish_read(ReadStream *rs, BufRun *run, HsError *err)
{
    BufMgr *bm = rs->rs_bm;
    int rc = pageio_wait(bm->bm_io, &run->br_req, err);
    rs->rs_inflight--;
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
        rs->rs_head = (rs->rs_head + 1) % READ_STREAM_MAX_RUNS;
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
