/*
 * scanbench -- seqscan against the raw readers it should be as fast as,
 *              warm, interleaved round by round, medians.
 *
 * Pairs (contender vs baseline), each run with the file read into the page
 * cache just before it:
 *   seqscan read, no verify   vs  read() loop with 1 MiB buffers
 *   seqscan mmap, no verify   vs  mmap of the whole file, a word per cache line
 *   seqscan read, verify      vs  read() loop 1 MiB + zlib crc32 of the bytes
 *   seqscan mmap, verify      vs  mmap of the whole file + zlib crc32
 * and, to show where the first pair's floor is, a bare read() loop with
 * 128 KiB buffers (the copy read access makes at its default io-combine,
 * with no scan at all) and seqscan with a 256 KiB io-combine.
 * The ratio is median(contender) / median(baseline) over the same rounds.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rawio.h"
#include "scanrun.h"

/* What a runner runs. */
typedef enum Kind {
    RUN_READ, /* raw_read() */
    RUN_MMAP, /* raw_mmap() of the whole file */
    RUN_SCAN, /* scan_run() */
} Kind;

/* One contender or baseline, and its wall time in each round. */
typedef struct Runner {
    const char *name; /* as printed */
    Kind kind;        /* what runs it */
    size_t block; /* raw read: buffer size (0: 1 MiB); scan: io-combine (0: default) */
    bool crc;     /* raw: crc32 the bytes */
    BufAccess access; /* scan */
    size_t chunk;     /* scan mmap window (0: whole) */
    bool verify;      /* scan */
    int workers;      /* scan, read: I/O workers */
    double *wall;     /* per round */
} Runner;

static double run_once(const char *path, Runner *r)
{
    HsError err;
    MeasureStart ms;
    Measure m;
    int rc;
    if (cache_warm(path, &err) < 0)
        exit(cli_report(&err));
    if (r->kind == RUN_SCAN) {
        ScanConfig cfg = {
            .sc_path = path, .sc_qual = QUAL_DEFAULT, .sc_cache = CACHE_ASIS};
        ScanResult res;
        bufmgr_default_options(&cfg.sc_bufopt);
        cfg.sc_bufopt.bo_access = r->access;
        cfg.sc_bufopt.bo_mmap_chunk_bytes = r->chunk;
        cfg.sc_bufopt.bo_verify = r->verify;
        cfg.sc_bufopt.bo_io_workers = r->workers;
        if (r->block)
            cfg.sc_bufopt.bo_io_combine_bytes = r->block;
        rc = scan_run(&cfg, &res, &err);
        m = res.sr_m;
    } else {
        RawResult raw;
        measure_start(&ms);
        rc = r->kind == RUN_READ
                 ? raw_read(path, r->block ? r->block : 1 << 20, r->crc, &raw, &err)
                 : raw_mmap(path, 0, r->crc ? RAW_TOUCH_CRC : RAW_TOUCH_LINE, &raw,
                            &err);
        measure_stop(&ms, &m);
    }
    if (rc < 0)
        exit(cli_report(&err));
    return m.m_wall_s;
}

/* The pairs, contender after baseline; each runner's wall times per round. */
static Runner runners[] = {
    {"read() 1 MiB", RUN_READ, 0, false, 0, 0, false, 0, NULL},
    {"seqscan read, no verify", RUN_SCAN, 0, false, BUF_ACCESS_READ, 0, false,
     BUFMGR_IO_WORKERS_AUTO, NULL},
    /* the floor of read access at its default io-combine: the copy alone */
    {"read() 1 MiB", RUN_READ, 0, false, 0, 0, false, 0, NULL},
    {"  read() 128 KiB, no scan", RUN_READ, 128 << 10, false, 0, 0, false, 0, NULL},
    {"read() 1 MiB", RUN_READ, 0, false, 0, 0, false, 0, NULL},
    {"  same, io-combine 256k", RUN_SCAN, 256 << 10, false, BUF_ACCESS_READ, 0, false,
     BUFMGR_IO_WORKERS_AUTO, NULL},
    {"read() 1 MiB", RUN_READ, 0, false, 0, 0, false, 0, NULL},
    {"  same, I/O worker", RUN_SCAN, 0, false, BUF_ACCESS_READ, 0, false, 1, NULL},
    {"mmap whole, word per line", RUN_MMAP, 0, false, 0, 0, false, 0, NULL},
    {"seqscan mmap 8M, no verify", RUN_SCAN, 0, false, BUF_ACCESS_MMAP, 8 << 20, false,
     0, NULL},
    {"read() 1 MiB + crc32", RUN_READ, 0, true, 0, 0, false, 0, NULL},
    {"seqscan read, verify", RUN_SCAN, 0, false, BUF_ACCESS_READ, 0, true,
     BUFMGR_IO_WORKERS_AUTO, NULL},
    {"read() 1 MiB + crc32", RUN_READ, 0, true, 0, 0, false, 0, NULL},
    {"  same, no I/O worker", RUN_SCAN, 0, false, BUF_ACCESS_READ, 0, true, 0, NULL},
    {"mmap whole + crc32", RUN_MMAP, 0, true, 0, 0, false, 0, NULL},
    {"seqscan mmap 8M, verify", RUN_SCAN, 0, false, BUF_ACCESS_MMAP, 8 << 20, true, 0,
     NULL},
    {"mmap whole + crc32", RUN_MMAP, 0, true, 0, 0, false, 0, NULL},
    {"seqscan mmap whole, verify", RUN_SCAN, 0, false, BUF_ACCESS_MMAP, 0, true, 0,
     NULL},
};
#define NRUNNERS (int)(sizeof(runners) / sizeof(runners[0]))

/* --rounds N and the TABLE. */
static const char *parse_args(int argc, char **argv, uint64_t *rounds)
{
    static const struct option longopts[] = {
        {"rounds", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "r:h", longopts, NULL)) != -1) {
        if (c == 'r' && cli_parse_u64(optarg, 1, 1000, rounds) == 0)
            continue;
        if (c == 'h') {
            printf("Usage: scanbench [--rounds N] TABLE\n"
                   "seqscan vs raw readers, warm, interleaved, medians (default 7 "
                   "rounds).\n");
            exit(EXIT_OK);
        }
        cli_usage_error("bad option");
    }
    if (optind != argc - 1)
        cli_usage_error("no TABLE given");
    return argv[optind];
}

/* Each pair's medians and ratio, a line a pair. */
static void print_pairs(const char *path, uint64_t rounds)
{
    uint64_t bytes;
    HsError err;
    if (file_total_bytes(path, &bytes, &err) < 0)
        exit(cli_report(&err));
    printf("%s: %llu bytes, warm, %llu rounds interleaved; wall time in ms\n\n", path,
           (unsigned long long)bytes, (unsigned long long)rounds);
    printf("%-28s %8s %8s %8s %9s   %-28s %8s %7s\n", "contender", "median", "min",
           "max", "MB/s", "baseline", "median", "ratio");
    for (int i = 0; i + 1 < NRUNNERS; i += 2) {
        double blo, bmed, bhi, lo, med, hi;
        measure_spread(runners[i].wall, (int)rounds, &blo, &bmed, &bhi);
        measure_spread(runners[i + 1].wall, (int)rounds, &lo, &med, &hi);
        printf("%-28s %8.1f %8.1f %8.1f %9.0f   %-28s %8.1f %6.2fx\n",
               runners[i + 1].name, med * 1e3, lo * 1e3, hi * 1e3,
               (double)bytes / 1e6 / med, runners[i].name, bmed * 1e3, med / bmed);
    }
}

int main(int argc, char **argv)
{
    uint64_t rounds = 7;
    cli_init("scanbench");
    const char *path = parse_args(argc, argv, &rounds);
    for (int i = 0; i < NRUNNERS; i++)
        if ((runners[i].wall = calloc(rounds, sizeof(double))) == NULL)
            cli_die(EXIT_ERROR, "out of memory");
    for (uint64_t round = 0; round < rounds; round++) {
        fprintf(stderr, "\rscanbench: round %llu of %llu",
                (unsigned long long)round + 1, (unsigned long long)rounds);
        for (int i = 0; i < NRUNNERS; i++)
            runners[i].wall[round] = run_once(path, &runners[i]);
    }
    fprintf(stderr, "\n");
    print_pairs(path, rounds);
    return EXIT_OK;
}
