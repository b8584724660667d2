/*
 * iobench -- the read() vs mmap() microbenchmark: sequential reads of a
 *            whole file and random block reads and writes, by pread/pwrite
 *            or through a MAP_SHARED mapping, and random page reads through
 *            the buffer manager; best and worst wall time, user and system
 *            time, MB/s, ops/s and a crc32 of what the file holds after.
 *
 * main() parses the options and runs one test (run_single) or the seed's
 * whole grid (run_matrix); measure_row() repeats a run with the cache
 * prepared the same way each time; the print_* functions write a row as
 * text, a table line, JSON or CSV.  The runs themselves are iobench_run.c's.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "extcmd.h"
#include "iobench_run.h"
#include "measure.h"
#include "page.h"

#define MAX_REPEAT 100
#define MAX_SIZES  8
#define MAX_OPS    UINT64_C(1000000000)
#define MAX_FILE   ((uint64_t)1 << 40)

typedef enum Format { FMT_TEXT, FMT_JSON, FMT_CSV } Format;

static const char *const test_names[] = {"seq-read", "rnd-rw", "rnd-page", NULL};
static const char *const method_names[] = {"read", "mmap", NULL};

/* The command line. */
typedef struct Opts {
    IobConfig o_cfg;             /* the run: test, method, block, ops, ... */
    uint64_t o_sizes[MAX_SIZES]; /* --file-size: one, or a list for --matrix */
    int o_nsizes;                /* ... how many */
    CacheMode o_cache;           /* CACHE_WARM (stable) or CACHE_COLD */
    unsigned o_repeat;           /* runs of each row */
    Format o_format;             /* text, --json or --csv */
    bool o_matrix;               /* --matrix */
    const char *o_heap;          /* --heap TABLE for the matrix's rnd-page rows */
    const char *o_path;          /* FILE */
    bool o_set[128];             /* which options were given, by short letter */
} Opts;

/* One measured row: a configuration run o_repeat times. */
typedef struct Row {
    IobConfig r_cfg;        /* what was run */
    uint64_t r_file_bytes;  /* the file's length */
    IobResult r_res;        /* the last run's counts (the same every run) */
    unsigned r_runs;        /* runs */
    double r_best, r_worst; /* least and most wall seconds */
    double r_median;        /* median wall seconds */
    double r_user, r_sys;   /* median CPU seconds, user and kernel */
    double r_minflt;        /* median minor faults */
    double r_majflt;        /* median major faults */
    bool r_has_crc;         /* r_crc is set (not for rnd-page) */
    uint32_t r_crc;         /* crc32 of the file after the runs */
} Row;

static void usage(void)
{
    printf(
        "Usage: %s [options] FILE\n"
        "       %s --matrix [options] FILE\n"
        "Time read() against mmap(): sequential reads of FILE, or random block\n"
        "reads and writes, and random 8 KiB pages of a heap table through the\n"
        "buffer manager.  FILE is scratch: it is (re)created at --file-size, with\n"
        "pseudo-random non-zero bytes, when missing or of another size.\n"
        "\n"
        "  -t, --test T          seq-read (default): every block in order; rnd-rw:\n"
        "                        --ops random blocks, --write-pct of them written;\n"
        "                        rnd-page: --ops random pages of the heap table FILE\n"
        "                        through the buffer manager\n"
        "  -m, --method M        read (default): pread/pwrite through a buffer;\n"
        "                        mmap: the file mapped whole, MAP_SHARED, memcpy\n"
        "  -b, --block SIZE      a power of two from 32 B to 1M (default 1K)\n"
        "  -s, --file-size SIZE  default 200M (--matrix: a list, default 200M,2000M)\n"
        "  -n, --ops N           rnd-rw, rnd-page: operations (default 10000)\n"
        "  -w, --write-pct P     rnd-rw: percentage of writes (default 50)\n"
        "      --seed N          the random sequence, same for both methods "
        "(default 1)\n"
        "      --cache stable|cold  before each run: read the file once (default)\n"
        "                        or evict it from the page cache\n"
        "      --sync none|end   end: fsync or msync(MS_SYNC) before the clock stops\n"
        "  -r, --repeat N        runs (default 5, at most %d): best and worst wall\n"
        "                        time, median user and system time\n"
        "      --matrix          the seed's grid: FILE.200M and FILE.2000M, seq-read\n"
        "                        and rnd-rw, read and mmap, 1K, 4K and 32 B blocks,\n"
        "                        and rnd-page on --heap TABLE (default FILE.heap, "
        "made\n"
        "                        with mkheap's defaults if missing)\n"
        "      --json, --csv     rows as JSON or CSV instead of text\n"
        "  -h, --help, -V, --version\n"
        "\n"
        "Exit status: 0 ok, 1 error (I/O, not a heap table, methods disagree), "
        "2 usage.\n",
        cli_progname, cli_progname, MAX_REPEAT);
}

/* "200M", "2000M", "1K", "32B": the largest unit that divides exactly. */
static const char *fmt_size(uint64_t n, char *buf, size_t len)
{
    static const char units[] = "BKMGT";
    int u = 0;
    while (u < 4 && n >= 1024 && n % 1024 == 0)
        n /= 1024, u++;
    snprintf(buf, len, "%llu%c", (unsigned long long)n, units[u]);
    return buf;
}

/* --block: a power of two in [32, 1M]. */
static size_t parse_block(const char *arg)
{
    uint64_t b;
    if (cli_parse_size(arg, &b) < 0 || b < IOB_MIN_BLOCK || b > IOB_MAX_BLOCK ||
        (b & (b - 1)) != 0)
        cli_usage_error("--block: '%s' is not a power of two from 32 B to 1M", arg);
    return (size_t)b;
}

/* --file-size: a size, or with --matrix a comma-separated list of them. */
static void parse_sizes(Opts *o, const char *arg)
{
    char copy[256], *save = NULL;
    snprintf(copy, sizeof(copy), "%s", arg);
    o->o_nsizes = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint64_t s;
        if (o->o_nsizes == MAX_SIZES || cli_parse_size(t, &s) < 0 ||
            s < IOB_MIN_BLOCK || s > MAX_FILE)
            cli_usage_error("--file-size: '%s' is not a size from 32 B to 1T (or up "
                            "to %d of them, for --matrix)",
                            arg, MAX_SIZES);
        o->o_sizes[o->o_nsizes++] = s;
    }
    if (o->o_nsizes == 0)
        cli_usage_error("--file-size: '%s' is not a size", arg);
}

/* One option letter and its argument into o. */
static void parse_one(Opts *o, int c, const char *arg)
{
    uint64_t v;
    switch (c) {
    case 't':
        o->o_cfg.ic_test = (IobTest)cli_choice("--test", arg, test_names);
        break;
    case 'm':
        o->o_cfg.ic_method = (IobMethod)cli_choice("--method", arg, method_names);
        break;
    case 'b':
        o->o_cfg.ic_block = parse_block(arg);
        break;
    case 's':
        parse_sizes(o, arg);
        break;
    case 'n':
        if (cli_parse_u64(arg, 1, MAX_OPS, &o->o_cfg.ic_ops) < 0)
            cli_usage_error("--ops: '%s' is not a count in 1..%llu", arg,
                            (unsigned long long)MAX_OPS);
        break;
    case 'w':
        if (cli_parse_u64(arg, 0, 100, &v) < 0)
            cli_usage_error("--write-pct: '%s' is not a percentage in 0..100", arg);
        o->o_cfg.ic_write_pct = (unsigned)v;
        break;
    case 'S':
        if (cli_parse_u64(arg, 0, UINT64_MAX, &o->o_cfg.ic_seed) < 0)
            cli_usage_error("--seed: '%s' is not a whole number", arg);
        break;
    case 'c':
        o->o_cache = cli_choice("--cache", arg,
                                (const char *const[]){"stable", "cold", NULL}) == 0
                         ? CACHE_WARM
                         : CACHE_COLD;
        break;
    case 'y':
        o->o_cfg.ic_sync_end =
            cli_choice("--sync", arg, (const char *const[]){"none", "end", NULL}) == 1;
        break;
    case 'r':
        if (cli_parse_u64(arg, 1, MAX_REPEAT, &v) < 0)
            cli_usage_error("--repeat: '%s' is not a count in 1..%d", arg, MAX_REPEAT);
        o->o_repeat = (unsigned)v;
        break;
    }
}

/* Options that make no sense together are usage errors, before any I/O. */
static void check_opts(const Opts *o)
{
    static const struct {
        char letter;
        const char *name;
    } not_matrix[] = {{'t', "--test"}, {'m', "--method"}, {'b', "--block"}},
      not_page[] = {{'b', "--block"},
                    {'s', "--file-size"},
                    {'w', "--write-pct"},
                    {'y', "--sync"}};
    if (o->o_matrix) {
        for (size_t i = 0; i < sizeof(not_matrix) / sizeof(not_matrix[0]); i++)
            if (o->o_set[(int)not_matrix[i].letter])
                cli_usage_error("%s is not for --matrix, which runs them all",
                                not_matrix[i].name);
        return;
    }
    if (o->o_heap)
        cli_usage_error("--heap is for --matrix (rnd-page takes the table as FILE)");
    if (o->o_nsizes > 1)
        cli_usage_error("--file-size: a list is for --matrix");
    if (o->o_cfg.ic_test == IOB_RND_PAGE) {
        for (size_t i = 0; i < sizeof(not_page) / sizeof(not_page[0]); i++)
            if (o->o_set[(int)not_page[i].letter])
                cli_usage_error(
                    "%s is not for --test rnd-page (8 KiB pages, read only)",
                    not_page[i].name);
        return;
    }
    char b[32], f[32];
    if (o->o_cfg.ic_block > o->o_sizes[0])
        cli_usage_error("--block %s is larger than the file (%s)",
                        fmt_size(o->o_cfg.ic_block, b, sizeof(b)),
                        fmt_size(o->o_sizes[0], f, sizeof(f)));
}

/* Parse argv into o (defaults first); usage errors exit with status 2. */
static void parse_args(int argc, char **argv, Opts *o)
{
    static const struct option longopts[] = {
        {"test", required_argument, NULL, 't'},
        {"method", required_argument, NULL, 'm'},
        {"block", required_argument, NULL, 'b'},
        {"file-size", required_argument, NULL, 's'},
        {"ops", required_argument, NULL, 'n'},
        {"write-pct", required_argument, NULL, 'w'},
        {"seed", required_argument, NULL, 'S'},
        {"cache", required_argument, NULL, 'c'},
        {"sync", required_argument, NULL, 'y'},
        {"repeat", required_argument, NULL, 'r'},
        {"matrix", no_argument, NULL, 'M'},
        {"heap", required_argument, NULL, 'H'},
        {"json", no_argument, NULL, 'j'},
        {"csv", no_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;
    *o = (Opts){.o_cfg = {.ic_test = IOB_SEQ_READ,
                          .ic_method = IOB_READ,
                          .ic_block = 1024,
                          .ic_ops = 10000,
                          .ic_write_pct = 50,
                          .ic_seed = 1},
                .o_sizes = {(uint64_t)200 << 20},
                .o_nsizes = 1,
                .o_cache = CACHE_WARM,
                .o_repeat = 5};
    while ((c = getopt_long(argc, argv, "t:m:b:s:n:w:r:hV", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage();
            exit(EXIT_OK);
        }
        if (c == 'V')
            cli_version();
        if (c == '?')
            cli_bad_option();
        if (c > 0 && c < 128)
            o->o_set[c] = true;
        if (c == 'M')
            o->o_matrix = true;
        else if (c == 'H')
            o->o_heap = optarg;
        else if (c == 'j' || c == 'C')
            o->o_format = c == 'j' ? FMT_JSON : FMT_CSV;
        else
            parse_one(o, c, optarg);
    }
    if (o->o_set['j'] && o->o_set['C'])
        cli_usage_error("--json and --csv: choose one");
    o->o_path = cli_one_operand(argc, argv, "FILE");
    if (o->o_matrix && !o->o_set['s'])
        o->o_sizes[1] = (uint64_t)2000 << 20, o->o_nsizes = 2;
    check_opts(o);
}

/*
 * Run r->r_cfg o->o_repeat times, the page cache prepared before each, and
 * fill in the spread; then the crc32 of the file (not for rnd-page, which
 * only reads).  0, or a negative code with err filled.
 */
static int measure_row(const Opts *o, Row *r, HsError *err)
{
    double wall[MAX_REPEAT], usr[MAX_REPEAT], sys[MAX_REPEAT], minf[MAX_REPEAT],
        majf[MAX_REPEAT], lo, hi;
    int rc;
    r->r_runs = o->o_repeat;
    for (unsigned i = 0; i < o->o_repeat; i++) {
        if ((rc = cache_prepare(r->r_cfg.ic_path, o->o_cache, err)) < 0 ||
            (rc = iob_run(&r->r_cfg, &r->r_res, err)) < 0)
            return rc;
        wall[i] = r->r_res.ir_m.m_wall_s;
        usr[i] = r->r_res.ir_m.m_user_s;
        sys[i] = r->r_res.ir_m.m_sys_s;
        minf[i] = (double)r->r_res.ir_m.m_minflt;
        majf[i] = (double)r->r_res.ir_m.m_majflt;
    }
    int n = (int)o->o_repeat;
    measure_spread(wall, n, &r->r_best, &r->r_median, &r->r_worst);
    measure_spread(usr, n, &lo, &r->r_user, &hi);
    measure_spread(sys, n, &lo, &r->r_sys, &hi);
    measure_spread(minf, n, &lo, &r->r_minflt, &hi);
    measure_spread(majf, n, &lo, &r->r_majflt, &hi);
    if ((rc = file_total_bytes(r->r_cfg.ic_path, &r->r_file_bytes, err)) < 0)
        return rc;
    r->r_has_crc = r->r_cfg.ic_test != IOB_RND_PAGE;
    uint64_t len;
    return r->r_has_crc ? iob_checksum(r->r_cfg.ic_path, &r->r_crc, &len, err) : 0;
}

static double per_s(double x, double s)
{
    return s > 0 ? x / s : 0;
}

/* A single run's report: what was run, then the figures, one group a line. */
static void print_text(const Opts *o, const Row *r)
{
    const IobConfig *c = &r->r_cfg;
    const IobResult *s = &r->r_res;
    char b[32], f[32];
    printf("%s: %s, method %s, block %s, file %s (%llu bytes), seed %llu, %u run%s, "
           "cache %s, sync %s\n",
           c->ic_path, test_names[c->ic_test], method_names[c->ic_method],
           fmt_size(c->ic_test == IOB_RND_PAGE ? BLCKSZ : c->ic_block, b, sizeof(b)),
           fmt_size(r->r_file_bytes, f, sizeof(f)), (unsigned long long)r->r_file_bytes,
           (unsigned long long)c->ic_seed, r->r_runs, r->r_runs == 1 ? "" : "s",
           o->o_cache == CACHE_COLD ? "cold" : "stable",
           c->ic_sync_end ? "end" : "none");
    printf("ops %llu (%llu reads, %llu writes), %llu bytes\n",
           (unsigned long long)s->ir_ops, (unsigned long long)s->ir_reads,
           (unsigned long long)s->ir_writes, (unsigned long long)s->ir_bytes);
    printf("wall best %.6f s, worst %.6f s, median %.6f s; user %.6f s, sys %.6f s "
           "(medians)\n",
           r->r_best, r->r_worst, r->r_median, r->r_user, r->r_sys);
    printf("%.1f MB/s, %.0f ops/s (best run)\n",
           per_s((double)s->ir_bytes / 1e6, r->r_best),
           per_s((double)s->ir_ops, r->r_best));
    if (c->ic_test == IOB_RND_PAGE)
        printf("buffer manager: %llu hits, %llu reads in %llu calls\n",
               (unsigned long long)s->ir_buf.bs_hits,
               (unsigned long long)s->ir_buf.bs_reads,
               (unsigned long long)s->ir_buf.bs_read_calls);
    if (r->r_has_crc)
        printf("crc32 0x%08x\n", r->r_crc);
}

/* The grid's header, in the seed's column order. */
static void print_table_header(void)
{
    printf("%-6s %-9s %-5s %-6s %11s %11s %10s %10s %10s %11s  %s\n", "file", "test",
           "block", "method", "best s", "worst s", "user s", "sys s", "MB/s", "ops/s",
           "crc32");
}

/* One line of the grid. */
static void print_table_row(const Row *r)
{
    const IobConfig *c = &r->r_cfg;
    char b[32], f[32], crc[16] = "-";
    if (r->r_has_crc)
        snprintf(crc, sizeof(crc), "%08x", r->r_crc);
    printf("%-6s %-9s %-5s %-6s %11.6f %11.6f %10.6f %10.6f %10.1f %11.0f  %s\n",
           fmt_size(r->r_file_bytes, f, sizeof(f)), test_names[c->ic_test],
           fmt_size(c->ic_test == IOB_RND_PAGE ? BLCKSZ : c->ic_block, b, sizeof(b)),
           method_names[c->ic_method], r->r_best, r->r_worst, r->r_user, r->r_sys,
           per_s((double)r->r_res.ir_bytes / 1e6, r->r_best),
           per_s((double)r->r_res.ir_ops, r->r_best), crc);
    fflush(stdout);
}

/* s as a JSON string or a CSV field (quoted when it must be). */
static void print_string(const char *s, bool json)
{
    if (!json && strpbrk(s, ",\"\n") == NULL) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            fputs(json ? "\\\"" : "\"\"", stdout);
        else if (json && *s == '\\')
            fputs("\\\\", stdout);
        else if (json && (unsigned char)*s < 0x20)
            printf("\\u%04x", (unsigned char)*s);
        else
            putchar(*s);
    }
    putchar('"');
}

static const char csv_header[] =
    "file,file_bytes,test,method,block,ops,reads,writes,bytes,seed,write_pct,runs,"
    "cache,sync,best_s,worst_s,median_s,user_s,sys_s,minflt,majflt,mb_per_s,"
    "ops_per_s,crc32,buf_hits,buf_reads,buf_read_calls\n";

/*
 * One row as a JSON object or a CSV line, the fields in csv_header's order
 * (JSON: named; crc32 a "0x..." string, null for rnd-page).
 */
static void print_record(const Opts *o, const Row *r, bool json)
{
    const IobConfig *c = &r->r_cfg;
    const IobResult *s = &r->r_res;
    const char *fmt_json =
        ", \"file_bytes\": %llu, \"test\": \"%s\", \"method\": \"%s\", \"block\": %zu, "
        "\"ops\": %llu, \"reads\": %llu, \"writes\": %llu, \"bytes\": %llu, \"seed\": "
        "%llu, \"write_pct\": %u, \"runs\": %u, \"cache\": \"%s\", \"sync\": \"%s\", "
        "\"best_s\": %.6f, \"worst_s\": %.6f, \"median_s\": %.6f, \"user_s\": %.6f, "
        "\"sys_s\": %.6f, \"minflt\": %.0f, \"majflt\": %.0f, \"mb_per_s\": %.1f, "
        "\"ops_per_s\": %.0f, \"crc32\": ";
    const char *fmt_csv = ",%llu,%s,%s,%zu,%llu,%llu,%llu,%llu,%llu,%u,%u,%s,%s,%.6f,"
                          "%.6f,%.6f,%.6f,%.6f,%.0f,%.0f,%.1f,%.0f,";
    fputs(json ? "{\"file\": " : "", stdout);
    print_string(c->ic_path, json);
    printf(json ? fmt_json : fmt_csv, (unsigned long long)r->r_file_bytes,
           test_names[c->ic_test], method_names[c->ic_method],
           c->ic_test == IOB_RND_PAGE ? (size_t)BLCKSZ : c->ic_block,
           (unsigned long long)s->ir_ops, (unsigned long long)s->ir_reads,
           (unsigned long long)s->ir_writes, (unsigned long long)s->ir_bytes,
           (unsigned long long)c->ic_seed, c->ic_write_pct, r->r_runs,
           o->o_cache == CACHE_COLD ? "cold" : "stable",
           c->ic_sync_end ? "end" : "none", r->r_best, r->r_worst, r->r_median,
           r->r_user, r->r_sys, r->r_minflt, r->r_majflt,
           per_s((double)s->ir_bytes / 1e6, r->r_best),
           per_s((double)s->ir_ops, r->r_best));
    if (r->r_has_crc)
        printf(json ? "\"0x%08x\"" : "0x%08x", r->r_crc);
    else
        fputs(json ? "null" : "", stdout);
    printf(json ? ", \"buf_hits\": %llu, \"buf_reads\": %llu, \"buf_read_calls\": %llu}"
                : ",%llu,%llu,%llu\n",
           (unsigned long long)s->ir_buf.bs_hits,
           (unsigned long long)s->ir_buf.bs_reads,
           (unsigned long long)s->ir_buf.bs_read_calls);
    fflush(stdout);
}

/*
 * A signal while a test file is being written must not leave its temporary
 * file behind: while iob_file_ensure() runs, SIGINT, SIGTERM and SIGHUP only
 * set cli_stop_signal, which it checks between pieces.  Outside it they kill
 * as usual: a measurement in progress has nothing to clean up.
 */
static int ensure_file(const char *path, uint64_t size, bool *created, HsError *err)
{
    CliSignals saved;
    cli_catch_stop_signals(&saved);
    int rc = iob_file_ensure(path, size, &cli_stop_signal, created, err);
    cli_restore_stop_signals(&saved);
    if (cli_stop_signal &&
        rc == 0) /* it came after the file was complete: die of it now */
        raise(cli_stop_signal);
    return rc;
}

/* cli_report(), or the exit status of the signal that interrupted us. */
static int report(const HsError *err)
{
    if (err->code == HS_EINTR && cli_stop_signal) {
        fprintf(stderr, "%s: %s: interrupted by SIG%s; the partial file was removed\n",
                cli_progname, err->file, sigabbrev_np(cli_stop_signal));
        return 128 + cli_stop_signal;
    }
    return cli_report(err);
}

/* One test, one method: make the file, measure, report. */
static int run_single(Opts *o)
{
    Row r = {.r_cfg = o->o_cfg};
    HsError err;
    bool created;
    int rc;
    r.r_cfg.ic_path = o->o_path;
    if (r.r_cfg.ic_test != IOB_RND_PAGE &&
        (rc = ensure_file(o->o_path, o->o_sizes[0], &created, &err)) < 0)
        return report(&err);
    if ((rc = measure_row(o, &r, &err)) < 0)
        return cli_report(&err);
    if (o->o_format == FMT_TEXT)
        print_text(o, &r);
    else if (o->o_format == FMT_CSV)
        fputs(csv_header, stdout), print_record(o, &r, false);
    else
        print_record(o, &r, true), putchar('\n');
    return EXIT_OK;
}

/*
 * Make the heap table for the matrix's rnd-page rows with mkheap's defaults
 * unless it exists: the mkheap beside this program (found through
 * /proc/self/exe), else the one on PATH.
 */
static int ensure_heap(const char *path, HsError *err)
{
    struct stat st;
    char self[PATH_MAX], mkheap[PATH_MAX + 16] = "mkheap", out[1024], errout[2048];
    Measure m;
    if (stat(path, &st) == 0)
        return 0;
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        *strrchr(self, '/') = '\0';
        snprintf(mkheap, sizeof(mkheap), "%s/mkheap", self);
        if (access(mkheap, X_OK) != 0)
            snprintf(mkheap, sizeof(mkheap), "mkheap");
    }
    fprintf(stderr, "%s: %s does not exist; making it with mkheap's defaults\n",
            cli_progname, path);
    char *argv[] = {mkheap, "--quiet", (char *)path, NULL};
    int status = extcmd_run(argv, &m, out, sizeof(out), errout, sizeof(errout), err);
    if (status < 0)
        return status;
    if (status != 0)
        return hs_error_set(err, -EIO, path, HS_NO_BLOCK,
                            "mkheap failed (status %d): %s", status,
                            strtok(errout, "\n") ? errout : "");
    return 0;
}

/* Measure one row of the grid and print it in the chosen format. */
static int matrix_row(const Opts *o, Row *r, int *nrows, HsError *err)
{
    int rc = measure_row(o, r, err);
    if (rc < 0)
        return rc;
    if (o->o_format == FMT_TEXT)
        print_table_row(r);
    else if (o->o_format == FMT_CSV)
        print_record(o, r, false);
    else
        fputs(*nrows ? ",\n" : "", stdout), print_record(o, r, true);
    (*nrows)++;
    return 0;
}

/*
 * The file tests of the grid on one file: seq-read then rnd-rw, blocks 1K,
 * 4K, 32 B, read then mmap.  After an rnd-rw pair both methods must have
 * left the same bytes (the sequence is idempotent): a mismatch is an error.
 */
static int matrix_file(const Opts *o, const char *path, int *nrows, HsError *err)
{
    static const size_t blocks[] = {1024, 4096, 32};
    for (int t = IOB_SEQ_READ; t <= IOB_RND_RW; t++)
        for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
            Row r[2];
            for (int m = IOB_READ; m <= IOB_MMAP; m++) {
                r[m] = (Row){.r_cfg = o->o_cfg};
                r[m].r_cfg.ic_path = path;
                r[m].r_cfg.ic_test = (IobTest)t;
                r[m].r_cfg.ic_method = (IobMethod)m;
                r[m].r_cfg.ic_block = blocks[b];
                int rc = matrix_row(o, &r[m], nrows, err);
                if (rc < 0)
                    return rc;
            }
            if (t == IOB_RND_RW && r[0].r_crc != r[1].r_crc)
                return hs_error_set(err, -EIO, path, HS_NO_BLOCK,
                                    "rnd-rw left different bytes under read and mmap "
                                    "(crc32 0x%08x and 0x%08x)",
                                    r[0].r_crc, r[1].r_crc);
        }
    return 0;
}

/* Whether iob_file_ensure() will (re)write path, to say so first. */
static bool needs_making(const char *path, uint64_t size)
{
    struct stat st;
    return stat(path, &st) != 0 || (uint64_t)st.st_size != size;
}

/* The whole grid: every file size, then rnd-page on the heap table. */
static int run_matrix(Opts *o)
{
    char path[PATH_MAX], heap[PATH_MAX], sz[32];
    HsError err;
    bool created;
    int rc = 0, nrows = 0;
    snprintf(heap, sizeof(heap), "%s.heap", o->o_path);
    if (o->o_format == FMT_TEXT)
        print_table_header();
    else
        fputs(o->o_format == FMT_CSV ? csv_header : "[\n", stdout);
    for (int i = 0; i < o->o_nsizes && rc == 0; i++) {
        snprintf(path, sizeof(path), "%s.%s", o->o_path,
                 fmt_size(o->o_sizes[i], sz, sizeof(sz)));
        if (needs_making(path, o->o_sizes[i]))
            fprintf(stderr, "%s: making %s (%s)\n", cli_progname, path, sz);
        if ((rc = ensure_file(path, o->o_sizes[i], &created, &err)) == 0)
            rc = matrix_file(o, path, &nrows, &err);
    }
    const char *table = o->o_heap ? o->o_heap : heap;
    if (rc == 0 && (rc = ensure_heap(table, &err)) == 0)
        for (int m = IOB_READ; m <= IOB_MMAP && rc == 0; m++) {
            Row r = {.r_cfg = o->o_cfg};
            r.r_cfg.ic_path = table;
            r.r_cfg.ic_test = IOB_RND_PAGE;
            r.r_cfg.ic_method = (IobMethod)m;
            rc = matrix_row(o, &r, &nrows, &err);
        }
    if (o->o_format == FMT_JSON)
        fputs("\n]\n", stdout);
    return rc < 0 ? report(&err) : EXIT_OK;
}

int main(int argc, char **argv)
{
    Opts o;
    cli_init("iobench");
    parse_args(argc, argv, &o);
    return o.o_matrix ? run_matrix(&o) : run_single(&o);
}
