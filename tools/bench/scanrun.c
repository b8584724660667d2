/*
 * scanrun.c -- one measured scan, with SIGBUS turned into an error
 *              (see scanrun.h).
 *
 * Entry point: scan_run.  The scan proper runs under busguard_run(), which
 * names the block of a page that faulted (bufmgr_block_of_address()).
 */
#include "scanrun.h"

#include <string.h>

#include "busguard.h"
#include "readstream.h"
#include "seqscan.h"

/* What the guarded scan works on; outlives a SIGBUS that cuts it short. */
typedef struct GuardedScan {
    const ScanConfig *gs_cfg;
    BufMgr *gs_bm;
    SeqScan gs_ss;
    ScanSink gs_sink;
} GuardedScan;

static int scan_work(void *arg, HsError *err)
{
    GuardedScan *gs = arg;
    const ScanConfig *cfg = gs->gs_cfg;
    if (cfg->sc_before_scan)
        cfg->sc_before_scan(gs->gs_bm, cfg->sc_arg);
    seqscan_begin(&gs->gs_ss, gs->gs_bm, cfg->sc_xact, &cfg->sc_qual,
                  cfg->sc_skip_corrupt);
    return executor_run(&gs->gs_ss, &gs->gs_sink, cfg->sc_on_skip, cfg->sc_arg, err);
}

static bool scan_locate(const void *arg, const void *addr, uint64_t *blkno)
{
    return bufmgr_block_of_address(((const GuardedScan *)arg)->gs_bm, addr, blkno) == 0;
}

/* Runs the scan proper, with a SIGBUS under a mapping turned into an error. */
static int guarded_scan(const ScanConfig *cfg, BufMgr *bm, ScanResult *res,
                        HsError *err)
{
    GuardedScan gs = {.gs_cfg = cfg, .gs_bm = bm};
    BusGuard guard = {.bg_work = scan_work,
                      .bg_locate = scan_locate,
                      .bg_arg = &gs,
                      .bg_file = cfg->sc_path,
                      .bg_unit = BUSGUARD_BLOCK};
    int rc = busguard_run(&guard, err);

    res->sr_rows_scanned = gs.gs_ss.ss_rows_scanned;
    res->sr_pages_skipped = gs.gs_ss.ss_pages_skipped;
    res->sr_rows_returned = gs.gs_sink.sk_rows;
    res->sr_sum_v = gs.gs_sink.sk_sum_v;
    res->sr_nsum_v = gs.gs_sink.sk_nsum_v;
    return rc;
}

/* ---- a parallel scan ------------------------------------------------------ */

static bool worker_locate(const void *arg, const void *addr, uint64_t *blkno)
{
    return bufmgr_block_of_address(((const ScanWorker *)arg)->sw_bm, addr, blkno) == 0;
}

/* A parallel worker's scan under its own SIGBUS guard. */
static int guard_worker(ScanWorker *w, int (*work)(void *arg, HsError *err), void *arg,
                        HsError *err)
{
    BusGuard guard = {.bg_work = work,
                      .bg_locate = worker_locate,
                      .bg_arg = arg,
                      .bg_locate_arg = w, /* the worker's own windows */
                      .bg_file = bufmgr_path(w->sw_bm),
                      .bg_unit = BUSGUARD_BLOCK};
    return busguard_run(&guard, err);
}

/* Open the buffer managers of n workers: one shared (read), or one each. */
static int open_workers(const ScanConfig *cfg, BufMgr **bms, ScanWorker *w, int n,
                        HsError *err)
{
    BufMgrOptions o = cfg->sc_bufopt;
    bool own = o.bo_access == BUF_ACCESS_MMAP;
    o.bo_io_workers = 0; /* auto: the scan workers are the other CPUs' work */
    for (int i = 0; i < n; i++) {
        int rc;
        if (i == 0 || own) {
            if ((rc = bufmgr_open(&bms[i], cfg->sc_path, &o, err)) < 0)
                return rc;
            if (!own && (rc = bufmgr_set_shared(bms[i], err)) < 0)
                return rc;
        }
        w[i] = (ScanWorker){.sw_bm = own ? bms[i] : bms[0]};
    }
    return 0;
}

/* The counters of the workers' buffer managers, added up. */
static void sum_stats(BufMgr *const *bms, int n, BufStats *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < n && bms[i]; i++) {
        const BufStats *b = bufmgr_stats(bms[i]);
        out->bs_hits += b->bs_hits;
        out->bs_reads += b->bs_reads;
        out->bs_read_calls += b->bs_read_calls;
        out->bs_bytes_read += b->bs_bytes_read;
        out->bs_evictions += b->bs_evictions;
        out->bs_pages_verified += b->bs_pages_verified;
        out->bs_verify_failures += b->bs_verify_failures;
        out->bs_frames_used += b->bs_frames_used;
        out->bs_io_waits += b->bs_io_waits;
        out->bs_latency_waits += b->bs_latency_waits;
        out->bs_latency_late_ns += b->bs_latency_late_ns;
        if (b->bs_latency_late_max_ns > out->bs_latency_late_max_ns)
            out->bs_latency_late_max_ns = b->bs_latency_late_max_ns;
    }
}

/* The scan on cfg->sc_workers threads, from open to close. */
static int parallel_run(const ScanConfig *cfg, ScanResult *res, HsError *err)
{
    int n = cfg->sc_workers;
    BufMgr *bms[PARALLEL_MAX_WORKERS] = {0};
    ScanWorker w[PARALLEL_MAX_WORKERS];
    int rc = open_workers(cfg, bms, w, n, err);
    if (rc == 0) {
        ParallelScan ps;
        parallel_scan_init(&ps, bufmgr_nblocks(bms[0]), cfg->sc_stop);
        ParallelPlan pp = {.pp_scan = &ps,
                           .pp_workers = w,
                           .pp_nworkers = n,
                           .pp_xact = cfg->sc_xact,
                           .pp_qual = cfg->sc_qual,
                           .pp_skip_corrupt = cfg->sc_skip_corrupt,
                           .pp_on_skip = cfg->sc_on_skip,
                           .pp_arg = cfg->sc_arg,
                           .pp_guard = guard_worker};
        rc = executor_run_parallel(&pp, err);
        ScanSink sink;
        executor_sum_workers(w, n, &sink, &res->sr_rows_scanned,
                             &res->sr_pages_skipped);
        res->sr_rows_returned = sink.sk_rows;
        res->sr_sum_v = sink.sk_sum_v;
        res->sr_nsum_v = sink.sk_nsum_v;
        for (int i = 0; i < n; i++) {
            res->sr_worker_pages[i] = w[i].sw_pages;
            res->sr_worker_seconds[i] = w[i].sw_seconds;
        }
        res->sr_pages = bufmgr_nblocks(bms[0]);
        res->sr_ring = bufmgr_uses_ring(bms[0]);
        res->sr_io_method = bufmgr_io_method(bms[0]);
        res->sr_io_depth = read_stream_depth(bms[0], NULL);
    }
    res->sr_workers = n;
    sum_stats(bms, n, &res->sr_buf);
    for (int i = 0; i < n; i++)
        bufmgr_close(bms[i]);
    return rc;
}

/* ---- one scan --------------------------------------------------------------- */

/* The serial scan, from open to close. */
static int serial_run(const ScanConfig *cfg, ScanResult *res, HsError *err)
{
    BufMgr *bm;
    int rc = bufmgr_open(&bm, cfg->sc_path, &cfg->sc_bufopt, err);
    if (rc < 0)
        return rc;
    rc = guarded_scan(cfg, bm, res, err);
    res->sr_pages = bufmgr_nblocks(bm);
    res->sr_ring = bufmgr_uses_ring(bm);
    res->sr_io_workers = bufmgr_io_workers(bm);
    res->sr_io_method = bufmgr_io_method(bm);
    res->sr_io_depth = read_stream_depth(bm, NULL);
    res->sr_workers = 1;
    res->sr_worker_pages[0] = res->sr_pages - res->sr_pages_skipped;
    res->sr_buf = *bufmgr_stats(bm);
    bufmgr_close(bm);
    return rc;
}

int scan_run(const ScanConfig *cfg, ScanResult *res, HsError *err)
{
    int rc;
    memset(res, 0, sizeof(*res));
    const BufMgrOptions *o = &cfg->sc_bufopt;
    if (cfg->sc_workers > PARALLEL_MAX_WORKERS)
        return hs_error_set(err, HS_EUSAGE, cfg->sc_path, HS_NO_BLOCK,
                            "at most %d workers", PARALLEL_MAX_WORKERS);
    if (cfg->sc_workers > 1 &&
        (o->bo_io_workers == 1 || o->bo_io_method == PAGEIO_WORKER))
        return hs_error_set(err, HS_EUSAGE, cfg->sc_path, HS_NO_BLOCK,
                            "an I/O worker is for a serial scan: with %d workers "
                            "each reads its own pages (io-method sync or io_uring)",
                            cfg->sc_workers);
    if ((rc = cache_prepare(cfg->sc_path, cfg->sc_cache, err)) < 0 ||
        (rc = cache_resident(cfg->sc_path, &res->sr_resident_before, err)) < 0)
        return rc;
    MeasureStart ms;
    measure_start(&ms);
    rc = cfg->sc_workers > 1 ? parallel_run(cfg, res, err) : serial_run(cfg, res, err);
    measure_stop(&ms, &res->sr_m);
    res->sr_bytes = res->sr_pages * BLCKSZ;
    if (res->sr_workers == 1)
        res->sr_worker_seconds[0] = res->sr_m.m_wall_s;
    return rc;
}
