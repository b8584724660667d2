/*
 * check_pgxact.c -- pgxact, the reader of a stopped PostgreSQL 15 cluster's
 *                   pg_control, pg_xact and pg_multixact.
 *
 * Entry points (main's first argument):
 *   (none)     the synthetic suite: data directories built here byte by byte
 *              (pg_control with its CRC-32C, pg_xact and pg_multixact
 *              segments), and the real pg_control saved in tests/data
 *   real       a live PostgreSQL 15 cluster: transactions and MultiXacts of
 *              known outcome, the cluster stopped cleanly and read back, its
 *              answers compared with the server's own (txid_status(),
 *              pg_get_multixact_members(), pg_controldata).  Exits 77
 *              (Meson's "skipped") without PostgreSQL 15, or fails if
 *              HEAPSCAN_REQUIRE_PG=1.
 *   write-fixtures DIR
 *              the same cluster, plus the fixtures of tests/data written into
 *              DIR: pg_control-15 and pg_control-15.txt (pg_controldata's
 *              output), pgpage-k-blk0.bin, pgpage-k-blk1.bin and pgpage-k.txt
 *              (two heap pages of a cluster with data checksums, and their
 *              checksums as pageinspect reports them)
 *
 * The fixtures are looked for in $HEAPSCAN_TEST_DATA, else in the data/
 * directory next to this source file (found from the test's own path).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pgpeer.h"
#include "pgxact.h"
#include "testutil.h"

/* ---- bytes ---------------------------------------------------------------- */

/* rd32, rd64, wr32, wr64: little-endian integers, as pg_control and the SLRUs
 * of an x86-64 cluster hold them. */
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void wr32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void wr64(unsigned char *p, uint64_t v)
{
    wr32(p, (uint32_t)v);
    wr32(p + 4, (uint32_t)(v >> 32));
}

/* CRC-32C with a table (pgxact.c computes it bit by bit: two ways to one
 * answer; the real pg_control fixture checks both). */
static uint32_t crc32c(const unsigned char *p, size_t len)
{
    static uint32_t table[256];
    if (table[1] == 0)
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            table[i] = c;
        }
    uint32_t crc = 0xFFFFFFFFu;
    while (len-- > 0)
        crc = table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* path holds exactly the len bytes of buf. */
static void write_file(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
    close(fd);
}

/* err as a tool prints it (a static buffer). */
static const char *describe(const HsError *err)
{
    static char buf[PATH_MAX + 512];
    return hs_error_format(err, buf, sizeof(buf));
}

/* ---- the ControlFileData of PostgreSQL 15 on x86-64 ------------------------ */

/* Offsets, from src/include/catalog/pg_control.h of REL_15 and C's alignment
 * rules (checkPointCopy, a CheckPoint, is at 40). */
enum {
    O_SYSID = 0,
    O_VERSION = 8,
    O_CATVERSION = 12,
    O_STATE = 16,
    O_CHECKPOINT = 32,
    O_REDO = 40,
    O_NEXT_XID = 64,
    O_NEXT_OID = 72,
    O_NEXT_MULTI = 76,
    O_NEXT_MULTI_OFFSET = 80,
    O_OLDEST_XID = 84,
    O_OLDEST_MULTI = 92,
    O_MAX_ALIGN = 204,
    O_FLOAT_FORMAT = 208,
    O_BLCKSZ = 216,
    O_RELSEG_SIZE = 220,
    O_XLOG_BLCKSZ = 224,
    O_XLOG_SEG_SIZE = 228,
    O_CHECKSUM_VERSION = 252,
    O_NONCE = 256,
    O_CRC = 288,
    CONTROL_FILE_SIZE = 8192,
};

/* How pg_controldata prints a field. */
typedef enum {
    K_U32,   /* decimal */
    K_U64,   /* decimal */
    K_LSN,   /* %X/%X of the high and low halves */
    K_XID8,  /* epoch:xid */
    K_ONOFF, /* a bool: on, off */
    K_YESNO, /* a bool: yes, no */
    K_BYVAL, /* a bool: by value, by reference */
    K_STATE, /* DBState by name */
    K_WAL,   /* wal_level by name */
    K_NONCE, /* 32 bytes in hex */
} Kind;

/* A field of ControlFileData and the line pg_controldata shows it on. */
typedef struct Field {
    const char *label; /* pg_controldata's label, before the colon */
    unsigned off;      /* offset in pg_control */
    Kind kind;         /* how it is printed */
} Field;

static const Field fields[] = {
    {"pg_control version number", O_VERSION, K_U32},
    {"Catalog version number", O_CATVERSION, K_U32},
    {"Database system identifier", O_SYSID, K_U64},
    {"Database cluster state", O_STATE, K_STATE},
    {"Latest checkpoint location", O_CHECKPOINT, K_LSN},
    {"Latest checkpoint's REDO location", O_REDO, K_LSN},
    {"Latest checkpoint's TimeLineID", 48, K_U32},
    {"Latest checkpoint's PrevTimeLineID", 52, K_U32},
    {"Latest checkpoint's full_page_writes", 56, K_ONOFF},
    {"Latest checkpoint's NextXID", O_NEXT_XID, K_XID8},
    {"Latest checkpoint's NextOID", O_NEXT_OID, K_U32},
    {"Latest checkpoint's NextMultiXactId", O_NEXT_MULTI, K_U32},
    {"Latest checkpoint's NextMultiOffset", O_NEXT_MULTI_OFFSET, K_U32},
    {"Latest checkpoint's oldestXID", O_OLDEST_XID, K_U32},
    {"Latest checkpoint's oldestXID's DB", 88, K_U32},
    {"Latest checkpoint's oldestMultiXid", O_OLDEST_MULTI, K_U32},
    {"Latest checkpoint's oldestMulti's DB", 96, K_U32},
    {"Latest checkpoint's oldestCommitTsXid", 112, K_U32},
    {"Latest checkpoint's newestCommitTsXid", 116, K_U32},
    {"Latest checkpoint's oldestActiveXID", 120, K_U32},
    {"Fake LSN counter for unlogged rels", 128, K_LSN},
    {"Minimum recovery ending location", 136, K_LSN},
    {"Min recovery ending loc's timeline", 144, K_U32},
    {"Backup start location", 152, K_LSN},
    {"Backup end location", 160, K_LSN},
    {"End-of-backup record required", 168, K_YESNO},
    {"wal_level setting", 172, K_WAL},
    {"wal_log_hints setting", 176, K_ONOFF},
    {"max_connections setting", 180, K_U32},
    {"max_worker_processes setting", 184, K_U32},
    {"max_wal_senders setting", 188, K_U32},
    {"max_prepared_xacts setting", 192, K_U32},
    {"max_locks_per_xact setting", 196, K_U32},
    {"track_commit_timestamp setting", 200, K_ONOFF},
    {"Maximum data alignment", O_MAX_ALIGN, K_U32},
    {"Database block size", O_BLCKSZ, K_U32},
    {"Blocks per segment of large relation", O_RELSEG_SIZE, K_U32},
    {"WAL block size", O_XLOG_BLCKSZ, K_U32},
    {"Bytes per WAL segment", O_XLOG_SEG_SIZE, K_U32},
    {"Maximum length of identifiers", 232, K_U32},
    {"Maximum columns in an index", 236, K_U32},
    {"Maximum size of a TOAST chunk", 240, K_U32},
    {"Size of a large-object chunk", 244, K_U32},
    {"Float8 argument passing", 248, K_BYVAL},
    {"Data page checksum version", O_CHECKSUM_VERSION, K_U32},
    {"Mock authentication nonce", O_NONCE, K_NONCE},
};

/* The value pg_controldata printed for label (static buffer), or NULL. */
static const char *controldata_value(const char *text, const char *label)
{
    static char val[256];
    size_t n = strlen(label);
    for (const char *line = text; line && *line; line = strchr(line, '\n')) {
        line += *line == '\n';
        if (strncmp(line, label, n) != 0 || line[n] != ':')
            continue;
        const char *v = line + n + 1;
        v += strspn(v, " ");
        size_t len = strcspn(v, "\n");
        snprintf(val, sizeof(val), "%.*s", (int)len, v);
        return val;
    }
    return NULL;
}

/* Field f of the pg_control bytes ctl, printed as pg_controldata prints it. */
static const char *format_field(const unsigned char *ctl, const Field *f)
{
    static const char *const states[] = {"starting up",           "shut down",
                                         "shut down in recovery", "shutting down",
                                         "in crash recovery",     "in archive recovery",
                                         "in production"};
    static const char *const wal_levels[] = {"minimal", "replica", "logical"};
    static char buf[128];
    const unsigned char *p = ctl + f->off;
    switch (f->kind) {
    case K_U32:
        snprintf(buf, sizeof(buf), "%" PRIu32, rd32(p));
        break;
    case K_U64:
        snprintf(buf, sizeof(buf), "%" PRIu64, rd64(p));
        break;
    case K_LSN:
        snprintf(buf, sizeof(buf), "%X/%X", (unsigned)rd32(p + 4), (unsigned)rd32(p));
        break;
    case K_XID8:
        snprintf(buf, sizeof(buf), "%u:%u", (unsigned)rd32(p + 4), (unsigned)rd32(p));
        break;
    case K_ONOFF:
    case K_YESNO:
    case K_BYVAL: {
        static const char *const names[3][2] = {
            {"off", "on"}, {"no", "yes"}, {"by reference", "by value"}};
        ck_assert_uint_le(p[0], 1);
        snprintf(buf, sizeof(buf), "%s", names[f->kind - K_ONOFF][p[0]]);
        break;
    }
    case K_STATE:
        ck_assert_uint_lt(rd32(p), 7);
        snprintf(buf, sizeof(buf), "%s", states[rd32(p)]);
        break;
    case K_WAL:
        ck_assert_uint_lt(rd32(p), 3);
        snprintf(buf, sizeof(buf), "%s", wal_levels[rd32(p)]);
        break;
    case K_NONCE:
        for (int i = 0; i < 32; i++)
            snprintf(buf + 2 * i, 3, "%02x", p[i]);
        break;
    }
    return buf;
}

/* Every field of the table above reads, at its offset in ctl, what
 * pg_controldata printed: the offsets are PostgreSQL 15's. */
static void check_layout(const unsigned char *ctl, const char *controldata)
{
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char *want = controldata_value(controldata, fields[i].label);
        ck_assert_msg(want != NULL, "pg_controldata printed no \"%s\"",
                      fields[i].label);
        ck_assert_msg(strcmp(format_field(ctl, &fields[i]), want) == 0,
                      "%s at offset %u: %s, pg_controldata says %s", fields[i].label,
                      fields[i].off, format_field(ctl, &fields[i]), want);
    }
    double fmt;
    uint64_t bits = rd64(ctl + O_FLOAT_FORMAT);
    memcpy(&fmt, &bits, sizeof(fmt));
    ck_assert(fmt == 1234567.0);
    ck_assert_uint_eq(rd32(ctl + O_CRC), crc32c(ctl, O_CRC));
}

/* pgxact_control()'s fields agree with what pg_controldata printed. */
static void check_control(const PgControl *pc, const char *controldata)
{
    char buf[64];
#define SAME(label, fmt, value)                                                        \
    do {                                                                               \
        const char *want_ = controldata_value(controldata, label);                     \
        snprintf(buf, sizeof(buf), fmt, value);                                        \
        ck_assert_msg(want_ &&strcmp(buf, want_) == 0,                                 \
                      "%s: pgxact %s, "                                                \
                      "pg_controldata %s",                                             \
                      label, buf, want_ ? want_ : "(none)");                           \
    } while (0)
    SAME("pg_control version number", "%u", (unsigned)pc->pc_version);
    SAME("Catalog version number", "%u", (unsigned)pc->pc_catalog_version);
    SAME("Database system identifier", "%" PRIu64, pc->pc_system_identifier);
    SAME("Database cluster state", "%s", pc->pc_state == 1 ? "shut down" : "?");
    char xid8[32];
    snprintf(xid8, sizeof(xid8), "%u:%u", (unsigned)(pc->pc_next_full_xid >> 32),
             (unsigned)pc->pc_next_full_xid);
    SAME("Latest checkpoint's NextXID", "%s", xid8);
    SAME("Latest checkpoint's oldestXID", "%u", (unsigned)pc->pc_oldest_xid);
    SAME("Latest checkpoint's NextMultiXactId", "%u", (unsigned)pc->pc_next_multi);
    SAME("Latest checkpoint's NextMultiOffset", "%u",
         (unsigned)pc->pc_next_multi_offset);
    SAME("Latest checkpoint's oldestMultiXid", "%u", (unsigned)pc->pc_oldest_multi);
    SAME("Data page checksum version", "%u", (unsigned)pc->pc_data_checksum_version);
    SAME("Database block size", "%u", (unsigned)pc->pc_blcksz);
    SAME("Blocks per segment of large relation", "%u", (unsigned)pc->pc_relseg_size);
#undef SAME
}

/* ---- fixtures in tests/data ------------------------------------------------- */

/* The path of fixture name in tests/data/. */
static const char *fixture(const char *name)
{
    return tu_fixture(name);
}

/* A fixture's contents (malloc'd, NUL-terminated); fails the test if absent. */
static unsigned char *read_fixture(const char *name, size_t *len)
{
    const char *path = fixture(name);
    size_t n = 0;
    unsigned char *buf = tu_read_file(path, &n);
    ck_assert_msg(buf != NULL, "fixture %s: %s", path, strerror(errno));
    unsigned char *text = realloc(buf, n + 1);
    ck_assert(text != NULL);
    text[n] = '\0';
    if (len)
        *len = n;
    return text;
}

/* ---- synthetic data directories ------------------------------------------- */

/* What the synthetic pg_control says. */
typedef struct Fake {
    uint32_t version;           /* pg_control_version */
    uint32_t state;             /* DBState */
    uint64_t next_full_xid;     /* epoch << 32 | xid */
    uint32_t oldest_xid;        /* oldestXid */
    uint32_t next_multi;        /* nextMulti */
    uint32_t next_multi_offset; /* nextMultiOffset */
    uint32_t oldest_multi;      /* oldestMulti */
    uint32_t blcksz;            /* blcksz */
    uint32_t relseg;            /* relseg_size */
    uint32_t max_align;         /* maxAlign */
} Fake;

/* A clean PostgreSQL 15 cluster: xids [3, 1000), no multis yet. */
static Fake fake(void)
{
    return (Fake){.version = 1300,
                  .state = 1,
                  .next_full_xid = 1000,
                  .oldest_xid = 3,
                  .next_multi = 1,
                  .next_multi_offset = 0,
                  .oldest_multi = 1,
                  .blcksz = 8192,
                  .relseg = 131072,
                  .max_align = 8};
}

/* The synthetic data directory, DATA, in the test's temporary directory. */
static const char *data_dir(void)
{
    return tu_path("data");
}

/* DATA/name (a static buffer of 4 rotating slots). */
static const char *in_data(const char *name)
{
    static char slots[4][PATH_MAX];
    static int next;
    char *p = slots[next++ % 4];
    snprintf(p, PATH_MAX, "%s/%s", data_dir(), name);
    return p;
}

/* DATA/global/pg_control saying what f says, with a right CRC-32C. */
static void write_control(const Fake *f)
{
    unsigned char ctl[CONTROL_FILE_SIZE] = {0};
    double fmt = 1234567.0;
    uint64_t bits;
    memcpy(&bits, &fmt, sizeof(bits));
    wr64(ctl + O_SYSID, UINT64_C(7300000000000000042));
    wr32(ctl + O_VERSION, f->version);
    wr32(ctl + O_CATVERSION, 202209061);
    wr32(ctl + O_STATE, f->state);
    wr64(ctl + O_NEXT_XID, f->next_full_xid);
    wr32(ctl + O_NEXT_MULTI, f->next_multi);
    wr32(ctl + O_NEXT_MULTI_OFFSET, f->next_multi_offset);
    wr32(ctl + O_OLDEST_XID, f->oldest_xid);
    wr32(ctl + O_OLDEST_MULTI, f->oldest_multi);
    wr32(ctl + O_MAX_ALIGN, f->max_align);
    wr64(ctl + O_FLOAT_FORMAT, bits);
    wr32(ctl + O_BLCKSZ, f->blcksz);
    wr32(ctl + O_RELSEG_SIZE, f->relseg);
    wr32(ctl + O_CHECKSUM_VERSION, 1);
    wr32(ctl + O_CRC, crc32c(ctl, O_CRC));
    write_file(in_data("global/pg_control"), ctl, sizeof(ctl));
}

/* A data directory of a cleanly stopped cluster: PG_VERSION, pg_control,
 * and empty pg_xact and pg_multixact directories. */
static void make_datadir(const Fake *f)
{
    const char *dirs[] = {"",
                          "global",
                          "pg_xact",
                          "pg_multixact",
                          "pg_multixact/offsets",
                          "pg_multixact/members"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
        ck_assert_msg(mkdir(in_data(dirs[i]), 0700) == 0 || errno == EEXIST, "%s: %s",
                      in_data(dirs[i]), strerror(errno));
    write_file(in_data("PG_VERSION"), "15\n", 3);
    write_control(f);
}

/* The path of segment seg of SLRU directory dir. */
static const char *segment(const char *dir, uint32_t seg)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/%04X", data_dir(), dir, (unsigned)seg);
    return path;
}

/* Make segment seg of dir exactly npages pages long (zeros where new). */
static void segment_pages(const char *dir, uint32_t seg, unsigned npages)
{
    int fd = open(segment(dir, seg), O_RDWR | O_CREAT, 0600);
    ck_assert_msg(fd >= 0, "%s: %s", segment(dir, seg), strerror(errno));
    ck_assert_int_eq(ftruncate(fd, (off_t)npages * 8192), 0);
    close(fd);
}

/* Write len bytes at byte off of segment seg of dir, which grows to whole
 * pages to hold them. */
static void segment_write(const char *dir, uint32_t seg, uint32_t off, const void *p,
                          size_t len)
{
    int fd = open(segment(dir, seg), O_RDWR | O_CREAT, 0600);
    ck_assert_msg(fd >= 0, "%s: %s", segment(dir, seg), strerror(errno));
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    off_t need = ((off_t)off + (off_t)len + 8191) / 8192 * 8192;
    if (st.st_size < need)
        ck_assert_int_eq(ftruncate(fd, need), 0);
    ck_assert_int_eq(pwrite(fd, p, len, off), (ssize_t)len);
    close(fd);
}

/* The byte at off of segment seg of dir, 0 beyond its end. */
static unsigned char segment_byte(const char *dir, uint32_t seg, uint32_t off)
{
    unsigned char b = 0;
    int fd = open(segment(dir, seg), O_RDONLY);
    if (fd >= 0) {
        if (pread(fd, &b, 1, off) != 1)
            b = 0;
        close(fd);
    }
    return b;
}

#define XIDS_PER_SEGMENT (32768u * 32u)

/* Record status st for xid in pg_xact: 2 bits, xid % 4 pairs from the low end
 * of byte (xid % 2^20) / 4 of segment xid / 2^20. */
static void set_xid(uint32_t xid, XactStatus st)
{
    uint32_t seg = xid / XIDS_PER_SEGMENT, off = (xid % XIDS_PER_SEGMENT) / 4;
    unsigned shift = (xid % 4) * 2;
    unsigned char b = segment_byte("pg_xact", seg, off);
    b = (unsigned char)((b & ~(3u << shift)) | (unsigned)st << shift);
    segment_write("pg_xact", seg, off, &b, 1);
}

/* pg_multixact/offsets: multi's members start at member offset off. */
static void set_offset(uint32_t multi, uint32_t off)
{
    unsigned char b[4];
    wr32(b, off);
    segment_write("pg_multixact/offsets", multi / 2048 / 32, (multi % (2048 * 32)) * 4,
                  b, 4);
}

/* pg_multixact/members: member off is xid with MultiXactStatus status.  Page
 * off / 1636; in it group (off / 4) % 409 of 20 bytes: 4 status bytes, then
 * the 4 xids. */
static void set_member(uint32_t off, uint32_t xid, unsigned status)
{
    uint32_t page = off / 1636, seg = page / 32;
    uint32_t group = (page % 32) * 8192 + ((off / 4) % 409) * 20, k = off % 4;
    unsigned char b[4], s = (unsigned char)status;
    wr32(b, xid);
    segment_write("pg_multixact/members", seg, group + k, &s, 1);
    segment_write("pg_multixact/members", seg, group + 4 + 4 * k, b, 4);
}

/* pgxact_open() on DATA, which must succeed. */
static PgXact *open_ok(void)
{
    PgXact *px = NULL;
    HsError err;
    hs_error_clear(&err);
    int rc = pgxact_open(&px, data_dir(), &err);
    ck_assert_msg(rc == 0, "pgxact_open: %s", describe(&err));
    ck_assert_ptr_nonnull(px);
    return px;
}

/* A refusal: rc is code, err's file ends with file and its message holds msg. */
static void assert_refused(int rc, const HsError *err, int code, const char *file,
                           const char *msg)
{
    ck_assert_msg(rc == code, "rc %d, not %d: %s", rc, code, describe(err));
    ck_assert_int_eq(err->code, code);
    size_t n = strlen(err->file), m = strlen(file);
    ck_assert_msg(n >= m && strcmp(err->file + n - m, file) == 0,
                  "error names %s, not ...%s", err->file, file);
    ck_assert_msg(strstr(err->msg, msg) != NULL, "message \"%s\" lacks \"%s\"",
                  err->msg, msg);
}

/* The status of xid, which must be known. */
static XactStatus status_of(PgXact *px, uint32_t xid)
{
    HsError err;
    XactStatus st = (XactStatus)-1;
    int rc = pgxact_xid_status(px, xid, &st, &err);
    ck_assert_msg(rc == 0, "xid %u: %s", (unsigned)xid, describe(&err));
    return st;
}

/* The updater of multi, which must be known. */
static uint32_t updater_of(PgXact *px, uint32_t multi)
{
    HsError err;
    uint32_t xid = 12345;
    int rc = pgxact_multi_update_xid(px, multi, &xid, &err);
    ck_assert_msg(rc == 0, "multixact %u: %s", (unsigned)multi, describe(&err));
    return xid;
}

/* ---- pgxact_open -------------------------------------------------------------- */

START_TEST(crc32c_check_value)
{
    /* the check value of CRC-32C, both here (so the fixtures below are built
     * right) and in pgxact */
    ck_assert_uint_eq(crc32c((const unsigned char *)"123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(pg_crc32c("123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(pg_crc32c("", 0), 0);
}
END_TEST

START_TEST(clean_cluster_opens)
{
    Fake f = fake();
    f.next_full_xid = UINT64_C(3) << 32 | 4567;
    f.oldest_xid = 1234;
    f.next_multi = 77;
    f.next_multi_offset = 300;
    f.oldest_multi = 5;
    make_datadir(&f);
    PgXact *px = open_ok();
    const PgControl *pc = pgxact_control(px);
    ck_assert_str_eq(pgxact_dir(px), data_dir());
    ck_assert_uint_eq(pc->pc_system_identifier, UINT64_C(7300000000000000042));
    ck_assert_uint_eq(pc->pc_version, 1300);
    ck_assert_uint_eq(pc->pc_catalog_version, 202209061);
    ck_assert_uint_eq(pc->pc_state, 1);
    ck_assert_uint_eq(pc->pc_next_full_xid, UINT64_C(3) << 32 | 4567);
    ck_assert_uint_eq(pc->pc_oldest_xid, 1234);
    ck_assert_uint_eq(pc->pc_next_multi, 77);
    ck_assert_uint_eq(pc->pc_next_multi_offset, 300);
    ck_assert_uint_eq(pc->pc_oldest_multi, 5);
    ck_assert_uint_eq(pc->pc_blcksz, 8192);
    ck_assert_uint_eq(pc->pc_relseg_size, 131072);
    ck_assert_uint_eq(pc->pc_data_checksum_version, 1);
    pgxact_close(px);
    pgxact_close(NULL);

    f.state = 2; /* DB_SHUTDOWNED_IN_RECOVERY: a standby stopped cleanly */
    write_control(&f);
    px = open_ok();
    ck_assert_uint_eq(pgxact_control(px)->pc_state, 2);
    pgxact_close(px);
}
END_TEST

/* Ways to spoil a clean data directory, and what pgxact_open() must say. */
static void spoil_crc(void)
{
    unsigned char b = 0x5A; /* one byte of the nonce, CRC left as it was */
    int fd = open(in_data("global/pg_control"), O_WRONLY);
    ck_assert_int_eq(pwrite(fd, &b, 1, O_NONCE + 3), 1);
    close(fd);
}
static void spoil_version_1201(void)
{
    Fake f = fake();
    f.version = 1201;
    write_control(&f);
}
static void spoil_version_1700(void)
{
    Fake f = fake();
    f.version = 1700;
    write_control(&f);
}
static void spoil_byte_order(void)
{
    Fake f = fake();
    f.version = 0x14050000; /* 1300 written by a big-endian machine */
    write_control(&f);
}
static void spoil_in_production(void)
{
    Fake f = fake();
    f.state = 6;
    write_control(&f);
}
static void spoil_crash_recovery(void)
{
    Fake f = fake();
    f.state = 4;
    write_control(&f);
}
static void spoil_running(void)
{
    write_file(in_data("postmaster.pid"), "4242\n", 5);
}
static void spoil_no_control(void)
{
    ck_assert_int_eq(unlink(in_data("global/pg_control")), 0);
}
static void spoil_short_control(void)
{
    ck_assert_int_eq(truncate(in_data("global/pg_control"), 100), 0);
}
static void spoil_pg_version(void)
{
    write_file(in_data("PG_VERSION"), "14\n", 3);
}
static void spoil_no_pg_version(void)
{
    ck_assert_int_eq(unlink(in_data("PG_VERSION")), 0);
}
static void spoil_blcksz(void)
{
    Fake f = fake();
    f.blcksz = 16384;
    write_control(&f);
}
static void spoil_relseg(void)
{
    Fake f = fake();
    f.relseg = 262144;
    write_control(&f);
}
static void spoil_max_align(void)
{
    Fake f = fake();
    f.max_align = 4;
    write_control(&f);
}

static const struct Refusal {
    void (*spoil)(void); /* what is done to a clean data directory */
    int code;            /* pgxact_open()'s return */
    const char *file;    /* how the file the error names ends */
    const char *msg;     /* part of the message */
} refusals[] = {
    {spoil_crc, HS_EREFUSED, "/global/pg_control", "CRC-32C mismatch (stored 0x"},
    {spoil_version_1201, HS_EREFUSED, "/global/pg_control",
     "pg_control_version is 1201 (PostgreSQL 12), not 1300 (PostgreSQL 15)"},
    {spoil_version_1700, HS_EREFUSED, "/global/pg_control",
     "pg_control_version is 1700 (a release after PostgreSQL 16)"},
    {spoil_byte_order, HS_EREFUSED, "/global/pg_control", "other byte order"},
    {spoil_in_production, HS_EREFUSED, "/global/pg_control",
     "the cluster is \"in production\" (state 6), not shut down cleanly: its WAL "
     "has not been replayed; start the server and stop it cleanly first"},
    {spoil_crash_recovery, HS_EREFUSED, "/global/pg_control",
     "\"in crash recovery\" (state 4), not shut down cleanly"},
    {spoil_running, HS_EREFUSED, "/postmaster.pid",
     "the cluster is running (postmaster.pid exists): stop it first"},
    {spoil_no_control, -ENOENT, "/global/pg_control",
     "not a PostgreSQL data directory (No such file or directory)"},
    {spoil_short_control, HS_EREFUSED, "/global/pg_control", "only 100 bytes"},
    {spoil_pg_version, HS_EREFUSED, "/PG_VERSION",
     "the cluster is PostgreSQL 14, not 15"},
    {spoil_no_pg_version, -ENOENT, "/PG_VERSION", "not a PostgreSQL data directory"},
    {spoil_blcksz, HS_EREFUSED, "/global/pg_control", "block size 16384"},
    {spoil_relseg, HS_EREFUSED, "/global/pg_control", "segment size 262144 pages"},
    {spoil_max_align, HS_EREFUSED, "/global/pg_control", "another architecture"},
};

START_TEST(spoiled_clusters_are_refused)
{
    const struct Refusal *r = &refusals[_i];
    Fake f = fake();
    make_datadir(&f);
    r->spoil();
    static char sentinel;
    PgXact *px = (PgXact *)&sentinel; /* not NULL: must come back NULL */
    HsError err;
    hs_error_clear(&err);
    int rc = pgxact_open(&px, data_dir(), &err);
    ck_assert_ptr_null(px);
    assert_refused(rc, &err, r->code, r->file, r->msg);
}
END_TEST

START_TEST(missing_directory_is_refused)
{
    PgXact *px = NULL;
    HsError err;
    int rc = pgxact_open(&px, tu_path("no-such-dir"), &err);
    ck_assert_ptr_null(px);
    assert_refused(rc, &err, -ENOENT, "/no-such-dir/PG_VERSION",
                   "not a PostgreSQL data directory");
}
END_TEST

START_TEST(real_pg_control_fixture)
{
    /* the bytes of a cleanly stopped PostgreSQL 15 cluster's pg_control:
     * every offset of the layout table, and pgxact's fields, against
     * pg_controldata's output for the same file */
    size_t len;
    unsigned char *ctl = read_fixture("pg_control-15", &len);
    unsigned char *text = read_fixture("pg_control-15.txt", NULL);
    ck_assert_uint_eq(len, CONTROL_FILE_SIZE);
    check_layout(ctl, (const char *)text);

    Fake f = fake();
    make_datadir(&f);
    write_file(in_data("global/pg_control"), ctl, len);
    PgXact *px = open_ok();
    check_control(pgxact_control(px), (const char *)text);
    ck_assert_uint_eq(pgxact_control(px)->pc_data_checksum_version, 1);
    pgxact_close(px);
    free(ctl);
    free(text);
}
END_TEST

/* The signed and unsigned 16-bit value after "label = " in text. */
static int fixture_number(const char *text, const char *label)
{
    const char *p = strstr(text, label);
    ck_assert_msg(p != NULL, "pgpage-k.txt has no \"%s\"", label);
    return atoi(p + strlen(label));
}

START_TEST(page_fixtures_hold_their_checksums)
{
    /* the heap pages kept for the checksum tests: 8 KiB each, and their
     * pd_checksum (bytes 8-9) what pageinspect reported */
    unsigned char *text = read_fixture("pgpage-k.txt", NULL);
    for (int blk = 0; blk < 2; blk++) {
        char name[64], label[64];
        size_t len;
        snprintf(name, sizeof(name), "pgpage-k-blk%d.bin", blk);
        unsigned char *page = read_fixture(name, &len);
        ck_assert_uint_eq(len, 8192);
        snprintf(label, sizeof(label), "pd_checksum of block %d = ", blk);
        int pd = fixture_number((const char *)text, label);
        snprintf(label, sizeof(label),
                 "page_checksum(get_raw_page('t', %d), %d) = ", blk, blk);
        int sum = fixture_number((const char *)text, label);
        ck_assert_int_eq((int16_t)(page[8] | page[9] << 8), pd);
        ck_assert_int_eq(sum, pd); /* the page was written with a right checksum */
        ck_assert_uint_eq(page[18] | page[19] << 8, 0x2004); /* 8 KiB, layout 4 */
        free(page);
    }
    fixture_number((const char *)text,
                   "page_checksum(get_raw_page('t', 0), 131072) = ");
    free(text);
}
END_TEST

/* ---- pgxact_xid_status -------------------------------------------------------- */

START_TEST(special_xids_need_no_pg_xact)
{
    Fake f = fake();
    make_datadir(&f);
    ck_assert_int_eq(rmdir(in_data("pg_xact")), 0);
    PgXact *px = open_ok();
    ck_assert_int_eq(status_of(px, 0), XACT_ABORTED);
    ck_assert_int_eq(status_of(px, 1), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, 2), XACT_COMMITTED);
    XactStatus st;
    HsError err;
    assert_refused(pgxact_xid_status(px, 3, &st, &err), &err, HS_EREFUSED,
                   "/pg_xact/0000", "missing, but the status of xid 3 would be in it");
    pgxact_close(px);
}
END_TEST

START_TEST(two_bits_per_xid_low_bits_first)
{
    Fake f = fake();
    make_datadir(&f);
    /* byte 2 holds xids 8..11: 0x1B = 00 01 10 11 from the high end */
    unsigned char b = 0x1B;
    segment_write("pg_xact", 0, 2, &b, 1);
    set_xid(3, XACT_COMMITTED);
    set_xid(4, XACT_ABORTED);
    set_xid(5, XACT_SUB_COMMITTED);
    set_xid(999, XACT_COMMITTED);
    PgXact *px = open_ok();
    ck_assert_int_eq(status_of(px, 8), XACT_SUB_COMMITTED);
    ck_assert_int_eq(status_of(px, 9), XACT_ABORTED);
    ck_assert_int_eq(status_of(px, 10), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, 11), XACT_IN_PROGRESS);
    ck_assert_int_eq(status_of(px, 3), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, 4), XACT_ABORTED);
    ck_assert_int_eq(status_of(px, 5), XACT_SUB_COMMITTED);
    ck_assert_int_eq(status_of(px, 6), XACT_IN_PROGRESS);
    ck_assert_int_eq(status_of(px, 998), XACT_IN_PROGRESS);
    ck_assert_int_eq(status_of(px, 999), XACT_COMMITTED);
    pgxact_close(px);
}
END_TEST

START_TEST(segment_boundary)
{
    Fake f = fake();
    f.next_full_xid = 1048600;
    make_datadir(&f);
    segment_pages("pg_xact", 0, 32);  /* a full first segment */
    set_xid(1048575, XACT_COMMITTED); /* last xid of 0000 */
    set_xid(1048576, XACT_ABORTED);   /* first xid of 0001 */
    set_xid(1048577, XACT_COMMITTED);
    set_xid(32767, XACT_ABORTED); /* the last xid of page 0, the first of page 1 */
    set_xid(32768, XACT_COMMITTED);
    ck_assert_int_eq(tu_file_size(segment("pg_xact", 0)), 32 * 8192);
    ck_assert_int_eq(tu_file_size(segment("pg_xact", 1)), 8192);
    PgXact *px = open_ok();
    ck_assert_int_eq(status_of(px, 32767), XACT_ABORTED);
    ck_assert_int_eq(status_of(px, 32768), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, 1048574), XACT_IN_PROGRESS);
    ck_assert_int_eq(status_of(px, 1048575), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, 1048576), XACT_ABORTED);
    ck_assert_int_eq(status_of(px, 1048577), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, 1048599), XACT_IN_PROGRESS);
    pgxact_close(px);

    ck_assert_int_eq(unlink(segment("pg_xact", 1)), 0);
    px = open_ok();
    ck_assert_int_eq(status_of(px, 1048575), XACT_COMMITTED);
    XactStatus st;
    HsError err;
    assert_refused(pgxact_xid_status(px, 1048576, &st, &err), &err, HS_EREFUSED,
                   "/pg_xact/0001",
                   "missing, but the status of xid 1048576 would be in it");
    pgxact_close(px);
}
END_TEST

START_TEST(short_segment_is_refused)
{
    Fake f = fake();
    f.next_full_xid = 70000;
    make_datadir(&f);
    set_xid(40, XACT_COMMITTED); /* 0000 holds page 0 only */
    PgXact *px = open_ok();
    ck_assert_int_eq(status_of(px, 40), XACT_COMMITTED);
    XactStatus st;
    HsError err;
    assert_refused(pgxact_xid_status(px, 40000, &st, &err), &err, HS_EREFUSED,
                   "/pg_xact/0000",
                   "has 1 page(s), too short for page 1, where the status of xid "
                   "40000 would be");
    pgxact_close(px);

    /* a torn last page is as short as a missing one */
    ck_assert_int_eq(truncate(segment("pg_xact", 0), 8192 + 100), 0);
    px = open_ok();
    assert_refused(pgxact_xid_status(px, 40000, &st, &err), &err, HS_EREFUSED,
                   "/pg_xact/0000", "too short for page 1");
    pgxact_close(px);
}
END_TEST

START_TEST(xids_outside_the_range_are_refused)
{
    Fake f = fake();
    f.oldest_xid = 500;
    f.next_full_xid = 900;
    make_datadir(&f);
    set_xid(500, XACT_COMMITTED);
    set_xid(899, XACT_ABORTED);
    PgXact *px = open_ok();
    ck_assert_int_eq(status_of(px, 500), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, 899), XACT_ABORTED);
    static const uint32_t outside[] = {499, 900, 3, 0x80000000u + 500, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
        XactStatus st;
        HsError err;
        char want[128];
        snprintf(want, sizeof(want),
                 "xid %u is outside the cluster's transaction range [oldest 500, "
                 "next 900)",
                 (unsigned)outside[i]);
        assert_refused(pgxact_xid_status(px, outside[i], &st, &err), &err, HS_EREFUSED,
                       "/global/pg_control", want);
    }
    pgxact_close(px);
}
END_TEST

START_TEST(xid_range_wraps_around)
{
    /* epoch 1: the range runs from 0xFFFFFF00 over 2^32 to 200 */
    Fake f = fake();
    f.oldest_xid = 0xFFFFFF00u;
    f.next_full_xid = UINT64_C(1) << 32 | 200;
    make_datadir(&f);
    segment_pages("pg_xact", 0x0FFF, 32); /* 0xFFFFFF00 is in page 31 of 0FFF */
    set_xid(0xFFFFFF00u, XACT_ABORTED);
    set_xid(0xFFFFFFFFu, XACT_COMMITTED);
    set_xid(3, XACT_COMMITTED);
    set_xid(199, XACT_ABORTED);
    PgXact *px = open_ok();
    ck_assert_int_eq(status_of(px, 0xFFFFFF00u), XACT_ABORTED);
    ck_assert_int_eq(status_of(px, 0xFFFFFFFFu), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, 3), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, 100), XACT_IN_PROGRESS);
    ck_assert_int_eq(status_of(px, 199), XACT_ABORTED);
    static const uint32_t outside[] = {0xFFFFFEFFu, 200, 0x7FFFFFFFu};
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
        XactStatus st;
        HsError err;
        assert_refused(pgxact_xid_status(px, outside[i], &st, &err), &err, HS_EREFUSED,
                       "/global/pg_control",
                       "outside the cluster's transaction range [oldest 4294967040, "
                       "next 200)");
    }
    pgxact_close(px);
}
END_TEST

/* Read system calls this process has made (/proc/self/io's syscr), or -1. */
static long long read_syscalls(void)
{
    char buf[512];
    long long n = -1;
    int fd = open("/proc/self/io", O_RDONLY);
    ssize_t got = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    const char *p = got > 0 ? (buf[got] = '\0', strstr(buf, "syscr: ")) : NULL;
    if (p != NULL)
        n = atoll(p + 7);
    return n;
}

START_TEST(pages_are_read_once)
{
    /* a million lookups alternating between two segments (and pages that
     * are 32 pages apart) read each page once */
    Fake f = fake();
    f.next_full_xid = 2 * XIDS_PER_SEGMENT;
    make_datadir(&f);
    for (uint32_t i = 0; i < 16; i++) {
        set_xid(10 + i * 32768, XACT_COMMITTED);
        set_xid(XIDS_PER_SEGMENT + 10 + i * 32768, XACT_ABORTED);
    }
    PgXact *px = open_ok();
    long long before = read_syscalls();
    for (uint32_t n = 0; n < 1000000; n++) {
        uint32_t page = n % 8, seg = (n / 8) % 2;
        XactStatus want = seg ? XACT_ABORTED : XACT_COMMITTED, got;
        HsError err;
        int rc = pgxact_xid_status(px, seg * XIDS_PER_SEGMENT + 10 + page * 32768, &got,
                                   &err);
        if (rc != 0 || got != want) /* no ck_assert here: each one writes a pipe */
            ck_abort_msg("lookup %u: rc %d, status %d", (unsigned)n, rc, (int)got);
    }
    long long after = read_syscalls();
    pgxact_close(px);
    if (before < 0 || after < 0) {
        printf("check_pgxact: /proc/self/io unreadable: read calls not counted\n");
        return;
    }
    /* 16 pages read, and the two reads of /proc/self/io itself */
    ck_assert_int_le(after - before, 16 + 2);
}
END_TEST

/* ---- pgxact_multi_update_xid --------------------------------------------------- */

/* Statuses (MultiXactStatus) */
enum { FOR_KEY_SHARE, FOR_SHARE, FOR_NO_KEY_UPDATE, FOR_UPDATE, NO_KEY_UPDATE, UPDATE };

START_TEST(updater_or_only_lockers)
{
    Fake f = fake();
    f.next_multi = 4;
    f.next_multi_offset = 7;
    make_datadir(&f);
    set_offset(1, 1); /* offset 0 is never used */
    set_offset(2, 3);
    set_offset(3, 5);
    set_offset(4, 6); /* not written yet by PostgreSQL: must not be read */
    set_member(1, 100, FOR_KEY_SHARE);
    set_member(2, 101, NO_KEY_UPDATE);
    set_member(3, 102, FOR_SHARE);
    set_member(4, 103, FOR_UPDATE);
    set_member(5, 104, FOR_NO_KEY_UPDATE);
    set_member(6, 105, UPDATE);
    PgXact *px = open_ok();
    ck_assert_uint_eq(updater_of(px, 1), 101); /* a lock and an update */
    ck_assert_uint_eq(updater_of(px, 2), 0);   /* only locks */
    ck_assert_uint_eq(updater_of(px, 3), 105); /* the newest: up to nextMultiOffset */
    pgxact_close(px);
}
END_TEST

START_TEST(multis_outside_the_range_are_refused)
{
    Fake f = fake();
    f.oldest_multi = 2;
    f.next_multi = 4;
    f.next_multi_offset = 7;
    make_datadir(&f);
    set_offset(2, 3);
    set_offset(3, 5);
    for (uint32_t off = 3; off < 7; off++)
        set_member(off, 200 + off, FOR_SHARE);
    PgXact *px = open_ok();
    ck_assert_uint_eq(updater_of(px, 2), 0);
    ck_assert_uint_eq(updater_of(px, 3), 0);
    static const struct {
        uint32_t multi;
        const char *msg;
    } bad[] = {
        {0, "multixact 0 is invalid, not in the cluster's multixact range [oldest 2, "
            "next 4)"},
        {1, "multixact 1 is outside the cluster's multixact range [oldest 2, next 4)"},
        {4, "multixact 4 is outside"},
        {0x80000002u, "multixact 2147483650 is outside"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint32_t xid;
        HsError err;
        assert_refused(pgxact_multi_update_xid(px, bad[i].multi, &xid, &err), &err,
                       HS_EREFUSED, "/global/pg_control", bad[i].msg);
    }
    pgxact_close(px);
}
END_TEST

START_TEST(members_across_a_page)
{
    /* 1636 members a page: multi 2's members 1634..1639 are on pages 0 and 1;
     * member 1635 is in group 408, the page's last (bytes 8160..8179) */
    Fake f = fake();
    f.next_multi = 3;
    f.next_multi_offset = 1640;
    make_datadir(&f);
    set_offset(1, 1630);
    set_offset(2, 1634);
    for (uint32_t off = 1630; off < 1640; off++)
        set_member(off, 1000 + off, off == 1636 ? UPDATE : FOR_SHARE);
    ck_assert_int_eq(segment_byte("pg_multixact/members", 0, 8160 + 3), FOR_SHARE);
    ck_assert_int_eq(segment_byte("pg_multixact/members", 0, 8160 + 4 + 12),
                     (1000 + 1635) & 0xFF);
    ck_assert_int_eq(segment_byte("pg_multixact/members", 0, 8192), UPDATE);
    PgXact *px = open_ok();
    ck_assert_uint_eq(updater_of(px, 1), 0);
    ck_assert_uint_eq(updater_of(px, 2), 1000 + 1636);
    pgxact_close(px);
}
END_TEST

START_TEST(member_offsets_wrap_around)
{
    /* multi 1 has members 0xFFFFFFFE, 0xFFFFFFFF and slot 0, left empty when
     * the offsets wrapped; multi 2 starts at 1.  0xFFFFFFFE is on members page
     * 2625285: segment 14078 (five digits), its page 5 */
    Fake f = fake();
    f.next_multi = 3;
    f.next_multi_offset = 5;
    make_datadir(&f);
    set_offset(1, 0xFFFFFFFEu);
    set_offset(2, 1);
    set_member(0xFFFFFFFEu, 300, FOR_KEY_SHARE);
    set_member(0xFFFFFFFFu, 301, NO_KEY_UPDATE);
    set_member(1, 302, UPDATE);
    for (uint32_t off = 2; off < 5; off++)
        set_member(off, 301 + off, FOR_SHARE);
    ck_assert_int_eq(tu_file_size(in_data("pg_multixact/members/14078")), 6 * 8192);
    PgXact *px = open_ok();
    ck_assert_uint_eq(updater_of(px, 1), 301);
    ck_assert_uint_eq(updater_of(px, 2), 302);
    pgxact_close(px);
}
END_TEST

START_TEST(multis_wrap_around)
{
    /* after multi 0xFFFFFFFF comes 1 (0 is skipped) */
    Fake f = fake();
    f.oldest_multi = 0xFFFFFFF0u;
    f.next_multi = 2;
    f.next_multi_offset = 13;
    make_datadir(&f);
    segment_pages("pg_multixact/offsets", 0xFFFF, 32);
    set_offset(0xFFFFFFFFu, 10);
    set_offset(1, 12);
    set_member(10, 400, FOR_KEY_SHARE);
    set_member(11, 401, UPDATE);
    set_member(12, 402, FOR_SHARE);
    PgXact *px = open_ok();
    ck_assert_uint_eq(updater_of(px, 0xFFFFFFFFu), 401);
    ck_assert_uint_eq(updater_of(px, 1), 0);
    uint32_t xid;
    HsError err;
    assert_refused(pgxact_multi_update_xid(px, 0xFFFFFFEFu, &xid, &err), &err,
                   HS_EREFUSED, "/global/pg_control", "outside");
    assert_refused(pgxact_multi_update_xid(px, 2, &xid, &err), &err, HS_EREFUSED,
                   "/global/pg_control", "outside");
    pgxact_close(px);

    /* nextMulti is 0 right after 0xFFFFFFFF was handed out: that one is the
     * newest, and ends at nextMultiOffset */
    f.next_multi = 0;
    f.next_multi_offset = 12;
    write_control(&f);
    set_offset(1, 0);
    px = open_ok();
    ck_assert_uint_eq(updater_of(px, 0xFFFFFFFFu), 401);
    assert_refused(pgxact_multi_update_xid(px, 1, &xid, &err), &err, HS_EREFUSED,
                   "/global/pg_control", "[oldest 4294967280, next 0)");
    pgxact_close(px);
}
END_TEST

START_TEST(missing_or_short_segments_are_refused)
{
    /* multi 1's one member is on members page 3, past a 1-page file */
    Fake f = fake();
    f.next_multi = 2;
    f.next_multi_offset = 3 * 1636 + 1;
    make_datadir(&f);
    set_offset(1, 3 * 1636);
    segment_pages("pg_multixact/members", 0, 1);
    PgXact *px = open_ok();
    uint32_t xid;
    HsError err;
    assert_refused(pgxact_multi_update_xid(px, 1, &xid, &err), &err, HS_EREFUSED,
                   "/pg_multixact/members/0000",
                   "has 1 page(s), too short for page 3, where a member of multixact "
                   "1 would be");
    pgxact_close(px);

    set_member(3 * 1636, 500, UPDATE); /* the file grows to 4 pages */
    px = open_ok();
    ck_assert_uint_eq(updater_of(px, 1), 500);
    pgxact_close(px);

    ck_assert_int_eq(unlink(in_data("pg_multixact/members/0000")), 0);
    px = open_ok();
    assert_refused(pgxact_multi_update_xid(px, 1, &xid, &err), &err, HS_EREFUSED,
                   "/pg_multixact/members/0000",
                   "missing, but a member of multixact 1 would be in it");
    pgxact_close(px);

    ck_assert_int_eq(unlink(in_data("pg_multixact/offsets/0000")), 0);
    px = open_ok();
    assert_refused(pgxact_multi_update_xid(px, 1, &xid, &err), &err, HS_EREFUSED,
                   "/pg_multixact/offsets/0000",
                   "missing, but the member offset of multixact 1 would be in it");
    pgxact_close(px);
}
END_TEST

START_TEST(impossible_multis_are_corrupt)
{
    static const struct {
        uint32_t off2;    /* multi 2's offset */
        unsigned status4; /* member 4's status */
        uint32_t xid4;    /* member 4's xid */
        const char *msg;  /* what is wrong */
    } cases[] = {
        {0, FOR_SHARE, 104, "multixact 1 has member offsets 1 to 0"},
        {3, 6, 104, "member 4 (xid 104, status 6) has an unknown status"},
        {3, UPDATE, 104, "member 5 (xid 105, status 4) is a second updater"},
        {3, FOR_SHARE, 0, "member 4 (xid 0, status 1) is empty"},
        {9, FOR_SHARE, 104,
         "multixact 1 has member offsets 1 to 9, impossible with "
         "nextMultiOffset 6"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Fake f = fake();
        f.next_multi = 3;
        f.next_multi_offset = 6;
        make_datadir(&f);
        set_offset(1, 1);
        set_offset(2, cases[i].off2);
        set_member(1, 101, FOR_KEY_SHARE);
        set_member(2, 102, UPDATE);
        set_member(3, 103, FOR_KEY_SHARE);
        set_member(4, cases[i].xid4, cases[i].status4);
        set_member(5, 105, NO_KEY_UPDATE);
        PgXact *px = open_ok();
        uint32_t multi = strstr(cases[i].msg, "multixact 1") ? 1 : 2;
        if (multi == 2)
            ck_assert_uint_eq(updater_of(px, 1), 102);
        uint32_t xid;
        HsError err;
        int rc = pgxact_multi_update_xid(px, multi, &xid, &err);
        assert_refused(rc, &err, HS_ECORRUPT, "/0000", cases[i].msg);
        pgxact_close(px);
    }
}
END_TEST

/* ---- a real PostgreSQL 15 cluster ------------------------------------------------ */

#define REAL_MULTIS 4

/* The cluster and what its server said about it, set once by real_setup(). */
typedef struct Real {
    char bindir[PATH_MAX];          /* PostgreSQL 15's programs */
    const char *runuser;            /* runuser's path when root, else NULL */
    const char *user;               /* whom the server runs as when we are root */
    char dir[PATH_MAX];             /* private: socket, log and data/ */
    char data[PATH_MAX + 8];        /* dir/data */
    pid_t owner;                    /* the process that made the cluster */
    bool running;                   /* the server is up */
    uint32_t xids[8];               /* t_xmin of table x's rows 1..8 */
    uint32_t first_xid;             /* oldestXid while the server ran */
    char statuses[65536];           /* txid_status() of first_xid and on: C, A or I */
    uint32_t multis[REAL_MULTIS];   /* xmax of m's rows 1..4, all MultiXacts */
    uint32_t updaters[REAL_MULTIS]; /* their nokeyupd or upd member, or 0 */
    char members[REAL_MULTIS][256]; /* pg_get_multixact_members(), as xid:mode,... */
    int running_rc;                 /* pgxact_open() while the server ran */
    char running_msg[256];          /* and its message */
    int crashed_rc;                 /* pgxact_open() after an immediate stop */
    char crashed_msg[256];          /* and its message */
    char controldata[65536];        /* pg_controldata after the last clean stop */
    char server_version[128];       /* SELECT version() */
    char fixture_dir[PATH_MAX];     /* write-fixtures: where to */
    char page_hex[2][16384 + 1];    /* write-fixtures: get_raw_page('t', 0 and 1) */
    int page_sum[3];                /* page_checksum() of blocks 0, 1, 0 as 131072 */
    int pd_checksum[2];             /* page_header().checksum of blocks 0 and 1 */
    char relpath[128];              /* pg_relation_filepath('t') */
} Real;

static Real pg;

/* Start argv with PostgreSQL's program prog, run as the server's user
 * (through runuser when we are root); path holds prog's path.  Returns the
 * number of arguments put in argv. */
static int pg_argv(char **argv, const char *prog, char *path, size_t len)
{
    int n = 0;
    snprintf(path, len, "%s/%s", pg.bindir, prog);
    if (pg.runuser != NULL) {
        argv[n++] = (char *)pg.runuser;
        argv[n++] = "-u";
        argv[n++] = (char *)pg.user;
        argv[n++] = "--";
    }
    argv[n++] = path;
    return n;
}

/* Run PostgreSQL's program prog (args..., NULL) as the server's user. */
static TuRun *pg_run(const char *prog, ...)
{
    char path[PATH_MAX + 64], *argv[64];
    int n = pg_argv(argv, prog, path, sizeof(path));
    va_list ap;
    va_start(ap, prog);
    for (char *a; (a = va_arg(ap, char *)) != NULL && n < 63;)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return tu_run(argv, 0);
}

/* psql running cmds[0..n) in one session; fails the test if one fails.
 * Returns psql's output: unaligned rows, fields split by '|'. */
static const char *psql(int n, const char *const *cmds)
{
    char path[PATH_MAX + 64], *argv[128];
    int k = pg_argv(argv, "psql", path, sizeof(path));
    const char *opts[] = {"-X", "-q",      "-A", "-t",   "-v", "ON_ERROR_STOP=1",
                          "-h", pg.dir,    "-p", "5432", "-U", "postgres",
                          "-d", "postgres"};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
        argv[k++] = (char *)opts[i];
    for (int i = 0; i < n && k < 125; i++) {
        argv[k++] = "-c";
        argv[k++] = (char *)cmds[i];
    }
    argv[k] = NULL;
    TuRun *r = tu_run(argv, 0);
    ck_assert_msg(r->status == 0, "psql -c \"%s\"...: %s", cmds[0], r->err);
    return r->out;
}

/* psql("cmd", ...): the commands in one session. */
#define SQL(...)                                                                       \
    psql((int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)),          \
         (const char *[]){__VA_ARGS__})

/* pg_ctl start, waiting until the server accepts connections. */
static void server_start(void)
{
    char log[PATH_MAX + 16];
    snprintf(log, sizeof(log), "%s/server.log", pg.dir);
    TuRun *r =
        pg_run("pg_ctl", "-D", pg.data, "-l", log, "-w", "-t", "120", "start", NULL);
    ck_assert_msg(r->status == 0, "pg_ctl start: %s%s", r->out, r->err);
    pg.running = true;
}

/* pg_ctl stop -m mode (fast: a clean shutdown; immediate: a crash). */
static void server_stop(const char *mode)
{
    TuRun *r =
        pg_run("pg_ctl", "-D", pg.data, "-m", mode, "-w", "-t", "120", "stop", NULL);
    ck_assert_msg(r->status == 0, "pg_ctl stop -m %s: %s%s", mode, r->out, r->err);
    pg.running = false;
}

/* nftw's callback: remove one file or (emptied) directory. */
static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Stop the server (if up) and remove the cluster; only in the process that
 * made it (Check's forked tests inherit atexit handlers). */
static void real_cleanup(void)
{
    if (pg.owner != getpid())
        return;
    if (pg.running)
        pg_run("pg_ctl", "-D", pg.data, "-m", "immediate", "-w", "stop", NULL);
    pg.running = false;
    if (chdir("/") == 0 && pg.dir[0])
        nftw(pg.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    pg.dir[0] = '\0';
}

/* true if PostgreSQL 15 (and, when root, runuser and the server's user)
 * are here to make a cluster with. */
static bool real_available(void)
{
    if (pgpeer_find(pg.bindir, sizeof(pg.bindir)) != 0)
        return false;
    pg.user = getenv("PG_COMPAT_USER") ? getenv("PG_COMPAT_USER") : "nobody";
    if (geteuid() != 0)
        return true;
    static const char *const where[] = {"/usr/sbin/runuser", "/sbin/runuser",
                                        "/usr/bin/runuser", "/bin/runuser"};
    for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
        if (access(where[i], X_OK) == 0)
            pg.runuser = where[i];
    return pg.runuser != NULL && getpwnam(pg.user) != NULL;
}

/* A private directory the server's user owns, short enough for a socket path. */
static void make_cluster_dir(void)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || geteuid() == 0 || strlen(base) > 60)
        base = "/tmp"; /* the server's user must reach it */
    snprintf(pg.dir, sizeof(pg.dir), "%s/heapscan-pgxact-XXXXXX", base);
    ck_assert_msg(mkdtemp(pg.dir) != NULL, "mkdtemp: %s", strerror(errno));
    pg.owner = getpid();
    atexit(real_cleanup);
    if (pg.runuser != NULL) {
        const struct passwd *pw = getpwnam(pg.user);
        ck_assert(pw != NULL);
        ck_assert_int_eq(chown(pg.dir, pw->pw_uid, pw->pw_gid), 0);
    }
    snprintf(pg.data, sizeof(pg.data), "%s/data", pg.dir);
    ck_assert_int_eq(chdir(pg.dir), 0); /* a working directory the server can use */
}

/* initdb -k, settings for a private server, and start it. */
static void make_cluster(void)
{
    make_cluster_dir();
    TuRun *r =
        pg_run("initdb", "-D", pg.data, "-A", "trust", "-U", "postgres", "-k",
               "--no-sync", "-E", "UTF8", "--locale=C", "--no-instructions", NULL);
    ck_assert_msg(r->status == 0, "initdb: %s%s", r->out, r->err);
    char conf[PATH_MAX + 32];
    snprintf(conf, sizeof(conf), "%s/postgresql.conf", pg.data);
    FILE *f = fopen(conf, "a");
    ck_assert(f != NULL);
    fprintf(f,
            "\n# check_pgxact\nlisten_addresses = ''\nunix_socket_directories = '%s'\n"
            "port = 5432\nautovacuum = off\nfsync = off\nsynchronous_commit = off\n"
            "max_prepared_transactions = 2\nmax_connections = 10\n"
            "shared_buffers = 16MB\nlogging_collector = off\n",
            pg.dir);
    fclose(f);
    server_start();
}

/* Transactions of known outcome in table x, one row each (lp = n):
 * 1 committed, 2 rolled back, 3 committed with 4 (a rolled back
 * subtransaction) and 5 (a released one), 6 rolled back with 7 (a released
 * subtransaction), 8 prepared and never committed; then 33,000
 * transactions, every third rolled back, so pg_xact has two pages. */
static void make_transactions(void)
{
    SQL("CREATE TABLE x (n int4)", "INSERT INTO x VALUES (1)");
    SQL("BEGIN", "INSERT INTO x VALUES (2)", "ROLLBACK");
    SQL("BEGIN", "INSERT INTO x VALUES (3)", "SAVEPOINT a", "INSERT INTO x VALUES (4)",
        "ROLLBACK TO a", "SAVEPOINT b", "INSERT INTO x VALUES (5)", "RELEASE b",
        "COMMIT");
    SQL("BEGIN", "INSERT INTO x VALUES (6)", "SAVEPOINT c", "INSERT INTO x VALUES (7)",
        "RELEASE c", "ROLLBACK");
    SQL("BEGIN", "INSERT INTO x VALUES (8)", "PREPARE TRANSACTION 'p'");
    SQL("DO $$ BEGIN FOR i IN 1..33000 LOOP PERFORM txid_current(); "
        "IF i % 3 = 0 THEN ROLLBACK; ELSE COMMIT; END IF; END LOOP; END $$");
    const char *out = SQL("SELECT lp, get_byte(t_data, 0), t_xmin FROM "
                          "heap_page_items(get_raw_page('x', 0)) ORDER BY lp");
    for (int i = 0; i < 8; i++) {
        unsigned lp, n, xmin;
        ck_assert_msg(sscanf(out, "%u|%u|%u", &lp, &n, &xmin) == 3, "x: %s", out);
        ck_assert_uint_eq(lp, (unsigned)i + 1);
        ck_assert_uint_eq(n, (unsigned)i + 1);
        pg.xids[i] = xmin;
        out = strchr(out, '\n') + 1;
    }
}

/* MultiXacts on table m's rows 1..4 (each the xmax of the row's old version):
 * 1 a key-share lock and another session's update (dblink), 2 two share
 * locks, 3 a key-share lock and its own subtransaction's delete, 4 a
 * key-share lock and its own subtransaction's update, rolled back (the
 * newest multi). */
static void make_multis(void)
{
    char conn[PATH_MAX + 128], upd[PATH_MAX + 256], lock[PATH_MAX + 256];
    snprintf(conn, sizeof(conn),
             "SELECT dblink_connect('c', 'host=%s port=5432 dbname=postgres "
             "user=postgres')",
             pg.dir);
    snprintf(upd, sizeof(upd),
             "SELECT dblink_exec('host=%s port=5432 dbname=postgres user=postgres', "
             "'UPDATE m SET v = v + 1 WHERE id = 1')",
             pg.dir);
    snprintf(lock, sizeof(lock),
             "SELECT * FROM dblink('c', 'SELECT id FROM m WHERE "
             "id = 2 FOR SHARE') AS r(id int4)");
    SQL("CREATE EXTENSION dblink", "CREATE TABLE m (id int4 PRIMARY KEY, v int4)",
        "INSERT INTO m SELECT i, 0 FROM generate_series(1, 5) i");
    SQL("BEGIN", "SELECT id FROM m WHERE id = 1 FOR KEY SHARE", upd, "COMMIT");
    SQL("BEGIN", "SELECT id FROM m WHERE id = 2 FOR SHARE", conn,
        "SELECT dblink_exec('c', 'BEGIN')", lock, "SELECT dblink_exec('c', 'COMMIT')",
        "COMMIT");
    SQL("BEGIN", "SELECT id FROM m WHERE id = 3 FOR KEY SHARE", "SAVEPOINT s",
        "DELETE FROM m WHERE id = 3", "RELEASE s", "COMMIT");
    SQL("BEGIN", "SELECT id FROM m WHERE id = 4 FOR KEY SHARE", "SAVEPOINT s",
        "UPDATE m SET v = v + 1 WHERE id = 4", "ROLLBACK TO s", "COMMIT");
}

/* What the server says of m's MultiXacts and of every xid's status. */
static void ask_the_server(void)
{
    const char *out = SQL("SELECT t_xmax, (SELECT string_agg(xid || ':' || mode, ',') "
                          "FROM pg_get_multixact_members(t_xmax)) FROM "
                          "heap_page_items(get_raw_page('m', 0)) WHERE lp <= 4 AND "
                          "t_infomask & 4096 <> 0 ORDER BY lp");
    for (int i = 0; i < REAL_MULTIS; i++) {
        unsigned multi;
        ck_assert_msg(sscanf(out, "%u|%255[^\n]", &multi, pg.members[i]) == 2, "m: %s",
                      out);
        pg.multis[i] = multi;
        for (char *p = pg.members[i]; p && *p; p = strchr(p, ',')) {
            unsigned xid;
            char mode[32];
            p += *p == ',';
            if (sscanf(p, "%u:%31[a-z]", &xid, mode) == 2 &&
                (strcmp(mode, "nokeyupd") == 0 || strcmp(mode, "upd") == 0))
                pg.updaters[i] = xid;
        }
        out = strchr(out, '\n') + 1;
    }
    out = SQL("SELECT f, string_agg(CASE txid_status(x) WHEN 'committed' THEN 'C' "
              "WHEN 'aborted' THEN 'A' WHEN 'in progress' THEN 'I' ELSE '?' END, '' "
              "ORDER BY x) FROM (SELECT min(datfrozenxid::text::int8) AS f, "
              "txid_snapshot_xmax(txid_current_snapshot()) AS n FROM pg_database) b, "
              "generate_series(f, n - 1) AS x GROUP BY f");
    unsigned first;
    ck_assert_int_eq(sscanf(out, "%u|%65535[CAI?]", &first, pg.statuses), 2);
    pg.first_xid = first;
    out = SQL("SELECT version()");
    snprintf(pg.server_version, sizeof(pg.server_version), "%.*s",
             (int)strcspn(out, "\n"), out);
}

/* pgxact_open() on the cluster as it is now: its code and message. */
static int try_open(char *msg, size_t len)
{
    PgXact *px = NULL;
    HsError err;
    hs_error_clear(&err);
    int rc = pgxact_open(&px, pg.data, &err);
    snprintf(msg, len, "%s", err.msg);
    pgxact_close(px);
    return rc;
}

/* Table t for the page fixtures: 300 rows, hint bits set, checkpointed. */
static void make_table_t(void)
{
    SQL("CREATE EXTENSION pageinspect",
        "CREATE TABLE t (id int4, k int4, v int8, pad text)",
        "INSERT INTO t SELECT i, (i * 37) % 1000, i * 1000003::int8, "
        "repeat(chr(97 + i % 26), 20 + i % 50) FROM generate_series(1, 300) i",
        "SELECT count(*) FROM t", "CHECKPOINT");
    const char *out = SQL("SELECT pg_relation_filepath('t')");
    snprintf(pg.relpath, sizeof(pg.relpath), "%.*s", (int)strcspn(out, "\n"), out);
}

/* Blocks 0 and 1 of t as the server reads them from disk (just restarted, so
 * its buffers hold what the files hold), with their checksums. */
static void ask_about_pages(void)
{
    for (int blk = 0; blk < 2; blk++) {
        char q[256];
        snprintf(q, sizeof(q),
                 "SELECT page_checksum(get_raw_page('t', %d), %d), (SELECT checksum "
                 "FROM page_header(get_raw_page('t', %d))), encode(get_raw_page('t', "
                 "%d), 'hex')",
                 blk, blk, blk, blk);
        const char *out = SQL(q);
        ck_assert_int_eq(sscanf(out, "%d|%d|%16384[0-9a-f]", &pg.page_sum[blk],
                                &pg.pd_checksum[blk], pg.page_hex[blk]),
                         3);
    }
    const char *out = SQL("SELECT page_checksum(get_raw_page('t', 0), 131072)");
    ck_assert_int_eq(sscanf(out, "%d", &pg.page_sum[2]), 1);
}

/* The whole story, once, before the tests: a cluster, transactions and multis
 * of known outcome, what the server says of them, pgxact's refusals while
 * the server runs and after it crashed, and a last clean stop. */
static void real_setup(void)
{
    make_cluster();
    make_table_t();
    make_transactions();
    make_multis();
    ask_the_server();
    pg.running_rc = try_open(pg.running_msg, sizeof(pg.running_msg));
    server_stop("fast");
    server_start();
    server_stop("immediate"); /* a crash: WAL left to replay */
    pg.crashed_rc = try_open(pg.crashed_msg, sizeof(pg.crashed_msg));
    server_start(); /* replays it */
    ask_about_pages();
    server_stop("fast");
    TuRun *r = pg_run("pg_controldata", "-D", pg.data, NULL);
    ck_assert_msg(r->status == 0, "pg_controldata: %s", r->err);
    snprintf(pg.controldata, sizeof(pg.controldata), "%s", r->out);
}

/* After the real-cluster tests: no server, no directory. */
static void real_teardown(void)
{
    real_cleanup();
}

START_TEST(real_control_matches_pg_controldata)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/global/pg_control", pg.data);
    size_t len;
    unsigned char *ctl = tu_read_file(path, &len);
    ck_assert_ptr_nonnull(ctl);
    ck_assert_uint_eq(len, CONTROL_FILE_SIZE);
    check_layout(ctl, pg.controldata);
    free(ctl);
    PgXact *px = NULL;
    HsError err;
    ck_assert_msg(pgxact_open(&px, pg.data, &err) == 0, "%s", describe(&err));
    check_control(pgxact_control(px), pg.controldata);
    ck_assert_uint_eq(pgxact_control(px)->pc_data_checksum_version, 1);
    pgxact_close(px);
}
END_TEST

START_TEST(real_xid_statuses_match_the_server)
{
    PgXact *px = NULL;
    HsError err;
    ck_assert_msg(pgxact_open(&px, pg.data, &err) == 0, "%s", describe(&err));
    const PgControl *pc = pgxact_control(px);
    static const XactStatus want[8] = {XACT_COMMITTED, XACT_ABORTED,    XACT_COMMITTED,
                                       XACT_ABORTED,   XACT_COMMITTED,  XACT_ABORTED,
                                       XACT_ABORTED,   XACT_IN_PROGRESS};
    for (int i = 0; i < 8; i++)
        ck_assert_msg(status_of(px, pg.xids[i]) == want[i], "row %d (xid %u): %d",
                      i + 1, (unsigned)pg.xids[i], (int)status_of(px, pg.xids[i]));
    /* every xid the cluster has: pgxact and txid_status() agree */
    size_t n = strlen(pg.statuses);
    ck_assert_uint_eq(pc->pc_oldest_xid, pg.first_xid);
    ck_assert_uint_ge((uint32_t)pc->pc_next_full_xid, pg.first_xid + n);
    ck_assert_uint_gt(pg.first_xid + n, 32768 + 100); /* pg_xact has 2 pages */
    for (size_t i = 0; i < n; i++) {
        static const char letter[] = "ICAS";
        uint32_t xid = pg.first_xid + (uint32_t)i;
        char got = letter[status_of(px, xid)];
        if (got != pg.statuses[i])
            ck_abort_msg("xid %u: pgxact says %c, txid_status() %c", (unsigned)xid, got,
                         pg.statuses[i]);
    }
    XactStatus st;
    uint32_t next = (uint32_t)pc->pc_next_full_xid;
    assert_refused(pgxact_xid_status(px, next, &st, &err), &err, HS_EREFUSED,
                   "/global/pg_control", "is outside the cluster's transaction range");
    pgxact_close(px);
}
END_TEST

START_TEST(real_multis_match_the_server)
{
    PgXact *px = NULL;
    HsError err;
    ck_assert_msg(pgxact_open(&px, pg.data, &err) == 0, "%s", describe(&err));
    for (int i = 0; i < REAL_MULTIS; i++) {
        uint32_t got = updater_of(px, pg.multis[i]);
        ck_assert_msg(got == pg.updaters[i], "multixact %u (%s): pgxact says %u",
                      (unsigned)pg.multis[i], pg.members[i], (unsigned)got);
    }
    /* as built: an update, only locks, a delete, an update rolled back */
    ck_assert_uint_ne(pg.updaters[0], 0);
    ck_assert_uint_eq(pg.updaters[1], 0);
    ck_assert_int_eq(status_of(px, pg.updaters[0]), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, pg.updaters[2]), XACT_COMMITTED);
    ck_assert_int_eq(status_of(px, pg.updaters[3]), XACT_ABORTED);
    ck_assert_ptr_nonnull(strstr(pg.members[2], ":upd"));
    ck_assert_ptr_nonnull(strstr(pg.members[3], ":nokeyupd"));
    /* the newest multi is m's row 4's, whose members end at nextMultiOffset */
    ck_assert_uint_eq(pgxact_control(px)->pc_next_multi, pg.multis[3] + 1);
    uint32_t xid;
    assert_refused(pgxact_multi_update_xid(px, pg.multis[3] + 1, &xid, &err), &err,
                   HS_EREFUSED, "/global/pg_control", "outside");
    pgxact_close(px);
}
END_TEST

START_TEST(real_running_and_crashed_clusters_are_refused)
{
    ck_assert_int_eq(pg.running_rc, HS_EREFUSED);
    ck_assert_str_eq(pg.running_msg,
                     "the cluster is running (postmaster.pid exists): stop it first");
    ck_assert_int_eq(pg.crashed_rc, HS_EREFUSED);
    ck_assert_msg(strstr(pg.crashed_msg, "\"in production\" (state 6), not shut down "
                                         "cleanly") != NULL,
                  "%s", pg.crashed_msg);
}
END_TEST

/* ---- write-fixtures ------------------------------------------------------------- */

/* Block blk of t from its relation file, which must be what the server read. */
static void copy_page(int blk, const char *name)
{
    char path[PATH_MAX * 2], out[PATH_MAX * 2], hex[16384 + 1];
    snprintf(path, sizeof(path), "%s/%s", pg.data, pg.relpath);
    unsigned char page[8192];
    int fd = open(path, O_RDONLY);
    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(pread(fd, page, sizeof(page), (off_t)blk * 8192), 8192);
    close(fd);
    for (int i = 0; i < 8192; i++)
        snprintf(hex + 2 * i, 3, "%02x", page[i]);
    ck_assert_msg(strcmp(hex, pg.page_hex[blk]) == 0,
                  "block %d on disk is not what get_raw_page() read", blk);
    snprintf(out, sizeof(out), "%s/%s", pg.fixture_dir, name);
    write_file(out, page, sizeof(page));
}

START_TEST(write_fixtures)
{
    char path[PATH_MAX * 2];
    copy_page(0, "pgpage-k-blk0.bin");
    copy_page(1, "pgpage-k-blk1.bin");
    snprintf(path, sizeof(path), "%s/pgpage-k.txt", pg.fixture_dir);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fprintf(f,
            "# pgpage-k-blk0.bin and pgpage-k-blk1.bin: blocks 0 and 1 of table t of\n"
            "# a PostgreSQL 15 cluster made with initdb -k (data checksums on),\n"
            "# copied from its relation file after CHECKPOINT and a restart, and\n"
            "# byte-identical to get_raw_page('t', N).  Written by\n"
            "# `check_pgxact write-fixtures DIR`.  The table:\n"
            "#   CREATE TABLE t (id int4, k int4, v int8, pad text);\n"
            "#   INSERT INTO t SELECT i, (i * 37) %% 1000, i * 1000003::int8,\n"
            "#       repeat(chr(97 + i %% 26), 20 + i %% 50)\n"
            "#       FROM generate_series(1, 300) i;\n"
            "#   SELECT count(*) FROM t;  -- sets the hint bits\n"
            "#   CHECKPOINT;\n"
            "# Checksums are smallints as pageinspect prints them (signed), then\n"
            "# the same 16 bits unsigned in hex.\n"
            "server: %s\n",
            pg.server_version);
    for (int blk = 0; blk < 2; blk++)
        fprintf(f,
                "page_checksum(get_raw_page('t', %d), %d) = %d = 0x%04X\n"
                "pd_checksum of block %d = %d = 0x%04X\n",
                blk, blk, pg.page_sum[blk], (unsigned)(uint16_t)pg.page_sum[blk], blk,
                pg.pd_checksum[blk], (unsigned)(uint16_t)pg.pd_checksum[blk]);
    fprintf(f, "page_checksum(get_raw_page('t', 0), 131072) = %d = 0x%04X\n",
            pg.page_sum[2], (unsigned)(uint16_t)pg.page_sum[2]);
    fclose(f);

    char src[PATH_MAX + 32];
    snprintf(src, sizeof(src), "%s/global/pg_control", pg.data);
    size_t len;
    unsigned char *ctl = tu_read_file(src, &len);
    ck_assert_ptr_nonnull(ctl);
    check_layout(ctl, pg.controldata);
    snprintf(path, sizeof(path), "%s/pg_control-15", pg.fixture_dir);
    write_file(path, ctl, len);
    free(ctl);
    snprintf(path, sizeof(path), "%s/pg_control-15.txt", pg.fixture_dir);
    write_file(path, pg.controldata, strlen(pg.controldata));
    printf("check_pgxact: fixtures written to %s\n", pg.fixture_dir);
}
END_TEST

/* ---- main --------------------------------------------------------------------------
 */

/* One test case per function of pgxact (and its fixtures with pgxact_open). */
static Suite *synthetic_suite(void)
{
    Suite *s = suite_create("pgxact");
    TCase *tc = tcase_create("open");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_add_test(tc, crc32c_check_value);
    tcase_add_test(tc, clean_cluster_opens);
    tcase_add_loop_test(tc, spoiled_clusters_are_refused, 0,
                        sizeof(refusals) / sizeof(refusals[0]));
    tcase_add_test(tc, missing_directory_is_refused);
    tcase_add_test(tc, real_pg_control_fixture);
    tcase_add_test(tc, page_fixtures_hold_their_checksums);
    suite_add_tcase(s, tc);

    tc = tcase_create("xid_status");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, special_xids_need_no_pg_xact);
    tcase_add_test(tc, two_bits_per_xid_low_bits_first);
    tcase_add_test(tc, segment_boundary);
    tcase_add_test(tc, short_segment_is_refused);
    tcase_add_test(tc, xids_outside_the_range_are_refused);
    tcase_add_test(tc, xid_range_wraps_around);
    tcase_add_test(tc, pages_are_read_once);
    suite_add_tcase(s, tc);

    tc = tcase_create("multi_update_xid");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_add_test(tc, updater_or_only_lockers);
    tcase_add_test(tc, multis_outside_the_range_are_refused);
    tcase_add_test(tc, members_across_a_page);
    tcase_add_test(tc, member_offsets_wrap_around);
    tcase_add_test(tc, multis_wrap_around);
    tcase_add_test(tc, missing_or_short_segments_are_refused);
    tcase_add_test(tc, impossible_multis_are_corrupt);
    suite_add_tcase(s, tc);
    return s;
}

/* The real-cluster suite (or, with fixture_dir, the fixture writer). */
static Suite *real_suite(const char *fixture_dir)
{
    Suite *s = suite_create(fixture_dir ? "pgxact-fixtures" : "pgxact-real");
    TCase *tc = tcase_create("real");
    tcase_add_unchecked_fixture(tc, real_setup, real_teardown);
    tcase_set_timeout(tc, 120);
    if (fixture_dir != NULL) {
        snprintf(pg.fixture_dir, sizeof(pg.fixture_dir), "%s", fixture_dir);
        tcase_add_test(tc, write_fixtures);
    } else {
        tcase_add_test(tc, real_control_matches_pg_controldata);
        tcase_add_test(tc, real_xid_statuses_match_the_server);
        tcase_add_test(tc, real_multis_match_the_server);
        tcase_add_test(tc, real_running_and_crashed_clusters_are_refused);
    }
    suite_add_tcase(s, tc);
    return s;
}

/* PostgreSQL's programs in the C locale (pg_controldata's labels are
 * translated otherwise), and no PG* variable steering psql elsewhere. */
static void clean_environment(void)
{
    static const char *const vars[] = {"PGHOST",
                                       "PGHOSTADDR",
                                       "PGPORT",
                                       "PGDATABASE",
                                       "PGUSER",
                                       "PGPASSWORD",
                                       "PGPASSFILE",
                                       "PGOPTIONS",
                                       "PGSERVICE",
                                       "PGSERVICEFILE",
                                       "PGSSLMODE",
                                       "PGAPPNAME",
                                       "PGTZ",
                                       "PGDATESTYLE",
                                       "PGCLIENTENCODING",
                                       "PGSYSCONFDIR",
                                       "PGCONNECT_TIMEOUT",
                                       "PGTARGETSESSIONATTRS",
                                       "PGDATA"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    setenv("LC_ALL", "C", 1);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "") == 0)
        return tu_run_suite(synthetic_suite());
    bool fixtures = strcmp(mode, "write-fixtures") == 0 && argc == 3;
    if (strcmp(mode, "real") != 0 && !fixtures) {
        fprintf(stderr, "usage: check_pgxact [real | write-fixtures DIR]\n");
        return 2;
    }
    if (!real_available()) {
        const char *req = getenv("HEAPSCAN_REQUIRE_PG");
        bool required = fixtures || (req != NULL && strcmp(req, "1") == 0);
        printf("check_pgxact: PostgreSQL 15 (or, as root, runuser and user %s) not "
               "found: %s\n",
               pg.user ? pg.user : "nobody",
               required ? "FAIL (HEAPSCAN_REQUIRE_PG=1)" : "SKIP");
        return required ? EXIT_FAILURE : 77;
    }
    clean_environment();
    return tu_run_suite(real_suite(fixtures ? argv[2] : NULL));
}
