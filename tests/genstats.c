/*
 * genstats -- print what mkheap's generator puts in a table of N rows, as
 *             SQL aggregates would report it (a test oracle that does not
 *             read the table).
 */
#include <getopt.h>
#include <stdlib.h>

#include "cli.h"
#include "heapgen.h"

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"rows", required_argument, NULL, 'r'},
        {"pad", required_argument, NULL, 'p'},
        {"seed", required_argument, NULL, 's'},
        {NULL, 0, NULL, 0},
    };
    HeapGenSpec spec = {.hg_seed = HEAPGEN_DEFAULT_SEED,
                        .hg_pad_len = HEAPGEN_DEFAULT_PAD,
                        .hg_fillfactor = 100};
    uint64_t rows = 0, v;
    int c;

    cli_init("genstats");
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (cli_parse_u64(optarg, 1, HEAPGEN_MAX_ROWS, &rows) < 0)
                cli_usage_error("--rows: bad count '%s'", optarg);
            break;
        case 'p':
            if (cli_parse_u64(optarg, 0, HEAP_PAD_MAX, &v) < 0)
                cli_usage_error("--pad: bad length '%s'", optarg);
            spec.hg_pad_len = (uint32_t)v;
            break;
        case 's':
            if (cli_parse_u64(optarg, 0, UINT64_MAX, &spec.hg_seed) < 0)
                cli_usage_error("--seed: bad seed '%s'", optarg);
            break;
        default:
            exit(EXIT_USAGE);
        }
    }
    if (rows == 0 || optind != argc)
        cli_usage_error("usage: genstats --rows N [--pad N] [--seed N]");

    HeapGenStats st;
    heapgen_stats(&spec, rows, &st);
    printf("count=%llu sum_v=%lld min_k=%d max_k=%d sum_len=%llu\n",
           (unsigned long long)st.hs_rows, (long long)st.hs_sum_v, st.hs_min_k,
           st.hs_max_k, (unsigned long long)st.hs_sum_len);
    return EXIT_OK;
}
