/*
 * rawread -- read a file the raw ways a scan is compared with (wc, wc -l,
 *            a read() loop, mmap in chunks, O_DIRECT), print what was
 *            counted and what it cost.
 *
 * main() parses the command line and runs the reader --repeat times
 * (raw_run(), bench/rawio.c) with the cache prepared before each run; the
 * figures are medians (bench/measure.c).  The reader checks its own block
 * size (O_DIRECT's alignment); its HS_EUSAGE error exits 2.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "measure.h"
#include "rawio.h"

/* The command line. */
typedef struct Options {
    RawMethod method; /* --method */
    size_t block;     /* --block: buffer or chunk (mmap: 0 for whole files) */
    CacheMode cache;  /* --cache */
    int repeat;       /* --repeat */
    bool json;        /* --json */
    const char *path; /* FILE */
} Options;

static void usage(void)
{
    printf(
        "Usage: %s --method wc|lines|read|mmap|direct [options] FILE\n"
        "Read FILE (and its segments FILE.1, ... if it is a relation) the raw way and\n"
        "report what was counted and the time it took.\n"
        "\n"
        "  -m, --method M        wc: lines, words, bytes as wc counts them in the C\n"
        "                        locale; lines: newlines, as wc -l; read: a read() "
        "loop;\n"
        "                        mmap: map a chunk, look at every byte, unmap;\n"
        "                        direct: O_DIRECT reads, past the page cache\n"
        "  -b, --block SIZE      read/direct: buffer size (default 1M); mmap: chunk\n"
        "                        size (default 8M, or 'whole')\n"
        "      --cache cold|warm|asis  before each run (default warm)\n"
        "      --repeat N        runs (default 1); figures are medians\n"
        "      --json            one JSON object\n"
        "  -h, --help, -V, --version\n"
        "\n"
        "Exit status: 0 ok, 1 error (I/O, missing file), 2 usage.\n",
        cli_progname);
}

/* --block: a size from 1 byte to 1G, or whole (UINT64_MAX) for mmap. */
static uint64_t block_arg(const char *arg)
{
    uint64_t block;
    if (strcmp(arg, "whole") == 0)
        return UINT64_MAX;
    if (cli_parse_size(arg, &block) < 0 || block == 0 || block > (1u << 30))
        cli_usage_error("--block: '%s' is not a size from 1 byte to 1G", arg);
    return block;
}

/* What --method and --block say, checked together, into o. */
static void set_reader(Options *o, int method, uint64_t block)
{
    if (block == UINT64_MAX && method != RAW_MMAP)
        cli_usage_error("--block whole is for --method mmap");
    if (block == 0)
        block = method == RAW_MMAP ? 8 << 20 : 1 << 20;
    o->method = (RawMethod)method;
    o->block = block == UINT64_MAX ? 0 : (size_t)block; /* raw_mmap: 0 is whole */
}

/* Parse argv into o (defaults first); usage errors exit with status 2. */
static void parse_args(int argc, char **argv, Options *o)
{
    static const struct option longopts[] = {
        {"method", required_argument, NULL, 'm'},
        {"block", required_argument, NULL, 'b'},
        {"cache", required_argument, NULL, 'c'},
        {"repeat", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int method = -1, c;
    uint64_t block = 0, repeat = 1;
    *o = (Options){.cache = CACHE_WARM};
    while ((c = getopt_long(argc, argv, "m:b:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            method = cli_choice("--method", optarg, raw_method_names);
            break;
        case 'b':
            block = block_arg(optarg);
            break;
        case 'c':
            o->cache = (CacheMode)cli_choice("--cache", optarg, cache_mode_names);
            break;
        case 'r':
            if (cli_parse_u64(optarg, 1, 1000, &repeat) < 0)
                cli_usage_error("--repeat: '%s' is not a count in 1..1000", optarg);
            break;
        case 'j':
            o->json = true;
            break;
        default:
            cli_common_option(c, usage);
        }
    }
    if (method < 0)
        cli_usage_error("--method is required");
    o->path = cli_one_operand(argc, argv, "FILE");
    set_reader(o, method, block);
    o->repeat = (int)repeat;
}

/* What the reader counted, as the command it mirrors would print it. */
static void print_counts(const Options *o, const RawResult *r)
{
    if (o->method == RAW_WC)
        printf("%llu %llu %llu %s\n", (unsigned long long)r->rr_lines,
               (unsigned long long)r->rr_words, (unsigned long long)r->rr_bytes,
               o->path);
    else if (o->method == RAW_LINES)
        printf("%llu %s\n", (unsigned long long)r->rr_lines, o->path);
    else if (o->method == RAW_MMAP)
        printf("%llu bytes in %llu chunks, byte sum %llu\n",
               (unsigned long long)r->rr_bytes, (unsigned long long)r->rr_calls,
               (unsigned long long)r->rr_sum);
    else
        printf("%llu+%llu records in\n%llu bytes\n", (unsigned long long)r->rr_full,
               (unsigned long long)r->rr_partial, (unsigned long long)r->rr_bytes);
}

/* The report: medians of the runs, the last run's counts and faults. */
static void print_report(const Options *o, const RawResult *r, const Measure *last,
                         const MeasureSpread *s)
{
    double w = s->mp_wall.sp_med, mbs = w > 0 ? (double)r->rr_bytes / 1e6 / w : 0;
    if (!o->json) {
        print_counts(o, r);
        printf("wall %.4f s, user %.4f s, sys %.4f s, %ld minor + %ld major faults, "
               "%.1f MB/s%s\n",
               w, s->mp_user.sp_med, s->mp_sys.sp_med, last->m_minflt, last->m_majflt,
               mbs, o->repeat > 1 ? " (medians)" : "");
        return;
    }
    JsonWriter j;
    json_init(&j, stdout);
    json_begin_object(&j, NULL);
    json_string(&j, "file", o->path);
    json_string(&j, "method", raw_method_name(o->method));
    json_uint(&j, "block", o->block);
    json_uint(&j, "bytes", r->rr_bytes);
    json_uint(&j, "lines", r->rr_lines);
    json_uint(&j, "words", r->rr_words);
    json_uint(&j, "records_full", r->rr_full);
    json_uint(&j, "records_partial", r->rr_partial);
    json_uint(&j, "calls", r->rr_calls);
    json_double(&j, "wall_s", w, 6);
    json_double(&j, "user_s", s->mp_user.sp_med, 6);
    json_double(&j, "sys_s", s->mp_sys.sp_med, 6);
    json_int(&j, "minflt", last->m_minflt);
    json_int(&j, "majflt", last->m_majflt);
    json_double(&j, "mb_per_s", mbs, 1);
    json_end(&j);
    putchar('\n');
}

int main(int argc, char **argv)
{
    Options o;
    RawResult r;
    HsError err;
    cli_init("rawread");
    parse_args(argc, argv, &o);
    Measure *m = calloc((size_t)o.repeat, sizeof(Measure));
    if (m == NULL)
        cli_die(EXIT_ERROR, "out of memory");
    int status = EXIT_OK;
    for (int i = 0; i < o.repeat && status == EXIT_OK; i++) {
        MeasureStart ms;
        if (cache_prepare(o.path, o.cache, &err) < 0) {
            status = cli_report(&err);
            break;
        }
        measure_start(&ms);
        int rc = raw_run(o.method, o.path, o.block, &r, &err);
        measure_stop(&ms, &m[i]);
        if (rc < 0)
            status = cli_report(&err);
    }
    if (status == EXIT_OK) {
        MeasureSpread s;
        measure_summarize(m, o.repeat, &s);
        print_report(&o, &r, &m[o.repeat - 1], &s);
    }
    free(m);
    return status;
}
