/*
 * pgxact.c -- a stopped cluster's pg_control, pg_xact and pg_multixact
 *             (see pgxact.h).
 *
 * Entry points: pgxact_open(), pgxact_control(), pgxact_dir(),
 * pgxact_xid_status(), pgxact_multi_update_xid(), pgxact_close().
 * See also: pgcontrol.c -- the checks and pg_control, at open.
 *
 * pg_xact and pg_multixact are SLRUs: files
 * of up to 32 pages of 8 KiB without page headers, named by their segment
 * number in upper-case hex (at least four digits).  Each SLRU keeps a small
 * direct-mapped cache of pages and its last segment open, so a scan asks
 * the kernel once per page it has not seen lately, not once per tuple.
 */
#include "pgxact.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- layouts ------------------------------------------------------------ */

#define SLRU_PAGE_SIZE         8192
#define SLRU_PAGES_PER_SEGMENT 32
#define SLRU_CACHE_PAGES       16 /* cached pages per SLRU, least recent replaced */
#define SLRU_NO_PAGE           UINT32_MAX

/* pg_xact: 2 bits per xid, the first xid of a byte in its low bits */
#define CLOG_XACTS_PER_BYTE 4
#define CLOG_XACTS_PER_PAGE (SLRU_PAGE_SIZE * CLOG_XACTS_PER_BYTE)

/* pg_multixact/offsets: one uint32 member offset per MultiXactId */
#define MXACT_OFFSETS_PER_PAGE (SLRU_PAGE_SIZE / 4)

/* pg_multixact/members: groups of 4 flag bytes then the 4 members' xids */
#define MXACT_MEMBERS_PER_GROUP 4
#define MXACT_GROUP_SIZE        (MXACT_MEMBERS_PER_GROUP * (1 + 4)) /* 20 */
#define MXACT_GROUPS_PER_PAGE   (SLRU_PAGE_SIZE / MXACT_GROUP_SIZE) /* 409 */
#define MXACT_MEMBERS_PER_PAGE  (MXACT_GROUPS_PER_PAGE * MXACT_MEMBERS_PER_GROUP)

/* MultiXactStatus: 0..3 are row locks, 4 NoKeyUpdate and 5 Update */
#define MXACT_STATUS_NO_KEY_UPDATE 4
#define MXACT_STATUS_UPDATE        5

#define FIRST_MULTI_XACT_ID UINT32_C(1)

/* One SLRU directory: its open segment and its cached pages. */
typedef struct Slru {
    const char *sl_name;        /* directory under the data directory */
    int sl_fd;                  /* the open segment file, or -1 */
    uint32_t sl_segment;        /* which segment sl_fd is */
    uint32_t sl_seg_pages;      /* whole pages in that segment file */
    char sl_seg_path[PATH_MAX]; /* that segment's path */
    unsigned sl_last;           /* the slot used last: looked at first */
    uint64_t sl_clock;          /* uses so far, to find the least recent slot */
    uint32_t sl_pageno[SLRU_CACHE_PAGES]; /* page in each slot, or SLRU_NO_PAGE */
    uint64_t sl_used[SLRU_CACHE_PAGES];   /* sl_clock at each slot's last use */
    unsigned char sl_page[SLRU_CACHE_PAGES][SLRU_PAGE_SIZE]; /* the slots */
} Slru;

struct PgXact {
    pthread_mutex_t px_lock;        /* one lookup at a time */
    char px_dir[PATH_MAX];          /* the data directory, as given */
    char px_control_path[PATH_MAX]; /* DIR/global/pg_control */
    PgControl px_control;           /* what pg_control says */
    Slru px_xact;                   /* pg_xact */
    Slru px_offsets;                /* pg_multixact/offsets */
    Slru px_members;                /* pg_multixact/members */
};

/* ---- small helpers -------------------------------------------------------- */

/* The little-endian uint32 at p (pg_control and the SLRUs are x86-64's). */
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* TransactionIdPrecedes() for normal ids (and MultiXactIdPrecedes()): a is
 * older than b in the circle of 2^32 ids, each half of it behind. */
static bool id_precedes(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

/* ---- pgxact_open ---------------------------------------------------------- */

/* An SLRU of directory DIR/name with nothing open and nothing cached. */
static void slru_init(Slru *sl, const char *name)
{
    sl->sl_name = name;
    sl->sl_fd = -1;
    sl->sl_seg_path[0] = '\0';
    sl->sl_last = 0;
    sl->sl_clock = 0;
    for (int i = 0; i < SLRU_CACHE_PAGES; i++) {
        sl->sl_pageno[i] = SLRU_NO_PAGE;
        sl->sl_used[i] = 0;
    }
}

/* See pgxact.h: PG_VERSION, then pg_control, then that the cluster is stopped. */
int pgxact_open(PgXact **out, const char *pgdata, HsError *err)
{
    *out = NULL;
    size_t n = strlen(pgdata);
    if (n + sizeof("/pg_multixact/members/FFFFF") > PATH_MAX)
        return hs_error_set(err, -ENAMETOOLONG, pgdata, HS_NO_BLOCK, "%s",
                            strerror(ENAMETOOLONG));
    PgXact *px = malloc(sizeof(*px));
    if (px == NULL)
        return hs_error_set(err, -ENOMEM, pgdata, HS_NO_BLOCK, "%s", strerror(ENOMEM));
    pthread_mutex_init(&px->px_lock, NULL);
    memcpy(px->px_dir, pgdata, n + 1);
    slru_init(&px->px_xact, "pg_xact");
    slru_init(&px->px_offsets, "pg_multixact/offsets");
    slru_init(&px->px_members, "pg_multixact/members");
    int rc = pgcontrol_open(pgdata, &px->px_control, px->px_control_path, err);
    if (rc < 0) {
        pgxact_close(px);
        return rc;
    }
    *out = px;
    return 0;
}

/* See pgxact.h. */
const PgControl *pgxact_control(const PgXact *px)
{
    return &px->px_control;
}

/* See pgxact.h. */
const char *pgxact_dir(const PgXact *px)
{
    return px->px_dir;
}

/* ---- SLRU pages ------------------------------------------------------------ */

/* Make segment seg of sl the open one (sl_fd, sl_seg_pages).  A missing
 * segment is refused: it would hold `what id`. */
static int slru_open_segment(PgXact *px, Slru *sl, uint32_t seg, const char *what,
                             uint32_t id, HsError *err)
{
    if (sl->sl_fd >= 0 && sl->sl_segment == seg)
        return 0;
    if (sl->sl_fd >= 0)
        close(sl->sl_fd);
    sl->sl_fd = -1;
    int n = snprintf(sl->sl_seg_path, sizeof(sl->sl_seg_path), "%s/%s/%04X", px->px_dir,
                     sl->sl_name, (unsigned)seg);
    if (n < 0 || (size_t)n >= sizeof(sl->sl_seg_path))
        return hs_error_set(err, -ENAMETOOLONG, px->px_dir, HS_NO_BLOCK, "%s",
                            strerror(ENAMETOOLONG));
    int fd = open(sl->sl_seg_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return hs_error_set(err, HS_EREFUSED, sl->sl_seg_path, HS_NO_BLOCK,
                            "missing, but %s %u would be in it", what, (unsigned)id);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return hs_error_set(err, -e, sl->sl_seg_path, HS_NO_BLOCK, "%s", strerror(e));
    }
    sl->sl_fd = fd;
    sl->sl_segment = seg;
    sl->sl_seg_pages = (uint32_t)(st.st_size / SLRU_PAGE_SIZE);
    return 0;
}

/* Read page pageno of sl into buf; a segment too short for it is refused. */
static int slru_read(PgXact *px, Slru *sl, uint32_t pageno, unsigned char *buf,
                     const char *what, uint32_t id, HsError *err)
{
    uint32_t seg = pageno / SLRU_PAGES_PER_SEGMENT,
             in_seg = pageno % SLRU_PAGES_PER_SEGMENT;
    int rc = slru_open_segment(px, sl, seg, what, id, err);
    if (rc < 0)
        return rc;
    if (in_seg >= sl->sl_seg_pages)
        return hs_error_set(err, HS_EREFUSED, sl->sl_seg_path, HS_NO_BLOCK,
                            "has %u page(s), too short for page %u, where %s %u "
                            "would be",
                            (unsigned)sl->sl_seg_pages, (unsigned)in_seg, what,
                            (unsigned)id);
    for (size_t done = 0; done < SLRU_PAGE_SIZE;) {
        ssize_t n = pread(sl->sl_fd, buf + done, SLRU_PAGE_SIZE - done,
                          (off_t)in_seg * SLRU_PAGE_SIZE + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            return hs_error_set(err, -e, sl->sl_seg_path, HS_NO_BLOCK, "read: %s",
                                strerror(e));
        }
        if (n == 0)
            return hs_error_set(err, HS_EREFUSED, sl->sl_seg_path, HS_NO_BLOCK,
                                "ends inside page %u, where %s %u would be",
                                (unsigned)in_seg, what, (unsigned)id);
        done += (size_t)n;
    }
    return 0;
}

/* The slot holding page pageno of sl, or else the least recently used one. */
static unsigned slru_slot(const Slru *sl, uint32_t pageno)
{
    if (sl->sl_pageno[sl->sl_last] == pageno)
        return sl->sl_last;
    unsigned victim = 0;
    for (unsigned i = 0; i < SLRU_CACHE_PAGES; i++) {
        if (sl->sl_pageno[i] == pageno)
            return i;
        if (sl->sl_used[i] < sl->sl_used[victim])
            victim = i;
    }
    return victim;
}

/* Page pageno of sl, from the cache or read into it; *page points at it until
 * the next call for sl.  `what id` names what is looked up, for messages. */
static int slru_page(PgXact *px, Slru *sl, uint32_t pageno, const unsigned char **page,
                     const char *what, uint32_t id, HsError *err)
{
    unsigned slot = slru_slot(sl, pageno);
    if (sl->sl_pageno[slot] != pageno) {
        sl->sl_pageno[slot] = SLRU_NO_PAGE; /* not valid until wholly read */
        int rc = slru_read(px, sl, pageno, sl->sl_page[slot], what, id, err);
        if (rc < 0)
            return rc;
        sl->sl_pageno[slot] = pageno;
    }
    sl->sl_last = slot;
    sl->sl_used[slot] = ++sl->sl_clock;
    *page = sl->sl_page[slot];
    return 0;
}

/* ---- pg_xact ---------------------------------------------------------------- */

/* See pgxact.h: 2 bits at byte (xid % 32768) / 4 of page xid / 32768, the
 * xid % 4'th pair from the low end. */
static int xid_status(PgXact *px, uint32_t xid, XactStatus *status, HsError *err)
{
    if (xid < FIRST_NORMAL_TRANSACTION_ID) {
        *status = xid == INVALID_TRANSACTION_ID ? XACT_ABORTED : XACT_COMMITTED;
        return 0;
    }
    uint32_t oldest = px->px_control.pc_oldest_xid;
    uint32_t next = (uint32_t)px->px_control.pc_next_full_xid;
    if (id_precedes(xid, oldest) || !id_precedes(xid, next))
        return hs_error_set(err, HS_EREFUSED, px->px_control_path, HS_NO_BLOCK,
                            "xid %u is outside the cluster's transaction range "
                            "[oldest %u, next %u)",
                            (unsigned)xid, (unsigned)oldest, (unsigned)next);
    const unsigned char *page;
    int rc = slru_page(px, &px->px_xact, xid / CLOG_XACTS_PER_PAGE, &page,
                       "the status of xid", xid, err);
    if (rc < 0)
        return rc;
    unsigned byte = page[(xid % CLOG_XACTS_PER_PAGE) / CLOG_XACTS_PER_BYTE];
    *status = (XactStatus)((byte >> ((xid % CLOG_XACTS_PER_BYTE) * 2)) & 3u);
    return 0;
}

/* ---- pg_multixact ------------------------------------------------------------ */

/* The offset of multi's first member in pg_multixact/members; 0 if the
 * offsets file holds none for it. */
static int multi_offset(PgXact *px, uint32_t multi, uint32_t *offset, HsError *err)
{
    const unsigned char *page;
    int rc = slru_page(px, &px->px_offsets, multi / MXACT_OFFSETS_PER_PAGE, &page,
                       "the member offset of multixact", multi, err);
    if (rc < 0)
        return rc;
    *offset = rd32(page + (multi % MXACT_OFFSETS_PER_PAGE) * 4);
    return 0;
}

/* Where multi's members are: [*start, *start + *count) (modulo 2^32), as
 * GetMultiXactIdMembers() finds it: up to the next multi's offset, or to
 * nextMultiOffset for the newest multi.  multi is valid and in range. */
static int multi_members_range(PgXact *px, uint32_t multi, uint32_t *start,
                               uint32_t *count, HsError *err)
{
    const PgControl *pc = &px->px_control;
    uint32_t end, next = multi + 1; /* 0 right after the wrap: compared first */
    int rc = multi_offset(px, multi, start, err);
    if (rc < 0)
        return rc;
    if (next == pc->pc_next_multi)
        end = pc->pc_next_multi_offset;
    else if ((rc = multi_offset(px,
                                next < FIRST_MULTI_XACT_ID ? FIRST_MULTI_XACT_ID : next,
                                &end, err)) < 0)
        return rc;
    /* offset 0 is never handed out, so 0 means "never written"; and the
     * members must lie before nextMultiOffset */
    *count = end - *start;
    if (*start == 0 || end == 0 || *count > pc->pc_next_multi_offset - *start)
        return hs_error_set(err, HS_ECORRUPT, px->px_offsets.sl_seg_path, HS_NO_BLOCK,
                            "multixact %u has member offsets %u to %u, impossible "
                            "with nextMultiOffset %u",
                            (unsigned)multi, (unsigned)*start, (unsigned)end,
                            (unsigned)pc->pc_next_multi_offset);
    return 0;
}

/* Member number off of pg_multixact/members: its xid and status byte. */
static int multi_member(PgXact *px, uint32_t multi, uint32_t off, uint32_t *xid,
                        unsigned *status, HsError *err)
{
    const unsigned char *page;
    int rc = slru_page(px, &px->px_members, off / MXACT_MEMBERS_PER_PAGE, &page,
                       "a member of multixact", multi, err);
    if (rc < 0)
        return rc;
    uint32_t group = (off / MXACT_MEMBERS_PER_GROUP) % MXACT_GROUPS_PER_PAGE;
    uint32_t k = off % MXACT_MEMBERS_PER_GROUP;
    const unsigned char *g = page + group * MXACT_GROUP_SIZE;
    *status = g[k]; /* the flags word's byte k: little-endian, 8 bits a member */
    *xid = rd32(g + MXACT_MEMBERS_PER_GROUP + k * 4);
    return 0;
}

/* Member number off of multi into *updater: the empty slot 0 is skipped, an
 * updater kept; an empty member elsewhere, an unknown status or a second
 * updater cannot be (HS_ECORRUPT). */
static int multi_take_member(PgXact *px, uint32_t multi, uint32_t off,
                             uint32_t *updater, HsError *err)
{
    uint32_t member;
    unsigned status;
    int rc = multi_member(px, multi, off, &member, &status, err);
    if (rc < 0 || (member == INVALID_TRANSACTION_ID && off == 0))
        return rc; /* slot 0 is left unused when the offsets wrap around */
    const char *wrong = NULL;
    if (member == INVALID_TRANSACTION_ID)
        wrong = "is empty (xid 0), which only member 0 can be";
    else if (status > MXACT_STATUS_UPDATE)
        wrong = "has an unknown status";
    else if (status >= MXACT_STATUS_NO_KEY_UPDATE && *updater != 0)
        wrong = "is a second updater";
    if (wrong != NULL)
        return hs_error_set(err, HS_ECORRUPT, px->px_members.sl_seg_path, HS_NO_BLOCK,
                            "multixact %u: member %u (xid %u, status %u) %s",
                            (unsigned)multi, (unsigned)off, (unsigned)member, status,
                            wrong);
    if (status >= MXACT_STATUS_NO_KEY_UPDATE)
        *updater = member;
    return 0;
}

/* See pgxact.h: the members of multi, and the one whose status is
 * NoKeyUpdate or Update. */
static int multi_update_xid(PgXact *px, uint32_t multi, uint32_t *xid, HsError *err)
{
    const PgControl *pc = &px->px_control;
    if (multi == 0 || id_precedes(multi, pc->pc_oldest_multi) ||
        !id_precedes(multi, pc->pc_next_multi))
        return hs_error_set(err, HS_EREFUSED, px->px_control_path, HS_NO_BLOCK,
                            "multixact %u is %s the cluster's multixact range "
                            "[oldest %u, next %u)",
                            (unsigned)multi, multi == 0 ? "invalid, not in" : "outside",
                            (unsigned)pc->pc_oldest_multi, (unsigned)pc->pc_next_multi);
    uint32_t start, count, updater = 0;
    int rc = multi_members_range(px, multi, &start, &count, err);
    for (uint32_t i = 0; rc == 0 && i < count; i++)
        rc = multi_take_member(px, multi, start + i, &updater, err);
    if (rc == 0)
        *xid = updater;
    return rc;
}

/* See pgxact.h. */
/* The caches make every lookup a write: one at a time (the workers of a
 * parallel scan share the cluster; few tuples need it). */
int pgxact_xid_status(PgXact *px, uint32_t xid, XactStatus *status, HsError *err)
{
    pthread_mutex_lock(&px->px_lock);
    int rc = xid_status(px, xid, status, err);
    pthread_mutex_unlock(&px->px_lock);
    return rc;
}

int pgxact_multi_update_xid(PgXact *px, uint32_t multi, uint32_t *xid, HsError *err)
{
    pthread_mutex_lock(&px->px_lock);
    int rc = multi_update_xid(px, multi, xid, err);
    pthread_mutex_unlock(&px->px_lock);
    return rc;
}

void pgxact_close(PgXact *px)
{
    if (px == NULL)
        return;
    pthread_mutex_destroy(&px->px_lock);
    Slru *all[] = {&px->px_xact, &px->px_offsets, &px->px_members};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i]->sl_fd >= 0)
            close(all[i]->sl_fd);
    free(px);
}
