/*
 * scanbench -- the scan's performance ratios, warm, interleaved round by
 *              round, medians: seqscan against the raw readers it should be
 *              as fast as, and what verification and workers cost.
 *
 * Each pair is a contender and its baseline, run one after the other in
 * every round with the file read into the page cache just before each run;
 * the ratio is median(contender) / median(baseline) over the same rounds,
 * and the spread (min-max) of both is printed so a ratio inside it is seen
 * to be noise.  Some pairs carry the ratio an issue asks for (the "target"
 * column); the benchmark reports whether this run reached it, it never
 * fails on it.
 *
 * The CRC-32 pair times crc32 passes over the table already in memory (no
 * I/O, no faults): zlib's crc32() against ISA-L's crc32_gzip_refl(), with
 * the 256-bit fold on CPUs where ISA-L has no faster loop (crc32.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "crc32.h"
#include "json.h"
#include "rawio.h"
#include "scanrun.h"

/* What a runner runs. */
typedef enum Kind {
    RUN_READ, /* raw_read() */
    RUN_MMAP, /* raw_mmap() of the whole file */
    RUN_SCAN, /* scan_run() */
    RUN_CRC,  /* a crc32 pass over the table in memory */
} Kind;

/* One contender or baseline. */
typedef struct Runner {
    const char *name; /* as printed */
    Kind kind;
    size_t block; /* raw read: buffer (0: 1 MiB); scan read: io-combine (0: default) */
    bool crc;     /* raw: crc32 the bytes */
    BufAccess access; /* scan */
    size_t chunk;     /* scan mmap: window (0: whole segments) */
    bool verify;      /* scan */
    int io_workers;   /* scan read: I/O workers (BUFMGR_IO_WORKERS_AUTO, 0, 1) */
    int workers;      /* scan: threads scanning together (0: one) */
    uint32_t (*crc_fn)(uint32_t, const void *, size_t); /* RUN_CRC */
} Runner;

/* A contender, its baseline, the ratio asked for (0: none) and its sense. */
typedef struct Pair {
    Runner contender, baseline;
    double target;       /* ratio to reach, or 0 */
    bool target_at_most; /* ratio <= target (else >= target) */
    const char *why;     /* where the target comes from */
    double *wall[2];     /* per round: contender, baseline */
} Pair;

#define AUTO BUFMGR_IO_WORKERS_AUTO
#define MIB  ((size_t)1 << 20)
#define SCAN_READ(nm, v, iow, w)                                                       \
    {                                                                                  \
        .name = nm, .kind = RUN_SCAN, .access = BUF_ACCESS_READ, .verify = v,          \
        .io_workers = iow, .workers = w                                                \
    }
#define SCAN_MMAP(nm, ch, v, w)                                                        \
    {                                                                                  \
        .name = nm, .kind = RUN_SCAN, .access = BUF_ACCESS_MMAP, .chunk = ch,          \
        .verify = v, .io_workers = 0, .workers = w                                     \
    }
#define READ_1M(c)                                                                     \
    {                                                                                  \
        .name = (c) ? "read() 1 MiB + crc32" : "read() 1 MiB", .kind = RUN_READ,       \
        .crc = c                                                                       \
    }
#define MMAP_WHOLE(c)                                                                  \
    {                                                                                  \
        .name = (c) ? "mmap whole + crc32" : "mmap whole, word per line",              \
        .kind = RUN_MMAP, .crc = c                                                     \
    }

static Pair pairs[] = {
    /* against the raw readers (issue 3) */
    {SCAN_READ("seqscan read, no verify", false, AUTO, 1),
     READ_1M(false),
     0,
     0,
     NULL,
     {0}},
    {{.name = "read() 128 KiB, no scan", .kind = RUN_READ, .block = 128 << 10},
     READ_1M(false),
     0,
     0,
     "the copy read access makes, alone",
     {0}},
    {SCAN_MMAP("seqscan mmap 8M, no verify", 8 * MIB, false, 1),
     MMAP_WHOLE(false),
     0,
     0,
     NULL,
     {0}},
    {SCAN_READ("seqscan read, verify", true, AUTO, 1), READ_1M(true), 0, 0, NULL, {0}},
    {SCAN_MMAP("seqscan mmap 8M, verify", 8 * MIB, true, 1),
     MMAP_WHOLE(true),
     0,
     0,
     NULL,
     {0}},
    /* what verification costs (issue 12) */
    {{.name = "crc32 pass, ISA-L", .kind = RUN_CRC},
     {.name = "crc32 pass, zlib", .kind = RUN_CRC},
     0.2,
     true,
     "ISA-L >= 5x zlib",
     {0}},
    {SCAN_READ("seqscan read, verify", true, AUTO, 1),
     SCAN_READ("seqscan read, no verify", false, AUTO, 1),
     1.3,
     true,
     "verified <= 1.3x unverified",
     {0}},
    {SCAN_MMAP("seqscan mmap, verify", BUFMGR_DEFAULT_MMAP_CHUNK, true, 1),
     SCAN_MMAP("seqscan mmap, no verify", BUFMGR_DEFAULT_MMAP_CHUNK, false, 1),
     1.3,
     true,
     "verified <= 1.3x unverified",
     {0}},
    /* what a second worker buys (issue 12) */
    {SCAN_READ("read, verify, 2 workers", true, AUTO, 2),
     SCAN_READ("read, verify, 1 worker", true, AUTO, 1),
     0.65,
     true,
     "2 workers <= 0.65x 1",
     {0}},
    {SCAN_READ("read, verify, 2 workers", true, AUTO, 2),
     SCAN_READ("  1 worker, no I/O worker", true, 0, 1),
     0.65,
     true,
     "the same, one CPU against two",
     {0}},
    {SCAN_MMAP("mmap, verify, 2 workers", BUFMGR_DEFAULT_MMAP_CHUNK, true, 2),
     SCAN_MMAP("mmap, verify, 1 worker", BUFMGR_DEFAULT_MMAP_CHUNK, true, 1),
     0.65,
     true,
     "2 workers <= 0.65x 1",
     {0}},
};
#define NPAIRS (int)(sizeof(pairs) / sizeof(pairs[0]))

/* The table in memory, for the crc32 passes (loaded on first use). */
static unsigned char *table_bytes;
static size_t table_len;

static int run_scan(const char *path, const Runner *r, Measure *m, HsError *err)
{
    ScanConfig cfg = {.sc_path = path,
                      .sc_qual = QUAL_DEFAULT,
                      .sc_cache = CACHE_ASIS,
                      .sc_workers = r->workers};
    ScanResult res;
    bufmgr_default_options(&cfg.sc_bufopt);
    cfg.sc_bufopt.bo_access = r->access;
    cfg.sc_bufopt.bo_mmap_chunk_bytes = r->chunk;
    cfg.sc_bufopt.bo_verify = r->verify;
    cfg.sc_bufopt.bo_io_workers = r->io_workers;
    if (r->block)
        cfg.sc_bufopt.bo_io_combine_bytes = r->block;
    int rc = scan_run(&cfg, &res, err);
    *m = res.sr_m;
    return rc;
}

static double run_once(const char *path, const Runner *r)
{
    HsError err;
    MeasureStart ms;
    Measure m;
    RawResult raw;
    int rc = 0;
    if (r->kind == RUN_CRC) {
        if (table_bytes == NULL && raw_load(path, &table_bytes, &table_len, &err) < 0)
            exit(cli_report(&err));
        measure_start(&ms);
        volatile uint32_t c = r->crc_fn(0, table_bytes, table_len);
        measure_stop(&ms, &m);
        (void)c;
        return m.m_wall_s;
    }
    if (cache_warm(path, &err) < 0)
        exit(cli_report(&err));
    if (r->kind == RUN_SCAN) {
        rc = run_scan(path, r, &m, &err);
    } else {
        measure_start(&ms);
        rc = r->kind == RUN_READ
                 ? raw_read(path, r->block ? r->block : MIB, r->crc, &raw, &err)
                 : raw_mmap(path, 0, r->crc ? RAW_TOUCH_CRC : RAW_TOUCH_LINE, &raw,
                            &err);
        measure_stop(&ms, &m);
    }
    if (rc < 0)
        exit(cli_report(&err));
    return m.m_wall_s;
}

typedef struct Args {
    const char *path;
    uint64_t rounds;
    bool json;
} Args;

static void usage(void)
{
    printf("Usage: scanbench [--rounds N] [--json] TABLE\n"
           "seqscan against raw readers, and what verification and workers cost:\n"
           "warm, interleaved, medians of N rounds, ratios from the same rounds.\n"
           "  -r, --rounds N   rounds (1..1000, default 7)\n"
           "  -j, --json       the pairs as JSON on stdout, not the table\n"
           "  -h, --help, -V, --version\n");
}

static void parse_args(int argc, char **argv, Args *a)
{
    static const struct option longopts[] = {
        {"rounds", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "r:jhV", longopts, NULL)) != -1) {
        if (c == 'r') {
            if (cli_parse_u64(optarg, 1, 1000, &a->rounds) < 0)
                cli_usage_error("--rounds: '%s' is not a count in 1..1000", optarg);
        } else if (c == 'j') {
            a->json = true;
        } else {
            cli_common_option(c, usage);
        }
    }
    if (optind != argc - 1)
        cli_usage_error(optind < argc ? "one TABLE only" : "no TABLE given");
    a->path = argv[optind];
}

typedef struct Stats {
    double lo, med, hi;
} Stats;

static Stats spread(const double *x, uint64_t n)
{
    Stats s;
    measure_spread(x, (int)n, &s.lo, &s.med, &s.hi);
    return s;
}

static bool reached(const Pair *p, double ratio)
{
    return p->target_at_most ? ratio <= p->target : ratio >= p->target;
}

static void print_table(const Args *a, uint64_t bytes)
{
    printf("%s: %llu bytes, warm, %llu rounds interleaved, crc32 by %s; wall time in "
           "ms\n\n",
           a->path, (unsigned long long)bytes, (unsigned long long)a->rounds,
           crc32_impl());
    printf("%-27s %7s %15s   %-27s %7s %15s %7s  %s\n", "contender", "median",
           "min-max", "baseline", "median", "min-max", "ratio", "target");
    for (int i = 0; i < NPAIRS; i++) {
        const Pair *p = &pairs[i];
        if (p->wall[0] == NULL)
            continue;
        Stats c = spread(p->wall[0], a->rounds), b = spread(p->wall[1], a->rounds);
        char cr[32], br[32], tgt[96] = "";
        snprintf(cr, sizeof(cr), "%.1f-%.1f", c.lo * 1e3, c.hi * 1e3);
        snprintf(br, sizeof(br), "%.1f-%.1f", b.lo * 1e3, b.hi * 1e3);
        if (p->target > 0)
            snprintf(tgt, sizeof(tgt), "%s %.2f %s (%s)",
                     p->target_at_most ? "<=" : ">=", p->target,
                     reached(p, c.med / b.med) ? "reached" : "NOT reached", p->why);
        else if (p->why)
            snprintf(tgt, sizeof(tgt), "(%s)", p->why);
        printf("%-27s %7.1f %15s   %-27s %7.1f %15s %6.2fx  %s\n", p->contender.name,
               c.med * 1e3, cr, p->baseline.name, b.med * 1e3, br, c.med / b.med, tgt);
    }
}

static void json_runner(JsonWriter *j, const char *key, const Runner *r, Stats s)
{
    json_begin_object(j, key);
    json_string(j, "name", r->name);
    json_double(j, "median_s", s.med, 9);
    json_double(j, "min_s", s.lo, 9);
    json_double(j, "max_s", s.hi, 9);
    json_end(j);
}

static void print_json(const Args *a, uint64_t bytes)
{
    JsonWriter j;
    json_init(&j, stdout);
    json_begin_object(&j, NULL);
    json_string(&j, "table", a->path);
    json_uint(&j, "bytes", bytes);
    json_uint(&j, "rounds", a->rounds);
    json_string(&j, "crc", crc32_impl());
    json_begin_array_lines(&j, "pairs", 2);
    for (int i = 0; i < NPAIRS; i++) {
        const Pair *p = &pairs[i];
        if (p->wall[0] == NULL)
            continue;
        Stats c = spread(p->wall[0], a->rounds), b = spread(p->wall[1], a->rounds);
        json_begin_object(&j, NULL);
        json_runner(&j, "contender", &p->contender, c);
        json_runner(&j, "baseline", &p->baseline, b);
        json_double(&j, "ratio", c.med / b.med, 6);
        if (p->target > 0) {
            json_string(&j, "target", p->target_at_most ? "<=" : ">=");
            json_double(&j, "target_ratio", p->target, 2);
            json_bool(&j, "reached", reached(p, c.med / b.med));
        }
        json_end(&j);
    }
    json_end(&j);
    json_end(&j);
    putchar('\n');
}

int main(int argc, char **argv)
{
    Args a = {.rounds = 7};
    HsError err;
    uint64_t bytes;
    cli_init("scanbench");
    parse_args(argc, argv, &a);
    if (file_total_bytes(a.path, &bytes, &err) < 0)
        exit(cli_report(&err));
    for (int i = 0; i < NPAIRS; i++) {
        Pair *p = &pairs[i];
        if (p->contender.kind == RUN_CRC) {
            if (crc32_update_isal == NULL) {
                fprintf(stderr, "scanbench: no ISA-L in this build: no crc32 pair\n");
                continue;
            }
            if (crc32_have_fold256())
                p->contender.name = "crc32 pass, ISA-L+fold256";
            p->contender.crc_fn = crc32_update_isal;
            p->baseline.crc_fn = crc32_update_zlib;
        }
        p->wall[0] = calloc(a.rounds, sizeof(double));
        p->wall[1] = calloc(a.rounds, sizeof(double));
        if (p->wall[0] == NULL || p->wall[1] == NULL)
            cli_die(EXIT_ERROR, "out of memory");
    }
    for (uint64_t round = 0; round < a.rounds; round++) {
        fprintf(stderr, "\rscanbench: round %llu of %llu",
                (unsigned long long)round + 1, (unsigned long long)a.rounds);
        for (int i = 0; i < NPAIRS; i++) {
            if (pairs[i].wall[0] == NULL)
                continue;
            pairs[i].wall[1][round] = run_once(a.path, &pairs[i].baseline);
            pairs[i].wall[0][round] = run_once(a.path, &pairs[i].contender);
        }
    }
    fprintf(stderr, "\n");
    if (a.json)
        print_json(&a, bytes);
    else
        print_table(&a, bytes);
    free(table_bytes);
    return EXIT_OK;
}
