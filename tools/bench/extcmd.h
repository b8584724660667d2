/*
 * extcmd.h -- running an external command (wc, dd, ...) as a child process
 *             and timing it: wall clock around fork/exec/wait4, and the
 *             child's own user/sys time and faults from wait4's rusage.
 *
 * Entry points: extcmd_run() runs and times a command; extcmd_sibling()
 * finds another heapscan program beside the running one; extcmd_mkheap()
 * makes a table with mkheap's defaults (the comparison's and iobench
 * --matrix's default tables).
 * See also: measure.c -- the Measure it fills.
 */
#ifndef HEAPSCAN_EXTCMD_H
#define HEAPSCAN_EXTCMD_H

#include <stdbool.h>
#include <stddef.h>

#include "hserror.h"
#include "measure.h"

/*
 * Run argv (argv[0] found on PATH) with LC_ALL=C, stdin from /dev/null,
 * stdout into out and stderr into errout (each truncated to its length,
 * NUL-terminated; either may be NULL).  *m gets the timing.  Returns the
 * exit status (0..255, or 128 + signal), or a negative code with err filled
 * if the command could not be run at all.
 */
int extcmd_run(char *const argv[], Measure *m, char *out, size_t outlen, char *errout,
               size_t errlen, HsError *err);

/*
 * The path of heapscan program name in the directory of the running one
 * (found through /proc/self/exe), into path: 0 if it is there and
 * executable; else -1, with path set to the bare name.
 */
int extcmd_sibling(const char *name, char *path, size_t len);

/*
 * Run mkheap (the one beside this program, else the one on PATH) to make
 * the table path with its defaults, with --quiet if quiet; its stdout in
 * out (may be NULL).  0, or a negative code: -EIO "mkheap failed (status
 * N): ..." with the first line of its stderr, or the error of running it.
 */
int extcmd_mkheap(const char *path, bool quiet, char *out, size_t outlen, HsError *err);

#endif
