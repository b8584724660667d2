/*
 * scanrun.c -- one measured scan, with SIGBUS turned into an error
 *              (see scanrun.h).
 */
#include "scanrun.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include "seqscan.h"

/* The scan a SIGBUS may belong to; one at a time per process. */
static BufMgr *volatile guarded_bm;
static sigjmp_buf guard_env;
static volatile uint64_t bus_block;
static volatile sig_atomic_t bus_known;

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    uint64_t blk;
    BufMgr *bm = guarded_bm;
    if (bm != NULL && bufmgr_block_of_address(bm, si->si_addr, &blk) == 0) {
        bus_block = blk;
        bus_known = 1;
        siglongjmp(guard_env, 1);
    }
    if (bm != NULL) {
        bus_known = 0;
        siglongjmp(guard_env, 1);
    }
    /* not ours: die of it as we would have */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Runs the scan proper, under the SIGBUS guard. */
static int guarded_scan(const ScanConfig *cfg, BufMgr *bm, ScanResult *res,
                        HsError *err)
{
    struct sigaction sa = {.sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &old);
    guarded_bm = bm;

    static SeqScan ss; /* static: survives siglongjmp without clobbering */
    ScanSink sink = {0, 0};
    int rc;
    if (sigsetjmp(guard_env, 1) == 0) {
        if (cfg->sc_before_scan)
            cfg->sc_before_scan(bm, cfg->sc_arg);
        seqscan_begin(&ss, bm, &cfg->sc_qual, cfg->sc_skip_corrupt, cfg->sc_loop);
        rc = executor_run(&ss, &sink, cfg->sc_on_skip, cfg->sc_arg, err);
    } else if (bus_known) {
        rc = hs_error_set(err, -EFAULT, cfg->sc_path, (int64_t)bus_block,
                          "SIGBUS reading the mapped page: the file shrank under "
                          "the mapping");
    } else {
        rc = hs_error_set(err, -EFAULT, cfg->sc_path, HS_NO_BLOCK,
                          "SIGBUS outside any mapped window during the scan");
    }
    guarded_bm = NULL;
    sigaction(SIGBUS, &old, NULL);

    res->sr_rows_scanned = ss.ss_rows_scanned;
    res->sr_pages_skipped = ss.ss_pages_skipped;
    res->sr_loop = ss.ss_loop;
    res->sr_rows_returned = sink.sk_rows;
    res->sr_sum_v = sink.sk_sum_v;
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
