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

int scan_run(const ScanConfig *cfg, ScanResult *res, HsError *err)
{
    int rc;
    memset(res, 0, sizeof(*res));
    if ((rc = cache_prepare(cfg->sc_path, cfg->sc_cache, err)) < 0 ||
        (rc = cache_resident(cfg->sc_path, &res->sr_resident_before, err)) < 0)
        return rc;

    MeasureStart ms;
    BufMgr *bm;
    measure_start(&ms);
    if ((rc = bufmgr_open(&bm, cfg->sc_path, &cfg->sc_bufopt, err)) < 0)
        return rc;
    rc = guarded_scan(cfg, bm, res, err);
    res->sr_pages = bufmgr_nblocks(bm);
    res->sr_bytes = res->sr_pages * BLCKSZ;
    res->sr_ring = bufmgr_uses_ring(bm);
    res->sr_io_workers = bufmgr_io_workers(bm);
    res->sr_buf = *bufmgr_stats(bm);
    bufmgr_close(bm);
    measure_stop(&ms, &res->sr_m);
    return rc;
}
