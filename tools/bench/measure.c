/*
 * measure.c -- timing and page-cache control (see measure.h).
 *
 * Entry points: measure_now, measure_start, measure_stop,
 * measure_from_rusage, measure_spread, measure_summarize, cache_mode_name,
 * cache_evict, cache_warm, cache_prepare, cache_resident, file_total_bytes.
 */
#include "measure.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "relfile.h"

const char *const cache_mode_names[] = {"asis", "cold", "warm", NULL};

const char *cache_mode_name(CacheMode mode)
{
    return cache_mode_names[mode];
}

double measure_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void measure_start(MeasureStart *ms)
{
    getrusage(RUSAGE_SELF, &ms->ms_ru);
    ms->ms_wall = measure_now();
}

void measure_stop(const MeasureStart *ms, Measure *m)
{
    struct rusage ru;
    double wall = measure_now();
    getrusage(RUSAGE_SELF, &ru);
    m->m_wall_s = wall - ms->ms_wall;
    m->m_user_s = tv_s(ru.ru_utime) - tv_s(ms->ms_ru.ru_utime);
    m->m_sys_s = tv_s(ru.ru_stime) - tv_s(ms->ms_ru.ru_stime);
    m->m_minflt = ru.ru_minflt - ms->ms_ru.ru_minflt;
    m->m_majflt = ru.ru_majflt - ms->ms_ru.ru_majflt;
}

void measure_from_rusage(double wall_s, const struct rusage *ru, Measure *m)
{
    m->m_wall_s = wall_s;
    m->m_user_s = tv_s(ru->ru_utime);
    m->m_sys_s = tv_s(ru->ru_stime);
    m->m_minflt = ru->ru_minflt;
    m->m_majflt = ru->ru_majflt;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void measure_spread(const double *x, int n, double *min, double *med, double *max)
{
    double *s = malloc((size_t)n * sizeof(double));
    if (s == NULL) {
        *min = *med = *max = x[0];
        return;
    }
    memcpy(s, x, (size_t)n * sizeof(double));
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    *min = s[0];
    *max = s[n - 1];
    *med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
}

/* The spread of one field, picked out of every run by get. */
static Spread spread_of(const Measure *runs, int n, double (*get)(const Measure *))
{
    Spread s;
    double *x = malloc((size_t)n * sizeof(double));
    if (x == NULL) { /* out of memory: the first run stands for all */
        s.sp_min = s.sp_med = s.sp_max = get(&runs[0]);
        return s;
    }
    for (int i = 0; i < n; i++)
        x[i] = get(&runs[i]);
    measure_spread(x, n, &s.sp_min, &s.sp_med, &s.sp_max);
    free(x);
    return s;
}

static double get_wall(const Measure *m)
{
    return m->m_wall_s;
}

static double get_user(const Measure *m)
{
    return m->m_user_s;
}

static double get_sys(const Measure *m)
{
    return m->m_sys_s;
}

static double get_minflt(const Measure *m)
{
    return (double)m->m_minflt;
}

static double get_majflt(const Measure *m)
{
    return (double)m->m_majflt;
}

void measure_summarize(const Measure *runs, int n, MeasureSpread *s)
{
    s->mp_wall = spread_of(runs, n, get_wall);
    s->mp_user = spread_of(runs, n, get_user);
    s->mp_sys = spread_of(runs, n, get_sys);
    s->mp_minflt = spread_of(runs, n, get_minflt);
    s->mp_majflt = spread_of(runs, n, get_majflt);
}

/*
 * Call fn on each segment of path (path, path.1, ... while they exist; a
 * plain file is its own only segment).  Stops at the first error.
 */
static int each_segment(const char *path, HsError *err,
                        int (*fn)(const char *name, int fd, off_t size, void *arg,
                                  HsError *err),
                        void *arg)
{
    for (uint32_t seg = 0;; seg++) {
        char name[PATH_MAX];
        if (relfile_segment_name(path, seg, name, sizeof(name)) < 0)
            return hs_error_set(err, -ENAMETOOLONG, path, HS_NO_BLOCK, "name too long");
        uint64_t size;
        int fd = relfile_open_regular(name, O_RDONLY, &size, err);
        if (fd == -ENOENT && seg > 0)
            return 0;
        if (fd < 0)
            return fd; /* a FIFO or device would never end: refused */
        int rc = fn(name, fd, (off_t)size, arg, err);
        close(fd);
        if (rc < 0)
            return rc;
    }
}

static int evict_one(const char *name, int fd, off_t size, void *arg, HsError *err)
{
    (void)size;
    (void)arg;
    /* dirty pages cannot be dropped: write them out first */
    if (fdatasync(fd) < 0 && errno != EINVAL)
        return hs_error_set(err, -errno, name, HS_NO_BLOCK, "fdatasync: %s",
                            strerror(errno));
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (rc != 0)
        return hs_error_set(err, -rc, name, HS_NO_BLOCK, "posix_fadvise: %s",
                            strerror(rc));
    return 0;
}

int cache_evict(const char *path, HsError *err)
{
    return each_segment(path, err, evict_one, NULL);
}

static int warm_one(const char *name, int fd, off_t size, void *arg, HsError *err)
{
    (void)size;
    char *buf = arg;
    for (;;) {
        ssize_t got = read(fd, buf, 1 << 20);
        if (got == 0)
            return 0;
        if (got < 0 && errno != EINTR)
            return hs_error_set(err, -errno, name, HS_NO_BLOCK, "read: %s",
                                strerror(errno));
    }
}

int cache_warm(const char *path, HsError *err)
{
    char *buf = malloc(1 << 20);
    if (buf == NULL)
        return hs_error_set(err, -ENOMEM, path, HS_NO_BLOCK, "out of memory");
    int rc = each_segment(path, err, warm_one, buf);
    free(buf);
    return rc;
}

int cache_prepare(const char *path, CacheMode mode, HsError *err)
{
    switch (mode) {
    case CACHE_COLD:
        return cache_evict(path, err);
    case CACHE_WARM:
        return cache_warm(path, err);
    case CACHE_ASIS:
        break;
    }
    return 0;
}

typedef struct Residency {
    uint64_t pages, resident;
} Residency;

static int resident_one(const char *name, int fd, off_t size, void *arg, HsError *err)
{
    Residency *r = arg;
    long psz = sysconf(_SC_PAGESIZE);
    if (size == 0)
        return 0;
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return hs_error_set(err, -errno, name, HS_NO_BLOCK, "mmap: %s",
                            strerror(errno));
    size_t n = ((size_t)size + (size_t)psz - 1) / (size_t)psz;
    unsigned char *vec = malloc(n);
    int rc = 0;
    if (vec == NULL)
        rc = hs_error_set(err, -ENOMEM, name, HS_NO_BLOCK, "out of memory");
    else if (mincore(map, (size_t)size, vec) < 0)
        rc = hs_error_set(err, -errno, name, HS_NO_BLOCK, "mincore: %s",
                          strerror(errno));
    else
        for (size_t i = 0; i < n; i++)
            r->resident += vec[i] & 1;
    r->pages += n;
    free(vec);
    munmap(map, (size_t)size);
    return rc;
}

int cache_resident(const char *path, double *fraction, HsError *err)
{
    Residency r = {0, 0};
    int rc = each_segment(path, err, resident_one, &r);
    *fraction = r.pages ? (double)r.resident / (double)r.pages : 0.0;
    return rc;
}

static int size_one(const char *name, int fd, off_t size, void *arg, HsError *err)
{
    (void)name;
    (void)fd;
    (void)err;
    *(uint64_t *)arg += (uint64_t)size;
    return 0;
}

int file_total_bytes(const char *path, uint64_t *bytes, HsError *err)
{
    *bytes = 0;
    return each_segment(path, err, size_one, bytes);
}
