/*
 * pgpeer.c -- PostgreSQL 15 as a live benchmark peer (see pgpeer.h).
 *
 * Entry points: pgpeer_find, pgpeer_start, pgpeer_count_sum, pgpeer_evict,
 * pgpeer_warm, pgpeer_time_query, pgpeer_dir, pgpeer_stop.
 *
 * Every PostgreSQL program is run by run_child(): fork, stdin from
 * /dev/null, stdout and stderr into memory files, every other descriptor
 * closed, PG* variables removed from the environment and LC_ALL=C, the
 * privileges of the server user when the caller is root, then exec of an
 * argument vector.  The parent waits for it and keeps its stdout and the
 * last line of its stderr for the error message.
 */
#include "pgpeer.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "measure.h"
#include "relfile.h"

#define PG_PORT       "5432" /* the socket is private: no clashes */
#define SOCKET_NAME   "/.s.PGSQL." PG_PORT
#define SUN_PATH      108        /* sizeof(sockaddr_un.sun_path) */
#define OUT_MAX       (4u << 20) /* stdout kept from a child */
#define COPY_CHUNK    (1u << 20) /* read/write copy buffer */
#define PSQL_MAX_CMDS 16         /* -c options to one psql */
#define TABLE_DDL     "CREATE TABLE t (id int4, k int4, v int8, pad text)"
#define TIMED_QUERY   "SELECT * FROM t WHERE k = -1"

extern char **environ;

/* Who PostgreSQL's programs run as. */
typedef struct PgUser {
    bool pu_drop;     /* we are root: switch to pu_uid/pu_gid before exec */
    uid_t pu_uid;     /* the server user */
    gid_t pu_gid;     /* its primary group, its only group */
    char pu_name[64]; /* its name, for messages */
} PgUser;

/* What a child did. */
typedef struct PgRun {
    int pr_status;     /* exit status, or 128 + signal */
    char *pr_out;      /* its stdout, NUL-terminated (malloc'd) */
    char pr_last[256]; /* the last non-empty line of its stderr */
} PgRun;

struct PgPeer {
    char pp_bindir[PATH_MAX]; /* initdb, pg_ctl, postgres, psql */
    char pp_dir[PATH_MAX];    /* the private directory, also the socket's */
    char pp_data[PATH_MAX];   /* PGDATA: pp_dir/data */
    char pp_log[PATH_MAX];    /* the server's log: pp_dir/server.log */
    char pp_rel[PATH_MAX];    /* t's first segment in PGDATA ("" before) */
    PgUser pp_user;           /* who the server runs as */
    int pp_launched[PGPEER_MAX_WORKERS + 1]; /* workers launched, -1 not asked */
};

/* buf = a followed by b; -ENAMETOOLONG if that does not fit in len bytes. */
static int concat(char *buf, size_t len, const char *a, const char *b)
{
    int n = snprintf(buf, len, "%s%s", a, b);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- running programs ------------------------------------------------ */

/*
 * The children's environment: ours without PG* variables (no PGHOST,
 * PGOPTIONS, ... may redirect or change a session) and with LC_ALL=C, so
 * messages and numbers have one format.  A malloc'd array of pointers into
 * environ; NULL if out of memory.
 */
static char **child_env(void)
{
    size_t n = 0;
    while (environ != NULL && environ[n] != NULL)
        n++;
    char **env = malloc((n + 2) * sizeof(char *));
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "PG", 2) != 0 && strncmp(environ[i], "LC_ALL=", 7) != 0)
            env[k++] = environ[i];
    env[k++] = (char *)"LC_ALL=C";
    env[k] = NULL;
    return env;
}

/*
 * In the child: descriptors 0, 1, 2 from in, out, errfd and no others, the
 * server user's identity (when u says so), cwd, then exec argv.  System
 * calls only, but for dprintf of a failure's message; never returns.
 */
static void child_exec(const PgUser *u, const char *cwd, char *const argv[], char **env,
                       int in, int out, int errfd)
{
    if (dup2(in, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
        dup2(errfd, STDERR_FILENO) < 0)
        _exit(126);
    if (close_range(3, ~0U, 0) < 0) /* Linux before 5.9 */
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    if (u != NULL && u->pu_drop &&
        (setgroups(1, &u->pu_gid) < 0 || setgid(u->pu_gid) < 0 ||
         setuid(u->pu_uid) < 0)) {
        dprintf(STDERR_FILENO, "cannot switch to user %s: %s\n", u->pu_name,
                strerror(errno));
        _exit(126);
    }
    if (chdir(cwd != NULL ? cwd : "/") < 0 && chdir("/") < 0)
        _exit(126);
    execvpe(argv[0], argv, env);
    dprintf(STDERR_FILENO, "cannot execute %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* The last non-empty line of what fd holds (at most its last 4 KiB). */
static void last_line(int fd, char *buf, size_t len)
{
    char tail[4096 + 1];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > 4096 ? size - 4096 : 0;
    ssize_t got = size > 0 ? pread(fd, tail, (size_t)(size - from), from) : 0;
    size_t n = got > 0 ? (size_t)got : 0;
    while (n > 0 && isspace((unsigned char)tail[n - 1]))
        n--;
    tail[n] = '\0';
    const char *start = strrchr(tail, '\n');
    start = start != NULL ? start + 1 : tail;
    size_t m = strlen(start) < len ? strlen(start) : len - 1;
    memcpy(buf, start, m); /* a long line is cut short */
    buf[m] = '\0';
}

/* All of what fd holds (up to OUT_MAX bytes), malloc'd and NUL-terminated. */
static char *slurp(int fd)
{
    off_t size = lseek(fd, 0, SEEK_END);
    size_t cap = size < 0 ? 0 : (size_t)size > OUT_MAX ? OUT_MAX : (size_t)size;
    char *buf = malloc(cap + 1);
    size_t n = 0;
    for (ssize_t got; buf != NULL && n < cap; n += (size_t)got)
        if ((got = pread(fd, buf + n, cap - n, (off_t)n)) <= 0)
            break;
    if (buf != NULL)
        buf[n] = '\0';
    return buf;
}

/* Close the descriptors of child_fds() that are open. */
static void close_fds(const int fds[3])
{
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* A child's stdin (/dev/null), stdout and stderr (memory files) for prog. */
static int child_fds(int fds[3], const char *prog, HsError *err)
{
    fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    fds[1] = fds[0] < 0 ? -1 : memfd_create("pgpeer-out", MFD_CLOEXEC);
    fds[2] = fds[1] < 0 ? -1 : memfd_create("pgpeer-err", MFD_CLOEXEC);
    if (fds[2] >= 0)
        return 0;
    int e = errno;
    close_fds(fds);
    return hs_error_set(err, -e, prog, HS_NO_BLOCK, "cannot set up to run it: %s",
                        strerror(e));
}

/*
 * Run argv (argv[0] a path, or a name looked up in PATH) as u (NULL: as we
 * are) in directory cwd (NULL: /), and wait for it.  Returns 0 with r filled
 * whatever the child's status (the caller frees r->pr_out), or a negative
 * code if it could not be run.
 */
static int run_child(const PgUser *u, const char *cwd, char *const argv[], PgRun *r,
                     HsError *err)
{
    int fds[3];
    memset(r, 0, sizeof(*r));
    int rc = child_fds(fds, argv[0], err);
    if (rc < 0)
        return rc;
    char **env = child_env();
    pid_t pid = env != NULL ? fork() : -1;
    if (pid == 0)
        child_exec(u, cwd, argv, env, fds[0], fds[1], fds[2]);
    if (pid < 0 && env == NULL)
        rc = hs_error_set(err, -ENOMEM, argv[0], HS_NO_BLOCK, "out of memory");
    else if (pid < 0)
        rc = hs_error_set(err, -errno, argv[0], HS_NO_BLOCK, "fork: %s",
                          strerror(errno));
    int st = 0;
    while (pid > 0 && waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            rc = hs_error_set(err, -errno, argv[0], HS_NO_BLOCK, "waitpid: %s",
                              strerror(errno));
            break;
        }
    if (rc == 0) {
        r->pr_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        last_line(fds[2], r->pr_last, sizeof(r->pr_last));
        if ((r->pr_out = slurp(fds[1])) == NULL)
            rc = hs_error_set(err, -ENOMEM, argv[0], HS_NO_BLOCK, "out of memory");
    }
    free(env);
    close_fds(fds);
    return rc;
}

/*
 * Run argv as the server user and fail unless it exits 0: the error says
 * "WHAT failed: <last line of its stderr>" about file.  On success the
 * caller owns r->pr_out; on failure it is freed.
 */
static int run_ok(const PgPeer *p, const char *what, const char *file,
                  char *const argv[], PgRun *r, HsError *err)
{
    int rc = run_child(&p->pp_user, p->pp_dir, argv, r, err);
    if (rc < 0)
        return rc;
    if (r->pr_status == 0)
        return 0;
    if (r->pr_last[0] != '\0')
        rc = hs_error_set(err, -EIO, file, HS_NO_BLOCK, "%s failed: %s", what,
                          r->pr_last);
    else
        rc = hs_error_set(err, -EIO, file, HS_NO_BLOCK, "%s failed: exit status %d",
                          what, r->pr_status);
    free(r->pr_out);
    r->pr_out = NULL;
    return rc;
}

/* ---- finding the binaries -------------------------------------------- */

/* 0 if dir holds the four programs and its postgres says it is 15. */
static int is_pg15_bindir(const char *dir)
{
    static const char *const progs[] = {"initdb", "pg_ctl", "postgres", "psql"};
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
        int n = snprintf(path, sizeof(path), "%s/%s", dir, progs[i]);
        if (n < 0 || (size_t)n >= sizeof(path) || access(path, X_OK) < 0)
            return -1;
    }
    PgRun r;
    if (concat(path, sizeof(path), dir, "/postgres") < 0 ||
        run_child(NULL, NULL, (char *[]){path, "--version", NULL}, &r, NULL) < 0)
        return -1;
    /* "postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)" */
    const char *v = r.pr_out != NULL ? strstr(r.pr_out, "(PostgreSQL) 15") : NULL;
    int ok = r.pr_status == 0 && v != NULL && !isdigit((unsigned char)v[15]);
    free(r.pr_out);
    return ok ? 0 : -1;
}

/* Copy dir, made absolute, into bindir if it is a PostgreSQL 15 bindir. */
static int use_if_pg15(const char *dir, char *bindir, size_t len)
{
    char abs[PATH_MAX];
    if (dir == NULL || dir[0] == '\0' || realpath(dir, abs) == NULL ||
        is_pg15_bindir(abs) < 0 || strlen(abs) >= len)
        return -1;
    strcpy(bindir, abs);
    return 0;
}

int pgpeer_find(char *bindir, size_t len)
{
    const char *env = getenv("PG_BINDIR");
    if (env != NULL && env[0] != '\0')
        return use_if_pg15(env, bindir, len);

    PgRun r;
    if (run_child(NULL, NULL, (char *[]){"pg_config", "--bindir", NULL}, &r, NULL) ==
        0) {
        int found = -1;
        if (r.pr_status == 0 && r.pr_out != NULL) {
            r.pr_out[strcspn(r.pr_out, "\n")] = '\0';
            found = use_if_pg15(r.pr_out, bindir, len);
        }
        free(r.pr_out);
        if (found == 0)
            return 0;
    }
    return use_if_pg15("/usr/lib/postgresql/15/bin", bindir, len);
}

/* ---- the private directory ------------------------------------------- */

/* Who the server runs as: ourselves, or when root $PG_COMPAT_USER / nobody. */
static int server_user(PgUser *u, HsError *err)
{
    memset(u, 0, sizeof(*u));
    if (geteuid() != 0)
        return 0;
    const char *name = getenv("PG_COMPAT_USER");
    if (name == NULL || name[0] == '\0')
        name = "nobody";
    struct passwd *pw = getpwnam(name);
    if (pw == NULL)
        return hs_error_set(err, -ENOENT, "", HS_NO_BLOCK,
                            "running as root, but there is no user '%s' to run "
                            "PostgreSQL as",
                            name);
    if (pw->pw_uid == 0)
        return hs_error_set(err, HS_EUSAGE, "", HS_NO_BLOCK,
                            "PG_COMPAT_USER '%s' is root; PostgreSQL refuses to run "
                            "as root",
                            name);
    u->pu_drop = true;
    u->pu_uid = pw->pw_uid;
    u->pu_gid = pw->pw_gid;
    snprintf(u->pu_name, sizeof(u->pu_name), "%s", name);
    return 0;
}

/* 0 if u can write in and enter dir (asked by a child with u's identity). */
static int user_can_use(const PgUser *u, const char *dir)
{
    if (!u->pu_drop)
        return 0;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (setgroups(1, &u->pu_gid) < 0 || setgid(u->pu_gid) < 0 ||
            setuid(u->pu_uid) < 0)
            _exit(1);
        _exit(access(dir, W_OK | X_OK) == 0 ? 0 : 1);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0; /* go on: remove as much as possible */
}

/* Remove dir and everything in it (best effort). */
static void remove_tree(const char *dir)
{
    if (dir[0] != '\0')
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Try to make p->pp_dir under base: an absolute path short enough for the
 * socket's name, owned by the server user and usable by it.
 */
static int try_dir(PgPeer *p, const char *base)
{
    char abs[PATH_MAX], tmpl[PATH_MAX];
    if (base == NULL || base[0] == '\0' || realpath(base, abs) == NULL)
        return -1;
    int n = snprintf(tmpl, sizeof(tmpl), "%s/pgpeer-XXXXXX",
                     strcmp(abs, "/") == 0 ? "" : abs);
    if (n < 0 || (size_t)n + strlen(SOCKET_NAME) >= SUN_PATH || mkdtemp(tmpl) == NULL)
        return -1;
    if (concat(p->pp_data, sizeof(p->pp_data), tmpl, "/data") < 0 ||
        concat(p->pp_log, sizeof(p->pp_log), tmpl, "/server.log") < 0 ||
        (p->pp_user.pu_drop && (chown(tmpl, p->pp_user.pu_uid, p->pp_user.pu_gid) < 0 ||
                                user_can_use(&p->pp_user, tmpl) < 0))) {
        rmdir(tmpl);
        return -1;
    }
    strcpy(p->pp_dir, tmpl); /* short: checked above */
    return 0;
}

/* Make the private directory under $TMPDIR, else /tmp. */
static int make_dir(PgPeer *p, HsError *err)
{
    const char *tmpdir = getenv("TMPDIR");
    if (try_dir(p, tmpdir) == 0 || try_dir(p, "/tmp") == 0)
        return 0;
    return hs_error_set(err, -EACCES, tmpdir != NULL ? tmpdir : "/tmp", HS_NO_BLOCK,
                        "cannot make a directory for the cluster that user %s can "
                        "use (under $TMPDIR or /tmp, at most %d bytes long)",
                        p->pp_user.pu_drop ? p->pp_user.pu_name : "this",
                        (int)(SUN_PATH - strlen(SOCKET_NAME) - 1));
}

/* ---- the server ------------------------------------------------------- */

/* initdb, then our settings appended to postgresql.conf. */
static int init_cluster(PgPeer *p, HsError *err)
{
    char prog[PATH_MAX + 16];
    snprintf(prog, sizeof(prog), "%s/initdb", p->pp_bindir);
    char *argv[] = {prog,    "-D",   p->pp_data,   "-A",
                    "trust", "-U",   "postgres",   "--no-sync",
                    "-E",    "UTF8", "--locale=C", "--no-instructions",
                    NULL};
    PgRun r;
    int rc = run_ok(p, "initdb", p->pp_data, argv, &r, err);
    if (rc < 0)
        return rc;
    free(r.pr_out);

    char conf[PATH_MAX + 32];
    snprintf(conf, sizeof(conf), "%s/postgresql.conf", p->pp_data);
    FILE *f = fopen(conf, "a");
    if (f == NULL)
        return hs_error_set(err, -errno, conf, HS_NO_BLOCK, "open: %s",
                            strerror(errno));
    fputs("\n# pgpeer settings\nlisten_addresses = ''\nunix_socket_directories = '", f);
    for (const char *c = p->pp_dir; *c != '\0'; c++) {
        if (*c == '\'')
            fputc('\'', f); /* a quote in a value is doubled */
        fputc(*c, f);
    }
    fputs("'\nport = " PG_PORT "\nfsync = off\nsynchronous_commit = off\n"
          "full_page_writes = off\nwal_level = minimal\nmax_wal_senders = 0\n"
          "autovacuum = off\nshared_buffers = 16MB\nmax_connections = 10\n"
          "logging_collector = off\n",
          f);
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed)
        return hs_error_set(err, -EIO, conf, HS_NO_BLOCK, "cannot append settings");
    return 0;
}

/* pg_ctl start, waiting until it accepts connections. */
static int server_start(PgPeer *p, HsError *err)
{
    char prog[PATH_MAX + 16];
    snprintf(prog, sizeof(prog), "%s/pg_ctl", p->pp_bindir);
    char *argv[] = {prog, "-D",  p->pp_data, "-l",    p->pp_log, "-w",
                    "-t", "120", "-s",       "start", NULL};
    PgRun r;
    int rc = run_child(&p->pp_user, p->pp_dir, argv, &r, err);
    if (rc < 0)
        return rc;
    free(r.pr_out);
    if (r.pr_status == 0)
        return 0;
    /* pg_ctl says "Examine the log output."; the log says why */
    char why[256] = "";
    int fd = open(p->pp_log, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        last_line(fd, why, sizeof(why));
        close(fd);
    }
    return hs_error_set(
        err, -EIO, p->pp_data, HS_NO_BLOCK, "pg_ctl start failed: %s (server log: %s)",
        r.pr_last[0] ? r.pr_last : "no message", why[0] ? why : "empty");
}

/* pg_ctl stop -m mode, waiting until the server is gone. */
static int server_stop(PgPeer *p, const char *mode, HsError *err)
{
    char prog[PATH_MAX + 16];
    snprintf(prog, sizeof(prog), "%s/pg_ctl", p->pp_bindir);
    char *argv[] = {prog, "-D", p->pp_data, "-m",   (char *)mode, "-w",
                    "-t", "60", "-s",       "stop", NULL};
    PgRun r;
    int rc = run_ok(p, "pg_ctl stop", p->pp_data, argv, &r, err);
    if (rc == 0)
        free(r.pr_out);
    return rc;
}

/* The postmaster's pid from postmaster.pid, if it is still our postmaster. */
static pid_t live_postmaster(const PgPeer *p)
{
    char path[PATH_MAX + 32], buf[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/postmaster.pid", p->pp_data);
    FILE *f = fopen(path, "re");
    long pid = 0;
    if (f == NULL)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1 || pid <= 1)
        pid = 0;
    fclose(f);
    /* only a process whose command line names our data directory */
    snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
    int fd = pid > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    for (ssize_t i = 0; i < n; i++)
        buf[i] = buf[i] == '\0' ? ' ' : buf[i];
    buf[n] = '\0';
    return strstr(buf, p->pp_data) != NULL ? (pid_t)pid : 0;
}

/*
 * Make sure no server of ours runs: pg_ctl stop -m fast, then immediate,
 * then SIGKILL to the postmaster (whose children exit when it dies).
 */
static void server_halt(PgPeer *p)
{
    if (p->pp_data[0] == '\0' || live_postmaster(p) == 0)
        return;
    if (server_stop(p, "fast", NULL) == 0 || server_stop(p, "immediate", NULL) == 0)
        return;
    pid_t pid = live_postmaster(p);
    if (pid <= 0 || kill(pid, SIGKILL) < 0)
        return;
    for (int i = 0; i < 500 && live_postmaster(p) == pid; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
}

/* ---- installing the table -------------------------------------------- */

/*
 * psql with our connection options and one -c per command (at most
 * PSQL_MAX_CMDS); stdout in r (the caller frees r->pr_out).  what names
 * the step in the error.
 */
static int psql(PgPeer *p, const char *what, const char *const cmds[], int ncmds,
                PgRun *r, HsError *err)
{
    char prog[PATH_MAX + 16];
    snprintf(prog, sizeof(prog), "%s/psql", p->pp_bindir);
    char *fixed[] = {prog, "-X",      "-q", "-At",   "-v", "ON_ERROR_STOP=1",
                     "-h", p->pp_dir, "-p", PG_PORT, "-U", "postgres",
                     "-d", "postgres"};
    char *argv[sizeof(fixed) / sizeof(fixed[0]) + 2 * PSQL_MAX_CMDS + 1];
    int n = 0;
    if (ncmds > PSQL_MAX_CMDS)
        return hs_error_set(err, HS_EUSAGE, p->pp_data, HS_NO_BLOCK,
                            "psql: %d commands, at most %d", ncmds, PSQL_MAX_CMDS);
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        argv[n++] = fixed[i];
    for (int i = 0; i < ncmds; i++) {
        argv[n++] = "-c";
        argv[n++] = (char *)cmds[i];
    }
    argv[n] = NULL;
    char label[128];
    snprintf(label, sizeof(label), "psql (%s)", what);
    return run_ok(p, label, p->pp_data, argv, r, err);
}

/* CREATE TABLE t and find its relation file (pp_rel). */
static int create_table(PgPeer *p, HsError *err)
{
    const char *cmds[] = {TABLE_DDL, "SELECT pg_relation_filepath('t')"};
    PgRun r;
    int rc = psql(p, "CREATE TABLE t", cmds, 2, &r, err);
    if (rc < 0)
        return rc;
    char *rel = r.pr_out;
    rel[strcspn(rel, "\n")] = '\0';
    unsigned db = 0, node = 0;
    int len = 0;
    if (sscanf(rel, "base/%u/%u%n", &db, &node, &len) != 2 || rel[len] != '\0')
        rc = hs_error_set(err, -EIO, p->pp_data, HS_NO_BLOCK,
                          "unexpected relation path for t: '%.80s'", rel);
    else if ((len = snprintf(p->pp_rel, sizeof(p->pp_rel), "%s/%s", p->pp_data, rel)) <
                 0 ||
             (size_t)len >= sizeof(p->pp_rel))
        rc = hs_error_set(err, -ENAMETOOLONG, p->pp_data, HS_NO_BLOCK,
                          "relation path too long");
    free(r.pr_out);
    return rc;
}

/* Copy from src to dst with copy_file_range, or read/write where it cannot. */
static int copy_fd(int src, int dst, const char *name, HsError *err)
{
    bool plain = false;
    char *buf = NULL;
    for (;;) {
        ssize_t got;
        if (!plain) {
            got = copy_file_range(src, NULL, dst, NULL, 1u << 30, 0);
            if (got < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
                            errno == EOPNOTSUPP)) {
                plain = true; /* file offsets are where the failed call began */
                continue;
            }
        } else {
            if (buf == NULL && (buf = malloc(COPY_CHUNK)) == NULL)
                return hs_error_set(err, -ENOMEM, name, HS_NO_BLOCK, "out of memory");
            got = read(src, buf, COPY_CHUNK);
            for (ssize_t w, done = 0; got > 0 && done < got; done += w) {
                while ((w = write(dst, buf + done, (size_t)(got - done))) < 0 &&
                       errno == EINTR)
                    ; /* retry this chunk: it has been read already */
                if (w < 0) {
                    int e = errno;
                    free(buf);
                    return hs_error_set(err, -e, name, HS_NO_BLOCK, "copy: %s",
                                        strerror(e));
                }
            }
        }
        if (got == 0)
            break;
        if (got < 0 && errno != EINTR) {
            free(buf);
            return hs_error_set(err, -errno, name, HS_NO_BLOCK, "copy: %s",
                                strerror(errno));
        }
    }
    free(buf);
    return 0;
}

/* Copy segment file src over dst (mode 0600, owned by the server user). */
static int copy_segment(const PgPeer *p, const char *src, const char *dst, HsError *err)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return hs_error_set(err, -errno, src, HS_NO_BLOCK, "open: %s", strerror(errno));
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) {
        int e = errno;
        close(in);
        return hs_error_set(err, -e, dst, HS_NO_BLOCK, "open: %s", strerror(e));
    }
    int rc = 0;
    if (p->pp_user.pu_drop && fchown(out, p->pp_user.pu_uid, p->pp_user.pu_gid) < 0)
        rc = hs_error_set(err, -errno, dst, HS_NO_BLOCK, "chown: %s", strerror(errno));
    if (rc == 0)
        rc = copy_fd(in, out, src, err);
    if (close(out) < 0 && rc == 0)
        rc = hs_error_set(err, -errno, dst, HS_NO_BLOCK, "close: %s", strerror(errno));
    close(in);
    return rc;
}

/*
 * With the server stopped: remove t's forks and extra segments, then copy
 * the nsegs segments of table_path over t's (REL, REL.1, ...).
 */
static int install_table(PgPeer *p, const char *table_path, uint32_t nsegs,
                         HsError *err)
{
    char name[PATH_MAX], src[PATH_MAX];
    for (const char *const *fork = (const char *const[]){"_fsm", "_vm", "_init", NULL};
         *fork != NULL; fork++) {
        if (concat(name, sizeof(name), p->pp_rel, *fork) < 0)
            return hs_error_set(err, -ENAMETOOLONG, p->pp_rel, HS_NO_BLOCK,
                                "name too long");
        if (unlink(name) < 0 && errno != ENOENT)
            return hs_error_set(err, -errno, name, HS_NO_BLOCK, "unlink: %s",
                                strerror(errno));
    }
    for (uint32_t seg = 1;; seg++) {
        if (relfile_segment_name(p->pp_rel, seg, name, sizeof(name)) < 0 ||
            unlink(name) < 0)
            break; /* the relation's segments end at the first missing one */
    }
    for (uint32_t seg = 0; seg < nsegs; seg++) {
        if (relfile_segment_name(table_path, seg, src, sizeof(src)) < 0 ||
            relfile_segment_name(p->pp_rel, seg, name, sizeof(name)) < 0)
            return hs_error_set(err, -ENAMETOOLONG, table_path, HS_NO_BLOCK,
                                "segment name too long");
        int rc = copy_segment(p, src, name, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The segments of the heap file table_path, checked as PostgreSQL needs them. */
static int table_segments(const char *table_path, uint32_t *nsegs, HsError *err)
{
    RelFile rf;
    int rc = relfile_open(&rf, table_path, RELFILE_SEG_BLOCKS, err);
    if (rc < 0)
        return rc;
    *nsegs = rf.rf_nsegs;
    relfile_close(&rf);
    return 0;
}

/* Everything pgpeer_start does once the directory exists. */
static int build_cluster(PgPeer *p, const char *table_path, uint32_t nsegs,
                         HsError *err)
{
    int rc = init_cluster(p, err);
    if (rc == 0)
        rc = server_start(p, err);
    if (rc == 0)
        rc = create_table(p, err);
    if (rc == 0)
        rc = server_stop(p, "fast", err);
    if (rc == 0)
        rc = install_table(p, table_path, nsegs, err);
    if (rc == 0)
        rc = server_start(p, err);
    return rc;
}

int pgpeer_start(PgPeer **out, const char *bindir, const char *table_path, HsError *err)
{
    *out = NULL;
    PgPeer *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return hs_error_set(err, -ENOMEM, table_path, HS_NO_BLOCK, "out of memory");
    for (int w = 0; w <= PGPEER_MAX_WORKERS; w++)
        p->pp_launched[w] = -1;
    int n = snprintf(p->pp_bindir, sizeof(p->pp_bindir), "%s", bindir);
    uint32_t nsegs = 0;
    int rc = n < 0 || (size_t)n >= sizeof(p->pp_bindir)
                 ? hs_error_set(err, -ENAMETOOLONG, bindir, HS_NO_BLOCK, "too long")
                 : 0;
    if (rc == 0)
        rc = table_segments(table_path, &nsegs, err);
    if (rc == 0)
        rc = server_user(&p->pp_user, err);
    if (rc == 0)
        rc = make_dir(p, err);
    if (rc < 0) {
        free(p); /* nothing made yet */
        return rc;
    }
    if ((rc = build_cluster(p, table_path, nsegs, err)) < 0) {
        pgpeer_stop(p); /* stops the server if it runs, removes the directory */
        return rc;
    }
    *out = p;
    return 0;
}

/* ---- queries ------------------------------------------------------------ */

int pgpeer_count_sum(PgPeer *p, uint64_t *count, int64_t *sum_v, HsError *err)
{
    const char *cmds[] = {"SELECT count(*), coalesce(sum(v), 0) FROM t"};
    PgRun r;
    int rc = psql(p, "SELECT count(*), sum(v) FROM t", cmds, 1, &r, err);
    if (rc < 0)
        return rc;
    unsigned long long c;
    long long s;
    int len = 0;
    if (sscanf(r.pr_out, "%llu|%lld%n", &c, &s, &len) == 2 &&
        (r.pr_out[len] == '\n' || r.pr_out[len] == '\0')) {
        *count = c;
        *sum_v = s;
    } else {
        rc = hs_error_set(err, -EIO, p->pp_data, HS_NO_BLOCK,
                          "unexpected answer to count(*), sum(v): '%.80s'", r.pr_out);
    }
    free(r.pr_out);
    return rc;
}

int pgpeer_evict(PgPeer *p, HsError *err)
{
    return cache_evict(p->pp_rel, err);
}

int pgpeer_warm(PgPeer *p, HsError *err)
{
    return cache_warm(p->pp_rel, err);
}

/*
 * Read what time_query's session printed: "Time: 12.345 ms[ (...)]",
 * "rows=N" and, if asked, EXPLAIN's JSON (a plan without "Workers
 * Launched" has no Gather: no workers).  -1 if anything is missing.
 */
static int parse_timing(const char *out, double *wall_s, uint64_t *rows, int *launched)
{
    const char *t = strstr(out, "Time: ");
    const char *n = strstr(out, "\nrows=");
    if (t == NULL || n == NULL || (t != out && t[-1] != '\n'))
        return -1;
    char *end;
    double ms = strtod(t + 6, &end);
    if (end == t + 6 || strncmp(end, " ms", 3) != 0 || ms < 0)
        return -1;
    errno = 0;
    unsigned long long r = strtoull(n + 6, &end, 10);
    if (end == n + 6 || errno != 0)
        return -1;
    *wall_s = ms / 1000.0;
    *rows = r;
    if (launched != NULL) {
        const char *plan = strstr(n, "\"Plan\": {");
        const char *w = plan ? strstr(plan, "\"Workers Launched\": ") : NULL;
        if (plan == NULL)
            return -1;
        *launched = w != NULL ? atoi(w + 20) : 0;
    }
    return 0;
}

int pgpeer_time_query(PgPeer *p, int workers, double *wall_s, uint64_t *rows,
                      int *plan_workers, HsError *err)
{
    if (workers < 0 || workers > PGPEER_MAX_WORKERS)
        return hs_error_set(err, HS_EUSAGE, p->pp_data, HS_NO_BLOCK,
                            "workers %d is not in 0..%d", workers, PGPEER_MAX_WORKERS);
    char set[80];
    snprintf(set, sizeof(set), "SET max_parallel_workers_per_gather = %d", workers);
    /*
     * The LIMIT 0 run loads the new session's catalog caches and never reads
     * t.  Rows go to /dev/null; \timing and \echo always print to stdout.
     */
    const char *cmds[] = {
        set,
        "\\o /dev/null",
        TIMED_QUERY " LIMIT 0",
        "\\timing on",
        TIMED_QUERY,
        "\\o",
        "\\timing off",
        "\\echo rows=:ROW_COUNT",
        "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF, FORMAT JSON) " TIMED_QUERY};
    bool explain = plan_workers != NULL && p->pp_launched[workers] < 0;
    PgRun r;
    int rc = psql(p, TIMED_QUERY, cmds, explain ? 9 : 8, &r, err);
    if (rc < 0)
        return rc;
    int launched = -1;
    if (parse_timing(r.pr_out, wall_s, rows, explain ? &launched : NULL) < 0)
        rc = hs_error_set(err, -EIO, p->pp_data, HS_NO_BLOCK,
                          "no timing, row count or plan in psql's output: '%.80s'",
                          r.pr_out);
    free(r.pr_out);
    if (rc == 0 && explain)
        p->pp_launched[workers] = launched;
    if (rc == 0 && plan_workers != NULL)
        *plan_workers = p->pp_launched[workers];
    return rc;
}

const char *pgpeer_dir(const PgPeer *p)
{
    return p->pp_dir;
}

void pgpeer_stop(PgPeer *p)
{
    if (p == NULL)
        return;
    server_halt(p);
    remove_tree(p->pp_dir);
    free(p);
}
