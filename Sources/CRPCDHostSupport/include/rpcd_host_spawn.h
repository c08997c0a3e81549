/* Starting and watching module host processes: what Swift reaches only awkwardly (clone(2) with a child that
 * may run nothing but system calls, pidfds, waitid(2)'s siginfo). */
#ifndef RPCD_HOST_SPAWN_H
#define RPCD_HOST_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

/* What a child is started with. A child shares nothing with rpcd but what is listed here: the descriptors
 * FDS become its descriptors 3, 4, ... (0-2 stay rpcd's standard input, output and error, the journal under
 * systemd), and every other descriptor rpcd has, close-on-exec or not, is closed when it execs
 * (close_range(2)). */
struct rpcd_spawn_request {
    const char *executable;
    /* EXECUTABLE opened (O_PATH): the child execs it through this descriptor, so that a child running as
     * another user need not reach its path (a build tree in a private home directory). -1: by its path. */
    int executable_fd;
    char *const *argv; /* NULL-terminated */
    char *const *envp; /* NULL-terminated */
    const int *fds;
    size_t fd_count;
    /* A descriptor of cgroup.procs of the cgroup the child runs in from its first instruction, or -1: rpcd's. */
    int cgroup_procs_fd;
    /* The child's user and group, with no supplementary groups; (uid_t)-1 / (gid_t)-1: rpcd's own. */
    uid_t uid;
    gid_t gid;
    /* RLIMIT_NPROC (processes and threads of its user), or 0 for rpcd's. */
    unsigned long long max_tasks;
};

/* PATH opened as an executable_fd (O_PATH, close-on-exec), or -errno. */
int rpcd_open_executable(const char *path);

/* Starts REQUEST's executable in a process group of its own (a terminal's Ctrl-C reaches rpcd, which stops its
 * hosts itself), with default signal dispositions and an empty signal mask. Returns 0 and sets *PID and
 * *PIDFD (close-on-exec), or an errno value: of clone, or of the step in the child that failed (the child
 * is then reaped). */
int rpcd_spawn(const struct rpcd_spawn_request *request, pid_t *pid, int *pidfd);

/* Reaps the process behind PIDFD if it has ended (waitid(P_PIDFD, WNOHANG)): returns 1 and sets *SIGNAL
 * (nonzero: killed by that signal) or *CODE (its exit status); 0 if it still runs; or -errno. */
int rpcd_pidfd_reap(int pidfd, int *signal, int *code);

/* An epoll set of pidfds (ProcessWatcher): a new one (close-on-exec), or -errno; with *WAKE_FD an eventfd in
 * the set, which rpcd_pidfd_wake makes readable to end a wait early. */
int rpcd_pidfd_watcher(int *wake_fd);
void rpcd_pidfd_wake(int wake_fd);

/* Adds PIDFD to the set; it becomes readable when its process ends. Removes it. Each returns 0 or -errno. */
int rpcd_pidfd_watch(int epoll_fd, int pidfd);
int rpcd_pidfd_unwatch(int epoll_fd, int pidfd);

/* Waits (at most TIMEOUT_MS, -1: without end; EINTR retried) until a descriptor of EPOLL_FD is readable;
 * puts up to MAX of them into READY and returns how many (0: the time passed), or -errno. A readable wake_fd
 * is drained and reported like the others. */
int rpcd_pidfd_wait(int epoll_fd, int wake_fd, int *ready, int max, int timeout_ms);

/* Sends SIGNAL to the process behind PIDFD (pidfd_send_signal(2): never to another that reused its pid).
 * Returns 0 or -errno. */
int rpcd_pidfd_signal(int pidfd, int signal);

/* In a module host process: starts a thread that ends the process (_exit) once its parent, rpcd, is gone,
 * even while the module blocks every other thread (rpcd killed with SIGKILL closes the link, but a hung
 * host never reads it). Returns 0, or an errno value. */
int rpcd_exit_with_parent(void);

#endif
