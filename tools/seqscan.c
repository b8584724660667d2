/*
 * seqscan -- a full sequential scan of a heap table through the buffer
 *            manager, every page verified, timed: SELECT count(*), sum(v)
 *            FROM t WHERE <qual>, by default the seed's k = -1.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "crc32.h"
#include "pgcatalog.h"
#include "scanrun.h"

typedef struct Options {
    ScanConfig cfg;
    PgRelation rel; /* --pgdata: the relation, located and checked */
    int repeat;
    bool json;
    bool checksum_set; /* --checksum given: it overrides the cluster's setting */
    const char *pgdata; /* --pgdata DIR, or NULL */
    const char *path;   /* the table's first segment file */
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
        "\n"
        "Page access:\n"
        "      --access read|mmap    read: pread into a pool of frames (default);\n"
        "                            mmap: pages are pointers into mapped windows\n"
        "      --buffers SIZE        read: pool size (default 128MiB)\n"
        "      --strategy ring|normal  read: recycle a small ring, or use the whole "
        "pool\n"
        "                            (default: ring when the table is over a quarter "
        "of\n"
        "                            the pool)\n"
        "      --ring SIZE           read: ring size (default 256KiB)\n"
        "      --io-combine SIZE     read: most bytes one preadv reads (default "
        "128KiB;\n"
        "                            8k means one page a call)\n"
        "      --io-workers 0|1|auto read: an I/O worker thread reads the next batch\n"
        "                            ahead while the scan works (default auto: one\n"
        "                            when pages are verified)\n"
        "      --mmap-chunk SIZE|whole  mmap: window size (default 8M)\n"
        "      --madvise normal|sequential|willneed|populate  mmap: advice per window\n"
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
        "      --repeat N            runs (default 1); report each and min/median/max\n"
        "      --json                one JSON object instead of the text report\n"
        "      --compare [TABLE]     the comparison with raw readers and PostgreSQL\n"
        "                            (see seqscan --compare --help)\n"
        "      --segment-size SIZE   pages per segment file (default 1GiB; for tests)\n"
        "  -h, --help                show this help and exit\n"
        "  -V, --version             show the version and exit\n"
        "\n"
        "SIZE takes k, M, G suffixes (powers of 1024). sum(v) is exact (128-bit) and\n"
        "NULL when no matching row has a non-null v, as in SQL. Exit status: 0 ok,\n"
        "1 error or refusal (I/O, missing file, not a heap table, a tuple whose\n"
        "visibility is unknown or that is not a row of t, a running cluster), 2 usage,\n"
        "3 a page failed verification.\n",
        cli_progname, cli_progname);
}

static uint64_t size_arg(const char *opt, const char *arg)
{
    uint64_t v;
    if (cli_parse_size(arg, &v) < 0 || v == 0 || v % BLCKSZ != 0)
        cli_usage_error("%s: '%s' is not a whole number of 8 KiB pages", opt, arg);
    return v;
}

static void on_skip(const HsError *err, void *arg)
{
    (void)arg;
    char line[PATH_MAX + 512];
    fprintf(stderr, "%s: warning: %s; page skipped\n", cli_progname,
            hs_error_format(err, line, sizeof(line)));
}

static void parse_args(int argc, char **argv, Options *o)
{
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
    };
    static const struct option longopts[] = {
        {"access", required_argument, NULL, OPT_ACCESS},
        {"buffers", required_argument, NULL, OPT_BUFFERS},
        {"strategy", required_argument, NULL, OPT_STRATEGY},
        {"ring", required_argument, NULL, OPT_RING},
        {"io-combine", required_argument, NULL, OPT_IO_COMBINE},
        {"io-workers", required_argument, NULL, OPT_IO_WORKERS},
        {"mmap-chunk", required_argument, NULL, OPT_MMAP_CHUNK},
        {"madvise", required_argument, NULL, OPT_MADVISE},
        {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
        {"ignore-checksum-failure", no_argument, NULL, OPT_IGNORE},
        {"where", required_argument, NULL, OPT_WHERE},
        {"checksum", required_argument, NULL, OPT_CHECKSUM},
        {"pgdata", required_argument, NULL, OPT_PGDATA},
        {"cache", required_argument, NULL, OPT_CACHE},
        {"repeat", required_argument, NULL, OPT_REPEAT},
        {"json", no_argument, NULL, OPT_JSON},
        {"segment-size", required_argument, NULL, OPT_SEGMENT_SIZE},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    static const char *const access_names[] = {"read", "mmap", NULL};
    static const char *const strategy_names[] = {"auto", "normal", "ring", NULL};
    static const char *const advice_names[] = {"normal", "sequential", "willneed",
                                               "populate", NULL};
    static const char *const cache_names[] = {"asis", "cold", "warm", NULL};
    static const char *const checksum_names[] = {"heapscan", "postgres", "none", NULL};
    BufMgrOptions *bo = &o->cfg.sc_bufopt;
    uint64_t v;
    char why[256];
    int c;

    memset(o, 0, sizeof(*o));
    bufmgr_default_options(bo);
    o->cfg.sc_qual = QUAL_DEFAULT;
    o->cfg.sc_cache = CACHE_WARM;
    o->cfg.sc_on_skip = on_skip;
    o->repeat = 1;
    while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_ACCESS:
            bo->bo_access = (BufAccess)cli_choice("--access", optarg, access_names);
            break;
        case OPT_BUFFERS:
            bo->bo_pool_bytes = size_arg("--buffers", optarg);
            break;
        case OPT_STRATEGY:
            bo->bo_strategy =
                (BufStrategy)cli_choice("--strategy", optarg, strategy_names);
            break;
        case OPT_RING:
            bo->bo_ring_bytes = size_arg("--ring", optarg);
            break;
        case OPT_IO_COMBINE:
            bo->bo_io_combine_bytes = size_arg("--io-combine", optarg);
            break;
        case OPT_IO_WORKERS:
            if (strcmp(optarg, "auto") == 0)
                bo->bo_io_workers = BUFMGR_IO_WORKERS_AUTO;
            else if (cli_parse_u64(optarg, 0, 1, &v) == 0)
                bo->bo_io_workers = (int)v;
            else
                cli_usage_error("--io-workers: '%s' is not 0, 1 or auto", optarg);
            break;
        case OPT_MMAP_CHUNK:
            bo->bo_mmap_chunk_bytes =
                strcmp(optarg, "whole") == 0 ? 0 : size_arg("--mmap-chunk", optarg);
            break;
        case OPT_MADVISE:
            bo->bo_advice = (PageIOAdvice)cli_choice("--madvise", optarg, advice_names);
            break;
        case OPT_NO_VERIFY:
            bo->bo_verify = false;
            break;
        case OPT_IGNORE:
            o->cfg.sc_skip_corrupt = true;
            break;
        case OPT_WHERE:
            if (qual_parse(optarg, &o->cfg.sc_qual, why, sizeof(why)) < 0)
                cli_usage_error("--where: %s", why);
            break;
        case OPT_CHECKSUM:
            bo->bo_checksum =
                (PageChecksum)cli_choice("--checksum", optarg, checksum_names);
            o->checksum_set = true;
            break;
        case OPT_PGDATA:
            o->pgdata = optarg;
            break;
        case OPT_CACHE:
            o->cfg.sc_cache = (CacheMode)cli_choice("--cache", optarg, cache_names);
            break;
        case OPT_REPEAT:
            if (cli_parse_u64(optarg, 1, 1000, &v) < 0)
                cli_usage_error("--repeat: '%s' is not a count in 1..1000", optarg);
            o->repeat = (int)v;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_SEGMENT_SIZE:
            v = size_arg("--segment-size", optarg);
            if (v / BLCKSZ > RELFILE_SEG_BLOCKS)
                cli_usage_error("--segment-size: at most 1GiB");
            bo->bo_seg_blocks = (uint32_t)(v / BLCKSZ);
            break;
        case 'h':
            usage();
            exit(EXIT_OK);
        case 'V':
            cli_version();
        default:
            cli_bad_option();
        }
    }
    o->path = o->cfg.sc_path =
        cli_one_operand(argc, argv, o->pgdata ? "RELFILE" : "TABLE");
}

/* The figures of one run, or the medians of several. */
typedef struct Figures {
    double wall, user, sys, minflt, majflt;
} Figures;

static Figures figures_of(const ScanResult *r)
{
    return (Figures){r->sr_m.m_wall_s, r->sr_m.m_user_s, r->sr_m.m_sys_s,
                     (double)r->sr_m.m_minflt, (double)r->sr_m.m_majflt};
}

static double per_s(double x, double secs)
{
    return secs > 0 ? x / secs : 0.0;
}

static const char *access_desc(const BufMgrOptions *bo, bool ring, int workers,
                               char *buf, size_t len)
{
    static const char *const adv[] = {"normal", "sequential", "willneed", "populate"};
    if (bo->bo_access == BUF_ACCESS_MMAP) {
        if (bo->bo_mmap_chunk_bytes == 0)
            snprintf(buf, len, "mmap (whole segments, madvise %s)", adv[bo->bo_advice]);
        else
            snprintf(buf, len, "mmap (%zu KiB windows, madvise %s)",
                     bo->bo_mmap_chunk_bytes >> 10, adv[bo->bo_advice]);
    } else {
        snprintf(buf, len,
                 "read (pool %zu MiB, %s, io-combine %zu KiB, %d I/O worker%s)",
                 bo->bo_pool_bytes >> 20, ring ? "ring" : "whole pool",
                 bo->bo_io_combine_bytes >> 10, workers, workers == 1 ? "" : "s");
        if (ring)
            snprintf(buf + strlen(buf) - 1, len - strlen(buf) + 1, ", ring %zu KiB)",
                     bo->bo_ring_bytes >> 10);
    }
    return buf;
}

/* sum(v) exactly, or "NULL" when no row had a non-null v, as SQL's sum(). */
static const char *sum_text(const ScanResult *r, char *buf, size_t len)
{
    if (r->sr_nsum_v == 0)
        return "NULL";
    return scan_sum_format(r->sr_sum_v, buf, len);
}

/* "on (heapscan checksum)", "off", ... */
static const char *verify_desc(const Options *o, char *buf, size_t len)
{
    const BufMgrOptions *bo = &o->cfg.sc_bufopt;
    if (!bo->bo_verify)
        return "off";
    if (bo->bo_checksum == PAGE_CHECKSUM_NONE)
        snprintf(buf, len, "on (headers and line pointers, no checksum)");
    else
        snprintf(buf, len, "on (%s checksum)", page_checksum_name(bo->bo_checksum));
    return buf;
}

static void print_text(const Options *o, const ScanResult *runs, int n,
                       const Figures *f)
{
    const ScanResult *r = &runs[n - 1];
    const BufStats *b = &r->sr_buf;
    static const char *const cache[] = {"asis", "cold", "warm"};
    char acc[160], q[64], vd[64], sum[48];
    double mb = (double)r->sr_bytes / 1e6;

    if (n > 1) {
        for (int i = 0; i < n; i++)
            printf("run %-3d wall %.4f s  user %.4f s  sys %.4f s  %8.1f MB/s  "
                   "resident before %5.1f%%\n",
                   i + 1, runs[i].sr_m.m_wall_s, runs[i].sr_m.m_user_s,
                   runs[i].sr_m.m_sys_s, per_s(mb, runs[i].sr_m.m_wall_s),
                   runs[i].sr_resident_before * 100);
        printf("\n");
    }
    const char *stat = n > 1 ? " (median)" : "";
    printf("table              %s: %llu pages, %llu bytes\n", o->path,
           (unsigned long long)r->sr_pages, (unsigned long long)r->sr_bytes);
    printf("access             %s\n", access_desc(&o->cfg.sc_bufopt, r->sr_ring,
                                                  r->sr_io_workers, acc, sizeof(acc)));
    printf("query              WHERE %s; verify %s\n",
           qual_format(&o->cfg.sc_qual, q, sizeof(q)), verify_desc(o, vd, sizeof(vd)));
    if (o->pgdata)
        printf("relation           \"%s\" (oid %u, database %u) of the cluster %s; "
               "visibility from its pg_xact\n",
               o->rel.pr_name, o->rel.pr_oid, o->rel.pr_dboid, o->pgdata);
    printf("cache              %s (resident before: %.1f%%)\n", cache[o->cfg.sc_cache],
           r->sr_resident_before * 100);
    printf("rows scanned       %llu\n", (unsigned long long)r->sr_rows_scanned);
    printf("rows returned      %llu\n", (unsigned long long)r->sr_rows_returned);
    printf("sum of v           %s\n", sum_text(r, sum, sizeof(sum)));
    printf("checksum failures  %llu\n", (unsigned long long)b->bs_verify_failures);
    printf("wall%s%*s %.4f s\n", stat, (int)(14 - strlen(stat)), "", f->wall);
    printf("user%s%*s %.4f s\n", stat, (int)(14 - strlen(stat)), "", f->user);
    printf("sys%s%*s %.4f s\n", stat, (int)(15 - strlen(stat)), "", f->sys);
    printf("faults%s%*s %.0f minor, %.0f major\n", stat, (int)(12 - strlen(stat)), "",
           f->minflt, f->majflt);
    printf("MB/s               %.1f\n", per_s(mb, f->wall));
    printf("rows/s             %.0f\n", per_s((double)r->sr_rows_scanned, f->wall));
    printf(
        "buffers            hits %llu, reads %llu, read calls %llu, bytes read %llu,\n"
        "                   evictions %llu, verified %llu, verify failures %llu, "
        "frames used %llu\n",
        (unsigned long long)b->bs_hits, (unsigned long long)b->bs_reads,
        (unsigned long long)b->bs_read_calls, (unsigned long long)b->bs_bytes_read,
        (unsigned long long)b->bs_evictions, (unsigned long long)b->bs_pages_verified,
        (unsigned long long)b->bs_verify_failures,
        (unsigned long long)b->bs_frames_used);
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static void json_times(const Figures *f, double mb, double rows)
{
    printf("\"wall_s\": %.6f, \"user_s\": %.6f, \"sys_s\": %.6f, \"minflt\": %.0f, "
           "\"majflt\": %.0f, \"mb_per_s\": %.1f, \"rows_per_s\": %.0f",
           f->wall, f->user, f->sys, f->minflt, f->majflt, per_s(mb, f->wall),
           per_s(rows, f->wall));
}

static void print_json(const Options *o, const ScanResult *runs, int n,
                       const Figures *f)
{
    const ScanResult *r = &runs[n - 1];
    const BufStats *b = &r->sr_buf;
    const BufMgrOptions *bo = &o->cfg.sc_bufopt;
    static const char *const cache[] = {"asis", "cold", "warm"};
    char q[64], sum[48];
    double mb = (double)r->sr_bytes / 1e6;

    printf("{\"table\": ");
    json_string(o->path);
    printf(", \"access\": \"%s\", ",
           bo->bo_access == BUF_ACCESS_MMAP ? "mmap" : "read");
    if (bo->bo_access == BUF_ACCESS_MMAP)
        printf("\"mmap_chunk\": %zu, ", bo->bo_mmap_chunk_bytes);
    else
        printf("\"pool_bytes\": %zu, \"strategy\": \"%s\", \"io_combine\": %zu, "
               "\"io_workers\": %d, ",
               bo->bo_pool_bytes, r->sr_ring ? "ring" : "normal",
               bo->bo_io_combine_bytes, r->sr_io_workers);
    printf("\"verify\": %s, \"checksum\": \"%s\", \"crc\": \"%s\", \"pgdata\": ",
           bo->bo_verify ? "true" : "false",
           bo->bo_verify ? page_checksum_name(bo->bo_checksum) : "none", crc32_impl());
    if (o->pgdata) {
        json_string(o->pgdata);
        printf(", \"relation\": ");
        json_string(o->rel.pr_name);
    } else {
        printf("null");
    }
    printf(", \"where\": ");
    json_string(qual_format(&o->cfg.sc_qual, q, sizeof(q)));
    printf(", \"cache\": \"%s\", \"pages\": %llu, \"bytes\": %llu, \"rows_scanned\": "
           "%llu, "
           "\"rows_returned\": %llu, \"sum_v\": %s, \"checksum_failures\": %llu, ",
           cache[o->cfg.sc_cache], (unsigned long long)r->sr_pages,
           (unsigned long long)r->sr_bytes, (unsigned long long)r->sr_rows_scanned,
           (unsigned long long)r->sr_rows_returned,
           r->sr_nsum_v ? scan_sum_format(r->sr_sum_v, sum, sizeof(sum)) : "null",
           (unsigned long long)b->bs_verify_failures);
    json_times(f, mb, (double)r->sr_rows_scanned);
    printf(
        ", \"resident_before\": %.4f, \"buffers\": {\"hits\": %llu, \"reads\": %llu, "
        "\"read_calls\": %llu, \"bytes_read\": %llu, \"evictions\": %llu, "
        "\"pages_verified\": %llu, \"verify_failures\": %llu, \"frames_used\": %llu}",
        r->sr_resident_before, (unsigned long long)b->bs_hits,
        (unsigned long long)b->bs_reads, (unsigned long long)b->bs_read_calls,
        (unsigned long long)b->bs_bytes_read, (unsigned long long)b->bs_evictions,
        (unsigned long long)b->bs_pages_verified,
        (unsigned long long)b->bs_verify_failures,
        (unsigned long long)b->bs_frames_used);
    if (n > 1) {
        printf(", \"runs\": [");
        for (int i = 0; i < n; i++) {
            Figures fi = figures_of(&runs[i]);
            printf("%s{", i ? ", " : "");
            json_times(&fi, mb, (double)runs[i].sr_rows_scanned);
            printf(", \"resident_before\": %.4f}", runs[i].sr_resident_before);
        }
        printf("]");
    }
    printf("}\n");
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

int main(int argc, char **argv)
{
    Options o;
    HsError err;
    cli_init("seqscan");
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--compare") == 0)
            return compare_main(argc, argv);
    parse_args(argc, argv, &o);
    hs_error_clear(&err);
    PgXact *px = o.pgdata ? open_cluster(&o) : NULL;

    ScanResult *runs = calloc((size_t)o.repeat, sizeof(ScanResult));
    double *x[5];
    for (int k = 0; k < 5; k++)
        x[k] = calloc((size_t)o.repeat, sizeof(double));
    if (runs == NULL || !x[0] || !x[1] || !x[2] || !x[3] || !x[4])
        cli_die(EXIT_ERROR, "out of memory");

    int status = EXIT_OK;
    for (int i = 0; i < o.repeat; i++) {
        if (scan_run(&o.cfg, &runs[i], &err) < 0) {
            status = cli_report(&err);
            goto done;
        }
        Figures f = figures_of(&runs[i]);
        x[0][i] = f.wall, x[1][i] = f.user, x[2][i] = f.sys, x[3][i] = f.minflt,
        x[4][i] = f.majflt;
    }
    Figures med;
    double lo, hi;
    measure_spread(x[0], o.repeat, &lo, &med.wall, &hi);
    measure_spread(x[1], o.repeat, &lo, &med.user, &hi);
    measure_spread(x[2], o.repeat, &lo, &med.sys, &hi);
    measure_spread(x[3], o.repeat, &lo, &med.minflt, &hi);
    measure_spread(x[4], o.repeat, &lo, &med.majflt, &hi);

    if (o.json)
        print_json(&o, runs, o.repeat, &med);
    else
        print_text(&o, runs, o.repeat, &med);
done:
    for (int k = 0; k < 5; k++)
        free(x[k]);
    free(runs);
    pgxact_close(px);
    return status;
}
