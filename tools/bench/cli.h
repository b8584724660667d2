/*
 * cli.h -- what every heapscan tool shares: exit statuses, argument
 *          parsing, error lines and the progress bar.
 *
 * Only tools print and exit; this is where they do it the same way.  The
 * names a choice is made from (cli_choice()) are the NULL-terminated arrays
 * beside each enum: bufmgr_access_names[], cache_mode_names[], ...
 * See also: hserror.h -- the error cli_report() prints.
 */
#ifndef HEAPSCAN_CLI_H
#define HEAPSCAN_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hserror.h"

/* Exit statuses, the same for every tool. */
enum {
    EXIT_OK = 0,
    EXIT_ERROR = 1,   /* I/O or system error, missing file, not a heap table */
    EXIT_USAGE = 2,   /* bad command line */
    EXIT_CORRUPT = 3, /* a page failed verification */
    EXIT_EXISTS = 4,  /* refused to replace an existing file */
};

/* The tool's name for messages, set once by cli_init(). */
extern const char *cli_progname;
void cli_init(const char *progname);

/* "prog: message" on stderr and exit(status). */
void cli_die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* "prog: message" and "Try 'prog --help'." on stderr, exit(EXIT_USAGE). */
void cli_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/* "prog (heapscan) VERSION" on stdout and exit(EXIT_OK), for --version. */
void cli_version(void) __attribute__((noreturn));

/* After getopt has named a bad option: "Try 'prog --help'." and exit(EXIT_USAGE). */
void cli_bad_option(void) __attribute__((noreturn));

/*
 * The options every tool takes alike, for the end of its getopt switch:
 * 'h' (--help) calls usage() and exits EXIT_OK, 'V' (--version) is
 * cli_version(), anything else cli_bad_option().
 */
void cli_common_option(int opt, void (*usage)(void)) __attribute__((noreturn));

/*
 * The index of arg in the NULL-terminated names, or a usage error
 * "OPT: 'ARG' is not one of a, b, c".
 */
int cli_choice(const char *opt, const char *arg, const char *const *names);

/*
 * The one operand left after getopt (argv[optind]), or a usage error "no
 * WHAT given" / "more than one WHAT given".
 */
const char *cli_one_operand(int argc, char **argv, const char *what);

/* Print the error record as one line and return the exit status it maps to. */
int cli_report(const HsError *err);

/*
 * Parse a size: plain bytes, or a number with k/K, M, G, T, optionally
 * followed by "iB" or "B" (all powers of 1024, as dd and PostgreSQL read
 * them): "177MiB", "177M", "8k", "185597952".  Returns 0, or -1 if s is not
 * a size or overflows.
 */
int cli_parse_size(const char *s, uint64_t *out);

/* Parse a whole decimal number in [min, max]; -1 if it is not one. */
int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * SIGINT, SIGTERM and SIGHUP for a tool that must clean up first: while
 * caught, each only records its number in cli_stop_signal (the latest
 * one received), and the tool checks that between steps.  A signal that
 * was ignored (nohup) stays ignored.  cli_catch_stop_signals()
 * saves the actions it replaces in *saved; cli_restore_stop_signals() puts them back.
 */
typedef struct CliSignals {
    struct sigaction cs_old[3];
} CliSignals;

extern volatile sig_atomic_t cli_stop_signal;
void cli_catch_stop_signals(CliSignals *saved);
void cli_restore_stop_signals(const CliSignals *saved);

/*
 * A progress bar on stderr, drawn only when stderr is a terminal and not
 * quiet, redrawn at most ten times a second.
 */
typedef struct CliProgress {
    bool cp_on;          /* drawing at all */
    uint64_t cp_total;   /* units of work in all */
    uint64_t cp_unit;    /* bytes per unit, for MB/s */
    const char *cp_what; /* the unit's name, e.g. "pages" */
    double cp_start;     /* measure_now() at the start */
    double cp_last;      /* measure_now() at the last redraw */
} CliProgress;

void cli_progress_start(CliProgress *p, bool quiet, uint64_t total, uint64_t unit,
                        const char *what);
void cli_progress_update(CliProgress *p, uint64_t done);
void cli_progress_end(CliProgress *p);

#endif
