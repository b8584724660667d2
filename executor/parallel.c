/*
 * parallel.c -- the parallel sequential scan: block allocation and the
 *               worker threads (see parallel.h).
 */
#include "parallel.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

void parallel_scan_init(ParallelScan *ps, uint64_t nblocks,
                        volatile sig_atomic_t *stop_flag)
{
    uint64_t want = nblocks / PARALLEL_NCHUNKS, chunk = 1;
    while (chunk < want && chunk < PARALLEL_MAX_CHUNK)
        chunk <<= 1; /* the next power of two, at most the largest chunk */
    ps->ps_nblocks = nblocks;
    ps->ps_chunk = (uint32_t)chunk;
    ps->ps_stop_flag = stop_flag;
    atomic_init(&ps->ps_next, 0);
    atomic_init(&ps->ps_stop, false);
}

bool parallel_scan_stopped(ParallelScan *ps)
{
    if (ps->ps_stop_flag != NULL && *ps->ps_stop_flag)
        atomic_store_explicit(&ps->ps_stop, true, memory_order_relaxed);
    return atomic_load_explicit(&ps->ps_stop, memory_order_relaxed);
}

bool parallel_scan_claim(ParallelScan *ps, ParallelClaim *pc, uint64_t *start,
                         uint64_t *end)
{
    if (parallel_scan_stopped(ps))
        return false;
    if (pc->pc_chunk == 0)
        pc->pc_chunk = ps->ps_chunk;
    /* near the end, smaller chunks, so the workers finish together */
    if (pc->pc_chunk > 1 &&
        pc->pc_last + (uint64_t)pc->pc_chunk * PARALLEL_RAMPDOWN_CHUNKS >
            ps->ps_nblocks)
        pc->pc_chunk >>= 1;
    uint64_t first = atomic_fetch_add(&ps->ps_next, pc->pc_chunk);
    if (first >= ps->ps_nblocks)
        return false;
    *start = first;
    *end =
        first + pc->pc_chunk < ps->ps_nblocks ? first + pc->pc_chunk : ps->ps_nblocks;
    pc->pc_last = *end;
    return true;
}

/* ---- the workers ------------------------------------------------------------ */

/* A worker's thread: the plan, and which worker it is. */
typedef struct WorkerArg {
    const ParallelPlan *wa_plan;
    ScanWorker *wa_worker;
} WorkerArg;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The scan of one worker, in its thread: its own strategy (ring), its own
 * read streams over the ranges it claims, its own sink. */
static int worker_scan(void *arg, HsError *err)
{
    const WorkerArg *wa = arg;
    const ParallelPlan *pp = wa->wa_plan;
    ScanWorker *w = wa->wa_worker;
    BufAccessStrategy *st = bufmgr_strategy_new(w->sw_bm, err);
    if (st == NULL)
        return err->code;
    SeqScan ss;
    seqscan_begin_parallel(&ss, w->sw_bm, st, pp->pp_scan, pp->pp_xact, &pp->pp_qual,
                           pp->pp_skip_corrupt);
    int rc = executor_run(&ss, &w->sw_sink, pp->pp_on_skip, pp->pp_arg, err);
    if (rc == 0 && pp->pp_scan->ps_stop_flag && *pp->pp_scan->ps_stop_flag)
        rc = hs_error_set(err, HS_EINTR, bufmgr_path(w->sw_bm), HS_NO_BLOCK,
                          "interrupted");
    w->sw_rows_scanned = ss.ss_rows_scanned;
    w->sw_pages = ss.ss_pages_scanned;
    w->sw_pages_skipped = ss.ss_pages_skipped;
    bufmgr_strategy_free(st);
    return rc;
}

static void *worker_main(void *arg)
{
    const WorkerArg *wa = arg;
    const ParallelPlan *pp = wa->wa_plan;
    ScanWorker *w = wa->wa_worker;
    double t0 = now_s();
    hs_error_clear(&w->sw_err);
    w->sw_rc = pp->pp_guard ? pp->pp_guard(w, worker_scan, arg, &w->sw_err)
                            : worker_scan(arg, &w->sw_err);
    w->sw_seconds = now_s() - t0;
    if (w->sw_rc < 0)
        atomic_store(&pp->pp_scan->ps_stop, true); /* the others stop too */
    return NULL;
}

/* Start the threads; the ones that could not be started fail the plan. */
static int start_workers(const ParallelPlan *pp, pthread_t *tid, WorkerArg *wa,
                         bool *started, HsError *err)
{
    /* signals are for the caller's thread (Ctrl-C reaches the workers through
     * the stop flag); a SIGBUS a worker causes is still its own */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = 0;
    for (int i = 0; i < pp->pp_nworkers; i++) {
        wa[i] = (WorkerArg){pp, &pp->pp_workers[i]};
        memset(&pp->pp_workers[i].sw_sink, 0, sizeof(ScanSink));
        started[i] = pthread_create(&tid[i], NULL, worker_main, &wa[i]) == 0;
        if (!started[i] && rc == 0) {
            rc = hs_error_set(err, -EAGAIN, bufmgr_path(pp->pp_workers[i].sw_bm),
                              HS_NO_BLOCK, "cannot start scan worker %d", i);
            atomic_store(&pp->pp_scan->ps_stop, true);
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int executor_run_parallel(const ParallelPlan *pp, HsError *err)
{
    pthread_t tid[PARALLEL_MAX_WORKERS];
    WorkerArg wa[PARALLEL_MAX_WORKERS];
    bool started[PARALLEL_MAX_WORKERS];
    if (pp->pp_nworkers < 1 || pp->pp_nworkers > PARALLEL_MAX_WORKERS)
        return hs_error_set(err, HS_EUSAGE, NULL, HS_NO_BLOCK,
                            "a parallel scan has 1 to %d workers",
                            PARALLEL_MAX_WORKERS);
    int rc = start_workers(pp, tid, wa, started, err);
    for (int i = 0; i < pp->pp_nworkers; i++)
        if (started[i])
            pthread_join(tid[i], NULL);
    /* the first error, preferring a real one to another's "interrupted" */
    for (int pass = 0; pass < 2 && rc == 0; pass++)
        for (int i = 0; i < pp->pp_nworkers && rc == 0; i++) {
            const ScanWorker *w = &pp->pp_workers[i];
            if (w->sw_rc < 0 && (pass == 1 || w->sw_rc != HS_EINTR)) {
                rc = w->sw_rc;
                *err = w->sw_err;
            }
        }
    return rc;
}

void executor_sum_workers(const ScanWorker *w, int n, ScanSink *sink, uint64_t *scanned,
                          uint64_t *skipped)
{
    memset(sink, 0, sizeof(*sink));
    *scanned = *skipped = 0;
    for (int i = 0; i < n; i++) {
        sink->sk_rows += w[i].sw_sink.sk_rows;
        sink->sk_sum_v += w[i].sw_sink.sk_sum_v;
        sink->sk_nsum_v += w[i].sw_sink.sk_nsum_v;
        *scanned += w[i].sw_rows_scanned;
        *skipped += w[i].sw_pages_skipped;
    }
}
