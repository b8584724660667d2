/*
 * iobench_matrix.c -- measured rows and the grid of the read() vs mmap()
 *                     benchmark (see iobench_matrix.h).
 *
 * Entry points: iob_measure_row, iob_matrix_file, iob_matrix_pages.
 */
#include "iobench_matrix.h"

#include <errno.h>

int iob_measure_row(IobRow *r, HsError *err)
{
    Measure m[IOB_MAX_RUNS];
    CacheMode mode = iob_cache_mode(r->rw_cache);
    int rc;
    if (r->rw_runs < 1 || r->rw_runs > IOB_MAX_RUNS)
        return hs_error_set(err, HS_EUSAGE, r->rw_cfg.ic_path, HS_NO_BLOCK,
                            "runs %u is not in 1..%d", r->rw_runs, IOB_MAX_RUNS);
    for (unsigned i = 0; i < r->rw_runs; i++) {
        if ((rc = cache_prepare(r->rw_cfg.ic_path, mode, err)) < 0 ||
            (rc = iob_run(&r->rw_cfg, &r->rw_res, err)) < 0)
            return rc;
        m[i] = r->rw_res.ir_m;
    }
    measure_summarize(m, (int)r->rw_runs, &r->rw_spread);
    if ((rc = file_total_bytes(r->rw_cfg.ic_path, &r->rw_file_bytes, err)) < 0)
        return rc;
    r->rw_has_crc = r->rw_cfg.ic_test != IOB_RND_PAGE;
    uint64_t len;
    return r->rw_has_crc ? iob_checksum(r->rw_cfg.ic_path, &r->rw_crc, &len, err) : 0;
}

/* Measure base's row as test under method at block on path, and hand it on. */
static int grid_row(const IobRow *base, IobRow *r, const char *path, IobTest test,
                    IobMethod method, size_t block, IobRowDone done, void *arg,
                    HsError *err)
{
    *r = *base;
    r->rw_cfg.ic_path = path;
    r->rw_cfg.ic_test = test;
    r->rw_cfg.ic_method = method;
    r->rw_cfg.ic_block = block;
    int rc = iob_measure_row(r, err);
    if (rc == 0 && done != NULL)
        done(r, arg);
    return rc;
}

int iob_matrix_file(const IobRow *base, const char *path, IobRowDone done, void *arg,
                    HsError *err)
{
    static const size_t blocks[] = {1024, 4096, 32};
    for (int t = IOB_SEQ_READ; t <= IOB_RND_RW; t++)
        for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
            IobRow r[2];
            for (int m = IOB_READ; m <= IOB_MMAP; m++) {
                int rc = grid_row(base, &r[m], path, (IobTest)t, (IobMethod)m,
                                  blocks[b], done, arg, err);
                if (rc < 0)
                    return rc;
            }
            if (t == IOB_RND_RW && r[0].rw_crc != r[1].rw_crc)
                return hs_error_set(err, -EIO, path, HS_NO_BLOCK,
                                    "rnd-rw left different bytes under read and mmap "
                                    "(crc32 0x%08x and 0x%08x)",
                                    r[0].rw_crc, r[1].rw_crc);
        }
    return 0;
}

int iob_matrix_pages(const IobRow *base, const char *table, IobRowDone done, void *arg,
                     HsError *err)
{
    for (int m = IOB_READ; m <= IOB_MMAP; m++) {
        IobRow r;
        int rc = grid_row(base, &r, table, IOB_RND_PAGE, (IobMethod)m,
                          base->rw_cfg.ic_block, done, arg, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}
