/*
 * extcmd.c -- fork, exec, wait4, with output captured (see extcmd.h).
 *
 * Entry points: extcmd_run, extcmd_sibling, extcmd_mkheap.
 */
#include "extcmd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Read what the child wrote to the temporary file fd into buf. */
static void slurp(int fd, char *buf, size_t len)
{
    if (buf == NULL || len == 0)
        return;
    size_t n = 0;
    ssize_t got;
    lseek(fd, 0, SEEK_SET);
    while (n + 1 < len && (got = read(fd, buf + n, len - 1 - n)) > 0)
        n += (size_t)got;
    buf[n] = '\0';
}

int extcmd_run(char *const argv[], Measure *m, char *out, size_t outlen, char *errout,
               size_t errlen, HsError *err)
{
    /* unnamed temporary files: a pipe could fill up and stall the child */
    FILE *fo = tmpfile(), *fe = tmpfile();
    if (fo == NULL || fe == NULL) {
        int e = errno;
        if (fo)
            fclose(fo);
        if (fe)
            fclose(fe);
        return hs_error_set(err, -e, argv[0], HS_NO_BLOCK, "tmpfile: %s", strerror(e));
    }
    double t0 = measure_now();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        fclose(fo);
        fclose(fe);
        return hs_error_set(err, -e, argv[0], HS_NO_BLOCK, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        dup2(null, STDIN_FILENO);
        dup2(fileno(fo), STDOUT_FILENO);
        dup2(fileno(fe), STDERR_FILENO);
        setenv("LC_ALL", "C", 1);
        execvp(argv[0], argv);
        dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
        ;
    measure_from_rusage(measure_now() - t0, &ru, m);
    slurp(fileno(fo), out, outlen);
    slurp(fileno(fe), errout, errlen);
    fclose(fo);
    fclose(fe);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return hs_error_set(err, -ENOENT, argv[0], HS_NO_BLOCK, "cannot run %s",
                            argv[0]);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int extcmd_sibling(const char *name, char *path, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            int w = snprintf(path, len, "%s/%s", self, name);
            if (w > 0 && (size_t)w < len && access(path, X_OK) == 0)
                return 0;
        }
    }
    snprintf(path, len, "%s", name);
    return -1;
}

int extcmd_mkheap(const char *path, bool quiet, char *out, size_t outlen, HsError *err)
{
    char mkheap[PATH_MAX], errout[2048];
    char *argv[4];
    int n = 0;
    Measure m;
    extcmd_sibling("mkheap", mkheap, sizeof(mkheap));
    argv[n++] = mkheap;
    if (quiet)
        argv[n++] = "--quiet";
    argv[n++] = (char *)path;
    argv[n] = NULL;
    int status = extcmd_run(argv, &m, out, outlen, errout, sizeof(errout), err);
    if (status < 0)
        return status;
    if (status != 0)
        return hs_error_set(err, -EIO, path, HS_NO_BLOCK,
                            "mkheap failed (status %d): %s", status,
                            strtok(errout, "\n") ? errout : "");
    return 0;
}
