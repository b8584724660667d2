/*
 * fiorun.c -- fio reading a table (see fiorun.h).
 *
 * Entry points: fio_available, fio_read.  fio reads several files as one
 * job when they are given as --filename=A:B:C (a ':' in a name escaped as
 * "\:"), so a relation's segments are read as one stream, as seqscan does.
 */
#include "fiorun.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extcmd.h"
#include "relfile.h"

bool fio_available(void)
{
    const char *path = getenv("PATH");
    char dir[PATH_MAX], exe[PATH_MAX + 8];
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(dir, sizeof(dir), "%.*s", (int)n, p);
        snprintf(exe, sizeof(exe), "%s/fio", n ? dir : ".");
        if (access(exe, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    return false;
}

/* "--filename=SEG0:SEG1:..." for every segment of path there is; *whole
 * gets the bytes fio reads of them: each file's whole blocks of bs (it
 * leaves out a last partial one). */
static int filename_arg(const char *path, size_t bs, char *buf, size_t len,
                        uint64_t *whole, HsError *err)
{
    size_t n = (size_t)snprintf(buf, len, "--filename=");
    *whole = 0;
    for (uint32_t seg = 0; seg < RELFILE_MAX_SEGS; seg++) {
        char name[PATH_MAX];
        struct stat st;
        if (relfile_segment_name(path, seg, name, sizeof(name)) < 0 ||
            stat(name, &st) != 0)
            break;
        *whole += (uint64_t)st.st_size / bs * bs;
        if (seg > 0 && n + 1 < len)
            buf[n++] = ':';
        for (const char *c = name; *c && n + 2 < len; c++) {
            if (*c == ':')
                buf[n++] = '\\';
            buf[n++] = *c;
        }
        if (n + 2 >= len)
            return hs_error_set(err, -ENAMETOOLONG, path, HS_NO_BLOCK,
                                "too many segments for fio's command line");
    }
    buf[n] = '\0';
    return 0;
}

/* Field k (1-based) of fio's terse line, as a number; -1 if it is not there. */
static double terse_field(const char *line, int k)
{
    for (int i = 1; i < k && line; i++)
        if ((line = strchr(line, ';')) != NULL)
            line++;
    return line ? strtod(line, NULL) : -1;
}

int fio_read(const char *path, uint64_t bytes, const FioJob *job, Measure *m,
             HsError *err)
{
    static char files[65536];
    char bs[48], depth[48], direct[32], engine[48], out[4096], errout[1024];
    uint64_t whole;
    int rc = filename_arg(path, job->fj_block, files, sizeof(files), &whole, err);
    if (rc < 0)
        return rc;
    snprintf(bs, sizeof(bs), "--bs=%zu", job->fj_block);
    snprintf(depth, sizeof(depth), "--iodepth=%u", job->fj_depth);
    snprintf(direct, sizeof(direct), "--direct=%d", job->fj_direct);
    snprintf(engine, sizeof(engine), "--ioengine=%s", job->fj_engine);
    char *argv[] = {"fio",
                    "--name=heapscan",
                    files,
                    "--rw=read",
                    bs,
                    engine,
                    depth,
                    direct,
                    "--invalidate=0",
                    "--thread",
                    "--readonly",
                    "--output-format=terse",
                    "--terse-version=3",
                    NULL};
    int status = extcmd_run(argv, m, out, sizeof(out), errout, sizeof(errout), err);
    if (status < 0)
        return status;
    /* terse v3: 5 error, 6 KiB read, 9 read runtime in ms */
    if (status != 0 || terse_field(out, 5) != 0)
        return hs_error_set(err, -EIO, path, HS_NO_BLOCK, "fio failed (status %d): %s",
                            status, errout[0] ? errout : out);
    double kib = terse_field(out, 6);
    if (kib * 1024 != (double)whole)
        return hs_error_set(err, HS_ECORRUPT, path, HS_NO_BLOCK,
                            "fio read %.0f KiB of a table of %llu bytes (%llu in whole "
                            "blocks)",
                            kib, (unsigned long long)bytes, (unsigned long long)whole);
    m->m_wall_s = terse_field(out, 9) / 1000;
    return 0;
}
