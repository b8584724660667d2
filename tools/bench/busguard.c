/*
 * busguard.c -- SIGBUS under a mapping turned into an error (see busguard.h).
 */
#include "busguard.h"

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>

static const BusGuard *volatile active;
static struct sigaction before; /* the action busguard_run() replaced */
static sigjmp_buf guard_env;
static volatile uint64_t fault_where;
static volatile sig_atomic_t fault_located;

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
    fault_located =
        g->bg_locate != NULL && g->bg_locate(g->bg_arg, si->si_addr, &where);
    fault_where = where;
    siglongjmp(guard_env, 1);
}

/* noinline: the work's state must stay the caller's, never a local of the
 * function that calls sigsetjmp() (whose locals a longjmp may clobber). */
__attribute__((noinline)) int busguard_run(const BusGuard *g, bool *located,
                                           uint64_t *where, HsError *err)
{
    struct sigaction sa = {.sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &before);
    *located = false;
    *where = 0;

    int rc;
    active = g;
    if (sigsetjmp(guard_env, 1) == 0) {
        rc = g->bg_work(g->bg_arg, err);
    } else {
        rc = BUSGUARD_FAULT;
        *located = fault_located != 0;
        *where = fault_where;
    }
    active = NULL;
    sigaction(SIGBUS, &before, NULL);
    return rc;
}
