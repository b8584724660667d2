/*
 * mkheap -- write a heap table of t (id int4, k int4, v int8, pad text) in
 *           PostgreSQL 15's page format, with the project's page checksums.
 *
 * main() parses the command line, works out the rows and pages, and has
 * heapwrite() (bench/heapwrite.c) build the table into temporary files
 * beside FILE, fsync them and rename them into place only when complete:
 * on any failure or signal nothing is left.  The generator checks the pad
 * and fillfactor (heapgen_check(); its HS_EUSAGE error exits 2).
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "heapwrite.h"
#include "measure.h"
#include "relfile.h"

#define DEFAULT_SIZE (UINT64_C(177) << 20) /* the 1998 benchmark's 177 MB table */

static void usage(void)
{
    printf(
        "Usage: %s [options] FILE\n"
        "Write a heap table of t (id int4, k int4, v int8, pad text) in PostgreSQL "
        "15's\n"
        "page format, frozen tuples, 8 KiB pages with a zlib checksum mixed with the\n"
        "block number. Rows: id 1..N, k in [0, 1000000), v in [0, 2^32), printable "
        "pad,\n"
        "all derived from the seed: the same options give the same bytes anywhere.\n"
        "\n"
        "  -s, --size SIZE         table size in bytes, a whole number of 8 KiB "
        "pages;\n"
        "                          suffixes k, M, G, T (also KiB, MiB, ...: powers of\n"
        "                          1024) (default 177MiB = 22656 pages)\n"
        "  -r, --rows N            write N rows instead (the last page may be "
        "partial)\n"
        "  -p, --pad N             bytes of text per row (default %d: 100-byte "
        "tuples,\n"
        "                          75 a page); above 126 the text takes a 4-byte "
        "header\n"
        "  -f, --fillfactor PCT    fill pages to PCT percent, 10-100 (default 100)\n"
        "      --seed N            seed of every value (default %d)\n"
        "      --all-visible       set PD_ALL_VISIBLE on every page\n"
        "      --force             replace FILE if it exists\n"
        "      --segment-size SIZE pages per segment file as a size (default 1GiB, as\n"
        "                          PostgreSQL; smaller only for tests)\n"
        "  -q, --quiet             no progress bar and no summary line\n"
        "  -h, --help              show this help and exit\n"
        "  -V, --version           show the version and exit\n"
        "\n"
        "Tables over 1 GiB are split into FILE, FILE.1, FILE.2, ... as PostgreSQL "
        "does.\n"
        "Exit status: 0 written, 1 I/O or system error, 2 usage error, 4 FILE exists\n"
        "(without --force), 128+N killed by signal N (nothing is left behind).\n",
        cli_progname, HEAPGEN_DEFAULT_PAD, HEAPGEN_DEFAULT_SEED);
}

/* The command line. */
typedef struct Options {
    HeapGenSpec spec;    /* --pad, --fillfactor, --seed, --all-visible */
    uint64_t size;       /* --size: bytes, when rows == 0 */
    uint64_t rows;       /* --rows asked for, or 0 */
    uint64_t seg_blocks; /* --segment-size: pages per segment */
    bool force;          /* --force */
    bool quiet;          /* --quiet */
    const char *path;    /* FILE */
} Options;

enum { OPT_SEED = 256, OPT_ALL_VISIBLE, OPT_FORCE, OPT_SEGMENT_SIZE };

/* --size: bytes, a whole number of pages. */
static uint64_t size_arg(const char *arg)
{
    uint64_t size;
    if (cli_parse_size(arg, &size) < 0 || size == 0)
        cli_usage_error("--size: '%s' is not a size (e.g. 177MiB, 64M, 8192)", arg);
    uint64_t below = size / BLCKSZ * BLCKSZ;
    if (size % BLCKSZ != 0 && below > UINT64_MAX - BLCKSZ) /* no page above it */
        cli_usage_error("--size: %llu bytes is not a whole number of %d-byte pages "
                        "(%llu would be)",
                        (unsigned long long)size, BLCKSZ, (unsigned long long)below);
    if (size % BLCKSZ != 0)
        cli_usage_error("--size: %llu bytes is not a whole number of %d-byte "
                        "pages (%llu or %llu would be)",
                        (unsigned long long)size, BLCKSZ, (unsigned long long)below,
                        (unsigned long long)(below + BLCKSZ));
    return size;
}

/* --segment-size: bytes given, pages kept, so whole pages up to 1 GiB. */
static uint64_t segment_arg(const char *arg)
{
    uint64_t v;
    if (cli_parse_size(arg, &v) < 0 || v == 0 || v % BLCKSZ != 0 ||
        v / BLCKSZ > RELFILE_SEG_BLOCKS)
        cli_usage_error("--segment-size: '%s' is not a whole number of pages "
                        "up to 1GiB",
                        arg);
    return v / BLCKSZ;
}

/* A whole number for a field whose range the generator checks. */
static uint32_t number_arg(const char *opt, const char *arg)
{
    uint64_t v;
    if (cli_parse_u64(arg, 0, UINT32_MAX, &v) < 0)
        cli_usage_error("%s: '%s' is not a number", opt, arg);
    return (uint32_t)v;
}

/* One option and its argument into o; *have_size says --size was given. */
static void parse_one(Options *o, int c, const char *arg, bool *have_size)
{
    switch (c) {
    case 's':
        o->size = size_arg(arg);
        *have_size = true;
        break;
    case 'r':
        if (cli_parse_u64(arg, 1, HEAPGEN_MAX_ROWS, &o->rows) < 0)
            cli_usage_error("--rows: '%s' is not a row count in 1..%d", arg,
                            HEAPGEN_MAX_ROWS);
        break;
    case 'p': /* the ranges of --pad and --fillfactor are heapgen_check()'s */
        o->spec.hg_pad_len = number_arg("--pad", arg);
        break;
    case 'f':
        o->spec.hg_fillfactor = number_arg("--fillfactor", arg);
        break;
    case OPT_SEED:
        if (cli_parse_u64(arg, 0, UINT64_MAX, &o->spec.hg_seed) < 0)
            cli_usage_error("--seed: '%s' is not a whole number", arg);
        break;
    case OPT_SEGMENT_SIZE:
        o->seg_blocks = segment_arg(arg);
        break;
    case OPT_ALL_VISIBLE:
        o->spec.hg_all_visible = true;
        break;
    case OPT_FORCE:
        o->force = true;
        break;
    case 'q':
        o->quiet = true;
        break;
    }
}

/* Parse argv into o (defaults first); usage errors exit with status 2. */
static void parse_args(int argc, char **argv, Options *o)
{
    static const struct option longopts[] = {
        {"size", required_argument, NULL, 's'},
        {"rows", required_argument, NULL, 'r'},
        {"pad", required_argument, NULL, 'p'},
        {"fillfactor", required_argument, NULL, 'f'},
        {"seed", required_argument, NULL, OPT_SEED},
        {"all-visible", no_argument, NULL, OPT_ALL_VISIBLE},
        {"force", no_argument, NULL, OPT_FORCE},
        {"segment-size", required_argument, NULL, OPT_SEGMENT_SIZE},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    bool have_size = false;
    int c;
    *o = (Options){
        .spec = {.hg_seed = HEAPGEN_DEFAULT_SEED,
                 .hg_pad_len = HEAPGEN_DEFAULT_PAD,
                 .hg_fillfactor = 100},
        .size = DEFAULT_SIZE,
        .seg_blocks = RELFILE_SEG_BLOCKS,
    };
    while ((c = getopt_long(argc, argv, "s:r:p:f:qhV", longopts, NULL)) != -1) {
        if (c == 'h' || c == 'V' || c == '?')
            cli_common_option(c, usage);
        parse_one(o, c, optarg, &have_size);
    }
    if (have_size && o->rows != 0)
        cli_usage_error("--size and --rows exclude each other");
    o->path = cli_one_operand(argc, argv, "FILE");
}

/*
 * The table o asks for: rows and pages, from --rows or from --size, checked
 * against what an int4 id and the segment files allow.
 */
static void plan(const Options *o, HeapWriteSpec *w)
{
    HsError err;
    if (heapgen_check(&o->spec, &err) < 0)
        exit(cli_report(&err));
    unsigned per_page = heapgen_tuples_per_page(&o->spec);
    *w = (HeapWriteSpec){.hw_path = o->path,
                         .hw_gen = o->spec,
                         .hw_rows = o->rows,
                         .hw_seg_blocks = (uint32_t)o->seg_blocks,
                         .hw_replace = o->force};
    if (o->rows != 0) {
        w->hw_pages = (o->rows + per_page - 1) / per_page;
    } else {
        w->hw_pages = o->size / BLCKSZ;
        w->hw_rows = w->hw_pages * per_page;
        if (w->hw_rows > HEAPGEN_MAX_ROWS)
            cli_usage_error("--size: %llu pages of %u rows is more than %d rows (id is "
                            "an int4)",
                            (unsigned long long)w->hw_pages, per_page,
                            HEAPGEN_MAX_ROWS);
    }
    if ((w->hw_pages + o->seg_blocks - 1) / o->seg_blocks > RELFILE_MAX_SEGS)
        cli_usage_error("%llu pages make more than %d segment files of %llu pages",
                        (unsigned long long)w->hw_pages, RELFILE_MAX_SEGS,
                        (unsigned long long)o->seg_blocks);
}

static void install_signals(void)
{
    CliSignals saved; /* never restored: the table is ours until exit */
    cli_catch_stop_signals(&saved);
    /* Past RLIMIT_FSIZE, write() must fail with EFBIG instead of killing us. */
    signal(SIGXFSZ, SIG_IGN);
}

/* The progress bar, started once the files are made (pages 0). */
typedef struct Progress {
    CliProgress pg_bar; /* drawn on a terminal unless --quiet */
    bool pg_quiet;      /* --quiet */
    uint64_t pg_pages;  /* pages in all */
    bool pg_started;    /* the files are made: the bar is up */
    double pg_start;    /* when writing began, for the summary */
} Progress;

static void on_progress(uint64_t pages, void *arg)
{
    Progress *p = arg;
    if (pages == 0) {
        cli_progress_start(&p->pg_bar, p->pg_quiet, p->pg_pages, BLCKSZ, "pages");
        p->pg_started = true;
        p->pg_start = measure_now();
    } else {
        cli_progress_update(&p->pg_bar, pages);
    }
}

/* "FILE: N rows, N pages (N rows a page), N bytes, N segments, N s, N MB/s". */
static void summary(const HeapWriteSpec *w, double secs)
{
    uint64_t bytes = w->hw_pages * BLCKSZ;
    uint64_t segs =
        w->hw_pages == 0 ? 1 : (w->hw_pages + w->hw_seg_blocks - 1) / w->hw_seg_blocks;
    printf("%s: %llu rows, %llu page%s (%u rows a page), %llu bytes, %llu segment%s, "
           "%.3f s, %.1f MB/s\n",
           w->hw_path, (unsigned long long)w->hw_rows, (unsigned long long)w->hw_pages,
           w->hw_pages == 1 ? "" : "s", heapgen_tuples_per_page(&w->hw_gen),
           (unsigned long long)bytes, (unsigned long long)segs, segs == 1 ? "" : "s",
           secs, secs > 0 ? (double)bytes / 1e6 / secs : 0.0);
}

int main(int argc, char **argv)
{
    Options o;
    HeapWriteSpec w;
    HsError err;
    cli_init("mkheap");
    parse_args(argc, argv, &o);
    plan(&o, &w);
    install_signals();
    hs_error_clear(&err);
    Progress p = {.pg_quiet = o.quiet, .pg_pages = w.hw_pages};
    char note[256];
    int rc = heapwrite(&w, &cli_stop_signal, on_progress, &p, note, sizeof(note), &err);
    if (p.pg_started)
        cli_progress_end(&p.pg_bar);
    if (note[0]) /* what a writer that died had left, and was put right */
        fprintf(stderr, "%s: %s: %s\n", cli_progname, o.path, note);
    if (rc == HS_EINTR) {
        fprintf(stderr, "%s: %s: interrupted by SIG%s; nothing was written\n",
                cli_progname, o.path, sigabbrev_np(cli_stop_signal));
        return 128 + cli_stop_signal;
    }
    if (rc < 0) {
        int status = cli_report(&err);
        return cli_stop_signal ? 128 + cli_stop_signal : status;
    }
    /* a signal that came after the commit is too late: the table stands */
    if (!o.quiet)
        summary(&w, measure_now() - p.pg_start);
    return EXIT_OK;
}
