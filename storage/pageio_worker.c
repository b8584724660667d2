/*
 * pageio_worker.c -- the worker I/O method: a thread that reads its
 *                    owner's requests, in the order submitted, while the
 *                    owner works on the pages of earlier ones (as
 *                    PostgreSQL 18's io_method=worker; see pageio.h).
 *
 * The hand-off is two POSIX semaphores and a ring of request pointers:
 *   owner:  q[tail++] = r; sem_post(todo)      ...  sem_wait(done); r = q[head++]
 *   worker: sem_wait(todo); read q[next++]; sem_post(done)
 * A semaphore post is the release and its wait the acquire, so the worker
 * sees the request the owner filled and the owner sees the pages and the
 * result the worker wrote.  Neither side spins: a side that is ahead
 * sleeps in the kernel (a futex) until the other posts, and glibc's
 * sem_post() makes no system call when nobody sleeps, which is the common
 * case while both keep up.  The owner waits only for the oldest request
 * and keeps at most PAGEIO_WORKER_DEPTH outstanding, so the ring never
 * overflows.  A NULL request tells the worker to exit.
 *
 * The worker may run on any CPU the process may: it is never pinned, so
 * the scheduler can move it away from another busy process.  It blocks
 * every signal (they are the owner's to handle).
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>

#include "pageio_clock.h"
#include "pageio_int.h"

#define RING (PAGEIO_WORKER_DEPTH + 1) /* the requests and the exit sentinel */

typedef struct WorkerState {
    RelFile *wk_rel;              /* what it reads */
    pthread_t wk_thread;          /* the worker */
    sem_t wk_todo;                /* requests queued and not yet taken */
    sem_t wk_done;                /* requests finished and not yet waited for */
    PageIORequest *wk_ring[RING]; /* written by the owner before each post */
    unsigned wk_tail;             /* owner: requests queued so far */
    unsigned wk_head;             /* owner: requests waited for so far */
} WorkerState;

/* Wait on s, again after a signal handler interrupts the wait. */
static void sem_wait_all(sem_t *s)
{
    while (sem_wait(s) != 0 && errno == EINTR)
        ;
}

static void *worker_main(void *arg)
{
    WorkerState *w = arg;
    for (unsigned next = 0;; next++) {
        sem_wait_all(&w->wk_todo);
        PageIORequest *r = w->wk_ring[next % RING];
        if (r == NULL)
            return NULL;
        r->pr_rc = relfile_readv(w->wk_rel, r->pr_blkno, r->pr_n, r->pr_pages,
                                 &r->pr_calls, &r->pr_err);
        r->pr_late_ns = pageio_sleep_until(r->pr_deadline);
        sem_post(&w->wk_done);
    }
}

static int worker_open(PageIO *io, const PageIOConfig *cfg, HsError *err)
{
    (void)cfg, (void)err;
    WorkerState *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return -EAGAIN; /* falls back to sync */
    w->wk_rel = io->io_rel;
    if (sem_init(&w->wk_todo, 0, 0) != 0 || sem_init(&w->wk_done, 0, 0) != 0) {
        free(w);
        return -EAGAIN;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the thread inherits the mask */
    int rc = pthread_create(&w->wk_thread, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        sem_destroy(&w->wk_todo);
        sem_destroy(&w->wk_done);
        free(w);
        return -EAGAIN;
    }
    io->io_state = w;
    return 0;
}

static unsigned worker_max_in_flight(const PageIO *io)
{
    (void)io;
    return PAGEIO_WORKER_DEPTH;
}

static void worker_submit(PageIO *io, PageIORequest *r)
{
    WorkerState *w = io->io_state;
    w->wk_ring[w->wk_tail++ % RING] = r;
    sem_post(&w->wk_todo);
}

static void worker_wait(PageIO *io, PageIORequest *r)
{
    WorkerState *w = io->io_state;
    assert(w->wk_head != w->wk_tail && w->wk_ring[w->wk_head % RING] == r);
    r->pr_waited = sem_trywait(&w->wk_done) != 0;
    if (r->pr_waited)
        sem_wait_all(&w->wk_done);
    w->wk_head++;
    r->pr_inline = false;
}

static void worker_close(PageIO *io)
{
    WorkerState *w = io->io_state;
    if (w == NULL)
        return;
    while (w->wk_head != w->wk_tail) { /* their frames stay until they are read */
        sem_wait_all(&w->wk_done);
        w->wk_head++;
    }
    w->wk_ring[w->wk_tail++ % RING] = NULL;
    sem_post(&w->wk_todo);
    pthread_join(w->wk_thread, NULL);
    sem_destroy(&w->wk_todo);
    sem_destroy(&w->wk_done);
    free(w);
    io->io_state = NULL;
}

const PageIOMethods pageio_worker_methods = {
    .pm_open = worker_open,
    .pm_close = worker_close,
    .pm_max_in_flight = worker_max_in_flight,
    .pm_submit = worker_submit,
    .pm_wait = worker_wait,
};
