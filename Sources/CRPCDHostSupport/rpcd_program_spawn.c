#define _GNU_SOURCE 1

#include "rpcd_program_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* The child's side of a spawn: everything between fork and exec. NEW_GROUP: a process group of its own. */
static void spawn_child(const char *path, char *const *argv, char *const *envp, int stdin_fd, int stdout_fd,
                        int stderr_fd, int new_group, int report)
{
    int error = 0;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* The host ignores SIGTERM, SIGINT, SIGHUP and SIGPIPE; ignored dispositions survive exec. */
    for (int number = 1; number < NSIG; number++) signal(number, SIG_DFL);
    if (new_group && setpgid(0, 0) != 0) error = errno;
    if (!error && prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) error = errno;
    if (!error && chdir("/") != 0) error = errno;
    if (!error && stdin_fd < 0 && (stdin_fd = open("/dev/null", O_RDONLY)) < 0) error = errno;
    if (!error && (dup2(stdin_fd, 0) < 0 || dup2(stdout_fd, 1) < 0 || dup2(stderr_fd, 2) < 0)) error = errno;
    if (!error && syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) error = errno;
    if (!error) {
        /* close_range marked the report pipe too: it closes at exec. */
        execve(path, argv, envp);
        error = errno;
    }
    (void)!write(report, &error, sizeof error);
    _exit(127);
}

static int spawn(const char *path, char *const *argv, char *const *envp, int stdin_fd, int stdout_fd, int stderr_fd,
                 int new_group, pid_t *pid)
{
    /* The child reports a failed step through this pipe (close-on-exec: an exec that succeeds closes it). */
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return errno;
    /* A command (NEW_GROUP) starts on every call: vfork spares copying the host's page tables, and the child
     * only makes system calls on memory prepared here before it execs or exits (no allocation, no return). */
    pid_t child = new_group ? vfork() : fork();
    if (child < 0) {
        int error = errno;
        close(report[0]);
        close(report[1]);
        return error;
    }
    if (child == 0) spawn_child(path, argv, envp, stdin_fd, stdout_fd, stderr_fd, new_group, report[1]);
    /* Also here, so that the group exists before this returns, whichever of the two runs first. */
    if (new_group) (void)setpgid(child, child);
    close(report[1]);
    int error = 0;
    ssize_t got;
    do {
        got = read(report[0], &error, sizeof error);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof error && error != 0) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        return error;
    }
    *pid = child;
    return 0;
}

int rpcd_program_spawn(const char *path, char *const *argv, char *const *envp, int stdin_fd, int stdout_fd,
                       int stderr_fd, pid_t *pid)
{
    return spawn(path, argv, envp, stdin_fd, stdout_fd, stderr_fd, 0, pid);
}

int rpcd_command_spawn(const char *path, char *const *argv, char *const *envp, int stdout_fd, int stderr_fd, pid_t *pid)
{
    return spawn(path, argv, envp, -1, stdout_fd, stderr_fd, 1, pid);
}

int rpcd_command_reap(pid_t pid, int *signal_number, int *code)
{
    siginfo_t info;
    int result;
    do {
        memset(&info, 0, sizeof info);
        result = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT);
    } while (result < 0 && errno == EINTR);
    if (result < 0) return -errno;
    /* The leader is a zombie, so its group's id is still its own: nothing else can have taken it. */
    (void)kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -errno;
    }
    *signal_number = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    return 0;
}

int rpcd_program_pipe(int fds[2])
{
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : errno;
}

int rpcd_program_wait(pid_t pid, int timeout_ms, int *signal, int *code)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        int status = 0;
        pid_t ended = waitpid(pid, &status, WNOHANG);
        if (ended < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (ended == pid) {
            *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
            *code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
            return 1;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (timeout_ms >= 0 && elapsed >= timeout_ms) return 0;
        struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

void rpcd_program_exit_as(int signal_number, int code)
{
    if (signal_number > 0) {
        /* The program's crash, not the host's: no core of the host. */
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        signal(signal_number, SIG_DFL);
        sigset_t only;
        sigemptyset(&only);
        sigaddset(&only, signal_number);
        sigprocmask(SIG_UNBLOCK, &only, NULL);
        raise(signal_number);
    }
    _exit(code);
}
