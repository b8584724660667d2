/*
 * iobench_report.c -- iobench's text, table, JSON and CSV rows (see
 *                     iobench_report.h).
 *
 * Entry points: iob_size_name, iob_report_text, iob_report_table_header,
 * iob_report_table_row, iob_report_json, iob_report_csv_header,
 * iob_report_csv.  Best and worst are the least and most wall time of the
 * runs, MB/s and ops/s are taken at the best; CPU and faults are medians.
 */
#include "iobench_report.h"

#include <string.h>

#include "page.h"

const char *iob_size_name(uint64_t n, char *buf, size_t len)
{
    static const char units[] = "BKMGT";
    int u = 0;
    while (u < 4 && n >= 1024 && n % 1024 == 0)
        n /= 1024, u++;
    snprintf(buf, len, "%llu%c", (unsigned long long)n, units[u]);
    return buf;
}

static double per_s(double x, double s)
{
    return s > 0 ? x / s : 0;
}

/* The block a row reads: rnd-page's is a page, whatever was configured. */
static size_t row_block(const IobRow *r)
{
    return r->rw_cfg.ic_test == IOB_RND_PAGE ? (size_t)BLCKSZ : r->rw_cfg.ic_block;
}

/* " (depth 16)" for io_uring, else "". */
static const char *depth_text(const IobConfig *c, char *buf, size_t len)
{
    buf[0] = '\0';
    if (c->ic_method == IOB_URING)
        snprintf(buf, len, " (depth %u)", c->ic_depth);
    return buf;
}

void iob_report_text(FILE *f, const IobRow *r)
{
    const IobConfig *c = &r->rw_cfg;
    const IobResult *s = &r->rw_res;
    const Spread *w = &r->rw_spread.mp_wall;
    char b[32], fs[32], d[32];
    fprintf(f,
            "%s: %s, method %s%s, block %s, file %s (%llu bytes), seed %llu, %u run%s, "
            "cache %s, sync %s\n",
            c->ic_path, iob_test_name(c->ic_test), iob_method_name(c->ic_method),
            depth_text(c, d, sizeof(d)), iob_size_name(row_block(r), b, sizeof(b)),
            iob_size_name(r->rw_file_bytes, fs, sizeof(fs)),
            (unsigned long long)r->rw_file_bytes, (unsigned long long)c->ic_seed,
            r->rw_runs, r->rw_runs == 1 ? "" : "s", iob_cache_name(r->rw_cache),
            iob_sync_name(c->ic_sync));
    fprintf(f, "ops %llu (%llu reads, %llu writes), %llu bytes\n",
            (unsigned long long)s->ir_ops, (unsigned long long)s->ir_reads,
            (unsigned long long)s->ir_writes, (unsigned long long)s->ir_bytes);
    fprintf(f,
            "wall best %.6f s, worst %.6f s, median %.6f s; user %.6f s, sys %.6f s "
            "(medians)\n",
            w->sp_min, w->sp_max, w->sp_med, r->rw_spread.mp_user.sp_med,
            r->rw_spread.mp_sys.sp_med);
    fprintf(f, "%.1f MB/s, %.0f ops/s (best run)\n",
            per_s((double)s->ir_bytes / 1e6, w->sp_min),
            per_s((double)s->ir_ops, w->sp_min));
    if (c->ic_test == IOB_RND_PAGE)
        fprintf(f, "buffer manager: %llu hits, %llu reads in %llu calls\n",
                (unsigned long long)s->ir_buf.bs_hits,
                (unsigned long long)s->ir_buf.bs_reads,
                (unsigned long long)s->ir_buf.bs_read_calls);
    if (r->rw_has_crc)
        fprintf(f, "crc32 0x%08x\n", r->rw_crc);
}

void iob_report_table_header(FILE *f)
{
    fprintf(f, "%-6s %-9s %-5s %-6s %11s %11s %10s %10s %10s %11s  %s\n", "file",
            "test", "block", "method", "best s", "worst s", "user s", "sys s", "MB/s",
            "ops/s", "crc32");
}

void iob_report_table_row(FILE *f, const IobRow *r)
{
    const IobConfig *c = &r->rw_cfg;
    const Spread *w = &r->rw_spread.mp_wall;
    char b[32], fs[32], crc[16] = "-";
    if (r->rw_has_crc)
        snprintf(crc, sizeof(crc), "%08x", r->rw_crc);
    fprintf(f, "%-6s %-9s %-5s %-6s %11.6f %11.6f %10.6f %10.6f %10.1f %11.0f  %s\n",
            iob_size_name(r->rw_file_bytes, fs, sizeof(fs)), iob_test_name(c->ic_test),
            iob_size_name(row_block(r), b, sizeof(b)), iob_method_name(c->ic_method),
            w->sp_min, w->sp_max, r->rw_spread.mp_user.sp_med,
            r->rw_spread.mp_sys.sp_med,
            per_s((double)r->rw_res.ir_bytes / 1e6, w->sp_min),
            per_s((double)r->rw_res.ir_ops, w->sp_min), crc);
}

void iob_report_json(JsonWriter *j, const IobRow *r)
{
    const IobConfig *c = &r->rw_cfg;
    const IobResult *s = &r->rw_res;
    const MeasureSpread *sp = &r->rw_spread;
    char crc[16];
    json_begin_object(j, NULL);
    json_string(j, "file", c->ic_path);
    json_uint(j, "file_bytes", r->rw_file_bytes);
    json_string(j, "test", iob_test_name(c->ic_test));
    json_string(j, "method", iob_method_name(c->ic_method));
    if (c->ic_method == IOB_URING)
        json_uint(j, "io_depth", c->ic_depth);
    json_uint(j, "block", row_block(r));
    json_uint(j, "ops", s->ir_ops);
    json_uint(j, "reads", s->ir_reads);
    json_uint(j, "writes", s->ir_writes);
    json_uint(j, "bytes", s->ir_bytes);
    json_uint(j, "seed", c->ic_seed);
    json_uint(j, "write_pct", c->ic_write_pct);
    json_uint(j, "runs", r->rw_runs);
    json_string(j, "cache", iob_cache_name(r->rw_cache));
    json_string(j, "sync", iob_sync_name(c->ic_sync));
    json_double(j, "best_s", sp->mp_wall.sp_min, 6);
    json_double(j, "worst_s", sp->mp_wall.sp_max, 6);
    json_double(j, "median_s", sp->mp_wall.sp_med, 6);
    json_double(j, "user_s", sp->mp_user.sp_med, 6);
    json_double(j, "sys_s", sp->mp_sys.sp_med, 6);
    json_double(j, "minflt", sp->mp_minflt.sp_med, 0);
    json_double(j, "majflt", sp->mp_majflt.sp_med, 0);
    json_double(j, "mb_per_s", per_s((double)s->ir_bytes / 1e6, sp->mp_wall.sp_min), 1);
    json_double(j, "ops_per_s", per_s((double)s->ir_ops, sp->mp_wall.sp_min), 0);
    snprintf(crc, sizeof(crc), "0x%08x", r->rw_crc);
    json_string(j, "crc32", r->rw_has_crc ? crc : NULL);
    json_uint(j, "buf_hits", s->ir_buf.bs_hits);
    json_uint(j, "buf_reads", s->ir_buf.bs_reads);
    json_uint(j, "buf_read_calls", s->ir_buf.bs_read_calls);
    json_end(j);
}

void iob_report_csv_header(FILE *f)
{
    fputs(
        "file,file_bytes,test,method,block,ops,reads,writes,bytes,seed,write_pct,runs,"
        "cache,sync,best_s,worst_s,median_s,user_s,sys_s,minflt,majflt,mb_per_s,"
        "ops_per_s,crc32,buf_hits,buf_reads,buf_read_calls\n",
        f);
}

/* s as a CSV field: as it is, or quoted (quotes doubled) when it must be. */
static void csv_string(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\n") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void iob_report_csv(FILE *f, const IobRow *r)
{
    const IobConfig *c = &r->rw_cfg;
    const IobResult *s = &r->rw_res;
    const MeasureSpread *sp = &r->rw_spread;
    csv_string(f, c->ic_path);
    fprintf(f,
            ",%llu,%s,%s,%zu,%llu,%llu,%llu,%llu,%llu,%u,%u,%s,%s,%.6f,%.6f,%.6f,%.6f,"
            "%.6f,%.0f,%.0f,%.1f,%.0f,",
            (unsigned long long)r->rw_file_bytes, iob_test_name(c->ic_test),
            iob_method_name(c->ic_method), row_block(r), (unsigned long long)s->ir_ops,
            (unsigned long long)s->ir_reads, (unsigned long long)s->ir_writes,
            (unsigned long long)s->ir_bytes, (unsigned long long)c->ic_seed,
            c->ic_write_pct, r->rw_runs, iob_cache_name(r->rw_cache),
            iob_sync_name(c->ic_sync), sp->mp_wall.sp_min, sp->mp_wall.sp_max,
            sp->mp_wall.sp_med, sp->mp_user.sp_med, sp->mp_sys.sp_med,
            sp->mp_minflt.sp_med, sp->mp_majflt.sp_med,
            per_s((double)s->ir_bytes / 1e6, sp->mp_wall.sp_min),
            per_s((double)s->ir_ops, sp->mp_wall.sp_min));
    if (r->rw_has_crc)
        fprintf(f, "0x%08x", r->rw_crc);
    fprintf(f, ",%llu,%llu,%llu\n", (unsigned long long)s->ir_buf.bs_hits,
            (unsigned long long)s->ir_buf.bs_reads,
            (unsigned long long)s->ir_buf.bs_read_calls);
}
