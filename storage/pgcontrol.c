/*
 * pgcontrol.c -- a data directory's PG_VERSION, global/pg_control and
 *                postmaster.pid: is it a PostgreSQL 15 cluster, stopped
 *                cleanly, and what does its control file say (see
 *                pgxact.h, which opens a cluster through here).
 *
 * pg_control is read at the offsets of PostgreSQL 15's ControlFileData as
 * an x86-64 compiler lays it out (little-endian, 8-byte aligned int64s);
 * see the CTL_* offsets below, checked field by field against
 * pg_controldata in check_pgxact.
 */
#include "pgxact.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PG_CONTROL_VERSION_15     1300
#define PG_CONTROL_MIN_SIZE       296 /* sizeof(ControlFileData) */
#define DB_SHUTDOWNED             1
#define DB_SHUTDOWNED_IN_RECOVERY 2

/* Byte offsets in ControlFileData (CheckPoint checkPointCopy starts at 40). */
enum {
    CTL_SYSTEM_IDENTIFIER = 0,       /* uint64 */
    CTL_VERSION = 8,                 /* uint32 pg_control_version */
    CTL_CATALOG_VERSION = 12,        /* uint32 catalog_version_no */
    CTL_STATE = 16,                  /* DBState, 4 bytes */
    CTL_NEXT_FULL_XID = 64,          /* 40 + 24: checkPointCopy.nextXid, uint64 */
    CTL_NEXT_MULTI = 76,             /* 40 + 36: checkPointCopy.nextMulti */
    CTL_NEXT_MULTI_OFFSET = 80,      /* 40 + 40: checkPointCopy.nextMultiOffset */
    CTL_OLDEST_XID = 84,             /* 40 + 44: checkPointCopy.oldestXid */
    CTL_OLDEST_MULTI = 92,           /* 40 + 52: checkPointCopy.oldestMulti */
    CTL_MAX_ALIGN = 204,             /* uint32 maxAlign */
    CTL_FLOAT_FORMAT = 208,          /* double floatFormat, 1234567.0 */
    CTL_BLCKSZ = 216,                /* uint32 blcksz */
    CTL_RELSEG_SIZE = 220,           /* uint32 relseg_size */
    CTL_DATA_CHECKSUM_VERSION = 252, /* uint32 data_checksum_version */
    CTL_CRC = 288,                   /* pg_crc32c over bytes [0, 288) */
};

/* What the checks below work on: the directory, the control file's path
 * (for messages) and what it says. */
typedef struct ControlCtx {
    const char *px_dir;    /* the data directory */
    char *px_control_path; /* DIR/global/pg_control (PATH_MAX bytes) */
    PgControl px_control;  /* filled by read_control() */
} ControlCtx;

/* The little-endian uint32 at p (pg_control and the SLRUs are x86-64's). */
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* The little-endian uint64 at p. */
static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* See pgxact.h: reflected polynomial 0x82F63B78, bit by bit (the files it
 * checks are small). */
uint32_t pg_crc32c(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int bit = 0; bit < 8; bit++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return crc ^ 0xFFFFFFFFu;
}

/* DIR/name into buf; -ENAMETOOLONG (err filled) if it does not fit. */
static int dir_path(const ControlCtx *px, const char *name, char *buf, size_t len,
                    HsError *err)
{
    int n = snprintf(buf, len, "%s/%s", px->px_dir, name);
    if (n < 0 || (size_t)n >= len)
        return hs_error_set(err, -ENAMETOOLONG, px->px_dir, HS_NO_BLOCK, "%s",
                            strerror(ENAMETOOLONG));
    return 0;
}

/* Read up to len bytes of path from its start into buf; *got gets how many.
 * A file that cannot be opened means dir is no data directory (-errno). */
static int read_head(const char *path, unsigned char *buf, size_t len, size_t *got,
                     HsError *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return hs_error_set(err, -e, path, HS_NO_BLOCK,
                            "not a PostgreSQL data directory (%s)", strerror(e));
    }
    for (*got = 0; *got < len;) {
        ssize_t n = pread(fd, buf + *got, len - *got, (off_t)*got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return hs_error_set(err, -e, path, HS_NO_BLOCK, "read: %s", strerror(e));
        }
        if (n == 0)
            break;
        *got += (size_t)n;
    }
    close(fd);
    return 0;
}

/* DIR/PG_VERSION must say 15. */
static int check_pg_version(const ControlCtx *px, HsError *err)
{
    char path[PATH_MAX];
    unsigned char buf[32];
    size_t got = 0;
    int rc = dir_path(px, "PG_VERSION", path, sizeof(path), err);
    if (rc < 0)
        return rc;
    if ((rc = read_head(path, buf, sizeof(buf) - 1, &got, err)) < 0)
        return rc;
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
        got--;
    buf[got] = '\0';
    if (strcmp((const char *)buf, "15") != 0)
        return hs_error_set(err, HS_EREFUSED, path, HS_NO_BLOCK,
                            "the cluster is PostgreSQL %.16s, not 15",
                            got > 0 ? (const char *)buf : "(empty)");
    return 0;
}

/* The releases whose pg_control_version is v, or NULL if not known here. */
static const char *control_version_release(uint32_t v)
{
    switch (v) {
    case 942:
        return "PostgreSQL 9.4 or 9.5";
    case 960:
        return "PostgreSQL 9.6";
    case 1002:
        return "PostgreSQL 10";
    case 1100:
        return "PostgreSQL 11";
    case 1201:
        return "PostgreSQL 12";
    }
    return v > PG_CONTROL_VERSION_15 ? "a release after PostgreSQL 16" : NULL;
}

/* pg_control_version must be 1300; say what it is otherwise. */
static int check_control_version(const ControlCtx *px, const unsigned char *ctl,
                                 HsError *err)
{
    uint32_t v = rd32(ctl + CTL_VERSION);
    if (v == PG_CONTROL_VERSION_15)
        return 0;
    const char *release = control_version_release(v);
    if (v != 0 && v % 65536 == 0)
        return hs_error_set(err, HS_EREFUSED, px->px_control_path, HS_NO_BLOCK,
                            "pg_control_version %u: written on a machine of the "
                            "other byte order, not PostgreSQL 15 on this one",
                            (unsigned)v);
    return hs_error_set(err, HS_EREFUSED, px->px_control_path, HS_NO_BLOCK,
                        "pg_control_version is %u%s%s%s, not 1300 (PostgreSQL 15)",
                        (unsigned)v, release ? " (" : "", release ? release : "",
                        release ? ")" : "");
}

/* The CRC-32C, the architecture and the block and segment sizes. */
static int check_control_contents(const ControlCtx *px, const unsigned char *ctl,
                                  HsError *err)
{
    const char *path = px->px_control_path;
    uint32_t stored = rd32(ctl + CTL_CRC), computed = pg_crc32c(ctl, CTL_CRC);
    if (stored != computed)
        return hs_error_set(err, HS_EREFUSED, path, HS_NO_BLOCK,
                            "CRC-32C mismatch (stored 0x%08X, computed 0x%08X): "
                            "pg_control is damaged",
                            (unsigned)stored, (unsigned)computed);
    double fmt;
    uint64_t bits = rd64(ctl + CTL_FLOAT_FORMAT);
    memcpy(&fmt, &bits, sizeof(fmt));
    if (rd32(ctl + CTL_MAX_ALIGN) != 8 || fmt != 1234567.0)
        return hs_error_set(err, HS_EREFUSED, path, HS_NO_BLOCK,
                            "maximum alignment %u or float format %g is not x86-64's "
                            "(8, 1234567): written on another architecture",
                            (unsigned)rd32(ctl + CTL_MAX_ALIGN), fmt);
    uint32_t blcksz = rd32(ctl + CTL_BLCKSZ), relseg = rd32(ctl + CTL_RELSEG_SIZE);
    if (blcksz != 8192 || relseg != 131072)
        return hs_error_set(err, HS_EREFUSED, path, HS_NO_BLOCK,
                            "block size %u and segment size %u pages: heapscan "
                            "reads only 8192 and 131072",
                            (unsigned)blcksz, (unsigned)relseg);
    return 0;
}

/* The fields of PgControl, from bytes already checked. */
static void parse_control(PgControl *pc, const unsigned char *ctl)
{
    *pc = (PgControl){
        .pc_system_identifier = rd64(ctl + CTL_SYSTEM_IDENTIFIER),
        .pc_version = rd32(ctl + CTL_VERSION),
        .pc_catalog_version = rd32(ctl + CTL_CATALOG_VERSION),
        .pc_state = rd32(ctl + CTL_STATE),
        .pc_next_full_xid = rd64(ctl + CTL_NEXT_FULL_XID),
        .pc_oldest_xid = rd32(ctl + CTL_OLDEST_XID),
        .pc_next_multi = rd32(ctl + CTL_NEXT_MULTI),
        .pc_next_multi_offset = rd32(ctl + CTL_NEXT_MULTI_OFFSET),
        .pc_oldest_multi = rd32(ctl + CTL_OLDEST_MULTI),
        .pc_blcksz = rd32(ctl + CTL_BLCKSZ),
        .pc_relseg_size = rd32(ctl + CTL_RELSEG_SIZE),
        .pc_data_checksum_version = rd32(ctl + CTL_DATA_CHECKSUM_VERSION),
    };
}

/* Read, check and parse DIR/global/pg_control into px->px_control. */
static int read_control(ControlCtx *px, HsError *err)
{
    unsigned char ctl[PG_CONTROL_MIN_SIZE];
    size_t got = 0;
    int rc = dir_path(px, "global/pg_control", px->px_control_path, PATH_MAX, err);
    if (rc < 0)
        return rc;
    if ((rc = read_head(px->px_control_path, ctl, sizeof(ctl), &got, err)) < 0)
        return rc;
    if (got < sizeof(ctl))
        return hs_error_set(err, HS_EREFUSED, px->px_control_path, HS_NO_BLOCK,
                            "only %zu bytes, PostgreSQL 15's pg_control has at least "
                            "%zu",
                            got, sizeof(ctl));
    if ((rc = check_control_version(px, ctl, err)) < 0 ||
        (rc = check_control_contents(px, ctl, err)) < 0)
        return rc;
    parse_control(&px->px_control, ctl);
    return 0;
}

/* No postmaster.pid, and pg_control says the cluster was shut down cleanly. */
static int check_stopped(const ControlCtx *px, HsError *err)
{
    char path[PATH_MAX];
    int rc = dir_path(px, "postmaster.pid", path, sizeof(path), err);
    if (rc < 0)
        return rc;
    if (access(path, F_OK) == 0)
        return hs_error_set(err, HS_EREFUSED, path, HS_NO_BLOCK,
                            "the cluster is running (postmaster.pid exists): stop "
                            "it first");
    /* DBState's names, as pg_controldata prints them */
    static const char *const names[] = {"starting up",           "shut down",
                                        "shut down in recovery", "shutting down",
                                        "in crash recovery",     "in archive recovery",
                                        "in production"};
    uint32_t state = px->px_control.pc_state;
    if (state != DB_SHUTDOWNED && state != DB_SHUTDOWNED_IN_RECOVERY)
        return hs_error_set(err, HS_EREFUSED, px->px_control_path, HS_NO_BLOCK,
                            "the cluster is \"%s\" (state %u), not shut down cleanly: "
                            "its WAL has not been replayed; start the server and "
                            "stop it cleanly first",
                            state < sizeof(names) / sizeof(names[0]) ? names[state]
                                                                     : "unknown",
                            (unsigned)state);
    return 0;
}

int pgcontrol_open(const char *pgdata, PgControl *pc, char *control_path, HsError *err)
{
    ControlCtx c = {.px_dir = pgdata, .px_control_path = control_path};
    int rc;
    if ((rc = check_pg_version(&c, err)) < 0 || (rc = read_control(&c, err)) < 0 ||
        (rc = check_stopped(&c, err)) < 0)
        return rc;
    *pc = c.px_control;
    return 0;
}
