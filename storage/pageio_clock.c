/*
 * pageio_clock.c -- the simulated latency's clock and sleep (see
 *                   pageio_clock.h).
 */
#include "pageio_clock.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <time.h>

uint64_t pageio_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t pageio_deadline(uint32_t latency_us)
{
    return latency_us == 0 ? 0 : pageio_now_ns() + (uint64_t)latency_us * 1000u;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* How late this thread's sleeps wake (a low estimate), and whether its
 * timer slack was lowered (both per thread: each sleeps on its own). */
static _Thread_local uint64_t lead_ns;
static _Thread_local bool slack_set;

static void sleep_abs(uint64_t t)
{
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000u),
                          .tv_nsec = (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/*
 * Follow a low quantile of the lateness: down quickly, up slowly, so an
 * early wake is usually within the spin's reach and seldom needs a second
 * sleep (which would wake a whole lateness late).
 */
static void learn(uint64_t late)
{
    if (late < lead_ns)
        lead_ns -= (lead_ns - late) / 4;
    else
        lead_ns += (late - lead_ns) / 16;
}

uint32_t pageio_sleep_until(uint64_t deadline)
{
    uint64_t t = pageio_now_ns();
    if (deadline == 0 || t >= deadline)
        return 0;
    if (!slack_set) { /* the default 50 us slack would double the lateness */
        (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        slack_set = true;
    }
    if (deadline - t > lead_ns + PAGEIO_SPIN_MAX_NS) {
        uint64_t wake = deadline - lead_ns;
        sleep_abs(wake);
        t = pageio_now_ns();
        learn(t - wake);
    }
    uint64_t limit = t + PAGEIO_SPIN_MAX_NS;
    while (t < deadline && t < limit) {
        cpu_relax();
        t = pageio_now_ns();
    }
    if (t < deadline) { /* woke too early to spin the rest: sleep again */
        sleep_abs(deadline);
        t = pageio_now_ns();
    }
    uint64_t late = t - deadline;
    return late > UINT32_MAX ? UINT32_MAX : (uint32_t)late;
}
