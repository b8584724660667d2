/*
 * measure.h -- the one place heapscan times things and controls the page
 *              cache: wall/user/sys time and faults of a run (of this
 *              process or of a child), and making a file cold, warm, or
 *              asking how much of it is resident.
 *
 * Cache control works on a relation's every segment (FILE, FILE.1, ...) and
 * needs no root: cold is fdatasync + posix_fadvise(POSIX_FADV_DONTNEED) per
 * file, warm is reading it through, residency is mincore() over a mapping.
 */
#ifndef HEAPSCAN_MEASURE_H
#define HEAPSCAN_MEASURE_H

#include <stdint.h>
#include <sys/resource.h>

#include "hserror.h"

/* What a run cost. */
typedef struct Measure {
    double m_wall_s; /* elapsed, monotonic clock */
    double m_user_s; /* CPU in user mode */
    double m_sys_s;  /* CPU in the kernel */
    long m_minflt;   /* page faults served without I/O */
    long m_majflt;   /* page faults that waited for I/O */
} Measure;

typedef struct MeasureStart {
    double ms_wall;
    struct rusage ms_ru;
} MeasureStart;

/* Start and stop timing this process (getrusage(RUSAGE_SELF) deltas). */
void measure_start(MeasureStart *ms);
void measure_stop(const MeasureStart *ms, Measure *m);

/* Fill m from a child's rusage (from wait4) and its wall time. */
void measure_from_rusage(double wall_s, const struct rusage *ru, Measure *m);

/* Minimum, median and maximum of n values (n >= 1; x is not changed). */
void measure_spread(const double *x, int n, double *min, double *med, double *max);

/* Cache states a run can be prepared in. */
typedef enum CacheMode { CACHE_ASIS, CACHE_COLD, CACHE_WARM } CacheMode;

/* Evict every segment of path from the page cache. */
int cache_evict(const char *path, HsError *err);

/* Read every segment of path once, so it is in the page cache. */
int cache_warm(const char *path, HsError *err);

/* Prepare the cache as mode says (CACHE_ASIS does nothing). */
int cache_prepare(const char *path, CacheMode mode, HsError *err);

/* The fraction (0..1) of path's bytes, all segments, resident in the page cache. */
int cache_resident(const char *path, double *fraction, HsError *err);

/* Total bytes of every segment of path. */
int file_total_bytes(const char *path, uint64_t *bytes, HsError *err);

#endif
