/*
 * pageio.c -- preadv into frames and mmap windows (see pageio.h).
 */
#include "pageio.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BUFMGR_IO_MAX_PAGES 128 /* the most pages one worker request holds (1 MiB) */

int pageio_map(RelFile *rf, uint64_t first, uint32_t want, PageIOAdvice adv,
               PageIOWindow *w, HsError *err)
{
    int fd;
    uint64_t off;
    uint64_t nblocks = relfile_nblocks(rf);
    if (first >= nblocks || relfile_block_fd(rf, first, &fd, &off) < 0)
        return hs_error_set(err, -EINVAL, rf->rf_path, (int64_t)first,
                            "map past the end of the relation (%llu pages)",
                            (unsigned long long)nblocks);
    uint64_t limit = rf->rf_seg_blocks - first % rf->rf_seg_blocks;
    if (limit > nblocks - first)
        limit = nblocks - first;
    uint32_t n = want < limit ? want : (uint32_t)limit;
    size_t len = (size_t)n * BLCKSZ;

    int flags = MAP_SHARED | (adv == PAGEIO_ADV_POPULATE ? MAP_POPULATE : 0);
    void *base = mmap(NULL, len, PROT_READ, flags, fd, (off_t)off);
    if (base == MAP_FAILED)
        return hs_error_set(err, -errno, rf->rf_path, (int64_t)first, "mmap: %s",
                            strerror(errno));
    static const int advice[] = {
        [PAGEIO_ADV_NORMAL] = MADV_NORMAL,
        [PAGEIO_ADV_SEQUENTIAL] = MADV_SEQUENTIAL,
        [PAGEIO_ADV_WILLNEED] = MADV_WILLNEED,
        [PAGEIO_ADV_POPULATE] = MADV_NORMAL,
    };
    if (adv != PAGEIO_ADV_NORMAL && adv != PAGEIO_ADV_POPULATE)
        (void)madvise(base, len, advice[adv]); /* advice only: failure is harmless */
    *w = (PageIOWindow){
        .pw_first = first, .pw_npages = n, .pw_base = base, .pw_len = len};
    return 0;
}

void pageio_unmap(PageIOWindow *w)
{
    if (w->pw_base != NULL)
        munmap(w->pw_base, w->pw_len);
    w->pw_base = NULL;
}

/* ---- the I/O worker ------------------------------------------------------ */

/*
 * Handing a request over and back must cost less than the copy it overlaps:
 * a condition-variable wake-up takes tens of microseconds on a virtual
 * machine, about as long as reading the batch.  So both sides first spin on
 * the request's state for a while (a batch takes ~50 us to scan) and only
 * then sleep; the lock is taken only to sleep or to wake a sleeper.  The
 * spin yields the CPU every 64 turns: when another process holds the other
 * core, a pure spin waits for a thread that cannot run (measured: 480 ms
 * instead of 50 for the default table with one busy process beside it; with
 * the yields, 120 ms, against 86 ms without a worker at all).
 */
#define SPINS 20000

enum { W_IDLE, W_SUBMITTED, W_DONE };

struct PageIOWorker {
    RelFile *pw_rel;
    pthread_t pw_thread;
    pthread_mutex_t pw_lock;
    pthread_cond_t pw_cond; /* a sleeper waits here */
    _Atomic int pw_state;   /* W_*: the request's hand-over */
    _Atomic bool pw_stop;
    bool pw_worker_sleeps; /* under pw_lock */
    bool pw_owner_sleeps;  /* under pw_lock */
    bool pw_outstanding;   /* owner's own: submitted and not yet waited for */
    /* the request */
    uint64_t pw_blkno;
    uint32_t pw_n;
    void *pw_frames[BUFMGR_IO_MAX_PAGES];
    /* its result */
    int pw_rc;
    uint32_t pw_calls;
    HsError pw_err;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spin, then sleep, until the state is want (or the worker is told to stop). */
static void await_state(PageIOWorker *w, int want, bool *sleeps)
{
    for (int i = 0; i < SPINS; i++) {
        if (atomic_load_explicit(&w->pw_state, memory_order_acquire) == want ||
            atomic_load_explicit(&w->pw_stop, memory_order_relaxed))
            return;
        if (i % 64 == 63)
            sched_yield(); /* let the other side run if it shares this core */
        else
            cpu_relax();
    }
    pthread_mutex_lock(&w->pw_lock);
    while (atomic_load(&w->pw_state) != want && !atomic_load(&w->pw_stop)) {
        *sleeps = true;
        pthread_cond_wait(&w->pw_cond, &w->pw_lock);
    }
    *sleeps = false;
    pthread_mutex_unlock(&w->pw_lock);
}

/* Set the state and wake the other side if it went to sleep. */
static void publish_state(PageIOWorker *w, int state, const bool *other_sleeps)
{
    atomic_store_explicit(&w->pw_state, state, memory_order_release);
    pthread_mutex_lock(&w->pw_lock);
    if (*other_sleeps)
        pthread_cond_broadcast(&w->pw_cond);
    pthread_mutex_unlock(&w->pw_lock);
}

static void *worker_main(void *arg)
{
    PageIOWorker *w = arg;
    for (;;) {
        await_state(w, W_SUBMITTED, &w->pw_worker_sleeps);
        if (atomic_load(&w->pw_stop))
            return NULL;
        w->pw_rc = relfile_readv(w->pw_rel, w->pw_blkno, w->pw_n, w->pw_frames,
                                 &w->pw_calls, &w->pw_err);
        publish_state(w, W_DONE, &w->pw_owner_sleeps);
    }
}

PageIOWorker *pageio_worker_start(RelFile *rf)
{
    PageIOWorker *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->pw_rel = rf;
    atomic_init(&w->pw_state, W_IDLE);
    atomic_init(&w->pw_stop, false);
    pthread_mutex_init(&w->pw_lock, NULL);
    pthread_cond_init(&w->pw_cond, NULL);
    /* signals are for the main thread: block them all while the worker starts */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&w->pw_thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&w->pw_lock);
        pthread_cond_destroy(&w->pw_cond);
        free(w);
        return NULL;
    }
    return w;
}

void pageio_worker_submit(PageIOWorker *w, uint64_t blkno, uint32_t n,
                          void *const *frames)
{
    w->pw_blkno = blkno;
    w->pw_n = n;
    memcpy(w->pw_frames, frames, n * sizeof(frames[0]));
    w->pw_outstanding = true;
    publish_state(w, W_SUBMITTED, &w->pw_worker_sleeps);
}

bool pageio_worker_busy(const PageIOWorker *w)
{
    return w->pw_outstanding;
}

int pageio_worker_wait(PageIOWorker *w, uint32_t *calls, HsError *err)
{
    await_state(w, W_DONE, &w->pw_owner_sleeps);
    int rc = w->pw_rc;
    *calls = w->pw_calls;
    if (rc < 0 && err != NULL)
        *err = w->pw_err;
    atomic_store_explicit(&w->pw_state, W_IDLE, memory_order_relaxed);
    w->pw_outstanding = false;
    return rc;
}

void pageio_worker_stop(PageIOWorker *w)
{
    if (w == NULL)
        return;
    uint32_t calls;
    if (pageio_worker_busy(w))
        pageio_worker_wait(w, &calls, NULL);
    atomic_store(&w->pw_stop, true);
    pthread_mutex_lock(&w->pw_lock);
    pthread_cond_broadcast(&w->pw_cond);
    pthread_mutex_unlock(&w->pw_lock);
    pthread_join(w->pw_thread, NULL);
    pthread_mutex_destroy(&w->pw_lock);
    pthread_cond_destroy(&w->pw_cond);
    free(w);
}
