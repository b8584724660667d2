/*
 * rawread -- read a file the raw ways a scan is compared with (wc, wc -l,
 *            a read() loop, mmap in chunks, O_DIRECT), print what was
 *            counted and what it cost.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "measure.h"
#include "rawio.h"

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

typedef enum Method { M_WC, M_LINES, M_READ, M_MMAP, M_DIRECT } Method;
static const char *const method_names[] = {"wc",   "lines",  "read",
                                           "mmap", "direct", NULL};

static int run(Method m, const char *path, size_t block, RawResult *r, HsError *err)
{
    switch (m) {
    case M_WC:
        return raw_wc(path, r, err);
    case M_LINES:
        return raw_lines(path, r, err);
    case M_READ:
        return raw_read(path, block, false, r, err);
    case M_MMAP:
        return raw_mmap(path, block, RAW_TOUCH_BYTE, r, err);
    case M_DIRECT:
        return raw_direct(path, block, r, err);
    }
    return 0;
}

int main(int argc, char **argv)
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
    static const char *const cache_names[] = {"asis", "cold", "warm", NULL};
    int method = -1, c;
    uint64_t block = 0, repeat = 1;
    CacheMode cache = CACHE_WARM;
    bool json = false;

    cli_init("rawread");
    while ((c = getopt_long(argc, argv, "m:b:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            method = cli_choice("--method", optarg, method_names);
            break;
        case 'b':
            if (strcmp(optarg, "whole") == 0)
                block = UINT64_MAX;
            else if (cli_parse_size(optarg, &block) < 0 || block == 0 ||
                     block > (1u << 30))
                cli_usage_error("--block: '%s' is not a size from 1 byte to 1G",
                                optarg);
            break;
        case 'c':
            cache = (CacheMode)cli_choice("--cache", optarg, cache_names);
            break;
        case 'r':
            if (cli_parse_u64(optarg, 1, 1000, &repeat) < 0)
                cli_usage_error("--repeat: '%s' is not a count in 1..1000", optarg);
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            usage();
            return EXIT_OK;
        case 'V':
            cli_version();
        default:
            cli_bad_option();
        }
    }
    if (method < 0)
        cli_usage_error("--method is required");
    const char *path = cli_one_operand(argc, argv, "FILE");
    if (block == UINT64_MAX && method != M_MMAP)
        cli_usage_error("--block whole is for --method mmap");
    if (block == 0)
        block = method == M_MMAP ? 8 << 20 : 1 << 20;
    if (block == UINT64_MAX)
        block = 0; /* raw_mmap: whole files */
    if (method == M_DIRECT && block % 4096 != 0)
        cli_usage_error("--block: O_DIRECT needs a multiple of 4096");

    double *wall = calloc(repeat, sizeof(double)),
           *usr = calloc(repeat, sizeof(double)), *sys = calloc(repeat, sizeof(double));
    RawResult r;
    Measure m;
    HsError err;
    int status = EXIT_OK;
    for (uint64_t i = 0; i < repeat; i++) {
        MeasureStart ms;
        if (cache_prepare(path, cache, &err) < 0) {
            status = cli_report(&err);
            goto done;
        }
        measure_start(&ms);
        int rc = run((Method)method, path, (size_t)block, &r, &err);
        measure_stop(&ms, &m);
        if (rc < 0) {
            status = cli_report(&err);
            goto done;
        }
        wall[i] = m.m_wall_s, usr[i] = m.m_user_s, sys[i] = m.m_sys_s;
    }
    double lo, hi, w, u, s;
    measure_spread(wall, (int)repeat, &lo, &w, &hi);
    measure_spread(usr, (int)repeat, &lo, &u, &hi);
    measure_spread(sys, (int)repeat, &lo, &s, &hi);
    double mbs = w > 0 ? (double)r.rr_bytes / 1e6 / w : 0;
    if (json) {
        printf(
            "{\"file\": \"%s\", \"method\": \"%s\", \"block\": %llu, \"bytes\": %llu, "
            "\"lines\": %llu, \"words\": %llu, \"records_full\": %llu, "
            "\"records_partial\": %llu, \"calls\": %llu, \"wall_s\": %.6f, "
            "\"user_s\": %.6f, \"sys_s\": %.6f, \"minflt\": %ld, \"majflt\": %ld, "
            "\"mb_per_s\": %.1f}\n",
            path, method_names[method], (unsigned long long)block,
            (unsigned long long)r.rr_bytes, (unsigned long long)r.rr_lines,
            (unsigned long long)r.rr_words, (unsigned long long)r.rr_full,
            (unsigned long long)r.rr_partial, (unsigned long long)r.rr_calls, w, u, s,
            m.m_minflt, m.m_majflt, mbs);
    } else {
        if (method == M_WC)
            printf("%llu %llu %llu %s\n", (unsigned long long)r.rr_lines,
                   (unsigned long long)r.rr_words, (unsigned long long)r.rr_bytes,
                   path);
        else if (method == M_LINES)
            printf("%llu %s\n", (unsigned long long)r.rr_lines, path);
        else if (method == M_MMAP)
            printf("%llu bytes in %llu chunks, byte sum %llu\n",
                   (unsigned long long)r.rr_bytes, (unsigned long long)r.rr_calls,
                   (unsigned long long)r.rr_sum);
        else
            printf("%llu+%llu records in\n%llu bytes\n", (unsigned long long)r.rr_full,
                   (unsigned long long)r.rr_partial, (unsigned long long)r.rr_bytes);
        printf("wall %.4f s, user %.4f s, sys %.4f s, %ld minor + %ld major faults, "
               "%.1f MB/s%s\n",
               w, u, s, m.m_minflt, m.m_majflt, mbs, repeat > 1 ? " (medians)" : "");
    }
done:
    free(wall);
    free(usr);
    free(sys);
    return status;
}
