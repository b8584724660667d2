/*
 * check_busguard.c -- the SIGBUS guard of every mmap reader
 *                     (tools/bench/busguard.c): a fault under a mapping of
 *                     a shrunk file becomes the one error, naming the block
 *                     or the byte; work that does not fault returns its own
 *                     result; a SIGBUS sent by kill() is passed on; the
 *                     handler is put back.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "busguard.h"
#include "testutil.h"

#define PAGE 8192

/* A mapped file of 4 pages of 0x5a bytes, and which byte the work reads. */
typedef struct Touch {
    const volatile unsigned char *t_base; /* the mapping */
    size_t t_len;                         /* its length */
    size_t t_at;                          /* the byte the work reads */
    int t_result;                         /* what the work returns if it reads */
    int t_unit;                           /* 0: locate bytes, 1: pages */
} Touch;

static int fd = -1;
static Touch t;

static void setup(void)
{
    static unsigned char data[4 * PAGE];
    tu_setup();
    memset(data, 0x5a, sizeof(data));
    fd = open(tu_path("shrinks"), O_CREAT | O_RDWR, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, sizeof(data)), (ssize_t)sizeof(data));
    void *p = mmap(NULL, sizeof(data), PROT_READ, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    t = (Touch){.t_base = p, .t_len = sizeof(data)};
}

static void teardown(void)
{
    munmap((void *)t.t_base, t.t_len);
    close(fd);
    tu_teardown();
}

static int touch_work(void *arg, HsError *err)
{
    (void)err;
    const Touch *w = arg;
    return w->t_base[w->t_at] == 0x5a ? w->t_result : -EILSEQ;
}

static bool touch_locate(const void *arg, const void *addr, uint64_t *where)
{
    const Touch *w = arg;
    const volatile unsigned char *a = addr;
    if (a < w->t_base || a >= w->t_base + w->t_len)
        return false;
    *where = (uint64_t)(a - w->t_base) / (w->t_unit ? PAGE : 1);
    return true;
}

static bool no_locate(const void *arg, const void *addr, uint64_t *where)
{
    (void)arg, (void)addr, (void)where;
    return false;
}

/* A guard over the test's mapping, errors naming "shrinks". */
static BusGuard guard(BusGuardUnit unit, uint64_t block_bytes)
{
    t.t_unit = unit == BUSGUARD_BLOCK;
    return (BusGuard){.bg_work = touch_work,
                      .bg_locate = touch_locate,
                      .bg_arg = &t,
                      .bg_file = "shrinks",
                      .bg_unit = unit,
                      .bg_block_bytes = block_bytes};
}

START_TEST(work_that_does_not_fault_returns_its_own_result)
{
    BusGuard g = guard(BUSGUARD_BYTE, 0);
    HsError err;
    t.t_at = 2 * PAGE + 5;
    t.t_result = -EIO;
    ck_assert_int_eq(busguard_run(&g, &err), -EIO);
    t.t_result = 0;
    ck_assert_int_eq(busguard_run(&g, &err), 0);
    /* within the last page of a shrunk file: the tail reads as zeros */
    ck_assert_int_eq(ftruncate(fd, PAGE + 100), 0);
    t.t_at = PAGE + 4000;
    ck_assert_int_eq(busguard_run(&g, &err), -EILSEQ);
}
END_TEST

START_TEST(a_fault_names_the_byte)
{
    BusGuard g = guard(BUSGUARD_BYTE, 0);
    HsError err;
    ck_assert_int_eq(ftruncate(fd, PAGE + 100), 0);
    t.t_at = 2 * PAGE + 5;
    ck_assert_int_eq(busguard_run(&g, &err), -EFAULT);
    ck_assert_int_eq(err.code, -EFAULT);
    ck_assert_str_eq(err.file, "shrinks");
    ck_assert_int_eq(err.block, HS_NO_BLOCK);
    ck_assert_str_eq(err.msg,
                     "SIGBUS at byte 16389: the file shrank under the mapping");
    /* with a block size, the block too */
    g = guard(BUSGUARD_BYTE, 4096);
    ck_assert_int_eq(busguard_run(&g, &err), -EFAULT);
    ck_assert_int_eq(err.block, 4);
    ck_assert_str_eq(err.msg,
                     "SIGBUS at byte 16389: the file shrank under the mapping");
}
END_TEST

START_TEST(a_fault_names_the_block)
{
    BusGuard g = guard(BUSGUARD_BLOCK, 0);
    HsError err;
    ck_assert_int_eq(ftruncate(fd, PAGE + 100), 0);
    t.t_at = 3 * PAGE + 1;
    ck_assert_int_eq(busguard_run(&g, &err), -EFAULT);
    ck_assert_int_eq(err.block, 3);
    ck_assert_str_eq(err.file, "shrinks");
    ck_assert_str_eq(
        err.msg, "SIGBUS reading the mapped page: the file shrank under the mapping");
}
END_TEST

START_TEST(a_fault_it_cannot_place_is_still_caught)
{
    BusGuard g = guard(BUSGUARD_BLOCK, 0);
    HsError err;
    struct sigaction before, now;
    ck_assert_int_eq(sigaction(SIGBUS, NULL, &before), 0);
    ck_assert_int_eq(ftruncate(fd, PAGE + 100), 0);
    t.t_at = 3 * PAGE;
    g.bg_locate = no_locate;
    ck_assert_int_eq(busguard_run(&g, &err), -EFAULT);
    ck_assert_int_eq(err.block, HS_NO_BLOCK);
    ck_assert_str_eq(err.msg, "SIGBUS outside the mapping");
    /* and the handler is put back as it was (a sanitizer's, or the default) */
    ck_assert_int_eq(sigaction(SIGBUS, NULL, &now), 0);
    ck_assert(now.sa_sigaction == before.sa_sigaction);
}
END_TEST

static volatile sig_atomic_t test_bus_seen;

static void on_test_bus(int sig)
{
    (void)sig;
    test_bus_seen = 1;
}

static int kill_bus_work(void *arg, HsError *err)
{
    (void)arg, (void)err;
    raise(SIGBUS);
    return 0;
}

/* A SIGBUS sent with kill() is not a fault under a mapping: the action the
 * guard replaced gets it, and the work goes on. */
START_TEST(a_sigbus_sent_by_kill_is_passed_on)
{
    struct sigaction sa = {.sa_handler = on_test_bus}, old;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGBUS, &sa, &old), 0);
    BusGuard g = {.bg_work = kill_bus_work, .bg_locate = no_locate, .bg_file = "x"};
    HsError err;
    ck_assert_int_eq(busguard_run(&g, &err), 0);
    ck_assert_int_eq(test_bus_seen, 1);
    sigaction(SIGBUS, &old, NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("busguard");
    TCase *tc = tcase_create("busguard");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, work_that_does_not_fault_returns_its_own_result);
    tcase_add_test(tc, a_fault_names_the_byte);
    tcase_add_test(tc, a_fault_names_the_block);
    tcase_add_test(tc, a_fault_it_cannot_place_is_still_caught);
    tcase_add_test(tc, a_sigbus_sent_by_kill_is_passed_on);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
