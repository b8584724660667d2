/*
 * extcmd.h -- running an external command (wc, dd, ...) as a child process
 *             and timing it: wall clock around fork/exec/wait4, and the
 *             child's own user/sys time and faults from wait4's rusage.
 */
#ifndef HEAPSCAN_EXTCMD_H
#define HEAPSCAN_EXTCMD_H

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

#endif
