/*
 * relwrite.c -- writing a relation without ever exposing a partial one,
 *               and cleaning up after writers that died (see relfile.h).
 *
 * Entry points: relfile_create(), relfile_append(), relfile_commit(),
 * relfile_abort(), relfile_recover().  See also: relfile.c -- the reading
 * side of the lock protocol, and what a directory holds.
 *
 * The steps of a commit, and what is on disk when it stops at each:
 *   1. the new segments are written and fsynced as NAME.k.tmp-PID: the
 *      old relation is untouched;
 *   2. under the old first segment's exclusive lock, every old segment
 *      gets a second name NAME.k.old-PID, then NAME.commit-PID marks that
 *      renames begin, and the directory is fsynced ("kept");
 *   3. the new segments k >= 1 are renamed over NAME.k ("renamed"), and old
 *      segments beyond the new end unlinked ("surplus"): readers wait on the
 *      lock, and the old relation can still be put back from step 2's names;
 *   4. NAME.tmp-PID is renamed over NAME ("committed"): the commit point;
 *   5. the directory is fsynced, the second names and the marker dropped
 *      ("dropped").
 * relfile_recover() reads what a writer that died left: no marker, nothing
 * was renamed (the temporary files go); the marker and NAME.tmp-PID, the
 * commit stopped in step 3 (the old relation is put back); the marker
 * without NAME.tmp-PID, it got past step 4 (the new relation stays).
 */
#include "relfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void (*relfile_commit_hook)(const char *step);

static void step(const char *name)
{
    if (relfile_commit_hook)
        relfile_commit_hook(name);
}

static int tagged_name(const RelFile *rf, uint32_t seg, const char *kind, char *buf,
                       size_t len)
{
    char final[PATH_MAX];
    int rc = relfile_segment_name(rf->rf_path, seg, final, sizeof(final));
    if (rc < 0)
        return rc;
    size_t a = strlen(final), k = strlen(kind), t = strlen(rf->rf_tmp_tag);
    if (a + 1 + k + t >= len)
        return -ENAMETOOLONG;
    memcpy(buf, final, a);
    buf[a] = '.';
    memcpy(buf + a + 1, kind, k);
    memcpy(buf + a + 1 + k, rf->rf_tmp_tag, t + 1); /* "FINAL.KIND-PID" */
    return 0;
}

/* Where segment seg is written before the commit renames it into place. */
static int temp_name(const RelFile *rf, uint32_t seg, char *buf, size_t len)
{
    return tagged_name(rf, seg, "tmp", buf, len);
}

/* A second name for the segment a replacing commit is about to overwrite. */
static int backup_name(const RelFile *rf, uint32_t seg, char *buf, size_t len)
{
    return tagged_name(rf, seg, "old", buf, len);
}

int relfile_create(RelFile *rf, const char *path, uint32_t seg_blocks, bool replace,
                   HsError *err)
{
    int rc = relfile_init(rf, path, seg_blocks, err);
    RelFileDir d;
    if (rc < 0 ||
        (rc = relfile_recover(path, rf->rf_note, sizeof(rf->rf_note), err)) < 0 ||
        (rc = relfile_scan_dir(path, &d, err)) < 0)
        return rc;
    if (!replace && d.rd_present > 0) {
        char name[PATH_MAX];
        uint32_t k = 0;
        while (k < d.rd_nsegs &&
               access((relfile_segment_name(path, k, name, sizeof(name)), name),
                      F_OK) != 0)
            k++;
        return hs_error_set(err, HS_EEXIST, name, HS_NO_BLOCK,
                            k == 0 ? "exists; use --force to replace it"
                                   : "exists (a segment of another table); use --force "
                                     "to replace it");
    }
    rf->rf_writing = true;
    rf->rf_replace = replace;
    snprintf(rf->rf_tmp_tag, sizeof(rf->rf_tmp_tag), "-%ld", (long)getpid());
    return 0;
}

/* Open the temporary file of the next segment. */
static int open_next_segment(RelFile *rf, HsError *err)
{
    char name[PATH_MAX];
    int rc = temp_name(rf, rf->rf_nsegs, name, sizeof(name));
    if (rc < 0)
        return hs_error_set(err, rc, rf->rf_path, HS_NO_BLOCK, "%s", strerror(-rc));
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return hs_error_set(err, -errno, name, HS_NO_BLOCK, "create: %s",
                            strerror(errno));
    if ((rc = relfile_add_fd(rf, fd)) < 0) {
        close(fd);
        unlink(name);
        return hs_error_set(err, rc, name, HS_NO_BLOCK, "%s", strerror(-rc));
    }
    return 0;
}

int relfile_append(RelFile *rf, const void *buf, uint32_t n, HsError *err)
{
    const char *src = buf;
    while (n > 0) {
        uint32_t in_seg = (uint32_t)(rf->rf_nblocks % rf->rf_seg_blocks);
        if (in_seg == 0 && rf->rf_nblocks / rf->rf_seg_blocks == rf->rf_nsegs) {
            int rc = open_next_segment(rf, err);
            if (rc < 0)
                return rc;
        }
        uint32_t chunk = rf->rf_seg_blocks - in_seg;
        if (chunk > n)
            chunk = n;
        int fd = rf->rf_fds[rf->rf_nsegs - 1];
        size_t want = (size_t)chunk * BLCKSZ, done = 0;
        while (done < want) {
            ssize_t put = pwrite(fd, src + done, want - done,
                                 (off_t)((uint64_t)in_seg * BLCKSZ + done));
            if (put < 0 && errno == EINTR)
                continue;
            if (put <= 0) {
                int e = put < 0 ? errno : ENOSPC;
                char name[PATH_MAX];
                temp_name(rf, rf->rf_nsegs - 1, name, sizeof(name));
                return hs_error_set(err, -e, name,
                                    (int64_t)(rf->rf_nblocks + done / BLCKSZ),
                                    "write: %s", strerror(e));
            }
            done += (size_t)put;
        }
        src += want;
        rf->rf_nblocks += chunk;
        n -= chunk;
    }
    return 0;
}

static int fsync_dir_of(const char *path)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

/* ---- the commit ---------------------------------------------------------- */

/* What a commit keeps while it works: the lock, and which old segments got a
 * second name. */
typedef struct Commit {
    int cm_lock_fd;   /* the old first segment, locked exclusively, or -1 */
    uint32_t cm_nold; /* 1 + the highest old segment number (0: none) */
    bool *cm_kept;    /* cm_nold flags: that segment has its .old- name */
} Commit;

/*
 * Lock the relation's current first segment exclusively, checking after the
 * lock that it is still the file at the path (a reader or another writer's
 * commit may have been between).  None there: nothing to lock.
 */
static int lock_current(RelFile *rf, Commit *c, HsError *err)
{
    for (int tries = 0; tries < 100; tries++) {
        struct stat mine, now;
        int fd = open(rf->rf_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            return errno == ENOENT ? 0
                                   : hs_error_set(err, -errno, rf->rf_path, HS_NO_BLOCK,
                                                  "open: %s", strerror(errno));
        while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
            ;
        if (fstat(fd, &mine) == 0 && stat(rf->rf_path, &now) == 0 &&
            mine.st_ino == now.st_ino && mine.st_dev == now.st_dev) {
            c->cm_lock_fd = fd;
            return 0;
        }
        close(fd);
    }
    return hs_error_set(err, -EAGAIN, rf->rf_path, HS_NO_BLOCK,
                        "replaced by another writer 100 times while locking it");
}

/* The commit marker's name, NAME.commit-PID. */
static void marker_name(const RelFile *rf, char *buf, size_t len)
{
    snprintf(buf, len, "%s.commit%s", rf->rf_path, rf->rf_tmp_tag);
}

/* Remove the second names of the old segments and the marker (after the
 * commit, or when it is given up with the old segments back in place). */
static void drop_kept(RelFile *rf, Commit *c)
{
    char marker[PATH_MAX + 64];
    for (uint32_t s = 0; s < c->cm_nold; s++) {
        char old[PATH_MAX];
        if (c->cm_kept[s] && backup_name(rf, s, old, sizeof(old)) == 0)
            unlink(old);
        c->cm_kept[s] = false;
    }
    marker_name(rf, marker, sizeof(marker));
    unlink(marker);
}

/*
 * Step 2: give each old segment a second name (a hard link), so it survives
 * being replaced or removed until the commit point, then mark that renames
 * begin.  Any failure but "no such segment" is an error before anything is
 * renamed: an old segment that cannot be kept is not replaced.
 */
static int keep_old_segments(RelFile *rf, Commit *c, HsError *err)
{
    RelFileDir d;
    int rc = relfile_scan_dir(rf->rf_path, &d, err);
    if (rc < 0)
        return rc;
    c->cm_nold = rf->rf_replace ? d.rd_nsegs : 0;
    if ((c->cm_kept = calloc(c->cm_nold ? c->cm_nold : 1, sizeof(bool))) == NULL)
        return hs_error_set(err, -ENOMEM, rf->rf_path, HS_NO_BLOCK, "out of memory");
    for (uint32_t s = 0; s < c->cm_nold; s++) {
        char final[PATH_MAX], old[PATH_MAX];
        relfile_segment_name(rf->rf_path, s, final, sizeof(final));
        backup_name(rf, s, old, sizeof(old));
        if (link(final, old) == 0) {
            c->cm_kept[s] = true;
        } else if (errno != ENOENT) {
            rc = hs_error_set(err, -errno, old, HS_NO_BLOCK,
                              "cannot keep the old segment while replacing it: "
                              "link: %s",
                              strerror(errno));
            drop_kept(rf, c);
            return rc;
        }
    }
    char marker[PATH_MAX + 64];
    marker_name(rf, marker, sizeof(marker));
    int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || (rc = fsync_dir_of(rf->rf_path)) < 0) {
        rc = fd < 0 ? -errno : rc;
        hs_error_set(err, rc, marker, HS_NO_BLOCK, "%s", strerror(-rc));
        if (fd >= 0)
            close(fd);
        drop_kept(rf, c);
        return rc;
    }
    close(fd);
    return 0;
}

/*
 * The commit stopped at segment from (the renames of from+1 .. were done, and
 * surplus old segments unlinked if past that): put back every old segment
 * from its second name and remove new segments that replaced nothing, so
 * the directory is as it was.  An old segment that cannot be put back is
 * named in the error: its second name is then its only one.
 */
static void undo_commit(RelFile *rf, Commit *c, uint32_t from, HsError *err)
{
    uint32_t end = rf->rf_nsegs > c->cm_nold ? rf->rf_nsegs : c->cm_nold;
    for (uint32_t u = from; u < end; u++) {
        char final[PATH_MAX], old[PATH_MAX];
        relfile_segment_name(rf->rf_path, u, final, sizeof(final));
        backup_name(rf, u, old, sizeof(old));
        bool kept = u < c->cm_nold && c->cm_kept[u];
        if (!kept) {
            if (u < rf->rf_nsegs && u > 0)
                unlink(final); /* a new segment where there was none */
        } else if (rename(old, final) == 0 || access(old, F_OK) == 0) {
            c->cm_kept[u] = access(old, F_OK) == 0; /* rename onto itself: a no-op */
        } else {
            size_t n = strlen(err->msg);
            snprintf(err->msg + n, sizeof(err->msg) - n, "; the old %s is left as %s",
                     final, old);
            c->cm_kept[u] = false; /* the only copy: not to be dropped */
        }
    }
    drop_kept(rf, c);
}

/* Rename temporary segment s over its final name (step 3 or 4). */
static int rename_into_place(RelFile *rf, uint32_t s, HsError *err)
{
    char tmp[PATH_MAX], final[PATH_MAX];
    temp_name(rf, s, tmp, sizeof(tmp));
    relfile_segment_name(rf->rf_path, s, final, sizeof(final));
    unsigned flags = rf->rf_replace ? 0 : RENAME_NOREPLACE;
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, flags) == 0)
        return 0;
    int e = errno;
    return e == EEXIST
               ? hs_error_set(err, HS_EEXIST, final, HS_NO_BLOCK,
                              "exists; use --force to replace it")
               : hs_error_set(err, -e, final, HS_NO_BLOCK, "rename: %s", strerror(e));
}

/* Steps 3 and 4: the new segments over the old, the surplus old segments
 * unlinked, the first segment last.  On failure, undone. */
static int put_in_place(RelFile *rf, Commit *c, HsError *err)
{
    int rc;
    for (uint32_t s = rf->rf_nsegs; s-- > 1;) {
        if ((rc = rename_into_place(rf, s, err)) < 0) {
            undo_commit(rf, c, s + 1, err);
            return rc;
        }
        step("renamed");
    }
    for (uint32_t s = rf->rf_nsegs; s < c->cm_nold; s++) {
        char final[PATH_MAX];
        relfile_segment_name(rf->rf_path, s, final, sizeof(final));
        unlink(final); /* kept under its second name until the commit point */
    }
    step("surplus");
    if ((rc = rename_into_place(rf, 0, err)) < 0) {
        undo_commit(rf, c, 1, err);
        return rc;
    }
    step("committed");
    return 0;
}

int relfile_commit(RelFile *rf, HsError *err)
{
    Commit c = {.cm_lock_fd = -1};
    int rc = 0;
    if (rf->rf_nsegs == 0 && (rc = open_next_segment(rf, err)) < 0)
        goto fail; /* an empty relation is still one (empty) file */
    for (uint32_t s = 0; s < rf->rf_nsegs; s++) {
        if (fsync(rf->rf_fds[s]) < 0) {
            char tmp[PATH_MAX];
            temp_name(rf, s, tmp, sizeof(tmp));
            rc = hs_error_set(err, -errno, tmp, HS_NO_BLOCK, "fsync: %s",
                              strerror(errno));
            goto fail;
        }
    }
    if ((rc = lock_current(rf, &c, err)) < 0 ||
        (rc = keep_old_segments(rf, &c, err)) < 0)
        goto fail;
    step("kept");
    if ((rc = put_in_place(rf, &c, err)) < 0)
        goto fail;
    rf->rf_writing = false;
    if ((rc = fsync_dir_of(rf->rf_path)) < 0)
        hs_error_set(err, rc, rf->rf_path, HS_NO_BLOCK, "fsync of directory: %s",
                     strerror(-rc));
    drop_kept(rf, &c);
    step("dropped");
    free(c.cm_kept);
    if (c.cm_lock_fd >= 0)
        close(c.cm_lock_fd); /* and with it the lock */
    relfile_close(rf);
    return rc;
fail:
    free(c.cm_kept);
    if (c.cm_lock_fd >= 0)
        close(c.cm_lock_fd);
    relfile_abort(rf);
    return rc;
}

void relfile_abort(RelFile *rf)
{
    if (rf->rf_writing) {
        for (uint32_t s = 0; s < rf->rf_nsegs; s++) {
            char tmp[PATH_MAX];
            if (temp_name(rf, s, tmp, sizeof(tmp)) == 0)
                unlink(tmp);
        }
        rf->rf_writing = false;
    }
    relfile_close(rf);
}

/* ---- recovery -------------------------------------------------------------- */

/* The leftovers of one writer that died, gathered from the directory. */
typedef struct Leftovers {
    long lo_pid;          /* the writer; 0 until a leftover of a dead one is seen */
    bool lo_marker;       /* its NAME.commit-PID: its renames had begun */
    bool lo_first_tmp;    /* its NAME.tmp-PID: the commit point not passed */
    uint32_t lo_old_high; /* 1 + the highest segment with an .old- name (0: none) */
    uint64_t lo_kept[RELFILE_MAX_SEGS / 64]; /* a bit per segment with an .old- name */
    unsigned lo_files;                       /* its leftover files */
    char lo_dir[PATH_MAX];                   /* the directory they are in */
} Leftovers;

static int find_dead(void *arg, const char *name, uint32_t seg, char kind, long pid)
{
    Leftovers *lo = arg;
    (void)name;
    if (kind == 0 || (relfile_pid_alive(pid) && pid != (long)getpid()))
        return 0; /* a segment, or a writer still at work: not ours to touch */
    if (lo->lo_pid != 0 && lo->lo_pid != pid)
        return 0; /* one writer at a time */
    lo->lo_pid = pid;
    lo->lo_files++;
    lo->lo_marker |= kind == 'c';
    lo->lo_first_tmp |= kind == 't' && seg == 0;
    if (kind == 'o' && seg < RELFILE_MAX_SEGS) {
        lo->lo_kept[seg / 64] |= UINT64_C(1) << (seg % 64);
        if (seg + 1 > lo->lo_old_high)
            lo->lo_old_high = seg + 1;
    }
    return 0;
}

/*
 * A dead writer's renames had begun but its commit point was not passed:
 * every old segment back from its .old- name, and every other segment but
 * the first removed, for the writer put it there (step 2 gave every old
 * segment a second name before anything was renamed, and the first is
 * renamed only at the commit point).
 */
static void roll_back(const char *path, const Leftovers *lo, uint32_t nsegs)
{
    uint32_t end = nsegs > lo->lo_old_high ? nsegs : lo->lo_old_high;
    for (uint32_t s = 0; s < end; s++) {
        char old[PATH_MAX + 64], final[PATH_MAX];
        relfile_segment_name(path, s, final, sizeof(final));
        snprintf(old, sizeof(old), "%s.old-%ld", final, lo->lo_pid);
        if (lo->lo_kept[s / 64] & (UINT64_C(1) << (s % 64))) {
            if (rename(old, final) == 0 || errno != ENOENT)
                unlink(old); /* a rename onto the same file leaves both names */
        } else if (s > 0) {
            unlink(final);
        }
    }
}

/* Remove every leftover of the writer in arg (a Leftovers). */
static int drop_leftover(void *arg, const char *name, uint32_t seg, char kind, long pid)
{
    const Leftovers *lo = arg;
    (void)seg;
    if (kind != 0 && pid == lo->lo_pid) {
        char full[2 * PATH_MAX];
        snprintf(full, sizeof(full), "%s/%s", lo->lo_dir, name);
        unlink(full);
    }
    return 0;
}

/* One line into note, after what is there. */
static void add_note(char *note, size_t len, const Leftovers *lo, bool rolled_back)
{
    size_t used = note ? strlen(note) : 0;
    if (note == NULL || used + 1 >= len)
        return;
    snprintf(note + used, len - used,
             "%sremoved %u files of a writer that died (pid %ld)%s", used ? "; " : "",
             lo->lo_files, lo->lo_pid,
             rolled_back ? ", putting back the table it was replacing" : "");
}

int relfile_recover(const char *path, char *note, size_t notelen, HsError *err)
{
    if (note && notelen)
        note[0] = '\0';
    for (int round = 0; round < 64; round++) { /* a writer at a time */
        Leftovers lo = {0};
        RelFileDir d;
        char dcopy[PATH_MAX];
        int rc = relfile_each_file(path, find_dead, &lo, err);
        if (rc < 0 || lo.lo_pid == 0 || (rc = relfile_scan_dir(path, &d, err)) < 0)
            return rc;
        bool roll = lo.lo_marker && lo.lo_first_tmp;
        if (roll)
            roll_back(path, &lo, d.rd_nsegs);
        snprintf(dcopy, sizeof(dcopy), "%s", path);
        snprintf(lo.lo_dir, sizeof(lo.lo_dir), "%s", dirname(dcopy));
        relfile_each_file(path, drop_leftover, &lo, err);
        add_note(note, notelen, &lo, roll && lo.lo_old_high > 0);
        if ((rc = fsync_dir_of(path)) < 0)
            return hs_error_set(err, rc, path, HS_NO_BLOCK, "fsync of directory: %s",
                                strerror(-rc));
    }
    return 0;
}
