/*
 * cli.c -- shared tool plumbing (see cli.h).
 *
 * Entry points: cli_init, cli_die, cli_usage_error, cli_version,
 * cli_bad_option, cli_common_option, cli_choice, cli_one_operand, cli_report,
 * cli_parse_size, cli_parse_u64, cli_catch_stop_signals, cli_restore_stop_signals,
 * cli_progress_start, cli_progress_update, cli_progress_end.  The one part
 * of bench/ that prints and exits, on behalf of the tool that calls it.
 */
#include "cli.h"

#include "crc32.h"
#include "measure.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cli_progname = "heapscan";

void cli_init(const char *progname)
{
    cli_progname = progname;
}

void cli_die(int status, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cli_progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(status);
}

void cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cli_progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", cli_progname);
    exit(EXIT_USAGE);
}

void cli_version(void)
{
    printf("%s (heapscan) %s, crc32 by %s\n", cli_progname, HEAPSCAN_VERSION,
           crc32_impl());
    exit(EXIT_OK);
}

void cli_bad_option(void)
{
    fprintf(stderr, "Try '%s --help' for more information.\n", cli_progname);
    exit(EXIT_USAGE);
}

void cli_common_option(int opt, void (*usage)(void))
{
    if (opt == 'h') {
        usage();
        exit(EXIT_OK);
    }
    if (opt == 'V')
        cli_version();
    cli_bad_option();
}

int cli_choice(const char *opt, const char *arg, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(arg, names[i]) == 0)
            return i;
    char list[128] = "";
    for (int i = 0; names[i]; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                 i ? ", " : "", names[i]);
    cli_usage_error("%s: '%s' is not one of %s", opt, arg, list);
}

int cli_report(const HsError *err)
{
    char line[PATH_MAX + 512];
    fprintf(stderr, "%s: %s\n", cli_progname, hs_error_format(err, line, sizeof(line)));
    switch (err->code) {
    case HS_ECORRUPT:
        return EXIT_CORRUPT;
    case HS_EUSAGE:
        return EXIT_USAGE;
    case HS_EEXIST:
        return EXIT_EXISTS;
    default:
        return EXIT_ERROR;
    }
}

int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    if (s == NULL || !isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (s == NULL || !isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0':
        break;
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'M':
        shift = 20;
        break;
    case 'G':
        shift = 30;
        break;
    case 'T':
        shift = 40;
        break;
    default:
        return -1;
    }
    if (shift != 0) {
        end++;
        if (strcmp(end, "iB") != 0 && strcmp(end, "B") != 0 && *end != '\0')
            return -1;
        if (v > (UINT64_MAX >> shift))
            return -1;
        v <<= shift;
    }
    *out = v;
    return 0;
}

const char *cli_one_operand(int argc, char **argv, const char *what)
{
    if (optind == argc)
        cli_usage_error("no %s given", what);
    if (optind != argc - 1)
        cli_usage_error("more than one %s given", what);
    return argv[optind];
}

volatile sig_atomic_t cli_stop_signal;

static const int stop_signals[3] = {SIGINT, SIGTERM, SIGHUP};

static void on_stop_signal(int sig)
{
    cli_stop_signal = sig;
}

void cli_catch_stop_signals(CliSignals *saved)
{
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigemptyset(&sa.sa_mask);
    cli_stop_signal = 0;
    for (int i = 0; i < 3; i++) {
        sigaction(stop_signals[i], &sa, &saved->cs_old[i]);
        if (saved->cs_old[i].sa_handler == SIG_IGN) /* nohup: stays ignored */
            sigaction(stop_signals[i], &saved->cs_old[i], NULL);
    }
}

void cli_restore_stop_signals(const CliSignals *saved)
{
    for (int i = 0; i < 3; i++)
        sigaction(stop_signals[i], &saved->cs_old[i], NULL);
}

void cli_progress_start(CliProgress *p, bool quiet, uint64_t total, uint64_t unit,
                        const char *what)
{
    p->cp_on = !quiet && isatty(STDERR_FILENO);
    p->cp_total = total;
    p->cp_unit = unit;
    p->cp_what = what;
    p->cp_start = p->cp_last = measure_now();
}

static void progress_draw(CliProgress *p, uint64_t done, double now)
{
    enum { WIDTH = 30 };
    double frac = p->cp_total ? (double)done / (double)p->cp_total : 1.0;
    double secs = now - p->cp_start;
    double mbs = secs > 0 ? (double)(done * p->cp_unit) / 1e6 / secs : 0;
    double eta = frac > 0 ? secs / frac - secs : 0;
    int fill = (int)(frac * WIDTH);
    fprintf(stderr, "\r[%-*.*s] %llu/%llu %s  %.0f MB/s  ETA %.1fs ", WIDTH, fill,
            "##############################", (unsigned long long)done,
            (unsigned long long)p->cp_total, p->cp_what, mbs, eta);
}

void cli_progress_update(CliProgress *p, uint64_t done)
{
    if (!p->cp_on)
        return;
    double now = measure_now();
    if (now - p->cp_last < 0.1)
        return;
    p->cp_last = now;
    progress_draw(p, done, now);
}

void cli_progress_end(CliProgress *p)
{
    if (!p->cp_on)
        return;
    progress_draw(p, p->cp_total, measure_now());
    fputs("\r\033[K", stderr); /* leave the line clean for the summary */
}
