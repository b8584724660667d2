/*
 * iobench -- the read() vs mmap() microbenchmark: sequential reads of a
 *            whole file and random block reads and writes, by pread/pwrite
 *            or through a MAP_SHARED mapping, and random page reads through
 *            the buffer manager; best and worst wall time, user and system
 *            time, MB/s, ops/s and a crc32 of what the file holds after.
 *
 * main() parses the options and runs one row (run_single) or the 2002
 * benchmark's whole grid (run_matrix); the rows are measured by
 * bench/iobench_matrix.c and printed by bench/iobench_report.c.  Here are
 * only what a command line decides: making the test file with signals
 * caught, and the text, JSON or CSV framing of the rows.
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "extcmd.h"
#include "iobench_report.h"

#define MAX_SIZES 8
#define MAX_OPS   UINT64_C(1000000000)
#define MAX_FILE  ((uint64_t)1 << 40)

typedef enum Format { FMT_TEXT, FMT_JSON, FMT_CSV } Format;

/* The command line. */
typedef struct Opts {
    IobRow o_row;                /* the row: test, method, block, runs, cache, ... */
    uint64_t o_sizes[MAX_SIZES]; /* --file-size: one, or a list for --matrix */
    int o_nsizes;                /* ... how many */
    Format o_format;             /* text, --json or --csv */
    bool o_matrix;               /* --matrix */
    const char *o_heap;          /* --heap TABLE for the matrix's rnd-page rows */
    const char *o_path;          /* FILE */
    bool o_set[128];             /* which options were given, by short letter */
} Opts;

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
        "                        mmap: the file mapped whole, MAP_SHARED, memcpy;\n"
        "                        io_uring: --io-depth reads and writes in flight,\n"
        "                        a buffer each (seq-read and rnd-rw)\n"
        "      --io-depth N      io_uring: operations in flight (default 16)\n"
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
        "      --matrix          the 2002 grid: FILE.200M and FILE.2000M, seq-read\n"
        "                        and rnd-rw, read and mmap, 1K, 4K and 32 B blocks,\n"
        "                        and rnd-page on --heap TABLE (default FILE.heap, "
        "made\n"
        "                        with mkheap's defaults if missing)\n"
        "      --json, --csv     rows as JSON or CSV instead of text\n"
        "  -h, --help, -V, --version\n"
        "\n"
        "Exit status: 0 ok, 1 error (I/O, not a heap table, methods disagree), "
        "2 usage.\n",
        cli_progname, cli_progname, IOB_MAX_RUNS);
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
        o->o_row.rw_cfg.ic_test = (IobTest)cli_choice("--test", arg, iob_test_names);
        break;
    case 'm':
        o->o_row.rw_cfg.ic_method =
            (IobMethod)cli_choice("--method", arg, iob_method_names);
        break;
    case 'b':
        o->o_row.rw_cfg.ic_block = parse_block(arg);
        break;
    case 's':
        parse_sizes(o, arg);
        break;
    case 'n':
        if (cli_parse_u64(arg, 1, MAX_OPS, &o->o_row.rw_cfg.ic_ops) < 0)
            cli_usage_error("--ops: '%s' is not a count in 1..%llu", arg,
                            (unsigned long long)MAX_OPS);
        break;
    case 'w':
        if (cli_parse_u64(arg, 0, 100, &v) < 0)
            cli_usage_error("--write-pct: '%s' is not a percentage in 0..100", arg);
        o->o_row.rw_cfg.ic_write_pct = (unsigned)v;
        break;
    case 'S':
        if (cli_parse_u64(arg, 0, UINT64_MAX, &o->o_row.rw_cfg.ic_seed) < 0)
            cli_usage_error("--seed: '%s' is not a whole number", arg);
        break;
    case 'c':
        o->o_row.rw_cache = (IobCache)cli_choice("--cache", arg, iob_cache_names);
        break;
    case 'y':
        o->o_row.rw_cfg.ic_sync = (IobSync)cli_choice("--sync", arg, iob_sync_names);
        break;
    case 'd':
        if (cli_parse_u64(arg, 1, IOB_MAX_DEPTH, &v) < 0)
            cli_usage_error("--io-depth: '%s' is not a count in 1..%d", arg,
                            IOB_MAX_DEPTH);
        o->o_row.rw_cfg.ic_depth = (unsigned)v;
        break;
    case 'r':
        if (cli_parse_u64(arg, 1, IOB_MAX_RUNS, &v) < 0)
            cli_usage_error("--repeat: '%s' is not a count in 1..%d", arg,
                            IOB_MAX_RUNS);
        o->o_row.rw_runs = (unsigned)v;
        break;
    }
}

/* Options that make no sense together are usage errors, before any I/O. */
static void check_opts(const Opts *o)
{
    static const struct {
        char letter;
        const char *name;
    } not_matrix[] = {{'t', "--test"},
                      {'m', "--method"},
                      {'b', "--block"},
                      {'d', "--io-depth"}},
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
    if (o->o_set['d'] && o->o_row.rw_cfg.ic_method != IOB_URING)
        cli_usage_error("--io-depth is for --method io_uring");
    if (o->o_row.rw_cfg.ic_test == IOB_RND_PAGE &&
        o->o_row.rw_cfg.ic_method == IOB_URING)
        cli_usage_error("--method io_uring is for seq-read and rnd-rw (rnd-page reads "
                        "through the buffer manager, one page at a time)");
    if (o->o_row.rw_cfg.ic_test == IOB_RND_PAGE) {
        for (size_t i = 0; i < sizeof(not_page) / sizeof(not_page[0]); i++)
            if (o->o_set[(int)not_page[i].letter])
                cli_usage_error(
                    "%s is not for --test rnd-page (8 KiB pages, read only)",
                    not_page[i].name);
        return;
    }
    char b[32], f[32];
    if (o->o_row.rw_cfg.ic_block > o->o_sizes[0])
        cli_usage_error("--block %s is larger than the file (%s)",
                        iob_size_name(o->o_row.rw_cfg.ic_block, b, sizeof(b)),
                        iob_size_name(o->o_sizes[0], f, sizeof(f)));
}

/* Parse argv into o (defaults first); usage errors exit with status 2. */
static void parse_args(int argc, char **argv, Opts *o)
{
    static const struct option longopts[] = {
        {"test", required_argument, NULL, 't'},
        {"method", required_argument, NULL, 'm'},
        {"io-depth", required_argument, NULL, 'd'},
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
    *o = (Opts){.o_row = {.rw_cfg = {.ic_test = IOB_SEQ_READ,
                                     .ic_method = IOB_READ,
                                     .ic_block = 1024,
                                     .ic_ops = 10000,
                                     .ic_write_pct = 50,
                                     .ic_seed = 1,
                                     .ic_depth = 16},
                          .rw_cache = IOB_CACHE_STABLE,
                          .rw_runs = 5},
                .o_sizes = {(uint64_t)200 << 20},
                .o_nsizes = 1};
    while ((c = getopt_long(argc, argv, "t:m:b:s:n:w:r:hV", longopts, NULL)) != -1) {
        if (c == 'h' || c == 'V' || c == '?')
            cli_common_option(c, usage);
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
 * A signal while a test file is being written must not leave its temporary
 * file behind: while iob_file_ensure() runs, SIGINT, SIGTERM and SIGHUP only
 * set cli_stop_signal, which it checks between pieces.  Outside it they kill
 * as usual: a measurement in progress has nothing to clean up.
 */
static int ensure_file(const char *path, uint64_t size, HsError *err)
{
    CliSignals saved;
    bool created;
    cli_catch_stop_signals(&saved);
    int rc = iob_file_ensure(path, size, &cli_stop_signal, &created, err);
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
    IobRow r = o->o_row;
    HsError err;
    r.rw_cfg.ic_path = o->o_path;
    if (r.rw_cfg.ic_test != IOB_RND_PAGE &&
        ensure_file(o->o_path, o->o_sizes[0], &err) < 0)
        return report(&err);
    if (iob_measure_row(&r, &err) < 0)
        return cli_report(&err);
    if (o->o_format == FMT_TEXT) {
        iob_report_text(stdout, &r);
    } else if (o->o_format == FMT_CSV) {
        iob_report_csv_header(stdout);
        iob_report_csv(stdout, &r);
    } else {
        JsonWriter j;
        json_init(&j, stdout);
        iob_report_json(&j, &r);
        putchar('\n');
    }
    return EXIT_OK;
}

/* How the grid prints its rows as they come. */
typedef struct MatrixOut {
    Format mo_format;   /* text table, JSON array or CSV */
    JsonWriter mo_json; /* FMT_JSON: the array the rows go into */
} MatrixOut;

/* Print a row of the grid in the chosen format, at once. */
static void matrix_row(const IobRow *r, void *arg)
{
    MatrixOut *mo = arg;
    if (mo->mo_format == FMT_TEXT)
        iob_report_table_row(stdout, r);
    else if (mo->mo_format == FMT_CSV)
        iob_report_csv(stdout, r);
    else
        iob_report_json(&mo->mo_json, r);
    fflush(stdout);
}

/* The file rows of the grid on o's base name and each --file-size. */
static int matrix_files(const Opts *o, MatrixOut *mo, HsError *err)
{
    char path[PATH_MAX], sz[32];
    struct stat st;
    for (int i = 0; i < o->o_nsizes; i++) {
        snprintf(path, sizeof(path), "%s.%s", o->o_path,
                 iob_size_name(o->o_sizes[i], sz, sizeof(sz)));
        if (stat(path, &st) != 0 || (uint64_t)st.st_size != o->o_sizes[i])
            fprintf(stderr, "%s: making %s (%s)\n", cli_progname, path, sz);
        int rc = ensure_file(path, o->o_sizes[i], err);
        if (rc == 0)
            rc = iob_matrix_file(&o->o_row, path, matrix_row, mo, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The rnd-page rows on --heap TABLE (default FILE.heap, made if missing). */
static int matrix_pages(const Opts *o, MatrixOut *mo, HsError *err)
{
    char heap[PATH_MAX];
    snprintf(heap, sizeof(heap), "%s.heap", o->o_path);
    const char *table = o->o_heap ? o->o_heap : heap;
    if (access(table, F_OK) != 0) {
        fprintf(stderr, "%s: %s does not exist; making it with mkheap's defaults\n",
                cli_progname, table);
        int rc = extcmd_mkheap(table, true, NULL, 0, err);
        if (rc < 0)
            return rc;
    }
    return iob_matrix_pages(&o->o_row, table, matrix_row, mo, err);
}

/* The whole grid: every file size, then rnd-page on the heap table. */
static int run_matrix(const Opts *o)
{
    MatrixOut mo = {.mo_format = o->o_format};
    HsError err;
    if (o->o_format == FMT_TEXT)
        iob_report_table_header(stdout);
    else if (o->o_format == FMT_CSV)
        iob_report_csv_header(stdout);
    json_init(&mo.mo_json, stdout);
    if (o->o_format == FMT_JSON)
        json_begin_array_lines(&mo.mo_json, NULL, 0);
    fflush(stdout);
    int rc = matrix_files(o, &mo, &err);
    if (rc == 0)
        rc = matrix_pages(o, &mo, &err);
    if (o->o_format == FMT_JSON) {
        json_end(&mo.mo_json);
        putchar('\n');
    }
    return rc < 0 ? report(&err) : EXIT_OK;
}

int main(int argc, char **argv)
{
    Opts o;
    cli_init("iobench");
    /* Past RLIMIT_FSIZE, writing the scratch file must fail with EFBIG (an
     * I/O error, its temporary file removed) instead of killing us. */
    signal(SIGXFSZ, SIG_IGN);
    parse_args(argc, argv, &o);
    return o.o_matrix ? run_matrix(&o) : run_single(&o);
}
