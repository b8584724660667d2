/*
 * extcmd.c -- fork, exec, wait4, with output captured (see extcmd.h).
 */
#include "extcmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

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
    double t0 = cli_now();
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
    measure_from_rusage(cli_now() - t0, &ru, m);
    slurp(fileno(fo), out, outlen);
    slurp(fileno(fe), errout, errlen);
    fclose(fo);
    fclose(fe);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return hs_error_set(err, -ENOENT, argv[0], HS_NO_BLOCK, "cannot run %s",
                            argv[0]);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
