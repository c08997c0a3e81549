#define _GNU_SOURCE
#include "rpcd_host_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <linux/capability.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* At most this many descriptors are handed to a child (the link, a module file, ...). */
enum { max_fds = 8, child_stack_size = 64 * 1024 };

struct child_arguments {
    const struct rpcd_spawn_request *request;
    const int *moved; /* the descriptors to hand on, each above every target number */
    int error;        /* written by the child when a step fails; the parent reads it once the child is gone */
};

/* Runs in the child, on its own stack, in rpcd's memory (CLONE_VM) while rpcd's thread waits (CLONE_VFORK):
 * only system calls, nothing that takes a lock or allocates. Identity changes are raw system calls: glibc's
 * set*id wrappers would signal every thread of rpcd, which this process does not have. */
static int child(void *argument) {
    struct child_arguments *arguments = argument;
    const struct rpcd_spawn_request *request = arguments->request;
    struct sigaction defaults = {.sa_handler = SIG_DFL};
    for (int signal = 1; signal < NSIG; signal++) {
        if (signal != SIGKILL && signal != SIGSTOP) sigaction(signal, &defaults, NULL); /* glibc's own: EINVAL */
    }
    if (setpgid(0, 0) != 0) goto failed;
    /* Into its cgroup before it can run anything of its own, so every process it starts is counted there. */
    if (request->cgroup_procs_fd >= 0 && write(request->cgroup_procs_fd, "0", 1) != 1) goto failed;
    if (request->max_tasks != 0) {
        struct rlimit limit = {.rlim_cur = request->max_tasks, .rlim_max = request->max_tasks};
        if (setrlimit(RLIMIT_NPROC, &limit) != 0) goto failed;
    }
    if (request->gid != (gid_t)-1) {
        if (syscall(SYS_setgroups, 0, NULL) != 0) goto failed;
        if (syscall(SYS_setresgid, request->gid, request->gid, request->gid) != 0) goto failed;
    }
    if (request->uid != (uid_t)-1 && syscall(SYS_setresuid, request->uid, request->uid, request->uid) != 0) goto failed;
    /* A host holds no capability, whatever rpcd was given to start it (the unit's CAP_SETUID, CAP_SETGID):
     * none kept, none inherited through exec. */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) goto failed;
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct held[2] = {{0}};
    if (syscall(SYS_capget, &header, held) != 0) goto failed;
    if (held[0].permitted | held[1].permitted | held[0].inheritable | held[1].inheritable) {
        struct __user_cap_data_struct none_held[2] = {{0}};
        if (syscall(SYS_capset, &header, none_held) != 0) goto failed;
    }
    for (size_t i = 0; i < request->fd_count; i++) {
        /* dup2 leaves the new descriptor open across exec; the sources are above every target. */
        if (dup2(arguments->moved[i], 3 + (int)i) < 0) goto failed;
    }
    /* Everything else, whoever opened it and however: closed at exec. */
    if (syscall(SYS_close_range, 3 + (unsigned)request->fd_count, ~0U, CLOSE_RANGE_CLOEXEC) != 0) goto failed;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (request->executable_fd >= 0) {
        syscall(SYS_execveat, request->executable_fd, "", request->argv, request->envp, AT_EMPTY_PATH);
    } else {
        execve(request->executable, request->argv, request->envp);
    }
failed:
    arguments->error = errno;
    _exit(127);
}

int rpcd_open_executable(const char *path) {
    int descriptor = open(path, O_PATH | O_CLOEXEC);
    return descriptor >= 0 ? descriptor : -errno;
}

int rpcd_spawn(const struct rpcd_spawn_request *request, pid_t *pid, int *pidfd) {
    if (request->fd_count > max_fds) return E2BIG;
    int moved[max_fds];
    size_t count = 0;
    int result = 0;
    for (; count < request->fd_count; count++) {
        moved[count] = fcntl(request->fds[count], F_DUPFD_CLOEXEC, 3 + (int)request->fd_count);
        if (moved[count] < 0) {
            result = errno;
            break;
        }
    }
    void *stack = MAP_FAILED;
    if (result == 0) {
        stack = mmap(NULL, child_stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED) result = errno;
    }
    if (result == 0) {
        struct child_arguments arguments = {.request = request, .moved = moved, .error = 0};
        /* No signal handler of rpcd's may run in the child, which shares its memory: block them all until the
         * child has reset them (the child starts with this mask). */
        sigset_t all, previous;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &previous);
        int descriptor = -1;
        pid_t started = clone(child, (char *)stack + child_stack_size, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD,
                              &arguments, &descriptor);
        int saved = errno;
        pthread_sigmask(SIG_SETMASK, &previous, NULL);
        if (started < 0) {
            result = saved;
        } else if (arguments.error != 0) {
            result = arguments.error;
            while (waitpid(started, NULL, 0) < 0 && errno == EINTR) {}
            close(descriptor);
        } else {
            *pid = started;
            *pidfd = descriptor;
        }
        munmap(stack, child_stack_size);
    }
    for (size_t i = 0; i < count; i++) close(moved[i]);
    return result;
}

int rpcd_pidfd_reap(int pidfd, int *signal, int *code) {
    siginfo_t info = {0};
    if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG) != 0) return -errno;
    if (info.si_pid == 0) return 0;
    *signal = 0;
    *code = 0;
    if (info.si_code == CLD_EXITED) {
        *code = info.si_status;
    } else {
        *signal = info.si_status;
    }
    return 1;
}

int rpcd_pidfd_signal(int pidfd, int signal) {
    return syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0) == 0 ? 0 : -errno;
}

int rpcd_pidfd_watcher(int *wake_fd) {
    int descriptor = epoll_create1(EPOLL_CLOEXEC);
    if (descriptor < 0) return -errno;
    int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = wake};
    if (wake < 0 || epoll_ctl(descriptor, EPOLL_CTL_ADD, wake, &event) != 0) {
        int saved = errno;
        if (wake >= 0) close(wake);
        close(descriptor);
        return -saved;
    }
    *wake_fd = wake;
    return descriptor;
}

void rpcd_pidfd_wake(int wake_fd) {
    uint64_t one = 1;
    (void)!write(wake_fd, &one, sizeof one);
}

int rpcd_pidfd_watch(int epoll_fd, int pidfd) {
    struct epoll_event event = {.events = EPOLLIN, .data.fd = pidfd};
    return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, pidfd, &event) == 0 ? 0 : -errno;
}

int rpcd_pidfd_unwatch(int epoll_fd, int pidfd) {
    return epoll_ctl(epoll_fd, EPOLL_CTL_DEL, pidfd, NULL) == 0 ? 0 : -errno;
}

int rpcd_pidfd_wait(int epoll_fd, int wake_fd, int *ready, int max, int timeout_ms) {
    struct epoll_event events[16];
    if (max > 16) max = 16;
    int count;
    while ((count = epoll_wait(epoll_fd, events, max, timeout_ms)) < 0 && errno == EINTR) {}
    if (count < 0) return -errno;
    for (int i = 0; i < count; i++) {
        ready[i] = events[i].data.fd;
        if (ready[i] == wake_fd) {
            uint64_t value;
            (void)!read(wake_fd, &value, sizeof value);
        }
    }
    return count;
}

static void *watch_parent(void *parent) {
    pid_t expected = (pid_t)(intptr_t)parent;
    /* A reparented process sees another parent (init, or a subreaper such as systemd's). */
    while (getppid() == expected) sleep(1);
    _exit(0);
    return NULL;
}

int rpcd_exit_with_parent(void) {
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    int result = pthread_create(&thread, &attributes, watch_parent, (void *)(intptr_t)getppid());
    pthread_attr_destroy(&attributes);
    return result;
}
