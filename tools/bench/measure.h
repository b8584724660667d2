/*
 * measure.h -- the one place heapscan times things and controls the page
 *              cache: wall/user/sys time and faults of a run (of this
 *              process or of a child), their spread over several runs, and
 *              making a file cold, warm, or asking how much of it is
 *              resident.
 *
 * Entry points: measure_now() is the clock; measure_start()/measure_stop()
 * and measure_from_rusage() fill a Measure; measure_spread() and
 * measure_summarize() give min, median and max over runs; cache_prepare(),
 * cache_evict(), cache_warm() and cache_resident() work on the page cache;
 * file_total_bytes() sizes a relation.
 * See also: scanrun.c, rawio.c, iobench_run.c, compare.c -- what is timed.
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

/* Where a run started. */
typedef struct MeasureStart {
    double ms_wall;      /* measure_now() */
    struct rusage ms_ru; /* getrusage(RUSAGE_SELF) */
} MeasureStart;

/* Monotonic seconds: the clock every figure is read from. */
double measure_now(void);

/* Start and stop timing this process (getrusage(RUSAGE_SELF) deltas). */
void measure_start(MeasureStart *ms);
void measure_stop(const MeasureStart *ms, Measure *m);

/* Fill m from a child's rusage (from wait4) and its wall time. */
void measure_from_rusage(double wall_s, const struct rusage *ru, Measure *m);

/* Minimum, median and maximum of n values (n >= 1; x is not changed). */
void measure_spread(const double *x, int n, double *min, double *med, double *max);

/* One figure over several runs. */
typedef struct Spread {
    double sp_min; /* the least */
    double sp_med; /* the median (the mean of the middle two of an even count) */
    double sp_max; /* the most */
} Spread;

/* Every figure of a Measure over several runs, each spread on its own. */
typedef struct MeasureSpread {
    Spread mp_wall;   /* elapsed seconds */
    Spread mp_user;   /* user CPU seconds */
    Spread mp_sys;    /* kernel CPU seconds */
    Spread mp_minflt; /* minor faults */
    Spread mp_majflt; /* major faults */
} MeasureSpread;

/* The spread of each figure of runs[0 .. n-1] (n >= 1). */
void measure_summarize(const Measure *runs, int n, MeasureSpread *s);

/* Cache states a run can be prepared in. */
typedef enum CacheMode {
    CACHE_ASIS, /* left as it is */
    CACHE_COLD, /* evicted: fdatasync + POSIX_FADV_DONTNEED */
    CACHE_WARM, /* read through once */
} CacheMode;

/* "asis", "cold", "warm": the names, in the enum's order, NULL after the last. */
extern const char *const cache_mode_names[];
const char *cache_mode_name(CacheMode mode);

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
