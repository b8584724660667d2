/*
 * pageio.c -- preadv into frames (in line or on the I/O worker), the
 *             method switch, the simulated latency, and mmap windows (see
 *             pageio.h).  The io_uring method is pageio_uring.c.
 */
#include "pageio.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "pageio_uring.h"

const char *const pageio_advice_names[] = {[PAGEIO_ADV_NORMAL] = "normal",
                                           [PAGEIO_ADV_SEQUENTIAL] = "sequential",
                                           [PAGEIO_ADV_WILLNEED] = "willneed",
                                           [PAGEIO_ADV_POPULATE] = "populate",
                                           [PAGEIO_ADV_POPULATE + 1] = NULL};

const char *pageio_advice_name(PageIOAdvice a)
{
    return pageio_advice_names[a];
}

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
 * Handing a request over and back must cost less than the copy it overlaps
 * (a 128 KiB batch is 8-20 us of copying here).  A condition-variable
 * wake-up takes tens of microseconds on a virtual machine, and so does a
 * sched_yield() that is not needed (a system call, ~2 us here, and the
 * moment the other side is ready may be missed meanwhile).  So a waiter
 * spins with the CPU's pause hint, long enough to cover a batch (SPIN_NS).
 * But when another process holds the other core, a pure spin waits for a
 * thread that cannot run (measured: 480 ms instead of 50 for the default
 * table with one busy process beside it): a wait that outlasts SPIN_NS
 * makes that side yield every 64 turns from the start for its next
 * CONTENDED_WAITS waits (with a busy process beside it, a verifying scan
 * then took 107 ms against 117 ms without a worker).  After YIELD_NS of
 * waiting it sleeps.  The
 * publisher takes the lock only when the other side said it sleeps.
 */
#define SPIN_NS         50000
#define YIELD_NS        1000000
#define CONTENDED_WAITS 256

enum { W_IDLE, W_SUBMITTED, W_DONE };

/* One request: its hand-over state, what to read, and how it went. */
typedef struct WorkerReq {
    _Atomic int pr_state;              /* W_* */
    uint64_t pr_blkno;                 /* the first block */
    uint32_t pr_n;                     /* pages */
    void *pr_frames[PAGEIO_MAX_PAGES]; /* where each goes */
    uint64_t pr_deadline;              /* --io-latency: done no sooner (ns; 0: none) */
    int pr_rc;                         /* the result */
    uint32_t pr_calls;                 /* the system calls it took */
    HsError pr_err;                    /* the error, if any */
} WorkerReq;

typedef struct PageIOWorker {
    RelFile *pw_rel;
    pthread_t pw_thread;
    pthread_mutex_t pw_lock;
    pthread_cond_t pw_cond; /* a sleeper waits here */
    _Atomic bool pw_stop;
    _Atomic bool pw_worker_sleeps; /* set under pw_lock, read without */
    _Atomic bool pw_owner_sleeps;
    unsigned pw_worker_contended; /* waits left to yield early in, each side's */
    unsigned pw_owner_contended;
    unsigned pw_submitted, pw_waited; /* the owner's counts of requests */
    /* taken in turn by both sides, so the worker goes from one straight on to
     * the next when the owner queued it in time */
    WorkerReq pw_req[PAGEIO_QUEUE];
} PageIOWorker;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

uint64_t pageio_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    return pageio_now_ns();
}

/*
 * A timed sleep wakes late here: clock_nanosleep() overshot a 200 us sleep
 * by 107 us at the median (51 us with a timer slack of 1 ns), io_uring's
 * own timeout by 46 us -- a virtual machine's timer.  That is half of the
 * latency being simulated, so only the part of a wait beyond SLEEP_SLACK_NS
 * is slept; the rest is spun, and the deadline is met within a microsecond.
 */
#define SLEEP_SLACK_NS 250000

void pageio_wait_until(uint64_t deadline)
{
    uint64_t t = now_ns();
    if (deadline > t + SLEEP_SLACK_NS) {
        uint64_t wake = deadline - SLEEP_SLACK_NS;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000u),
                              .tv_nsec = (long)(wake % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    while (now_ns() < deadline)
        cpu_relax();
}

uint64_t pageio_deadline(uint32_t latency_us)
{
    return latency_us == 0 ? 0 : now_ns() + (uint64_t)latency_us * 1000u;
}

static inline bool reached(PageIOWorker *w, _Atomic int *state, int want)
{
    return atomic_load_explicit(state, memory_order_acquire) == want ||
           atomic_load_explicit(&w->pw_stop, memory_order_relaxed);
}

/* Spin, spin and yield, then sleep, until *state is want (or the worker is
 * told to stop).  *contended: waits left in which to yield at once. */
static void await_state(PageIOWorker *w, _Atomic int *state, int want,
                        _Atomic bool *sleeps, unsigned *contended)
{
    uint64_t start = 0;
    bool yield_now = *contended > 0;
    if (yield_now)
        (*contended)--;
    for (unsigned i = 0;; i++) {
        if (reached(w, state, want))
            return;
        if (i % 64 != 63) {
            cpu_relax();
            continue;
        }
        uint64_t t = now_ns();
        if (start == 0)
            start = t;
        if (t - start > YIELD_NS)
            break;
        if (!yield_now && t - start > SPIN_NS) {
            yield_now = true; /* the other side is not running: */
            *contended = CONTENDED_WAITS;
        }
        if (yield_now)
            sched_yield(); /* let it run if it shares this core */
    }
    pthread_mutex_lock(&w->pw_lock);
    atomic_store(sleeps, true); /* then the state: see publish_state() */
    while (atomic_load(state) != want && !atomic_load(&w->pw_stop))
        pthread_cond_wait(&w->pw_cond, &w->pw_lock);
    atomic_store(sleeps, false);
    pthread_mutex_unlock(&w->pw_lock);
}

/*
 * Set *state and wake the other side if it went to sleep.  Both stores and
 * loads are sequentially consistent: either this load sees the sleeper's
 * flag, or the sleeper's later load sees this state.
 */
static void publish_state(PageIOWorker *w, _Atomic int *state, int value,
                          _Atomic bool *other_sleeps)
{
    atomic_store(state, value);
    if (atomic_load(other_sleeps)) {
        pthread_mutex_lock(&w->pw_lock);
        pthread_cond_broadcast(&w->pw_cond);
        pthread_mutex_unlock(&w->pw_lock);
    }
}

static void *worker_main(void *arg)
{
    PageIOWorker *w = arg;
    for (unsigned k = 0;; k++) {
        WorkerReq *r = &w->pw_req[k % PAGEIO_QUEUE];
        await_state(w, &r->pr_state, W_SUBMITTED, &w->pw_worker_sleeps,
                    &w->pw_worker_contended);
        if (atomic_load(&w->pw_stop))
            return NULL;
        r->pr_rc = relfile_readv(w->pw_rel, r->pr_blkno, r->pr_n, r->pr_frames,
                                 &r->pr_calls, &r->pr_err);
        if (r->pr_deadline != 0)
            pageio_wait_until(r->pr_deadline);
        publish_state(w, &r->pr_state, W_DONE, &w->pw_owner_sleeps);
    }
}

static PageIOWorker *worker_start(RelFile *rf)
{
    PageIOWorker *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->pw_rel = rf;
    for (int i = 0; i < PAGEIO_QUEUE; i++)
        atomic_init(&w->pw_req[i].pr_state, W_IDLE);
    atomic_init(&w->pw_stop, false);
    atomic_init(&w->pw_worker_sleeps, false);
    atomic_init(&w->pw_owner_sleeps, false);
    pthread_mutex_init(&w->pw_lock, NULL);
    pthread_cond_init(&w->pw_cond, NULL);
    /*
     * On the CPUs its owner may use, but not the one the owner runs on: the
     * scheduler otherwise puts it beside its owner now and then, and the two
     * take turns on one CPU (seen in a third to three quarters of the
     * hand-overs of some scans here).  With only that CPU allowed, anywhere.
     */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    cpu_set_t cpus;
    int here = sched_getcpu();
    if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && here >= 0 &&
        CPU_ISSET(here, &cpus) && CPU_COUNT(&cpus) > 1) {
        CPU_CLR(here, &cpus);
        pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
    }
    /* signals are for the main thread: block them all while the worker starts */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&w->pw_thread, &attr, worker_main, w);
    if (rc != 0) /* the affinity refused (a cpuset, say): anywhere will do */
        rc = pthread_create(&w->pw_thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        pthread_mutex_destroy(&w->pw_lock);
        pthread_cond_destroy(&w->pw_cond);
        free(w);
        return NULL;
    }
    return w;
}

static unsigned worker_outstanding(const PageIOWorker *w);

static void worker_submit(PageIOWorker *w, uint64_t blkno, uint32_t n,
                          void *const *frames, uint64_t deadline)
{
    assert(worker_outstanding(w) < PAGEIO_QUEUE && n <= PAGEIO_MAX_PAGES);
    WorkerReq *r = &w->pw_req[w->pw_submitted++ % PAGEIO_QUEUE];
    r->pr_blkno = blkno;
    r->pr_n = n;
    r->pr_deadline = deadline;
    memcpy(r->pr_frames, frames, n * sizeof(frames[0]));
    publish_state(w, &r->pr_state, W_SUBMITTED, &w->pw_worker_sleeps);
}

static unsigned worker_outstanding(const PageIOWorker *w)
{
    return w->pw_submitted - w->pw_waited;
}

static int worker_wait(PageIOWorker *w, uint32_t *calls, HsError *err)
{
    assert(worker_outstanding(w) > 0);
    WorkerReq *r = &w->pw_req[w->pw_waited++ % PAGEIO_QUEUE];
    await_state(w, &r->pr_state, W_DONE, &w->pw_owner_sleeps, &w->pw_owner_contended);
    int rc = r->pr_rc;
    *calls = r->pr_calls;
    if (rc < 0 && err != NULL)
        *err = r->pr_err;
    atomic_store_explicit(&r->pr_state, W_IDLE, memory_order_relaxed);
    return rc;
}

static void worker_stop(PageIOWorker *w)
{
    if (w == NULL)
        return;
    uint32_t calls;
    while (worker_outstanding(w) > 0)
        worker_wait(w, &calls, NULL);
    atomic_store(&w->pw_stop, true);
    pthread_mutex_lock(&w->pw_lock);
    pthread_cond_broadcast(&w->pw_cond);
    pthread_mutex_unlock(&w->pw_lock);
    pthread_join(w->pw_thread, NULL);
    pthread_mutex_destroy(&w->pw_lock);
    pthread_cond_destroy(&w->pw_cond);
    free(w);
}

/* ---- the method switch ---------------------------------------------------- */

const char *const pageio_method_names[] = {[PAGEIO_SYNC] = "sync",
                                           [PAGEIO_WORKER] = "worker",
                                           [PAGEIO_URING] = "io_uring",
                                           [PAGEIO_URING + 1] = NULL};

const char *pageio_method_name(PageIOMethod m)
{
    return pageio_method_names[m];
}

struct PageIO {
    RelFile *io_rel;         /* the relation read */
    PageIOMethod io_method;  /* as opened (after any fallback) */
    uint32_t io_latency_us;  /* --io-latency (0: none) */
    PageIOWorker *io_worker; /* PAGEIO_WORKER: the thread */
    PageIOUring *io_uring;   /* PAGEIO_URING: the ring */
    int io_rc;               /* PAGEIO_SYNC: the result of the request submitted */
    HsError io_err;          /* and its error */
};

int pageio_open(PageIO **out, RelFile *rf, const PageIOConfig *cfg, HsError *err)
{
    PageIO *io = calloc(1, sizeof(*io));
    if (io == NULL)
        return hs_error_set(err, -ENOMEM, rf->rf_path, HS_NO_BLOCK, "out of memory");
    io->io_rel = rf;
    io->io_method = PAGEIO_SYNC;
    io->io_latency_us = cfg->pc_latency_us;
    if (cfg->pc_method == PAGEIO_URING) {
        int rc = pageio_uring_open(&io->io_uring, rf, cfg->pc_depth, err);
        if (rc < 0) {
            free(io);
            return rc;
        }
        io->io_method = PAGEIO_URING;
    }
    if (cfg->pc_method == PAGEIO_WORKER && (io->io_worker = worker_start(rf)) != NULL)
        io->io_method = PAGEIO_WORKER; /* no thread: read in line */
    *out = io;
    return 0;
}

PageIOMethod pageio_method(const PageIO *io)
{
    return io->io_method;
}

unsigned pageio_max_in_flight(const PageIO *io)
{
    if (io->io_uring != NULL)
        return pageio_uring_depth(io->io_uring);
    return io->io_method == PAGEIO_WORKER ? PAGEIO_QUEUE : 1;
}

/* relfile_readv() in this thread, done no sooner than --io-latency after
 * it started. */
static int read_in_line(PageIO *io, PageIORequest *r, HsError *err)
{
    uint64_t deadline = pageio_deadline(io->io_latency_us);
    int rc =
        relfile_readv(io->io_rel, r->pr_blkno, r->pr_n, r->pr_pages, &r->pr_calls, err);
    if (deadline != 0)
        pageio_wait_until(deadline);
    return rc;
}

/*
 * io_uring with every slot taken (several streams, or single reads, sharing
 * one buffer manager share its depth): the request is read in line, its
 * result kept in r and its error in io_err for its wait.
 */
#define NO_SLOT UINT_MAX

void pageio_submit(PageIO *io, PageIORequest *r)
{
    assert(!r->pr_submitted && r->pr_n >= 1 && r->pr_n <= PAGEIO_MAX_PAGES);
    r->pr_submitted = true;
    if (io->io_uring != NULL && !pageio_uring_full(io->io_uring)) {
        pageio_uring_submit(io->io_uring, r, pageio_deadline(io->io_latency_us));
        return;
    }
    if (io->io_uring != NULL) {
        r->pr_slot = NO_SLOT;
        r->pr_inline = true;
        r->pr_waited = false;
        r->pr_rc = read_in_line(io, r, &io->io_err);
        return;
    }
    if (io->io_worker != NULL) {
        worker_submit(io->io_worker, r->pr_blkno, r->pr_n, r->pr_pages,
                      pageio_deadline(io->io_latency_us));
        return;
    }
    io->io_rc = read_in_line(io, r, &io->io_err);
}

int pageio_read(PageIO *io, PageIORequest *r, HsError *err)
{
    if (io->io_uring != NULL) { /* through the ring (in line when it is full) */
        pageio_submit(io, r);
        return pageio_wait(io, r, err);
    }
    return r->pr_rc = read_in_line(io, r, err);
}

int pageio_wait(PageIO *io, PageIORequest *r, HsError *err)
{
    assert(r->pr_submitted);
    r->pr_submitted = false;
    if (io->io_uring != NULL && r->pr_slot == NO_SLOT) {
        if (r->pr_rc < 0 && err != NULL)
            *err = io->io_err;
    } else if (io->io_uring != NULL)
        r->pr_rc = pageio_uring_wait(io->io_uring, r, err);
    else if (io->io_worker != NULL)
        r->pr_rc = worker_wait(io->io_worker, &r->pr_calls, err);
    else if ((r->pr_rc = io->io_rc) < 0 && err != NULL)
        *err = io->io_err;
    return r->pr_rc;
}

void pageio_close(PageIO *io)
{
    if (io == NULL)
        return;
    worker_stop(io->io_worker);
    pageio_uring_close(io->io_uring);
    free(io);
}
