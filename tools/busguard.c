/*
 * busguard.c -- SIGBUS under a mapping turned into an error (see busguard.h).
 */
#include "busguard.h"

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>

static const BusGuard *volatile active;
static sigjmp_buf guard_env;
static volatile uint64_t fault_where;
static volatile sig_atomic_t fault_located;

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    const BusGuard *g = active;
    if (g == NULL) { /* not ours: die of it as we would have */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    uint64_t where = 0;
    fault_located =
        g->bg_locate != NULL && g->bg_locate(g->bg_arg, si->si_addr, &where);
    fault_where = where;
    siglongjmp(guard_env, 1);
}

int busguard_run(const BusGuard *g, bool *located, uint64_t *where, HsError *err)
{
    struct sigaction sa = {.sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &old);
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
    sigaction(SIGBUS, &old, NULL);
    return rc;
}
