/*
 * compare.c -- the comparison (see compare.h).
 *
 * Each row is one way of reading the table.  For each cache state (cold,
 * then warm) and each round, every row runs once, in the same order, with
 * the cache prepared the same way right before it; a row's figures are
 * the median, min and max over the rounds, and its ratio is its median over
 * the median of "dd bs=1M" in the same cache state.
 */
#include "compare.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "crc32.h"
#include "extcmd.h"
#include "pgpeer.h"
#include "rawio.h"
#include "scanrun.h"

#define DEFAULT_ROUNDS 5
#define NCACHE         2 /* 0 cold, 1 warm */

typedef enum RowKind { ROW_RAW, ROW_EXT, ROW_SCAN, ROW_PG } RowKind;
static const char *const kind_names[] = {"c-reader", "command", "seqscan", "postgres"};
static const char *const cache_names[NCACHE] = {"cold", "warm"};

typedef struct Row {
    const char *name; /* as printed */
    RowKind kind;
    RawMethod method; /* ROW_RAW */
    size_t block;     /* ROW_RAW: buffer or chunk; ROW_EXT dd: bs */
    const char *ext;  /* ROW_EXT: "wc", "wc -l" or "dd" */
    int twin;         /* ROW_EXT: the C reader it must agree with, or -1 */
    BufAccess access; /* ROW_SCAN */
    size_t chunk;     /* ROW_SCAN mmap */
    bool verify;      /* ROW_SCAN */
    int workers;      /* ROW_PG: parallel workers */
    double *wall[NCACHE], *user[NCACHE], *sys[NCACHE]; /* per round */
    RawResult last; /* ROW_RAW: what the last run counted */
} Row;

typedef struct Compare {
    const char *path;
    uint64_t bytes, pages;
    int rounds;
    const char *csv, *json, *plot;
    bool postgres; /* run the PostgreSQL rows */
    PgPeer *pg;
    uint64_t pg_count;
    int64_t pg_sum;
    Row *rows;
    int nrows;
    int dd1m; /* the row ratios are taken against */
} Compare;

/* ---- the rows --------------------------------------------------------- */

static int add_row(Compare *c, Row r)
{
    Row *rows = realloc(c->rows, (size_t)(c->nrows + 1) * sizeof(Row));
    if (rows == NULL)
        cli_die(EXIT_ERROR, "out of memory");
    c->rows = rows;
    for (int k = 0; k < NCACHE; k++) {
        r.wall[k] = calloc((size_t)c->rounds, sizeof(double));
        r.user[k] = calloc((size_t)c->rounds, sizeof(double));
        r.sys[k] = calloc((size_t)c->rounds, sizeof(double));
        if (!r.wall[k] || !r.user[k] || !r.sys[k])
            cli_die(EXIT_ERROR, "out of memory");
    }
    c->rows[c->nrows] = r;
    return c->nrows++;
}

static void build_rows(Compare *c)
{
    static const struct {
        const char *name, *dd;
        size_t bs;
    } blocks[] = {{"read 512 (C)", "dd bs=512", 512},
                  {"read 8k (C)", "dd bs=8k", 8 << 10},
                  {"read 256k (C)", "dd bs=256k", 256 << 10},
                  {"read 1M (C)", "dd bs=1M", 1 << 20}};
    int wc = add_row(c, (Row){.name = "wc (C)", .kind = ROW_RAW, .method = RAW_WC});
    int lines =
        add_row(c, (Row){.name = "wc -l (C)", .kind = ROW_RAW, .method = RAW_LINES});
    int rd[4];
    for (int i = 0; i < 4; i++)
        rd[i] = add_row(c, (Row){.name = blocks[i].name,
                                 .kind = ROW_RAW,
                                 .method = RAW_READ,
                                 .block = blocks[i].bs});
    add_row(c, (Row){.name = "mmap 8k chunks (C)",
                     .kind = ROW_RAW,
                     .method = RAW_MMAP,
                     .block = 8 << 10});
    add_row(c, (Row){.name = "mmap 8M chunks (C)",
                     .kind = ROW_RAW,
                     .method = RAW_MMAP,
                     .block = 8 << 20});
    add_row(c, (Row){.name = "mmap 32M chunks (C)",
                     .kind = ROW_RAW,
                     .method = RAW_MMAP,
                     .block = 32 << 20});
    add_row(c, (Row){.name = "O_DIRECT 1M (C)",
                     .kind = ROW_RAW,
                     .method = RAW_DIRECT,
                     .block = 1 << 20});

    add_row(c, (Row){.name = "wc", .kind = ROW_EXT, .ext = "wc", .twin = wc});
    add_row(c, (Row){.name = "wc -l", .kind = ROW_EXT, .ext = "wc -l", .twin = lines});
    for (int i = 0; i < 4; i++) {
        int r = add_row(c, (Row){.name = blocks[i].dd,
                                 .kind = ROW_EXT,
                                 .ext = "dd",
                                 .block = blocks[i].bs,
                                 .twin = rd[i]});
        if (blocks[i].bs == 1 << 20)
            c->dd1m = r;
    }

    static const struct {
        const char *name;
        BufAccess access;
        size_t chunk;
        bool verify;
    } scans[] = {
        {"seqscan read", BUF_ACCESS_READ, 0, true},
        {"seqscan read --no-verify", BUF_ACCESS_READ, 0, false},
        {"seqscan mmap 8k", BUF_ACCESS_MMAP, 8 << 10, true},
        {"seqscan mmap 8k --no-verify", BUF_ACCESS_MMAP, 8 << 10, false},
        {"seqscan mmap 8M", BUF_ACCESS_MMAP, 8 << 20, true},
        {"seqscan mmap 8M --no-verify", BUF_ACCESS_MMAP, 8 << 20, false},
        {"seqscan mmap 32M", BUF_ACCESS_MMAP, 32 << 20, true},
        {"seqscan mmap 32M --no-verify", BUF_ACCESS_MMAP, 32 << 20, false},
    };
    for (size_t i = 0; i < sizeof(scans) / sizeof(scans[0]); i++)
        add_row(c, (Row){.name = scans[i].name,
                         .kind = ROW_SCAN,
                         .access = scans[i].access,
                         .chunk = scans[i].chunk,
                         .verify = scans[i].verify});
    if (c->postgres) {
        add_row(c, (Row){.name = "PostgreSQL 15 serial", .kind = ROW_PG, .workers = 0});
        add_row(c,
                (Row){.name = "PostgreSQL 15 2 workers", .kind = ROW_PG, .workers = 2});
    }
}

/* ---- running one row once --------------------------------------------- */

static int run_raw(Compare *c, Row *r, Measure *m, HsError *err)
{
    MeasureStart ms;
    measure_start(&ms);
    int rc = raw_run(r->method, c->path, r->block, &r->last, err);
    measure_stop(&ms, m);
    return rc;
}

/* The command's output must say what its C twin counted. */
static int check_twin(Compare *c, const Row *r, const char *out, const char *errout,
                      HsError *err)
{
    const RawResult *t = &c->rows[r->twin].last;
    char want[160];
    const char *got = out;
    if (strcmp(r->ext, "wc") == 0)
        snprintf(want, sizeof(want), "%llu %llu %llu", (unsigned long long)t->rr_lines,
                 (unsigned long long)t->rr_words, (unsigned long long)t->rr_bytes);
    else if (strcmp(r->ext, "wc -l") == 0)
        snprintf(want, sizeof(want), "%llu", (unsigned long long)t->rr_lines);
    else {
        snprintf(want, sizeof(want), "%llu+%llu records in",
                 (unsigned long long)t->rr_full, (unsigned long long)t->rr_partial);
        got = errout;
    }
    /* wc pads its columns: compare with runs of blanks folded */
    char folded[512];
    size_t n = 0;
    for (const char *p = got; *p && *p != '\n' && n + 1 < sizeof(folded); p++)
        if (*p != ' ' || (n > 0 && folded[n - 1] != ' '))
            folded[n++] = *p;
    folded[n] = '\0';
    if (strncmp(folded + (folded[0] == ' '), want, strlen(want)) != 0)
        return hs_error_set(err, HS_ECORRUPT, c->path, HS_NO_BLOCK,
                            "%s says \"%s\" but %s counted \"%s\"", r->name, folded,
                            c->rows[r->twin].name, want);
    return 0;
}

static int run_ext(Compare *c, Row *r, bool first, Measure *m, HsError *err)
{
    char arg_if[PATH_MAX + 8], arg_bs[32];
    char *argv[8];
    int n = 0;
    if (strcmp(r->ext, "dd") == 0) {
        snprintf(arg_if, sizeof(arg_if), "if=%s", c->path);
        snprintf(arg_bs, sizeof(arg_bs), "bs=%zu", r->block);
        argv[n++] = "dd", argv[n++] = arg_if, argv[n++] = "of=/dev/null";
        argv[n++] = arg_bs;
    } else {
        argv[n++] = "wc";
        if (strcmp(r->ext, "wc -l") == 0)
            argv[n++] = "-l";
        argv[n++] = (char *)c->path;
    }
    argv[n] = NULL;
    static char out[4096], errout[4096];
    int status = extcmd_run(argv, m, out, sizeof(out), errout, sizeof(errout), err);
    if (status < 0)
        return status;
    if (status != 0)
        return hs_error_set(err, -EIO, c->path, HS_NO_BLOCK,
                            "%s exited with status %d: %s", r->name, status, errout);
    return first && r->twin >= 0 ? check_twin(c, r, out, errout, err) : 0;
}

static int run_scan(Compare *c, Row *r, Measure *m, HsError *err)
{
    ScanConfig cfg = {
        .sc_path = c->path, .sc_qual = QUAL_DEFAULT, .sc_cache = CACHE_ASIS};
    ScanResult res;
    bufmgr_default_options(&cfg.sc_bufopt);
    cfg.sc_bufopt.bo_access = r->access;
    cfg.sc_bufopt.bo_mmap_chunk_bytes = r->chunk;
    cfg.sc_bufopt.bo_verify = r->verify;
    int rc = scan_run(&cfg, &res, err);
    *m = res.sr_m;
    return rc;
}

static int run_pg(Compare *c, Row *r, Measure *m, HsError *err)
{
    uint64_t rows;
    memset(m, 0, sizeof(*m));
    int rc = pgpeer_time_query(c->pg, r->workers, &m->m_wall_s, &rows, NULL, err);
    if (rc == 0 && rows != 0)
        rc = hs_error_set(err, -EIO, c->path, HS_NO_BLOCK,
                          "PostgreSQL returned %llu rows for k = -1",
                          (unsigned long long)rows);
    return rc;
}

/* Prepare the cache, run row r once, store its figures. */
static int run_row(Compare *c, Row *r, int cache, int round, HsError *err)
{
    int rc;
    if (r->kind == ROW_PG)
        rc = cache == 0 ? pgpeer_evict(c->pg, err) : pgpeer_warm(c->pg, err);
    else
        rc = cache_prepare(c->path, cache == 0 ? CACHE_COLD : CACHE_WARM, err);
    if (rc < 0)
        return rc;
    Measure m;
    switch (r->kind) {
    case ROW_RAW:
        rc = run_raw(c, r, &m, err);
        break;
    case ROW_EXT:
        rc = run_ext(c, r, cache == 0 && round == 0, &m, err);
        break;
    case ROW_SCAN:
        rc = run_scan(c, r, &m, err);
        break;
    case ROW_PG:
        rc = run_pg(c, r, &m, err);
        break;
    }
    r->wall[cache][round] = m.m_wall_s;
    r->user[cache][round] = m.m_user_s;
    r->sys[cache][round] = m.m_sys_s;
    return rc;
}

/* ---- reporting ----------------------------------------------------------- */

typedef struct Figures {
    double med, min, max, user, sys, mbs, ratio;
} Figures;

static Figures figures(const Compare *c, const Row *r, int cache)
{
    Figures f;
    double lo, hi, dd;
    measure_spread(r->wall[cache], c->rounds, &f.min, &f.med, &f.max);
    measure_spread(r->user[cache], c->rounds, &lo, &f.user, &hi);
    measure_spread(r->sys[cache], c->rounds, &lo, &f.sys, &hi);
    measure_spread(c->rows[c->dd1m].wall[cache], c->rounds, &lo, &dd, &hi);
    f.mbs = f.med > 0 ? (double)c->bytes / 1e6 / f.med : 0;
    f.ratio = dd > 0 ? f.med / dd : 0;
    return f;
}

static void print_text(const Compare *c)
{
    printf("heapscan comparison: %s, %llu bytes (%llu pages), %d round%s, each row "
           "interleaved with the others; crc32 by %s\n",
           c->path, (unsigned long long)c->bytes, (unsigned long long)c->pages,
           c->rounds, c->rounds == 1 ? "" : "s", crc32_impl());
    if (c->pg)
        printf(
            "PostgreSQL 15 scans the same bytes: count(*) %llu, sum(v) %lld (equal to "
            "seqscan's)\n",
            (unsigned long long)c->pg_count, (long long)c->pg_sum);
    for (int k = 0; k < NCACHE; k++) {
        printf("\n%s: %s\n", cache_names[k],
               k == 0 ? "evicted before each run (fdatasync + POSIX_FADV_DONTNEED)"
                      : "read into the page cache before each run");
        printf("%-30s %9s %9s %9s %8s %8s %8s %8s\n", "reader (times in ms)", "median",
               "min", "max", "user", "sys", "MB/s", "x dd 1M");
        for (int i = 0; i < c->nrows; i++) {
            const Row *r = &c->rows[i];
            Figures f = figures(c, r, k);
            if (r->kind == ROW_PG)
                printf("%-30s %9.1f %9.1f %9.1f %8s %8s %8.0f %8.2f\n", r->name,
                       f.med * 1e3, f.min * 1e3, f.max * 1e3, "-", "-", f.mbs, f.ratio);
            else
                printf("%-30s %9.1f %9.1f %9.1f %8.1f %8.1f %8.0f %8.2f\n", r->name,
                       f.med * 1e3, f.min * 1e3, f.max * 1e3, f.user * 1e3, f.sys * 1e3,
                       f.mbs, f.ratio);
        }
    }
    printf("\nuser and sys are the reader's own CPU time (wait4 for commands); "
           "PostgreSQL's "
           "is spent in its server processes and is not shown.\n");
}

static int write_csv(const Compare *c, HsError *err)
{
    FILE *f = fopen(c->csv, "w");
    if (f == NULL)
        return hs_error_set(err, -errno, c->csv, HS_NO_BLOCK, "%s", strerror(errno));
    fprintf(f, "cache,reader,kind,rounds,median_s,min_s,max_s,user_s,sys_s,mb_per_s,"
               "ratio_dd_1m\n");
    for (int k = 0; k < NCACHE; k++)
        for (int i = 0; i < c->nrows; i++) {
            const Row *r = &c->rows[i];
            Figures g = figures(c, r, k);
            fprintf(f, "%s,%s,%s,%d,%.6f,%.6f,%.6f,", cache_names[k], r->name,
                    kind_names[r->kind], c->rounds, g.med, g.min, g.max);
            if (r->kind == ROW_PG)
                fprintf(f, ",,");
            else
                fprintf(f, "%.6f,%.6f,", g.user, g.sys);
            fprintf(f, "%.1f,%.4f\n", g.mbs, g.ratio);
        }
    if (fclose(f) != 0)
        return hs_error_set(err, -errno, c->csv, HS_NO_BLOCK, "%s", strerror(errno));
    return 0;
}

static int write_json(const Compare *c, HsError *err)
{
    FILE *f = fopen(c->json, "w");
    if (f == NULL)
        return hs_error_set(err, -errno, c->json, HS_NO_BLOCK, "%s", strerror(errno));
    fprintf(f,
            "{\"table\": \"%s\", \"bytes\": %llu, \"pages\": %llu, \"rounds\": %d, "
            "\"crc\": \"%s\", ",
            c->path, (unsigned long long)c->bytes, (unsigned long long)c->pages,
            c->rounds, crc32_impl());
    if (c->pg)
        fprintf(f, "\"postgres\": {\"count\": %llu, \"sum_v\": %lld}, ",
                (unsigned long long)c->pg_count, (long long)c->pg_sum);
    else
        fprintf(f, "\"postgres\": null, ");
    fprintf(f, "\"rows\": [");
    for (int k = 0; k < NCACHE; k++)
        for (int i = 0; i < c->nrows; i++) {
            const Row *r = &c->rows[i];
            Figures g = figures(c, r, k);
            fprintf(f,
                    "%s\n  {\"cache\": \"%s\", \"reader\": \"%s\", \"kind\": \"%s\", "
                    "\"median_s\": %.6f, \"min_s\": %.6f, \"max_s\": %.6f, ",
                    k + i ? "," : "", cache_names[k], r->name, kind_names[r->kind],
                    g.med, g.min, g.max);
            if (r->kind == ROW_PG)
                fprintf(f, "\"user_s\": null, \"sys_s\": null, ");
            else
                fprintf(f, "\"user_s\": %.6f, \"sys_s\": %.6f, ", g.user, g.sys);
            fprintf(f, "\"mb_per_s\": %.1f, \"ratio_dd_1m\": %.4f, \"runs_s\": [",
                    g.mbs, g.ratio);
            for (int j = 0; j < c->rounds; j++)
                fprintf(f, "%s%.6f", j ? ", " : "", r->wall[k][j]);
            fprintf(f, "]}");
        }
    fprintf(f, "\n]}\n");
    if (fclose(f) != 0)
        return hs_error_set(err, -errno, c->json, HS_NO_BLOCK, "%s", strerror(errno));
    return 0;
}

/* Draw cold and warm medians side by side with gnuplot. */
static int write_plot(const Compare *c, HsError *err)
{
    const char *dot = strrchr(c->plot, '.');
    bool svg = dot && strcmp(dot, ".svg") == 0;
    char data[] = "/tmp/heapscan-plot-XXXXXX";
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
    for (int i = 0; i < c->nrows; i++) {
        Figures cold = figures(c, &c->rows[i], 0), warm = figures(c, &c->rows[i], 1);
        fprintf(f, "\"%s\" %.3f %.3f\n", c->rows[i].name, cold.med * 1e3,
                warm.med * 1e3);
    }
    fclose(f);
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
             svg ? "svg" : "pngcairo", c->plot, c->path, (double)c->bytes / 1e6,
             c->rounds, data);
    char *argv[] = {"gnuplot", "-e", script, NULL};
    Measure m;
    static char errout[2048];
    int status = extcmd_run(argv, &m, NULL, 0, errout, sizeof(errout), err);
    unlink(data);
    if (status < 0)
        return hs_error_set(err, status, c->plot, HS_NO_BLOCK,
                            "cannot draw the chart: gnuplot is not installed "
                            "(apt-get install gnuplot-nox)");
    if (status != 0)
        return hs_error_set(err, -EIO, c->plot, HS_NO_BLOCK, "gnuplot failed: %s",
                            errout);
    return 0;
}

/* ---- setting up ----------------------------------------------------------- */

static void usage(void)
{
    printf(
        "Usage: %s --compare [options] [TABLE]\n"
        "Read TABLE (default t.heap, made with mkheap's defaults if missing) every "
        "raw\n"
        "way (C readers; wc, wc -l and dd as commands), with seqscan under read() and\n"
        "mmap() with and without verification, and with PostgreSQL 15 scanning the "
        "same\n"
        "bytes; cold, then warm; rows interleaved round by round; medians.\n"
        "\n"
        "      --rounds N        rounds (default %d)\n"
        "      --csv FILE        also write the figures as CSV\n"
        "      --json FILE       also write them as JSON\n"
        "      --plot FILE       draw cold and warm side by side (.png or .svg; "
        "gnuplot)\n"
        "      --postgres        include PostgreSQL 15 (default when its server "
        "binaries\n"
        "                        are found; an error if they are not)\n"
        "      --no-postgres     leave PostgreSQL out\n"
        "  -h, --help            show this help and exit\n"
        "\n"
        "Exit status: 0 ok, 1 error, 2 usage, 3 a reader disagreed with its twin or\n"
        "PostgreSQL with seqscan, 128+N interrupted by signal N.\n",
        cli_progname, DEFAULT_ROUNDS);
}

static void parse_args(int argc, char **argv, Compare *c)
{
    enum {
        OPT_COMPARE = 256,
        OPT_ROUNDS,
        OPT_CSV,
        OPT_JSON,
        OPT_PLOT,
        OPT_PG,
        OPT_NO_PG
    };
    static const struct option longopts[] = {
        {"compare", no_argument, NULL, OPT_COMPARE},
        {"rounds", required_argument, NULL, OPT_ROUNDS},
        {"csv", required_argument, NULL, OPT_CSV},
        {"json", required_argument, NULL, OPT_JSON},
        {"plot", required_argument, NULL, OPT_PLOT},
        {"postgres", no_argument, NULL, OPT_PG},
        {"no-postgres", no_argument, NULL, OPT_NO_PG},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int want_pg = -1, opt;
    uint64_t v;
    *c = (Compare){.path = "t.heap", .rounds = DEFAULT_ROUNDS, .dd1m = -1};
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_COMPARE:
            break;
        case OPT_ROUNDS:
            if (cli_parse_u64(optarg, 1, 1000, &v) < 0)
                cli_usage_error("--rounds: '%s' is not a count in 1..1000", optarg);
            c->rounds = (int)v;
            break;
        case OPT_CSV:
            c->csv = optarg;
            break;
        case OPT_JSON:
            c->json = optarg;
            break;
        case OPT_PLOT: {
            const char *dot = strrchr(optarg, '.');
            if (!dot || (strcmp(dot, ".png") != 0 && strcmp(dot, ".svg") != 0))
                cli_usage_error("--plot: '%s' must end in .png or .svg", optarg);
            c->plot = optarg;
            break;
        }
        case OPT_PG:
            want_pg = 1;
            break;
        case OPT_NO_PG:
            want_pg = 0;
            break;
        case 'h':
            usage();
            exit(EXIT_OK);
        default:
            fprintf(stderr, "Try '%s --compare --help' for more information.\n",
                    cli_progname);
            exit(EXIT_USAGE);
        }
    }
    if (optind < argc - 1)
        cli_usage_error("--compare takes one TABLE at most");
    if (optind == argc - 1)
        c->path = argv[optind];
    char bindir[PATH_MAX];
    bool found = pgpeer_find(bindir, sizeof(bindir)) == 0;
    if (want_pg == 1 && !found)
        cli_die(EXIT_ERROR, "--postgres: no PostgreSQL 15 server binaries found (set "
                            "PG_BINDIR, or apt-get install postgresql-15)");
    c->postgres = want_pg == 0 ? false : found;
}

/* Make the default table with mkheap (next to this program) if it is missing. */
static void ensure_table(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return;
    char self[PATH_MAX], mkheap[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        *slash = '\0';
        snprintf(mkheap, sizeof(mkheap), "%s/mkheap", self);
    }
    if (n <= 0 || access(mkheap, X_OK) != 0)
        snprintf(mkheap, sizeof(mkheap), "mkheap");
    fprintf(stderr, "%s: %s does not exist; making it with mkheap's defaults\n",
            cli_progname, path);
    char *argv[] = {mkheap, (char *)path, NULL};
    Measure m;
    HsError err;
    static char out[1024], errout[2048];
    int status = extcmd_run(argv, &m, out, sizeof(out), errout, sizeof(errout), &err);
    if (status < 0)
        exit(cli_report(&err));
    if (status != 0)
        cli_die(EXIT_ERROR, "mkheap failed: %s", errout);
    fputs(out, stderr);
}

/* PostgreSQL's count(*) and sum(v) must equal seqscan's before anything is timed. */
static int start_postgres(Compare *c, HsError *err)
{
    char bindir[PATH_MAX];
    if (pgpeer_find(bindir, sizeof(bindir)) < 0)
        return hs_error_set(err, -ENOENT, c->path, HS_NO_BLOCK,
                            "PostgreSQL 15 not found");
    fprintf(stderr, "%s: starting a private PostgreSQL 15 cluster with %s as table t\n",
            cli_progname, c->path);
    int rc = pgpeer_start(&c->pg, bindir, c->path, err);
    if (rc < 0)
        return rc;
    if ((rc = pgpeer_count_sum(c->pg, &c->pg_count, &c->pg_sum, err)) < 0)
        return rc;
    ScanConfig cfg = {
        .sc_path = c->path,
        .sc_cache = CACHE_ASIS,
        .sc_qual = {.q_col = QUAL_V, .q_op = QUAL_GE, .q_value = INT64_MIN}};
    ScanResult res;
    bufmgr_default_options(&cfg.sc_bufopt);
    if ((rc = scan_run(&cfg, &res, err)) < 0)
        return rc;
    char sum[48];
    if (res.sr_rows_returned != c->pg_count || res.sr_sum_v != (ScanSum)c->pg_sum)
        return hs_error_set(
            err, HS_ECORRUPT, c->path, HS_NO_BLOCK,
            "PostgreSQL counts %llu rows with sum(v) %lld, seqscan %llu "
            "with %s",
            (unsigned long long)c->pg_count, (long long)c->pg_sum,
            (unsigned long long)res.sr_rows_returned,
            scan_sum_format(res.sr_sum_v, sum, sizeof(sum)));
    return 0;
}

static void progress(const Compare *c, int cache, int round, const Row *r)
{
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K%s: %s round %d of %d: %s", cli_progname,
                cache_names[cache], round + 1, c->rounds, r->name);
    else if (r == &c->rows[0])
        fprintf(stderr, "%s: %s round %d of %d\n", cli_progname, cache_names[cache],
                round + 1, c->rounds);
}

static int run_all(Compare *c, HsError *err)
{
    for (int k = 0; k < NCACHE; k++)
        for (int round = 0; round < c->rounds; round++)
            for (int i = 0; i < c->nrows; i++) {
                if (cli_stop_signal)
                    return HS_EINTR;
                progress(c, k, round, &c->rows[i]);
                int rc = run_row(c, &c->rows[i], k, round, err);
                if (rc < 0)
                    return rc;
            }
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
    return 0;
}

int compare_main(int argc, char **argv)
{
    Compare c;
    HsError err;
    int status = EXIT_OK, rc = 0;
    hs_error_clear(&err);
    parse_args(argc, argv, &c);

    CliSignals saved; /* kept to the end: the PostgreSQL cluster must go */
    cli_catch_stop_signals(&saved);

    ensure_table(c.path);
    if ((rc = file_total_bytes(c.path, &c.bytes, &err)) < 0)
        return cli_report(&err);
    c.pages = c.bytes / BLCKSZ;
    build_rows(&c);

    if (c.postgres && (rc = start_postgres(&c, &err)) < 0)
        goto out;
    if ((rc = run_all(&c, &err)) < 0)
        goto out;
    print_text(&c);
    if (c.csv && (rc = write_csv(&c, &err)) < 0)
        goto out;
    if (c.json && (rc = write_json(&c, &err)) < 0)
        goto out;
    if (c.plot && (rc = write_plot(&c, &err)) < 0)
        goto out;
out:
    pgpeer_stop(c.pg); /* the cluster goes, whatever happened */
    if (cli_stop_signal) {
        fprintf(stderr, "\n%s: interrupted by SIG%s%s\n", cli_progname,
                sigabbrev_np(cli_stop_signal),
                c.pg ? "; the PostgreSQL cluster was stopped and removed" : "");
        status = 128 + cli_stop_signal;
    } else if (rc < 0) {
        status = cli_report(&err);
    }
    for (int i = 0; i < c.nrows; i++)
        for (int k = 0; k < NCACHE; k++) {
            free(c.rows[i].wall[k]);
            free(c.rows[i].user[k]);
            free(c.rows[i].sys[k]);
        }
    free(c.rows);
    return status;
}
