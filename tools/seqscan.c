/*
 * seqscan -- a full sequential scan of a heap table through the buffer
 *            manager, every page verified, timed: SELECT count(*), sum(v)
 *            FROM t WHERE <qual>, by default k = -1.
 *
 * main() parses the command line, opens a stopped cluster for --pgdata,
 * runs the scan --repeat times (scan_run(), bench/scanrun.c) and prints
 * the report (bench/scanreport.c).  Option values are only parsed here:
 * the buffer manager checks their ranges and its HS_EUSAGE error exits 2.
 * "seqscan --compare ..." runs the compare program beside this one.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "extcmd.h"
#include "pgcatalog.h"
#include "scanreport.h"
#include "scanrun.h"

/* The command line. */
typedef struct Options {
    ScanConfig cfg;     /* the scan: access, qual, cache, ... */
    PgRelation rel;     /* --pgdata: the relation, located and checked */
    int repeat;         /* --repeat: runs */
    bool json;          /* --json */
    bool checksum_set;  /* --checksum given: it overrides the cluster's setting */
    const char *pgdata; /* --pgdata DIR, or NULL */
    const char *path;   /* the table's first segment file, as given */
} Options;

static void usage(void)
{
    printf(
        "Usage: %s [options] TABLE\n"
        "       %s [options] --pgdata DIR RELFILE\n"
        "Scan every page of a heap table of t (id int4, k int4, v int8, pad text),\n"
        "written by mkheap or by PostgreSQL 15, evaluate a qual on every visible row,\n"
        "and report count(*), sum(v) and what the scan cost.\n"
        "\n"
        "A file PostgreSQL wrote gives PostgreSQL's answer or a refusal, never a\n"
        "guess: a tuple whose visibility its hint bits do not decide (not frozen,\n"
        "not yet read by the server since it was written) or that is not a row of t\n"
        "stops the scan with status 1, naming the block and item.  --pgdata reads\n"
        "the stopped cluster's pg_xact and pg_multixact instead, and its catalog.\n"
        "\n",
        cli_progname, cli_progname);
    printf(
        "Page access:\n"
        "      --access read|mmap    read: pread into a pool of frames (default);\n"
        "                            mmap: pages are pointers into mapped windows\n"
        "      --buffers SIZE        read: pool size (default 128MiB)\n"
        "      --strategy ring|normal  read: recycle a small ring, or use the whole "
        "pool\n"
        "                            (default: ring when the table is over a quarter "
        "of\n"
        "                            the pool)\n"
        "      --ring SIZE           read: ring size (default 256KiB; with io_uring\n"
        "                            plus io-depth x io-combine, as PostgreSQL 18)\n"
        "      --io-combine SIZE     read: most bytes one preadv reads (default "
        "128KiB;\n"
        "                            8k means one page a call)\n"
        "      --io-method sync|worker|io_uring  read: how reads are done "
        "(PostgreSQL\n"
        "                            18's names): sync in line, worker on an I/O\n"
        "                            worker thread ahead of the scan, io_uring with\n"
        "                            --io-depth reads in flight (default: sync)\n"
        "      --io-workers 0|1|auto read: the older spelling: 0 is --io-method sync,\n"
        "                            1 is worker, auto (default) is sync\n"
        "      --io-depth N          read, io_uring: combined reads in flight "
        "(default\n"
        "                            16, as effective_io_concurrency; fewer if the\n"
        "                            ring or pool cannot hold them)\n"
        "      --direct              read: O_DIRECT, bypassing the page cache (an "
        "error\n"
        "                            where the file system refuses it)\n"
        "      --io-latency USEC     read: a simulation for benchmarks: every read\n"
        "                            request completes no sooner than USEC after it\n"
        "                            was submitted, as on a device with that "
        "latency\n"
        "      --mmap-chunk SIZE|whole  mmap: window size (default 8M)\n"
        "      --madvise normal|sequential|willneed|populate  mmap: advice per "
        "window\n");
    printf(
        "Verification and PostgreSQL files:\n"
        "      --no-verify           do not verify pages (measure the I/O path alone)\n"
        "      --checksum heapscan|postgres|none  the page checksum to verify:\n"
        "                            heapscan's (default), PostgreSQL's data checksum\n"
        "                            (initdb -k), or none (headers and line pointers\n"
        "                            only); with --pgdata, the cluster's setting\n"
        "      --ignore-checksum-failure  warn about a damaged page, skip it, go on\n"
        "      --pgdata DIR          RELFILE is a relation file of the stopped\n"
        "                            PostgreSQL 15 cluster DIR (as\n"
        "                            pg_relation_filepath() prints it, or any path):\n"
        "                            visibility from its pg_xact, t's schema from its\n"
        "                            catalog, checksums as its pg_control says\n"
        "Query and measurement:\n"
        "      --where \"COL OP INT\"  COL id, k or v; OP = != <> < <= > >= (default k "
        "= -1);\n"
        "                            a NULL never matches\n"
        "      --cache cold|warm|asis  before each run evict the table from the page "
        "cache\n"
        "                            (cold), read it in (warm, default), or leave it\n"
        "      --workers N|auto      threads scanning together, as PostgreSQL's "
        "parallel\n"
        "                            seq scan (default 1; auto: the CPUs allowed)\n"
        "      --repeat N            runs (default 1); report each and min/median/max\n"
        "      --json                one JSON object instead of the text report\n"
        "      --compare [TABLE]     the comparison with raw readers and PostgreSQL:\n"
        "                            runs the compare program (see compare --help)\n"
        "      --segment-size SIZE   pages per segment file (default 1GiB; for tests)\n"
        "  -h, --help                show this help and exit\n"
        "  -V, --version             show the version and exit\n"
        "\n"
        "SIZE takes k, M, G suffixes (powers of 1024). sum(v) is exact (128-bit) and\n"
        "NULL when no matching row has a non-null v, as in SQL. Exit status: 0 ok,\n"
        "1 error or refusal (I/O, missing file, not a heap table, a tuple whose\n"
        "visibility is unknown or that is not a row of t, a running cluster), 2 "
        "usage,\n"
        "3 a page failed verification.\n");
}

/* A size option's value, in bytes; whether it fits is the buffer manager's call. */
static size_t size_arg(const char *opt, const char *arg)
{
    uint64_t v;
    if (cli_parse_size(arg, &v) < 0 || v > SIZE_MAX)
        cli_usage_error("%s: '%s' is not a size", opt, arg);
    return (size_t)v;
}

/* --io-workers: auto or a number (how many the buffer manager allows is its call). */
static int workers_arg(const char *arg)
{
    uint64_t v;
    if (strcmp(arg, "auto") == 0)
        return BUFMGR_IO_WORKERS_AUTO;
    if (cli_parse_u64(arg, 0, INT32_MAX, &v) < 0)
        cli_usage_error("--io-workers: '%s' is not a number or auto", arg);
    return (int)v;
}

/* --mmap-chunk: a window size, or whole; the buffer manager's 0 for whole is
 * spelled out, so a 0 here is a mistake. */
static size_t chunk_arg(const char *arg)
{
    if (strcmp(arg, "whole") == 0)
        return 0;
    size_t v = size_arg("--mmap-chunk", arg);
    if (v == 0)
        cli_usage_error("--mmap-chunk: '%s' is not a window size (or whole)", arg);
    return v;
}

/* --segment-size: bytes given, pages kept, so whole pages up to 1 GiB. */
static uint32_t segment_arg(const char *arg)
{
    uint64_t v;
    if (cli_parse_size(arg, &v) < 0 || v == 0 || v % BLCKSZ != 0)
        cli_usage_error("--segment-size: '%s' is not a whole number of 8 KiB pages",
                        arg);
    if (v / BLCKSZ > RELFILE_SEG_BLOCKS)
        cli_usage_error("--segment-size: at most 1GiB");
    return (uint32_t)(v / BLCKSZ);
}

/* --workers: N, or auto (the CPUs this process may use). */
static int scan_workers_arg(const char *arg)
{
    uint64_t v;
    if (strcmp(arg, "auto") == 0) {
        cpu_set_t cpus;
        int n = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
        return n < PARALLEL_MAX_WORKERS ? n : PARALLEL_MAX_WORKERS;
    }
    if (cli_parse_u64(arg, 1, PARALLEL_MAX_WORKERS, &v) < 0)
        cli_usage_error("--workers: '%s' is not a count in 1..%d or auto", arg,
                        PARALLEL_MAX_WORKERS);
    return (int)v;
}

static void on_skip(const HsError *err, void *arg)
{
    (void)arg;
    char line[PATH_MAX + 512];
    fprintf(stderr, "%s: warning: %s; page skipped\n", cli_progname,
            hs_error_format(err, line, sizeof(line)));
}

enum {
    OPT_ACCESS = 256,
    OPT_BUFFERS,
    OPT_STRATEGY,
    OPT_RING,
    OPT_IO_COMBINE,
    OPT_MMAP_CHUNK,
    OPT_MADVISE,
    OPT_NO_VERIFY,
    OPT_IGNORE,
    OPT_WHERE,
    OPT_CACHE,
    OPT_REPEAT,
    OPT_JSON,
    OPT_SEGMENT_SIZE,
    OPT_IO_WORKERS,
    OPT_CHECKSUM,
    OPT_PGDATA,
    OPT_WORKERS,
    OPT_IO_METHOD,
    OPT_IO_DEPTH,
    OPT_DIRECT,
    OPT_IO_LATENCY,
};

/* A count option's value (its range is the buffer manager's call). */
static unsigned count_arg(const char *opt, const char *arg)
{
    uint64_t v;
    if (cli_parse_u64(arg, 0, UINT32_MAX, &v) < 0)
        cli_usage_error("%s: '%s' is not a number", opt, arg);
    return (unsigned)v;
}

/* The options of the I/O method, into bo. */
static void parse_io_option(BufMgrOptions *bo, int c, const char *arg)
{
    switch (c) {
    case OPT_IO_WORKERS:
        bo->bo_io_workers = workers_arg(arg);
        break;
    case OPT_IO_METHOD:
        bo->bo_io_method = cli_choice("--io-method", arg, pageio_method_names);
        break;
    case OPT_IO_DEPTH:
        bo->bo_io_depth = count_arg("--io-depth", arg);
        break;
    case OPT_DIRECT:
        bo->bo_direct = true;
        break;
    case OPT_IO_LATENCY:
        bo->bo_io_latency_us = count_arg("--io-latency", arg);
        break;
    }
}

/* The options that shape the buffer manager, into o->cfg.sc_bufopt. */
static void parse_buffer_option(Options *o, int c, const char *arg)
{
    BufMgrOptions *bo = &o->cfg.sc_bufopt;
    switch (c) {
    case OPT_ACCESS:
        bo->bo_access = (BufAccess)cli_choice("--access", arg, bufmgr_access_names);
        break;
    case OPT_BUFFERS:
        bo->bo_pool_bytes = size_arg("--buffers", arg);
        break;
    case OPT_STRATEGY:
        bo->bo_strategy =
            (BufStrategy)cli_choice("--strategy", arg, bufmgr_strategy_names);
        break;
    case OPT_RING:
        bo->bo_ring_bytes = size_arg("--ring", arg);
        break;
    case OPT_IO_COMBINE:
        bo->bo_io_combine_bytes = size_arg("--io-combine", arg);
        break;
    case OPT_MMAP_CHUNK:
        bo->bo_mmap_chunk_bytes = chunk_arg(arg);
        break;
    case OPT_MADVISE:
        bo->bo_advice = (PageIOAdvice)cli_choice("--madvise", arg, pageio_advice_names);
        break;
    case OPT_NO_VERIFY:
        bo->bo_verify = false;
        break;
    case OPT_CHECKSUM:
        bo->bo_checksum =
            (PageChecksum)cli_choice("--checksum", arg, page_checksum_names);
        o->checksum_set = true;
        break;
    case OPT_SEGMENT_SIZE:
        bo->bo_seg_blocks = segment_arg(arg);
        break;
    default:
        parse_io_option(bo, c, arg);
    }
}

/* The options of the query and the measurement, into o. */
static void parse_scan_option(Options *o, int c, const char *arg)
{
    char why[256];
    uint64_t v;
    switch (c) {
    case OPT_IGNORE:
        o->cfg.sc_skip_corrupt = true;
        break;
    case OPT_WHERE:
        if (qual_parse(arg, &o->cfg.sc_qual, why, sizeof(why)) < 0)
            cli_usage_error("--where: %s", why);
        break;
    case OPT_PGDATA:
        o->pgdata = arg;
        break;
    case OPT_CACHE:
        o->cfg.sc_cache = (CacheMode)cli_choice("--cache", arg, cache_mode_names);
        break;
    case OPT_REPEAT:
        if (cli_parse_u64(arg, 1, 1000, &v) < 0)
            cli_usage_error("--repeat: '%s' is not a count in 1..1000", arg);
        o->repeat = (int)v;
        break;
    case OPT_JSON:
        o->json = true;
        break;
    case OPT_WORKERS:
        o->cfg.sc_workers = scan_workers_arg(arg);
        break;
    default:
        parse_buffer_option(o, c, arg);
    }
}

/* Parse argv into o (defaults first); usage errors exit with status 2. */
static void parse_args(int argc, char **argv, Options *o)
{
    static const struct option longopts[] = {
        {"access", required_argument, NULL, OPT_ACCESS},
        {"buffers", required_argument, NULL, OPT_BUFFERS},
        {"strategy", required_argument, NULL, OPT_STRATEGY},
        {"ring", required_argument, NULL, OPT_RING},
        {"io-combine", required_argument, NULL, OPT_IO_COMBINE},
        {"io-workers", required_argument, NULL, OPT_IO_WORKERS},
        {"io-method", required_argument, NULL, OPT_IO_METHOD},
        {"io-depth", required_argument, NULL, OPT_IO_DEPTH},
        {"direct", no_argument, NULL, OPT_DIRECT},
        {"io-latency", required_argument, NULL, OPT_IO_LATENCY},
        {"mmap-chunk", required_argument, NULL, OPT_MMAP_CHUNK},
        {"madvise", required_argument, NULL, OPT_MADVISE},
        {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
        {"ignore-checksum-failure", no_argument, NULL, OPT_IGNORE},
        {"where", required_argument, NULL, OPT_WHERE},
        {"checksum", required_argument, NULL, OPT_CHECKSUM},
        {"pgdata", required_argument, NULL, OPT_PGDATA},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"cache", required_argument, NULL, OPT_CACHE},
        {"repeat", required_argument, NULL, OPT_REPEAT},
        {"json", no_argument, NULL, OPT_JSON},
        {"segment-size", required_argument, NULL, OPT_SEGMENT_SIZE},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;
    memset(o, 0, sizeof(*o));
    bufmgr_default_options(&o->cfg.sc_bufopt);
    o->cfg.sc_qual = QUAL_DEFAULT;
    o->cfg.sc_cache = CACHE_WARM;
    o->cfg.sc_on_skip = on_skip;
    o->cfg.sc_stop = &cli_stop_signal;
    o->repeat = 1;
    while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
        if (c < OPT_ACCESS) /* -h, -V, or not an option of ours */
            cli_common_option(c, usage);
        parse_scan_option(o, c, optarg);
    }
    o->path = o->cfg.sc_path =
        cli_one_operand(argc, argv, o->pgdata ? "RELFILE" : "TABLE");
}

/*
 * --pgdata: open the stopped cluster, find RELFILE in it, take its checksum
 * setting (unless --checksum said otherwise) and check in its catalog that
 * the relation is a table of t.  Exits with the cluster's refusal.
 */
static PgXact *open_cluster(Options *o)
{
    HsError err;
    PgXact *px;
    BufMgrOptions *bo = &o->cfg.sc_bufopt;
    hs_error_clear(&err);
    if (pgxact_open(&px, o->pgdata, &err) < 0)
        exit(cli_report(&err));
    if (!o->checksum_set)
        bo->bo_checksum = pgxact_control(px)->pc_data_checksum_version != 0
                              ? PAGE_CHECKSUM_POSTGRES
                              : PAGE_CHECKSUM_NONE;
    if (pgcatalog_locate(px, o->path, &o->rel, &err) < 0 ||
        pgcatalog_check_schema(px, &o->rel, bo->bo_checksum, &err) < 0) {
        pgxact_close(px);
        exit(cli_report(&err));
    }
    o->cfg.sc_path = o->rel.pr_path;
    o->cfg.sc_xact = px;
    return px;
}

/*
 * "seqscan [ARGS] --compare [ARGS]" is "compare ARGS": exec the compare
 * program beside this one (never one found on PATH, where another program
 * of that name may live), with every argument but the first --compare.
 */
static int run_compare(int argc, char **argv, int at)
{
    char prog[PATH_MAX];
    char **av = calloc((size_t)argc + 1, sizeof(char *));
    if (av == NULL)
        cli_die(EXIT_ERROR, "out of memory");
    if (extcmd_sibling("compare", prog, sizeof(prog)) < 0)
        cli_die(EXIT_ERROR, "--compare: no compare program beside %s", cli_progname);
    av[0] = prog;
    for (int i = 1, n = 1; i < argc; i++)
        if (i != at)
            av[n++] = argv[i];
    execv(prog, av);
    cli_die(EXIT_ERROR, "--compare: cannot run %s: %s", prog, strerror(errno));
}

/* Scan o->repeat times and print the report; the exit status. */
static int scan_and_report(const Options *o)
{
    ScanResult *runs = calloc((size_t)o->repeat, sizeof(ScanResult));
    Measure *m = calloc((size_t)o->repeat, sizeof(Measure));
    HsError err;
    int status = EXIT_OK;
    if (runs == NULL || m == NULL)
        cli_die(EXIT_ERROR, "out of memory");
    hs_error_clear(&err);
    CliSignals saved;
    if (o->cfg.sc_workers > 1) /* Ctrl-C stops every worker, then exits 128+N */
        cli_catch_stop_signals(&saved);
    for (int i = 0; i < o->repeat && status == EXIT_OK; i++) {
        if (scan_run(&o->cfg, &runs[i], &err) < 0)
            status = cli_stop_signal ? 128 + cli_stop_signal : cli_report(&err);
        m[i] = runs[i].sr_m;
    }
    if (o->cfg.sc_workers > 1)
        cli_restore_stop_signals(&saved);
    if (status == EXIT_OK) {
        ScanReport rp = {.rp_table = o->path,
                         .rp_cfg = &o->cfg,
                         .rp_pgdata = o->pgdata,
                         .rp_rel = &o->rel,
                         .rp_runs = runs,
                         .rp_nruns = o->repeat};
        measure_summarize(m, o->repeat, &rp.rp_spread);
        if (o->json)
            scan_report_json(stdout, &rp);
        else
            scan_report_text(stdout, &rp);
    }
    free(m);
    free(runs);
    return status;
}

int main(int argc, char **argv)
{
    Options o;
    cli_init("seqscan");
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--compare") == 0)
            return run_compare(argc, argv, i);
    parse_args(argc, argv, &o);
    HsError err;
    if (bufmgr_check_options(&o.cfg.sc_bufopt, o.path, &err) < 0)
        return cli_report(&err); /* a usage error before the cache is touched */
    PgXact *px = o.pgdata ? open_cluster(&o) : NULL;
    int status = scan_and_report(&o);
    pgxact_close(px);
    return status;
}
