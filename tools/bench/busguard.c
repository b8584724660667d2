/*
 * busguard.c -- SIGBUS under a mapping turned into an error (see busguard.h).
 *
 * Entry point: busguard_run.  The handler only records where the fault was
 * and jumps back; the error is made afterwards, outside the handler, by
 * fault_error().
 */
#include "busguard.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>

/* Each thread's guard: a SIGBUS is delivered to the thread that faulted, so
 * the workers of a parallel scan each have their own. */
static _Thread_local const BusGuard *volatile active;
static _Thread_local sigjmp_buf guard_env;
static _Thread_local volatile uint64_t fault_where;
static _Thread_local volatile sig_atomic_t fault_located;

/* The handler is the process's: installed by the first guard, the action it
 * replaced put back by the last. */
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned installed;      /* guards running */
static struct sigaction before; /* the action the first one replaced */

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    const BusGuard *g = active;
    /* not ours (no guarded work, or sent by kill()): the action we replaced
     * takes it, on return (the fault repeats) or at once (it is pending) */
    if (g == NULL || si->si_code <= 0) {
        sigaction(sig, &before, NULL);
        if (si->si_code <= 0)
            raise(sig);
        return;
    }
    uint64_t where = 0;
    fault_located = g->bg_locate != NULL &&
                    g->bg_locate(g->bg_locate_arg ? g->bg_locate_arg : g->bg_arg,
                                 si->si_addr, &where);
    fault_where = where;
    siglongjmp(guard_env, 1);
}

/* The error of a SIGBUS that cut g's work short, placed at where if located. */
static int fault_error(const BusGuard *g, bool located, uint64_t where, HsError *err)
{
    if (!located)
        return hs_error_set(err, -EFAULT, g->bg_file, HS_NO_BLOCK,
                            "SIGBUS outside the mapping");
    if (g->bg_unit == BUSGUARD_BLOCK)
        return hs_error_set(err, -EFAULT, g->bg_file, (int64_t)where,
                            "SIGBUS reading the mapped page: the file shrank under "
                            "the mapping");
    int64_t block =
        g->bg_block_bytes != 0 ? (int64_t)(where / g->bg_block_bytes) : HS_NO_BLOCK;
    return hs_error_set(err, -EFAULT, g->bg_file, block,
                        "SIGBUS at byte %llu: the file shrank under the mapping",
                        (unsigned long long)where);
}

/* noinline: the work's state must stay the caller's, never a local of the
 * function that calls sigsetjmp() (whose locals a longjmp may clobber). */
static void install(void)
{
    pthread_mutex_lock(&install_lock);
    if (installed++ == 0) {
        struct sigaction sa = {.sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, &before);
    }
    pthread_mutex_unlock(&install_lock);
}

static void uninstall(void)
{
    pthread_mutex_lock(&install_lock);
    if (--installed == 0)
        sigaction(SIGBUS, &before, NULL);
    pthread_mutex_unlock(&install_lock);
}

/* noinline: the work's state must stay the caller's, never a local of the
 * function that calls sigsetjmp() (whose locals a longjmp may clobber). */
__attribute__((noinline)) int busguard_run(const BusGuard *g, HsError *err)
{
    int rc;
    install();
    active = g;
    if (sigsetjmp(guard_env, 1) == 0)
        rc = g->bg_work(g->bg_arg, err);
    else
        rc = fault_error(g, fault_located != 0, fault_where, err);
    active = NULL;
    uninstall();
    return rc;
}
