/*
 * check_measure.c -- timing and the page cache (tools/bench/measure.c):
 *                    spreads and medians, the figures of a run, reading a
 *                    relation's every segment into the cache, and the names
 *                    of the cache states.  No timing is judged: the machines
 *                    are shared.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure.h"
#include "testutil.h"

static void setup(void)
{
    tu_setup();
}

static void write_file(const char *path, size_t n)
{
    char *buf = calloc(1, n);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, buf, n), (ssize_t)n);
    close(fd);
    free(buf);
}

START_TEST(spread_and_median)
{
    const double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2};
    double lo, med, hi;
    measure_spread(odd, 3, &lo, &med, &hi);
    ck_assert(lo == 1 && med == 2 && hi == 3);
    measure_spread(even, 4, &lo, &med, &hi);
    ck_assert(lo == 1 && med == 2.5 && hi == 4);
    ck_assert(odd[0] == 3 && even[0] == 4); /* the input is left as it was */
}
END_TEST

START_TEST(summary_of_runs)
{
    const Measure runs[] = {{.m_wall_s = 0.3, .m_user_s = 0.1, .m_minflt = 10},
                            {.m_wall_s = 0.1, .m_user_s = 0.3, .m_minflt = 30},
                            {.m_wall_s = 0.2, .m_user_s = 0.2, .m_majflt = 5}};
    MeasureSpread s;
    measure_summarize(runs, 3, &s);
    ck_assert(s.mp_wall.sp_min == 0.1 && s.mp_wall.sp_med == 0.2 &&
              s.mp_wall.sp_max == 0.3);
    ck_assert(s.mp_user.sp_med == 0.2);
    ck_assert(s.mp_sys.sp_med == 0);
    ck_assert(s.mp_minflt.sp_med == 10 && s.mp_minflt.sp_max == 30);
    ck_assert(s.mp_majflt.sp_med == 0 && s.mp_majflt.sp_max == 5);
    measure_summarize(runs, 2, &s); /* an even count: the middle two's mean */
    ck_assert(s.mp_minflt.sp_med == 20);
}
END_TEST

START_TEST(a_run_is_timed)
{
    MeasureStart ms;
    Measure m;
    double t0 = measure_now();
    measure_start(&ms);
    volatile uint64_t x = 0;
    for (int i = 0; i < 1000000; i++)
        x += (uint64_t)i;
    measure_stop(&ms, &m);
    ck_assert(m.m_wall_s >= 0 && m.m_user_s >= 0 && m.m_sys_s >= 0);
    ck_assert(m.m_minflt >= 0 && m.m_majflt >= 0);
    ck_assert(measure_now() - t0 >= m.m_wall_s);
}
END_TEST

START_TEST(every_segment_is_warmed_and_counted)
{
    write_file(tu_path("rel"), 3 * 8192);
    write_file(tu_path("rel.1"), 8192);
    write_file(tu_path("rel.3"), 8192); /* past a gap: not a segment of rel */
    HsError err;
    uint64_t bytes;
    double resident;
    ck_assert_int_eq(file_total_bytes(tu_path("rel"), &bytes, &err), 0);
    ck_assert_uint_eq(bytes, 4 * 8192);
    ck_assert_int_eq(cache_prepare(tu_path("rel"), CACHE_WARM, &err), 0);
    ck_assert_int_eq(cache_resident(tu_path("rel"), &resident, &err), 0);
    ck_assert(resident > 0.99 && resident <= 1.0);
    ck_assert_int_eq(cache_prepare(tu_path("rel"), CACHE_COLD, &err), 0);
    ck_assert_int_eq(cache_prepare(tu_path("rel"), CACHE_ASIS, &err), 0);
    ck_assert_int_eq(cache_warm(tu_path("missing"), &err), -ENOENT);
    ck_assert_str_eq(err.file, tu_path("missing"));
}
END_TEST

START_TEST(names_of_cache_modes)
{
    ck_assert_str_eq(cache_mode_name(CACHE_ASIS), "asis");
    ck_assert_str_eq(cache_mode_name(CACHE_COLD), "cold");
    ck_assert_str_eq(cache_mode_name(CACHE_WARM), "warm");
    ck_assert_ptr_null(cache_mode_names[CACHE_WARM + 1]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("measure");
    TCase *tc = tcase_create("measure");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_add_test(tc, spread_and_median);
    tcase_add_test(tc, summary_of_runs);
    tcase_add_test(tc, a_run_is_timed);
    tcase_add_test(tc, every_segment_is_warmed_and_counted);
    tcase_add_test(tc, names_of_cache_modes);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
