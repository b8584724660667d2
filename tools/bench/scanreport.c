/*
 * scanreport.c -- seqscan's text and JSON reports (see scanreport.h).
 *
 * Entry points: scan_report_text, scan_report_json.  The last run's
 * counters (rows, pages, buffers) stand for all: every run scans the same
 * table the same way, only its timing differs.
 */
#include "scanreport.h"

#include <string.h>

#include "crc32.h"
#include "json.h"

static double per_s(double x, double secs)
{
    return secs > 0 ? x / secs : 0.0;
}

/* bytes as "128 MiB" when a whole number of MiB, else "512 KiB". */
static const char *size_text(size_t bytes, char *buf, size_t len)
{
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
        snprintf(buf, len, "%zu MiB", bytes >> 20);
    else
        snprintf(buf, len, "%zu KiB", bytes >> 10);
    return buf;
}

/* "0 I/O workers", "io_uring depth 16", ", direct", ", io-latency 200 us
 * (simulated)": how a read scan's reads were done. */
static void io_desc(const BufMgrOptions *bo, const ScanResult *x, char *buf, size_t len)
{
    size_t n;
    if (x->sr_io_method == PAGEIO_URING)
        n = (size_t)snprintf(buf, len, "io_uring depth %u%s", x->sr_io_depth,
                             x->sr_io_depth < bo->bo_io_depth ? " (all the frames hold)"
                                                              : "");
    else
        n = (size_t)snprintf(buf, len, "%d I/O worker%s", x->sr_io_workers,
                             x->sr_io_workers == 1 ? "" : "s");
    if (bo->bo_direct && n < len)
        n += (size_t)snprintf(buf + n, len - n, ", direct");
    if (bo->bo_io_latency_us > 0 && n < len)
        snprintf(buf + n, len - n, ", io-latency %u us (simulated)",
                 bo->bo_io_latency_us);
}

/* "read (pool 128 MiB, ring, io-combine 128 KiB, ...)" or "mmap (...)". */
static const char *access_desc(const BufMgrOptions *bo, const ScanResult *x, char *buf,
                               size_t len)
{
    const char *adv = pageio_advice_name(bo->bo_advice);
    char io[128];
    if (bo->bo_access == BUF_ACCESS_MMAP) {
        if (bo->bo_mmap_chunk_bytes == 0)
            snprintf(buf, len, "mmap (whole segments, madvise %s)", adv);
        else
            snprintf(buf, len, "mmap (%zu KiB windows, madvise %s)",
                     bo->bo_mmap_chunk_bytes >> 10, adv);
    } else {
        char pool[32];
        io_desc(bo, x, io, sizeof(io));
        snprintf(buf, len, "read (pool %s, %s, io-combine %zu KiB, %s)",
                 size_text(bo->bo_pool_bytes, pool, sizeof(pool)),
                 x->sr_ring ? "ring" : "whole pool", bo->bo_io_combine_bytes >> 10, io);
        if (x->sr_ring)
            snprintf(buf + strlen(buf) - 1, len - strlen(buf) + 1, ", ring %zu KiB)",
                     bufmgr_ring_bytes(bo) >> 10);
    }
    return buf;
}

/* sum(v) exactly, or "NULL" when no row had a non-null v, as SQL's sum(). */
static const char *sum_text(const ScanResult *r, char *buf, size_t len)
{
    if (r->sr_nsum_v == 0)
        return "NULL";
    return scan_sum_format(r->sr_sum_v, buf, len);
}

/* "on (heapscan checksum)", "off", ... */
static const char *verify_desc(const BufMgrOptions *bo, char *buf, size_t len)
{
    if (!bo->bo_verify)
        return "off";
    if (bo->bo_checksum == PAGE_CHECKSUM_NONE)
        snprintf(buf, len, "on (headers and line pointers, no checksum)");
    else
        snprintf(buf, len, "on (%s checksum)", page_checksum_name(bo->bo_checksum));
    return buf;
}

/* One line per run, when there were several. */
static void text_runs(FILE *f, const ScanReport *r, double mb)
{
    if (r->rp_nruns < 2)
        return;
    for (int i = 0; i < r->rp_nruns; i++) {
        const ScanResult *x = &r->rp_runs[i];
        fprintf(f,
                "run %-3d wall %.4f s  user %.4f s  sys %.4f s  %8.1f MB/s  "
                "resident before %5.1f%%\n",
                i + 1, x->sr_m.m_wall_s, x->sr_m.m_user_s, x->sr_m.m_sys_s,
                per_s(mb, x->sr_m.m_wall_s), x->sr_resident_before * 100);
    }
    fprintf(f, "\n");
}

/* What was scanned, how, and what it held. */
static void text_what(FILE *f, const ScanReport *r)
{
    const ScanResult *x = &r->rp_runs[r->rp_nruns - 1];
    const ScanConfig *cfg = r->rp_cfg;
    char acc[320], q[64], vd[64], sum[48];
    fprintf(f, "table              %s: %llu pages, %llu bytes\n", r->rp_table,
            (unsigned long long)x->sr_pages, (unsigned long long)x->sr_bytes);
    fprintf(f, "access             %s\n",
            access_desc(&cfg->sc_bufopt, x, acc, sizeof(acc)));
    fprintf(f, "query              WHERE %s; verify %s\n",
            qual_format(&cfg->sc_qual, q, sizeof(q)),
            verify_desc(&cfg->sc_bufopt, vd, sizeof(vd)));
    if (x->sr_workers > 1) {
        fprintf(f, "workers            %d (pages", x->sr_workers);
        for (int i = 0; i < x->sr_workers; i++)
            fprintf(f, "%s%llu", i ? " + " : " ",
                    (unsigned long long)x->sr_worker_pages[i]);
        fprintf(f, "; seconds");
        for (int i = 0; i < x->sr_workers; i++)
            fprintf(f, " %.4f", x->sr_worker_seconds[i]);
        fprintf(f, ")\n");
    }
    if (r->rp_pgdata)
        fprintf(f,
                "relation           \"%s\" (oid %u, database %u) of the cluster %s; "
                "visibility from its pg_xact\n",
                r->rp_rel->pr_name, r->rp_rel->pr_oid, r->rp_rel->pr_dboid,
                r->rp_pgdata);
    fprintf(f, "cache              %s (resident before: %.1f%%)\n",
            cache_mode_name(cfg->sc_cache), x->sr_resident_before * 100);
    fprintf(f, "rows scanned       %llu\n", (unsigned long long)x->sr_rows_scanned);
    fprintf(f, "rows returned      %llu\n", (unsigned long long)x->sr_rows_returned);
    fprintf(f, "sum of v           %s\n", sum_text(x, sum, sizeof(sum)));
    fprintf(f, "checksum failures  %llu\n",
            (unsigned long long)x->sr_buf.bs_verify_failures);
}

/* The medians (or the one run's figures) and the buffer counters. */
static void text_cost(FILE *f, const ScanReport *r, double mb)
{
    const ScanResult *x = &r->rp_runs[r->rp_nruns - 1];
    const MeasureSpread *s = &r->rp_spread;
    const BufStats *b = &x->sr_buf;
    const char *stat = r->rp_nruns > 1 ? " (median)" : "";
    int w = (int)strlen(stat);
    double wall = s->mp_wall.sp_med;
    fprintf(f, "wall%s%*s %.4f s\n", stat, 14 - w, "", wall);
    fprintf(f, "user%s%*s %.4f s\n", stat, 14 - w, "", s->mp_user.sp_med);
    fprintf(f, "sys%s%*s %.4f s\n", stat, 15 - w, "", s->mp_sys.sp_med);
    fprintf(f, "faults%s%*s %.0f minor, %.0f major\n", stat, 12 - w, "",
            s->mp_minflt.sp_med, s->mp_majflt.sp_med);
    fprintf(f, "MB/s               %.1f\n", per_s(mb, wall));
    fprintf(f, "rows/s             %.0f\n", per_s((double)x->sr_rows_scanned, wall));
    fprintf(f,
            "buffers            hits %llu, reads %llu, read calls %llu, bytes read "
            "%llu,\n"
            "                   evictions %llu, verified %llu, verify failures %llu, "
            "frames used %llu\n",
            (unsigned long long)b->bs_hits, (unsigned long long)b->bs_reads,
            (unsigned long long)b->bs_read_calls, (unsigned long long)b->bs_bytes_read,
            (unsigned long long)b->bs_evictions,
            (unsigned long long)b->bs_pages_verified,
            (unsigned long long)b->bs_verify_failures,
            (unsigned long long)b->bs_frames_used);
    if (b->bs_latency_waits > 0) /* the simulated latency's sleeps wake late */
        fprintf(f,
                "io-latency         %llu reads held back, completed %.1f us late on "
                "average, %.1f us at most\n",
                (unsigned long long)b->bs_latency_waits,
                (double)b->bs_latency_late_ns / (double)b->bs_latency_waits / 1e3,
                (double)b->bs_latency_late_max_ns / 1e3);
}

void scan_report_text(FILE *f, const ScanReport *r)
{
    double mb = (double)r->rp_runs[r->rp_nruns - 1].sr_bytes / 1e6;
    text_runs(f, r, mb);
    text_what(f, r);
    text_cost(f, r, mb);
}

/* wall_s .. rows_per_s of one run or of the medians. */
static void json_times(JsonWriter *j, double wall, double user, double sys,
                       double minflt, double majflt, double mb, double rows)
{
    json_double(j, "wall_s", wall, 6);
    json_double(j, "user_s", user, 6);
    json_double(j, "sys_s", sys, 6);
    json_double(j, "minflt", minflt, 0);
    json_double(j, "majflt", majflt, 0);
    json_double(j, "mb_per_s", per_s(mb, wall), 1);
    json_double(j, "rows_per_s", per_s(rows, wall), 0);
}

/* table .. where: what was scanned and how. */
static void json_what(JsonWriter *j, const ScanReport *r)
{
    const ScanResult *x = &r->rp_runs[r->rp_nruns - 1];
    const BufMgrOptions *bo = &r->rp_cfg->sc_bufopt;
    char q[64];
    json_string(j, "table", r->rp_table);
    json_string(j, "access", bufmgr_access_name(bo->bo_access));
    if (bo->bo_access == BUF_ACCESS_MMAP) {
        json_uint(j, "mmap_chunk", bo->bo_mmap_chunk_bytes);
    } else {
        json_uint(j, "pool_bytes", bo->bo_pool_bytes);
        json_string(
            j, "strategy",
            bufmgr_strategy_name(x->sr_ring ? BUF_STRATEGY_RING : BUF_STRATEGY_NORMAL));
        json_uint(j, "io_combine", bo->bo_io_combine_bytes);
        json_int(j, "io_workers", x->sr_io_workers);
        json_string(j, "io_method", pageio_method_name(x->sr_io_method));
        json_uint(j, "io_depth", x->sr_io_depth);
        json_bool(j, "direct", bo->bo_direct);
        json_uint(j, "io_latency_us", bo->bo_io_latency_us);
    }
    json_bool(j, "verify", bo->bo_verify);
    json_string(
        j, "checksum",
        page_checksum_name(bo->bo_verify ? bo->bo_checksum : PAGE_CHECKSUM_NONE));
    json_string(j, "crc", crc32_impl());
    json_int(j, "workers", x->sr_workers);
    json_string(j, "pgdata", r->rp_pgdata);
    if (r->rp_pgdata)
        json_string(j, "relation", r->rp_rel->pr_name);
    json_string(j, "where", qual_format(&r->rp_cfg->sc_qual, q, sizeof(q)));
}

/* Each worker's pages and seconds, so skew is visible. */
static void json_workers(JsonWriter *j, const ScanResult *x)
{
    json_begin_array(j, "worker");
    for (int i = 0; i < x->sr_workers; i++) {
        json_begin_object(j, NULL);
        json_uint(j, "pages", x->sr_worker_pages[i]);
        json_double(j, "seconds", x->sr_worker_seconds[i], 6);
        json_end(j);
    }
    json_end(j);
}

/* cache .. the buffer counters: what the scan found and cost. */
static void json_counts(JsonWriter *j, const ScanReport *r, double mb)
{
    const ScanResult *x = &r->rp_runs[r->rp_nruns - 1];
    const MeasureSpread *s = &r->rp_spread;
    const BufStats *b = &x->sr_buf;
    char sum[48];
    json_string(j, "cache", cache_mode_name(r->rp_cfg->sc_cache));
    json_uint(j, "pages", x->sr_pages);
    json_uint(j, "bytes", x->sr_bytes);
    json_uint(j, "rows_scanned", x->sr_rows_scanned);
    json_uint(j, "rows_returned", x->sr_rows_returned);
    if (x->sr_nsum_v)
        json_raw(j, "sum_v", scan_sum_format(x->sr_sum_v, sum, sizeof(sum)));
    else
        json_null(j, "sum_v");
    json_uint(j, "checksum_failures", b->bs_verify_failures);
    json_times(j, s->mp_wall.sp_med, s->mp_user.sp_med, s->mp_sys.sp_med,
               s->mp_minflt.sp_med, s->mp_majflt.sp_med, mb,
               (double)x->sr_rows_scanned);
    json_double(j, "resident_before", x->sr_resident_before, 4);
    json_begin_object(j, "buffers");
    json_uint(j, "hits", b->bs_hits);
    json_uint(j, "reads", b->bs_reads);
    json_uint(j, "read_calls", b->bs_read_calls);
    json_uint(j, "bytes_read", b->bs_bytes_read);
    json_uint(j, "evictions", b->bs_evictions);
    json_uint(j, "pages_verified", b->bs_pages_verified);
    json_uint(j, "verify_failures", b->bs_verify_failures);
    json_uint(j, "frames_used", b->bs_frames_used);
    json_uint(j, "latency_waits", b->bs_latency_waits);
    json_uint(j, "latency_late_ns", b->bs_latency_late_ns);
    json_uint(j, "latency_late_max_ns", b->bs_latency_late_max_ns);
    json_end(j);
    json_workers(j, x);
}

void scan_report_json(FILE *f, const ScanReport *r)
{
    JsonWriter j;
    double mb = (double)r->rp_runs[r->rp_nruns - 1].sr_bytes / 1e6;
    json_init(&j, f);
    json_begin_object(&j, NULL);
    json_what(&j, r);
    json_counts(&j, r, mb);
    if (r->rp_nruns > 1) {
        json_begin_array(&j, "runs");
        for (int i = 0; i < r->rp_nruns; i++) {
            const ScanResult *x = &r->rp_runs[i];
            json_begin_object(&j, NULL);
            json_times(&j, x->sr_m.m_wall_s, x->sr_m.m_user_s, x->sr_m.m_sys_s,
                       (double)x->sr_m.m_minflt, (double)x->sr_m.m_majflt, mb,
                       (double)x->sr_rows_scanned);
            json_double(&j, "resident_before", x->sr_resident_before, 4);
            json_workers(&j, x);
            json_end(&j);
        }
        json_end(&j);
    }
    json_end(&j);
    fputc('\n', f);
}
