/*
 * compare.c -- the comparison (see compare.h).
 *
 * Entry points: compare_open, compare_start_postgres, compare_has_postgres,
 * compare_run, compare_write_text, compare_write_csv, compare_write_json,
 * compare_write_plot, compare_close, compare_kind_name.
 *
 * The rows are laid out once (add_*_rows), then run_row() runs one row
 * once with the cache prepared, keeping its Measure per cache state and
 * round; figures() turns those into the medians and ratio every report
 * prints.
 */
#include "compare.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32.h"
#include "extcmd.h"
#include "fiorun.h"
#include "json.h"
#include "pgpeer.h"
#include "rawio.h"
#include "scanrun.h"

#define NCACHE 2 /* the cache states, in the order they run: */
static const CacheMode caches[NCACHE] = {CACHE_COLD, CACHE_WARM};

const char *const compare_kind_names[] = {"c-reader", "command", "seqscan",
                                          "postgres", "fio",     NULL};

const char *compare_kind_name(CompareKind kind)
{
    return compare_kind_names[kind];
}

/* One way of reading the table, and what each of its runs cost. */
typedef struct Row {
    const char *cr_name;      /* as printed */
    CompareKind cr_kind;      /* what runs it */
    RawMethod cr_method;      /* COMPARE_RAW: the reader */
    size_t cr_block;          /* COMPARE_RAW: buffer or chunk; dd: bs */
    const char *cr_ext;       /* COMPARE_COMMAND: "wc", "wc -l" or "dd" */
    int cr_twin;              /* COMPARE_COMMAND: the C reader it must agree with */
    BufAccess cr_access;      /* COMPARE_SEQSCAN: page access */
    size_t cr_chunk;          /* COMPARE_SEQSCAN mmap: window bytes */
    bool cr_verify;           /* COMPARE_SEQSCAN: verify pages */
    int cr_io_method;         /* COMPARE_SEQSCAN: a PageIOMethod, or auto */
    bool cr_direct;           /* COMPARE_SEQSCAN: O_DIRECT */
    FioJob cr_fio;            /* COMPARE_FIO: the job */
    int cr_workers;           /* COMPARE_POSTGRES, COMPARE_SEQSCAN: parallel workers */
    Measure *cr_runs[NCACHE]; /* per cache state, one per round */
    RawResult cr_last;        /* COMPARE_RAW: what the last run counted */
} Row;

struct Compare {
    CompareOptions cp_opt; /* what to compare */
    uint64_t cp_bytes;     /* the table's size, every segment */
    uint64_t cp_pages;     /* ... in pages */
    PgPeer *cp_pg;         /* the PostgreSQL peer, once started */
    uint64_t cp_pg_count;  /* its count(*) */
    int64_t cp_pg_sum;     /* its sum(v) */
    Row *cp_rows;          /* every row, in the order they run */
    int cp_nrows;          /* ... how many */
    int cp_dd1m;           /* the row ratios are taken against */
    int cp_sync, cp_uring; /* seqscan read, cold, unverified, sync and io_uring */
    int cp_sync_direct, cp_uring_direct; /* ... with O_DIRECT */
    char cp_out[4096];                   /* a command's stdout */
    char cp_errout[4096];                /* ... and stderr */
};

/* ---- the rows --------------------------------------------------------- */

/* Append r with room for its runs; its index, or -ENOMEM. */
static int add_row(Compare *c, Row r)
{
    Row *rows = realloc(c->cp_rows, (size_t)(c->cp_nrows + 1) * sizeof(Row));
    if (rows == NULL)
        return -ENOMEM;
    c->cp_rows = rows;
    for (int k = 0; k < NCACHE; k++)
        r.cr_runs[k] = calloc((size_t)c->cp_opt.co_rounds, sizeof(Measure));
    if (r.cr_runs[0] == NULL || r.cr_runs[1] == NULL) {
        free(r.cr_runs[0]);
        free(r.cr_runs[1]);
        return -ENOMEM;
    }
    c->cp_rows[c->cp_nrows] = r;
    return c->cp_nrows++;
}

static const struct {
    const char *name, *dd;
    size_t bs;
} blocks[] = {{"read 512 (C)", "dd bs=512", 512},
              {"read 8k (C)", "dd bs=8k", 8 << 10},
              {"read 256k (C)", "dd bs=256k", 256 << 10},
              {"read 1M (C)", "dd bs=1M", 1 << 20}};
#define NBLOCKS (int)(sizeof(blocks) / sizeof(blocks[0]))

/* The C readers; twins[] gets the rows the commands must agree with:
 * wc, wc -l, then the read() loop of each block size. */
static int add_raw_rows(Compare *c, int twins[2 + NBLOCKS])
{
    static const struct {
        const char *name;
        RawMethod method;
        size_t block;
    } raw[] = {{"mmap 8k chunks (C)", RAW_MMAP, 8 << 10},
               {"mmap 8M chunks (C)", RAW_MMAP, 8 << 20},
               {"mmap 32M chunks (C)", RAW_MMAP, 32 << 20},
               {"O_DIRECT 1M (C)", RAW_DIRECT, 1 << 20}};
    int rc = twins[0] = add_row(c, (Row){.cr_name = "wc (C)", .cr_method = RAW_WC});
    if (rc >= 0)
        rc = twins[1] =
            add_row(c, (Row){.cr_name = "wc -l (C)", .cr_method = RAW_LINES});
    for (int i = 0; i < NBLOCKS && rc >= 0; i++)
        rc = twins[2 + i] = add_row(c, (Row){.cr_name = blocks[i].name,
                                             .cr_method = RAW_READ,
                                             .cr_block = blocks[i].bs});
    for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]) && rc >= 0; i++)
        rc = add_row(c, (Row){.cr_name = raw[i].name,
                              .cr_method = raw[i].method,
                              .cr_block = raw[i].block});
    return rc < 0 ? rc : 0;
}

/* wc, wc -l and dd at each block size, each with its C twin. */
static int add_command_rows(Compare *c, const int twins[2 + NBLOCKS])
{
    int rc = add_row(c, (Row){.cr_name = "wc",
                              .cr_kind = COMPARE_COMMAND,
                              .cr_ext = "wc",
                              .cr_twin = twins[0]});
    if (rc >= 0)
        rc = add_row(c, (Row){.cr_name = "wc -l",
                              .cr_kind = COMPARE_COMMAND,
                              .cr_ext = "wc -l",
                              .cr_twin = twins[1]});
    for (int i = 0; i < NBLOCKS && rc >= 0; i++) {
        rc = add_row(c, (Row){.cr_name = blocks[i].dd,
                              .cr_kind = COMPARE_COMMAND,
                              .cr_ext = "dd",
                              .cr_block = blocks[i].bs,
                              .cr_twin = twins[2 + i]});
        if (blocks[i].bs == 1 << 20)
            c->cp_dd1m = rc;
    }
    return rc < 0 ? rc : 0;
}

/* seqscan under read and mmap, verified and not, and its I/O methods. */
static const struct {
    const char *name;
    BufAccess access;
    size_t chunk;
    bool verify;
    int workers;
    int io_method; /* a PageIOMethod, or BUFMGR_IO_METHOD_AUTO */
    bool direct;
} scans[] = {
    {"seqscan read", BUF_ACCESS_READ, 0, true, 1, BUFMGR_IO_METHOD_AUTO, false},
    {"seqscan read --no-verify", BUF_ACCESS_READ, 0, false, 1, BUFMGR_IO_METHOD_AUTO,
     false},
    {"seqscan mmap 8k", BUF_ACCESS_MMAP, 8 << 10, true, 1, BUFMGR_IO_METHOD_AUTO,
     false},
    {"seqscan mmap 8k --no-verify", BUF_ACCESS_MMAP, 8 << 10, false, 1,
     BUFMGR_IO_METHOD_AUTO, false},
    {"seqscan mmap 8M", BUF_ACCESS_MMAP, 8 << 20, true, 1, BUFMGR_IO_METHOD_AUTO,
     false},
    {"seqscan mmap 8M --no-verify", BUF_ACCESS_MMAP, 8 << 20, false, 1,
     BUFMGR_IO_METHOD_AUTO, false},
    {"seqscan mmap 32M", BUF_ACCESS_MMAP, 32 << 20, true, 1, BUFMGR_IO_METHOD_AUTO,
     false},
    {"seqscan mmap 32M --no-verify", BUF_ACCESS_MMAP, 32 << 20, false, 1,
     BUFMGR_IO_METHOD_AUTO, false},
    {"seqscan read 2 workers", BUF_ACCESS_READ, 0, true, 2, BUFMGR_IO_METHOD_AUTO,
     false},
    {"seqscan read 2 workers --no-verify", BUF_ACCESS_READ, 0, false, 2,
     BUFMGR_IO_METHOD_AUTO, false},
    {"seqscan mmap 8M 2 workers", BUF_ACCESS_MMAP, 8 << 20, true, 2,
     BUFMGR_IO_METHOD_AUTO, false},
    {"seqscan mmap 8M 2 workers --no-verify", BUF_ACCESS_MMAP, 8 << 20, false, 2,
     BUFMGR_IO_METHOD_AUTO, false},
    {"seqscan io_uring", BUF_ACCESS_READ, 0, true, 1, PAGEIO_URING, false},
    {"seqscan sync --no-verify", BUF_ACCESS_READ, 0, false, 1, PAGEIO_SYNC, false},
    {"seqscan io_uring --no-verify", BUF_ACCESS_READ, 0, false, 1, PAGEIO_URING, false},
    {"seqscan sync --direct --no-verify", BUF_ACCESS_READ, 0, false, 1, PAGEIO_SYNC,
     true},
    {"seqscan io_uring --direct --no-verify", BUF_ACCESS_READ, 0, false, 1,
     PAGEIO_URING, true},
};
#define NSCANS    (int)(sizeof(scans) / sizeof(scans[0]))
#define SCAN_SYNC 13 /* the rows compare_claim_1998() weighs, in scans[] */

/* seqscan's rows; then PostgreSQL's. */
static int add_scan_rows(Compare *c)
{
    int rc = 0;
    bool uring = pageio_uring_available();
    for (int i = 0; i < NSCANS && rc >= 0; i++) {
        if (scans[i].io_method == PAGEIO_URING && !uring)
            continue; /* and the 1998 claim cannot be answered */
        rc = add_row(c, (Row){.cr_name = scans[i].name,
                              .cr_kind = COMPARE_SEQSCAN,
                              .cr_access = scans[i].access,
                              .cr_chunk = scans[i].chunk,
                              .cr_verify = scans[i].verify,
                              .cr_workers = scans[i].workers,
                              .cr_io_method = scans[i].io_method,
                              .cr_direct = scans[i].direct});
        int *claim[] = {&c->cp_sync, &c->cp_uring, &c->cp_sync_direct,
                        &c->cp_uring_direct};
        if (i >= SCAN_SYNC && i < SCAN_SYNC + 4)
            *claim[i - SCAN_SYNC] = rc;
    }
    if (rc >= 0 && c->cp_opt.co_bindir != NULL)
        rc = add_row(c, (Row){.cr_name = "PostgreSQL 15 serial",
                              .cr_kind = COMPARE_POSTGRES,
                              .cr_workers = 0});
    if (rc >= 0 && c->cp_opt.co_bindir != NULL)
        rc = add_row(c, (Row){.cr_name = "PostgreSQL 15 2 workers",
                              .cr_kind = COMPARE_POSTGRES,
                              .cr_workers = 2});
    return rc < 0 ? rc : 0;
}

/* fio reading what seqscan reads, 128 KiB at a time (io-combine): psync and
 * io_uring at seqscan's depth, buffered and direct -- when fio is here. */
static int add_fio_rows(Compare *c)
{
    static const struct {
        const char *name;
        FioJob job;
    } fio[] = {
        {"fio psync 128k", {"psync", 128 << 10, 1, false}},
        {"fio io_uring 128k qd16", {"io_uring", 128 << 10, 16, false}},
        {"fio psync 128k --direct", {"psync", 128 << 10, 1, true}},
        {"fio io_uring 128k qd16 --direct", {"io_uring", 128 << 10, 16, true}},
    };
    int rc = 0;
    if (!fio_available())
        return 0;
    for (size_t i = 0; i < sizeof(fio) / sizeof(fio[0]) && rc >= 0; i++)
        if (strcmp(fio[i].job.fj_engine, "io_uring") != 0 || pageio_uring_available())
            rc = add_row(c, (Row){.cr_name = fio[i].name,
                                  .cr_kind = COMPARE_FIO,
                                  .cr_fio = fio[i].job});
    return rc < 0 ? rc : 0;
}

int compare_open(Compare **out, const CompareOptions *o, HsError *err)
{
    int twins[2 + NBLOCKS];
    Compare *c = calloc(1, sizeof(*c));
    *out = NULL;
    if (c == NULL)
        return hs_error_set(err, -ENOMEM, o->co_path, HS_NO_BLOCK, "out of memory");
    c->cp_opt = *o;
    c->cp_dd1m = c->cp_sync = c->cp_uring = c->cp_sync_direct = c->cp_uring_direct = -1;
    int rc = file_total_bytes(o->co_path, &c->cp_bytes, err);
    c->cp_pages = c->cp_bytes / BLCKSZ;
    if (rc == 0 && (add_raw_rows(c, twins) < 0 || add_command_rows(c, twins) < 0 ||
                    add_fio_rows(c) < 0 || add_scan_rows(c) < 0))
        rc = hs_error_set(err, -ENOMEM, o->co_path, HS_NO_BLOCK, "out of memory");
    if (rc < 0) {
        compare_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* ---- running one row once --------------------------------------------- */

/* The command's output must say what its C twin counted. */
static int check_twin(const Compare *c, const Row *r, HsError *err)
{
    const RawResult *t = &c->cp_rows[r->cr_twin].cr_last;
    char want[160];
    const char *got = c->cp_out;
    if (strcmp(r->cr_ext, "wc") == 0)
        snprintf(want, sizeof(want), "%llu %llu %llu", (unsigned long long)t->rr_lines,
                 (unsigned long long)t->rr_words, (unsigned long long)t->rr_bytes);
    else if (strcmp(r->cr_ext, "wc -l") == 0)
        snprintf(want, sizeof(want), "%llu", (unsigned long long)t->rr_lines);
    else {
        snprintf(want, sizeof(want), "%llu+%llu records in",
                 (unsigned long long)t->rr_full, (unsigned long long)t->rr_partial);
        got = c->cp_errout;
    }
    /* wc pads its columns: compare with runs of blanks folded */
    char folded[512];
    size_t n = 0;
    for (const char *p = got; *p && *p != '\n' && n + 1 < sizeof(folded); p++)
        if (*p != ' ' || (n > 0 && folded[n - 1] != ' '))
            folded[n++] = *p;
    folded[n] = '\0';
    if (strncmp(folded + (folded[0] == ' '), want, strlen(want)) != 0)
        return hs_error_set(err, HS_ECORRUPT, c->cp_opt.co_path, HS_NO_BLOCK,
                            "%s says \"%s\" but %s counted \"%s\"", r->cr_name, folded,
                            c->cp_rows[r->cr_twin].cr_name, want);
    return 0;
}

/* Run the command of row r; the first time, check it against its twin. */
static int run_command(Compare *c, const Row *r, bool first, Measure *m, HsError *err)
{
    char arg_if[PATH_MAX + 8], arg_bs[32];
    char *argv[8];
    int n = 0;
    if (strcmp(r->cr_ext, "dd") == 0) {
        snprintf(arg_if, sizeof(arg_if), "if=%s", c->cp_opt.co_path);
        snprintf(arg_bs, sizeof(arg_bs), "bs=%zu", r->cr_block);
        argv[n++] = "dd", argv[n++] = arg_if, argv[n++] = "of=/dev/null";
        argv[n++] = arg_bs;
    } else {
        argv[n++] = "wc";
        if (strcmp(r->cr_ext, "wc -l") == 0)
            argv[n++] = "-l";
        argv[n++] = (char *)c->cp_opt.co_path;
    }
    argv[n] = NULL;
    int status = extcmd_run(argv, m, c->cp_out, sizeof(c->cp_out), c->cp_errout,
                            sizeof(c->cp_errout), err);
    if (status < 0)
        return status;
    if (status != 0)
        return hs_error_set(err, -EIO, c->cp_opt.co_path, HS_NO_BLOCK,
                            "%s exited with status %d: %s", r->cr_name, status,
                            c->cp_errout);
    return first ? check_twin(c, r, err) : 0;
}

static int run_scan(const Compare *c, const Row *r, Measure *m, HsError *err)
{
    ScanConfig cfg = {
        .sc_path = c->cp_opt.co_path, .sc_qual = QUAL_DEFAULT, .sc_cache = CACHE_ASIS};
    ScanResult res;
    bufmgr_default_options(&cfg.sc_bufopt);
    cfg.sc_bufopt.bo_access = r->cr_access;
    cfg.sc_bufopt.bo_mmap_chunk_bytes = r->cr_chunk;
    cfg.sc_bufopt.bo_verify = r->cr_verify;
    cfg.sc_bufopt.bo_io_method = r->cr_io_method;
    cfg.sc_bufopt.bo_direct = r->cr_direct;
    cfg.sc_workers = r->cr_workers;
    int rc = scan_run(&cfg, &res, err);
    *m = res.sr_m;
    return rc;
}

static int run_postgres(const Compare *c, const Row *r, Measure *m, HsError *err)
{
    uint64_t rows;
    memset(m, 0, sizeof(*m));
    int rc = pgpeer_time_query(c->cp_pg, r->cr_workers, &m->m_wall_s, &rows, NULL, err);
    if (rc == 0 && rows != 0)
        rc = hs_error_set(err, -EIO, c->cp_opt.co_path, HS_NO_BLOCK,
                          "PostgreSQL returned %llu rows for k = -1",
                          (unsigned long long)rows);
    return rc;
}

/* Prepare the cache as state k says, run row r once, keep its Measure. */
static int run_row(Compare *c, Row *r, int k, int round, HsError *err)
{
    int rc;
    if (r->cr_kind == COMPARE_POSTGRES)
        rc = caches[k] == CACHE_COLD ? pgpeer_evict(c->cp_pg, err)
                                     : pgpeer_warm(c->cp_pg, err);
    else
        rc = cache_prepare(c->cp_opt.co_path, caches[k], err);
    if (rc < 0)
        return rc;
    Measure *m = &r->cr_runs[k][round];
    MeasureStart ms;
    switch (r->cr_kind) {
    case COMPARE_RAW:
        measure_start(&ms);
        rc = raw_run(r->cr_method, c->cp_opt.co_path, r->cr_block, &r->cr_last, err);
        measure_stop(&ms, m);
        break;
    case COMPARE_COMMAND:
        rc = run_command(c, r, k == 0 && round == 0, m, err);
        break;
    case COMPARE_SEQSCAN:
        rc = run_scan(c, r, m, err);
        break;
    case COMPARE_POSTGRES:
        rc = run_postgres(c, r, m, err);
        break;
    case COMPARE_FIO:
        rc = fio_read(c->cp_opt.co_path, c->cp_bytes, &r->cr_fio, m, err);
        break;
    }
    return rc;
}

/* Whether r reads past the page cache (O_DIRECT). */
static bool row_is_direct(const Row *r)
{
    return r->cr_direct || (r->cr_kind == COMPARE_RAW && r->cr_method == RAW_DIRECT) ||
           (r->cr_kind == COMPARE_FIO && r->cr_fio.fj_direct);
}

/*
 * Every row, round by round, cold then warm.  In each cache state the rows
 * that read with O_DIRECT run after the others' rounds, among themselves:
 * a buffered cold read right after one was disturbed (compare's cold
 * "seqscan read" took 350-440 ms, most of it system time, right after fio's
 * direct rows, against 120-137 ms elsewhere in the order; no reclaim or
 * compaction showed in /proc/vmstat, and a second of sleep did not help).
 */
int compare_run(Compare *c, const volatile sig_atomic_t *stop, CompareProgress progress,
                void *arg, HsError *err)
{
    int rounds = c->cp_opt.co_rounds;
    for (int k = 0; k < NCACHE; k++)
        for (int direct = 0; direct < 2; direct++)
            for (int round = 0; round < rounds; round++)
                for (int i = 0; i < c->cp_nrows; i++) {
                    if (row_is_direct(&c->cp_rows[i]) != direct)
                        continue;
                    if (stop != NULL && *stop)
                        return hs_error_set(err, HS_EINTR, c->cp_opt.co_path,
                                            HS_NO_BLOCK, "interrupted");
                    if (progress != NULL)
                        progress(caches[k], round, rounds, i, c->cp_rows[i].cr_name,
                                 arg);
                    int rc = run_row(c, &c->cp_rows[i], k, round, err);
                    if (rc < 0)
                        return rc;
                }
    return 0;
}

/* ---- PostgreSQL ---------------------------------------------------------- */

int compare_start_postgres(Compare *c, HsError *err)
{
    const char *path = c->cp_opt.co_path;
    if (c->cp_opt.co_bindir == NULL)
        return 0;
    int rc = pgpeer_start(&c->cp_pg, c->cp_opt.co_bindir, path, err);
    if (rc < 0 ||
        (rc = pgpeer_count_sum(c->cp_pg, &c->cp_pg_count, &c->cp_pg_sum, err)) < 0)
        return rc;
    ScanConfig cfg = {
        .sc_path = path,
        .sc_cache = CACHE_ASIS,
        .sc_qual = {.q_col = QUAL_V, .q_op = QUAL_GE, .q_value = INT64_MIN}};
    ScanResult res;
    bufmgr_default_options(&cfg.sc_bufopt);
    if ((rc = scan_run(&cfg, &res, err)) < 0)
        return rc;
    char sum[48];
    if (res.sr_rows_returned != c->cp_pg_count || res.sr_sum_v != (ScanSum)c->cp_pg_sum)
        return hs_error_set(
            err, HS_ECORRUPT, path, HS_NO_BLOCK,
            "PostgreSQL counts %llu rows with sum(v) %lld, seqscan %llu "
            "with %s",
            (unsigned long long)c->cp_pg_count, (long long)c->cp_pg_sum,
            (unsigned long long)res.sr_rows_returned,
            scan_sum_format(res.sr_sum_v, sum, sizeof(sum)));
    return 0;
}

bool compare_has_postgres(const Compare *c)
{
    return c->cp_pg != NULL;
}

void compare_close(Compare *c)
{
    if (c == NULL)
        return;
    pgpeer_stop(c->cp_pg); /* the cluster goes, whatever happened */
    for (int i = 0; i < c->cp_nrows; i++)
        for (int k = 0; k < NCACHE; k++)
            free(c->cp_rows[i].cr_runs[k]);
    free(c->cp_rows);
    free(c);
}

/* ---- reporting ----------------------------------------------------------- */

/* A row's figures in one cache state. */
typedef struct Figures {
    double f_med, f_min, f_max; /* wall seconds over the rounds */
    double f_user, f_sys;       /* median CPU seconds */
    double f_mbs;               /* MB/s at the median */
    double f_ratio;             /* median over dd bs=1M's */
} Figures;

static Figures figures(const Compare *c, const Row *r, int k)
{
    Figures f;
    MeasureSpread s, dd;
    measure_summarize(r->cr_runs[k], c->cp_opt.co_rounds, &s);
    measure_summarize(c->cp_rows[c->cp_dd1m].cr_runs[k], c->cp_opt.co_rounds, &dd);
    f.f_med = s.mp_wall.sp_med;
    f.f_min = s.mp_wall.sp_min;
    f.f_max = s.mp_wall.sp_max;
    f.f_user = s.mp_user.sp_med;
    f.f_sys = s.mp_sys.sp_med;
    f.f_mbs = f.f_med > 0 ? (double)c->cp_bytes / 1e6 / f.f_med : 0;
    f.f_ratio = dd.mp_wall.sp_med > 0 ? f.f_med / dd.mp_wall.sp_med : 0;
    return f;
}

/* One cache state's table. */
static void text_cache(const Compare *c, FILE *f, int k)
{
    fprintf(f, "\n%s: %s\n", cache_mode_name(caches[k]),
            caches[k] == CACHE_COLD
                ? "evicted before each run (fdatasync + POSIX_FADV_DONTNEED)"
                : "read into the page cache before each run");
    fprintf(f, "%-38s %9s %9s %9s %8s %8s %8s %8s\n", "reader (times in ms)", "median",
            "min", "max", "user", "sys", "MB/s", "x dd 1M");
    for (int i = 0; i < c->cp_nrows; i++) {
        const Row *r = &c->cp_rows[i];
        Figures g = figures(c, r, k);
        if (r->cr_kind == COMPARE_POSTGRES)
            fprintf(f, "%-38s %9.1f %9.1f %9.1f %8s %8s %8.0f %8.2f\n", r->cr_name,
                    g.f_med * 1e3, g.f_min * 1e3, g.f_max * 1e3, "-", "-", g.f_mbs,
                    g.f_ratio);
        else
            fprintf(f, "%-38s %9.1f %9.1f %9.1f %8.1f %8.1f %8.0f %8.2f\n", r->cr_name,
                    g.f_med * 1e3, g.f_min * 1e3, g.f_max * 1e3, g.f_user * 1e3,
                    g.f_sys * 1e3, g.f_mbs, g.f_ratio);
    }
}

void compare_claim_1998(const Compare *c, char *buf, size_t len)
{
    if (c->cp_uring < 0 || c->cp_uring_direct < 0) {
        snprintf(buf, len,
                 "1998's \"async I/O won't help a sequential scan\" is not answered "
                 "here: io_uring is not available (no liburing in this build, or "
                 "the kernel refuses it).");
        return;
    }
    double sync = figures(c, &c->cp_rows[c->cp_sync], 0).f_med,
           uring = figures(c, &c->cp_rows[c->cp_uring], 0).f_med,
           dsync = figures(c, &c->cp_rows[c->cp_sync_direct], 0).f_med,
           during = figures(c, &c->cp_rows[c->cp_uring_direct], 0).f_med,
           dd = figures(c, &c->cp_rows[c->cp_dd1m], 0).f_med;
    double r = sync > 0 ? uring / sync : 0, dr = dsync > 0 ? during / dsync : 0;
    const char *verdict = r <= 0.9  ? "wrong: async I/O made it faster"
                          : r < 1.1 ? "still true: async I/O made no difference"
                                    : "true: async I/O made it slower";
    snprintf(buf, len,
             "1998's \"async I/O won't help a sequential scan\", here, cold: %s -- "
             "seqscan with io_uring took %.0f ms, reading in line %.0f ms (%.2fx the "
             "time; dd bs=1M %.0f ms), the kernel's read-ahead overlapping the disk "
             "for both; without read-ahead (O_DIRECT), io_uring's reads in flight took "
             "%.0f ms against %.0f ms in line (%.2fx).",
             verdict, uring * 1e3, sync * 1e3, r, dd * 1e3, during * 1e3, dsync * 1e3,
             dr);
}

/* The row named name, or NULL. */
static const Row *row_named(const Compare *c, const char *name)
{
    for (int i = 0; i < c->cp_nrows; i++)
        if (strcmp(c->cp_rows[i].cr_name, name) == 0)
            return &c->cp_rows[i];
    return NULL;
}

/* PostgreSQL's time over seqscan's, verified, serial and with 2 workers, in
 * cache state k (issue 12's ratios; 0 without PostgreSQL's rows). */
static const char *const pg_pairs[2][2] = {
    {"PostgreSQL 15 serial", "seqscan read"},
    {"PostgreSQL 15 2 workers", "seqscan read 2 workers"},
};

static double pg_ratio(const Compare *c, int pair, int k)
{
    const Row *pg = row_named(c, pg_pairs[pair][0]),
              *hs = row_named(c, pg_pairs[pair][1]);
    if (pg == NULL || hs == NULL)
        return 0;
    double h = figures(c, hs, k).f_med;
    return h > 0 ? figures(c, pg, k).f_med / h : 0;
}

void compare_write_text(const Compare *c, FILE *f)
{
    int rounds = c->cp_opt.co_rounds;
    fprintf(f,
            "heapscan comparison: %s, %llu bytes (%llu pages), %d round%s, each row "
            "interleaved with the others (O_DIRECT rows among themselves, after the "
            "rest); crc32 by %s\n",
            c->cp_opt.co_path, (unsigned long long)c->cp_bytes,
            (unsigned long long)c->cp_pages, rounds, rounds == 1 ? "" : "s",
            crc32_impl());
    if (c->cp_pg)
        fprintf(f,
                "PostgreSQL 15 scans the same bytes: count(*) %llu, sum(v) %lld "
                "(equal to seqscan's)\n",
                (unsigned long long)c->cp_pg_count, (long long)c->cp_pg_sum);
    for (int k = 0; k < NCACHE; k++)
        text_cache(c, f, k);
    if (pg_ratio(c, 0, 0) > 0) {
        fprintf(f, "\nPostgreSQL 15's time over seqscan's (both verifying pages):\n");
        for (int p = 0; p < 2; p++)
            fprintf(f, "  %-24s / %-23s cold %5.2fx  warm %5.2fx\n", pg_pairs[p][0],
                    pg_pairs[p][1], pg_ratio(c, p, 0), pg_ratio(c, p, 1));
    }
    fprintf(f, "\nuser and sys are the reader's own CPU time (wait4 for commands); "
               "PostgreSQL's is spent in its server processes and is not shown; fio's "
               "times are its own runtime (ms), without its start-up.\n");
    char claim[768];
    compare_claim_1998(c, claim, sizeof(claim));
    fprintf(f, "\n%s\n", claim);
}

/* *f = fopen(path, "w"): 0, or the error naming path. */
static int open_output(const char *path, FILE **f, HsError *err)
{
    if ((*f = fopen(path, "w")) == NULL)
        return hs_error_set(err, -errno, path, HS_NO_BLOCK, "%s", strerror(errno));
    return 0;
}

/* fclose(f), or the error of the writes it flushes. */
static int close_output(FILE *f, const char *path, HsError *err)
{
    if (fclose(f) != 0)
        return hs_error_set(err, -errno, path, HS_NO_BLOCK, "%s", strerror(errno));
    return 0;
}

int compare_write_csv(const Compare *c, const char *path, HsError *err)
{
    FILE *f;
    int rc = open_output(path, &f, err);
    if (rc < 0)
        return rc;
    fprintf(f, "cache,reader,kind,rounds,median_s,min_s,max_s,user_s,sys_s,mb_per_s,"
               "ratio_dd_1m\n");
    for (int k = 0; k < NCACHE; k++)
        for (int i = 0; i < c->cp_nrows; i++) {
            const Row *r = &c->cp_rows[i];
            Figures g = figures(c, r, k);
            fprintf(f, "%s,%s,%s,%d,%.6f,%.6f,%.6f,", cache_mode_name(caches[k]),
                    r->cr_name, compare_kind_name(r->cr_kind), c->cp_opt.co_rounds,
                    g.f_med, g.f_min, g.f_max);
            if (r->cr_kind == COMPARE_POSTGRES)
                fprintf(f, ",,");
            else
                fprintf(f, "%.6f,%.6f,", g.f_user, g.f_sys);
            fprintf(f, "%.1f,%.4f\n", g.f_mbs, g.f_ratio);
        }
    return close_output(f, path, err);
}

/* One row's object in the JSON "rows" array. */
static void json_row(const Compare *c, JsonWriter *j, const Row *r, int k)
{
    Figures g = figures(c, r, k);
    json_begin_object(j, NULL);
    json_string(j, "cache", cache_mode_name(caches[k]));
    json_string(j, "reader", r->cr_name);
    json_string(j, "kind", compare_kind_name(r->cr_kind));
    json_double(j, "median_s", g.f_med, 6);
    json_double(j, "min_s", g.f_min, 6);
    json_double(j, "max_s", g.f_max, 6);
    if (r->cr_kind == COMPARE_POSTGRES) {
        json_null(j, "user_s");
        json_null(j, "sys_s");
    } else {
        json_double(j, "user_s", g.f_user, 6);
        json_double(j, "sys_s", g.f_sys, 6);
    }
    json_double(j, "mb_per_s", g.f_mbs, 1);
    json_double(j, "ratio_dd_1m", g.f_ratio, 4);
    json_begin_array(j, "runs_s");
    for (int i = 0; i < c->cp_opt.co_rounds; i++)
        json_double(j, NULL, r->cr_runs[k][i].m_wall_s, 6);
    json_end(j);
    json_end(j);
}

int compare_write_json(const Compare *c, const char *path, HsError *err)
{
    JsonWriter j;
    FILE *f;
    int rc = open_output(path, &f, err);
    if (rc < 0)
        return rc;
    json_init(&j, f);
    json_begin_object(&j, NULL);
    json_string(&j, "table", c->cp_opt.co_path);
    json_uint(&j, "bytes", c->cp_bytes);
    json_uint(&j, "pages", c->cp_pages);
    json_int(&j, "rounds", c->cp_opt.co_rounds);
    json_string(&j, "crc", crc32_impl());
    char claim[768];
    compare_claim_1998(c, claim, sizeof(claim));
    json_string(&j, "claim_1998", claim);
    if (c->cp_pg) {
        json_begin_object(&j, "postgres");
        json_uint(&j, "count", c->cp_pg_count);
        json_int(&j, "sum_v", c->cp_pg_sum);
        for (int k = 0; k < NCACHE; k++) { /* its time over seqscan's */
            json_begin_object(&j, cache_mode_name(caches[k]));
            json_double(&j, "serial_over_seqscan", pg_ratio(c, 0, k), 3);
            json_double(&j, "2_workers_over_seqscan_2_workers", pg_ratio(c, 1, k), 3);
            json_end(&j);
        }
        json_end(&j);
    } else {
        json_null(&j, "postgres");
    }
    json_begin_array_lines(&j, "rows", 2);
    for (int k = 0; k < NCACHE; k++)
        for (int i = 0; i < c->cp_nrows; i++)
            json_row(c, &j, &c->cp_rows[i], k);
    json_end(&j);
    json_end(&j);
    fputc('\n', f);
    return close_output(f, path, err);
}

/* The plot's data: a line per row, its name and its cold and warm medians. */
static int plot_data(const Compare *c, char *data, HsError *err)
{
    int fd = mkstemp(data);
    if (fd < 0)
        return hs_error_set(err, -errno, data, HS_NO_BLOCK, "%s", strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        int e = errno;
        close(fd);
        unlink(data);
        return hs_error_set(err, -e, data, HS_NO_BLOCK, "%s", strerror(e));
    }
    for (int i = 0; i < c->cp_nrows; i++) {
        Figures cold = figures(c, &c->cp_rows[i], 0),
                warm = figures(c, &c->cp_rows[i], 1);
        fprintf(f, "\"%s\" %.3f %.3f\n", c->cp_rows[i].cr_name, cold.f_med * 1e3,
                warm.f_med * 1e3);
    }
    fclose(f);
    return 0;
}

int compare_write_plot(const Compare *c, const char *path, HsError *err)
{
    const char *dot = strrchr(path, '.');
    bool svg = dot && strcmp(dot, ".svg") == 0;
    char data[] = "/tmp/heapscan-plot-XXXXXX";
    int rc = plot_data(c, data, err);
    if (rc < 0)
        return rc;
    char script[PATH_MAX * 2 + 1024];
    snprintf(script, sizeof(script),
             "set terminal %s size 1400,700 font ',10'; set output '%s';"
             "set title 'Reading %s (%.0f MB): medians of %d round(s)';"
             "set ylabel 'wall time, ms (log scale)'; set logscale y; set grid ytics;"
             "set style data histograms; set style histogram clustered gap 1;"
             "set style fill solid 0.8 border -1; set boxwidth 0.9;"
             "set xtics rotate by -40 left nomirror; set key top left;"
             "set bmargin 12; set rmargin 14; set termoption noenhanced;"
             "plot '%s' using 2:xtic(1) title 'cold' lc rgb '#4477aa',"
             " '' using 3 title 'warm' lc rgb '#ee6677'",
             svg ? "svg" : "pngcairo", path, c->cp_opt.co_path,
             (double)c->cp_bytes / 1e6, c->cp_opt.co_rounds, data);
    char *argv[] = {"gnuplot", "-e", script, NULL};
    Measure m;
    char errout[2048];
    int status = extcmd_run(argv, &m, NULL, 0, errout, sizeof(errout), err);
    unlink(data);
    if (status < 0)
        return hs_error_set(err, status, path, HS_NO_BLOCK,
                            "cannot draw the chart: gnuplot is not installed "
                            "(apt-get install gnuplot-nox)");
    if (status != 0)
        return hs_error_set(err, -EIO, path, HS_NO_BLOCK, "gnuplot failed: %s", errout);
    return 0;
}
