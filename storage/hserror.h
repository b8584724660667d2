/*
 * hserror.h -- the error record that library code fills in for the tools.
 *
 * Library functions never print and never exit.  A failing call returns a
 * negative code (-errno for system errors, one of the HS_E* codes below for
 * errors of our own) and, when the caller passed an HsError, fills it with
 * the file, the block (or HS_NO_BLOCK) and a one-line message.  The tool
 * formats that as "tool: FILE: block N: message" and picks the exit status.
 */
#ifndef HEAPSCAN_HSERROR_H
#define HEAPSCAN_HSERROR_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define HS_NO_BLOCK INT64_C(-1)

/* Codes of our own, well below any -errno. */
enum {
    HS_ECORRUPT = -1000, /* a page failed verification */
    HS_ENOTHEAP = -1001, /* the file is not a heap table of ours */
    HS_EUSAGE = -1002,   /* an argument outside its allowed range */
    HS_EEXIST = -1003,   /* refused to replace an existing table */
    HS_EINTR = -1004,    /* interrupted by a signal the caller asked us to honour */
    HS_EREFUSED = -1005, /* input heapscan cannot decide (a tuple's visibility, another
                            schema, a running cluster): refused, never guessed */
};

typedef struct HsError {
    int code;            /* 0, -errno, or an HS_E* code */
    int64_t block;       /* relation-wide block number, or HS_NO_BLOCK */
    char file[PATH_MAX]; /* the file the error is about ("" if none) */
    char msg[256];       /* what is wrong, one line, no file or block */
} HsError;

/* Clear an error record. */
void hs_error_clear(HsError *err);

/*
 * Fill err (if not NULL) and return code, so a caller can write
 * "return hs_error_set(err, -errno, path, blkno, "read: %s", ...);".
 */
int hs_error_set(HsError *err, int code, const char *file, int64_t block,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Format "FILE: block N: msg" (parts that are absent are left out). */
const char *hs_error_format(const HsError *err, char *buf, size_t len);

#endif
