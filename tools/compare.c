/*
 * compare -- the project's main job: read a table every raw way (C readers;
 *            wc, wc -l and dd as commands), with seqscan under read() and
 *            mmap() with and without verification, and with PostgreSQL 15
 *            scanning the same bytes; cold, then warm; rows interleaved
 *            round by round; medians.  "seqscan --compare" runs this program.
 *
 * main() parses the command line, makes the default table with mkheap if
 * it is missing, and has the comparison (bench/compare.c) start PostgreSQL,
 * run the rounds and write the figures; progress and errors go to stderr.
 * SIGINT, SIGTERM and SIGHUP stop it between runs, the cluster removed.
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "compare.h"
#include "extcmd.h"
#include "pgpeer.h"

#define DEFAULT_ROUNDS 5

/* The command line. */
typedef struct Options {
    CompareOptions cmp;    /* the table, rounds and PostgreSQL's programs */
    const char *csv;       /* --csv FILE, or NULL */
    const char *json;      /* --json FILE, or NULL */
    const char *plot;      /* --plot FILE, or NULL */
    char bindir[PATH_MAX]; /* where PostgreSQL 15's programs were found */
} Options;

static void usage(void)
{
    printf(
        "Usage: %s [options] [TABLE]\n"
        "Read TABLE (default t.heap, made with mkheap's defaults if missing) every "
        "raw\n"
        "way (C readers; wc, wc -l and dd as commands), with seqscan under read() and\n"
        "mmap() with and without verification, and with PostgreSQL 15 scanning the "
        "same\n"
        "bytes; cold, then warm; rows interleaved round by round (those reading with\n"
        "O_DIRECT among themselves, after the others); medians.\n"
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
        "  -V, --version         show the version and exit\n"
        "\n"
        "Exit status: 0 ok, 1 error, 2 usage, 3 a reader disagreed with its twin or\n"
        "PostgreSQL with seqscan, 128+N interrupted by signal N.\n",
        cli_progname, DEFAULT_ROUNDS);
}

/* --plot: a file name gnuplot can draw into. */
static const char *plot_arg(const char *arg)
{
    const char *dot = strrchr(arg, '.');
    if (!dot || (strcmp(dot, ".png") != 0 && strcmp(dot, ".svg") != 0))
        cli_usage_error("--plot: '%s' must end in .png or .svg", arg);
    return arg;
}

/*
 * PostgreSQL's rows: wanted 1 (--postgres: an error if it is not here), 0
 * (--no-postgres) or -1 (when it is found).  Sets o->cmp.co_bindir.
 */
static void find_postgres(Options *o, int want)
{
    bool found = want != 0 && pgpeer_find(o->bindir, sizeof(o->bindir)) == 0;
    if (want == 1 && !found)
        cli_die(EXIT_ERROR, "--postgres: no PostgreSQL 15 server binaries found (set "
                            "PG_BINDIR, or apt-get install postgresql-15)");
    o->cmp.co_bindir = found ? o->bindir : NULL;
}

enum { OPT_ROUNDS = 256, OPT_CSV, OPT_JSON, OPT_PLOT, OPT_PG, OPT_NO_PG };

/* One option and its argument into o; --postgres and --no-postgres into *want_pg. */
static void parse_one(Options *o, int opt, const char *arg, int *want_pg)
{
    uint64_t v;
    switch (opt) {
    case OPT_ROUNDS:
        if (cli_parse_u64(arg, 1, COMPARE_MAX_ROUNDS, &v) < 0)
            cli_usage_error("--rounds: '%s' is not a count in 1..%d", arg,
                            COMPARE_MAX_ROUNDS);
        o->cmp.co_rounds = (int)v;
        break;
    case OPT_CSV:
        o->csv = arg;
        break;
    case OPT_JSON:
        o->json = arg;
        break;
    case OPT_PLOT:
        o->plot = plot_arg(arg);
        break;
    case OPT_PG:
    case OPT_NO_PG:
        *want_pg = opt == OPT_PG;
        break;
    default:
        cli_common_option(opt, usage);
    }
}

/* Parse argv into o (defaults first); usage errors exit with status 2. */
static void parse_args(int argc, char **argv, Options *o)
{
    static const struct option longopts[] = {
        {"rounds", required_argument, NULL, OPT_ROUNDS},
        {"csv", required_argument, NULL, OPT_CSV},
        {"json", required_argument, NULL, OPT_JSON},
        {"plot", required_argument, NULL, OPT_PLOT},
        {"postgres", no_argument, NULL, OPT_PG},
        {"no-postgres", no_argument, NULL, OPT_NO_PG},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int want_pg = -1, opt;
    memset(o, 0, sizeof(*o));
    o->cmp = (CompareOptions){.co_path = "t.heap", .co_rounds = DEFAULT_ROUNDS};
    while ((opt = getopt_long(argc, argv, "hV", longopts, NULL)) != -1)
        parse_one(o, opt, optarg, &want_pg);
    if (optind < argc - 1)
        cli_usage_error("one TABLE at most");
    if (optind == argc - 1)
        o->cmp.co_path = argv[optind];
    find_postgres(o, want_pg);
}

/* Make the table with mkheap's defaults if it is missing (exits if that fails). */
static void ensure_table(const char *path)
{
    char out[1024];
    HsError err;
    if (access(path, F_OK) == 0)
        return;
    fprintf(stderr, "%s: %s does not exist; making it with mkheap's defaults\n",
            cli_progname, path);
    if (extcmd_mkheap(path, false, out, sizeof(out), &err) < 0)
        exit(cli_report(&err));
    fputs(out, stderr);
}

/* Before each run: a line that redraws itself on a terminal, else one a round. */
static void progress(CacheMode cache, int round, int rounds, int row, const char *name,
                     void *arg)
{
    (void)arg;
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K%s: %s round %d of %d: %s", cli_progname,
                cache_mode_name(cache), round + 1, rounds, name);
    else if (row == 0)
        fprintf(stderr, "%s: %s round %d of %d\n", cli_progname, cache_mode_name(cache),
                round + 1, rounds);
}

/* Start PostgreSQL, run every round, print and write the figures. */
static int run(const Options *o, Compare *c, HsError *err)
{
    int rc = 0;
    if (o->cmp.co_bindir != NULL) {
        fprintf(stderr,
                "%s: starting a private PostgreSQL 15 cluster with %s as table t\n",
                cli_progname, o->cmp.co_path);
        if ((rc = compare_start_postgres(c, err)) < 0)
            return rc;
    }
    rc = compare_run(c, &cli_stop_signal, progress, NULL, err);
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
    if (rc < 0)
        return rc;
    compare_write_text(c, stdout);
    fflush(stdout);
    if (o->csv && (rc = compare_write_csv(c, o->csv, err)) < 0)
        return rc;
    if (o->json && (rc = compare_write_json(c, o->json, err)) < 0)
        return rc;
    if (o->plot && (rc = compare_write_plot(c, o->plot, err)) < 0)
        return rc;
    return 0;
}

int main(int argc, char **argv)
{
    Options o;
    Compare *c;
    HsError err;
    cli_init("compare");
    parse_args(argc, argv, &o);
    hs_error_clear(&err);

    CliSignals saved; /* kept to the end: the PostgreSQL cluster must go */
    cli_catch_stop_signals(&saved);
    ensure_table(o.cmp.co_path);
    if (compare_open(&c, &o.cmp, &err) < 0)
        return cli_report(&err);
    int rc = run(&o, c, &err);
    bool had_pg = compare_has_postgres(c);
    compare_close(c); /* the cluster goes, whatever happened */
    if (cli_stop_signal) {
        fprintf(stderr, "\n%s: interrupted by SIG%s%s\n", cli_progname,
                sigabbrev_np(cli_stop_signal),
                had_pg ? "; the PostgreSQL cluster was stopped and removed" : "");
        return 128 + cli_stop_signal;
    }
    return rc < 0 ? cli_report(&err) : EXIT_OK;
}
