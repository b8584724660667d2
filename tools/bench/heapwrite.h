/*
 * heapwrite.h -- writing a generated heap table fast and never leaving half
 *                of one: the pages built by two threads, written in 1 MiB
 *                batches into temporary files, flushed as they go, and
 *                renamed into place only when complete.
 *
 * Entry point: heapwrite().  mkheap is its command line.
 * See also: heapgen.c -- the rows and pages; relfile.c -- create, append,
 * commit and abort of the segment files.
 */
#ifndef HEAPSCAN_HEAPWRITE_H
#define HEAPSCAN_HEAPWRITE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "heapgen.h"
#include "hserror.h"

/* The table to write. */
typedef struct HeapWriteSpec {
    const char *hw_path;    /* its first segment file */
    HeapGenSpec hw_gen;     /* the rows (checked with heapgen_check()) */
    uint64_t hw_rows;       /* rows in all: ids 1 .. hw_rows */
    uint64_t hw_pages;      /* pages they take at heapgen_tuples_per_page() */
    uint32_t hw_seg_blocks; /* pages per segment file */
    bool hw_replace;        /* replace a table already at hw_path */
} HeapWriteSpec;

/* Told of the pages written so far: 0 once the files are made, then after
 * every batch. */
typedef void (*HeapWriteProgress)(uint64_t pages, void *arg);

/*
 * Write the table w describes.  Returns 0 once it is in place (fsynced and
 * renamed); HS_EINTR, with nothing written (a table it was to replace left
 * as it was), as soon as *stop (may be NULL) is non-zero between batches,
 * as a signal handler sets it; else a negative code (HS_EEXIST for a table
 * already there without hw_replace, -errno from the files), also with
 * nothing written.  progress (may be NULL) is called with arg.  note
 * (notelen bytes) gets what was cleaned up first of writers that died on
 * this table (relfile_recover()), or "".
 */
int heapwrite(const HeapWriteSpec *w, const volatile sig_atomic_t *stop,
              HeapWriteProgress progress, void *arg, char *note, size_t notelen,
              HsError *err);

#endif
