#define _GNU_SOURCE
#include "rpcd_host_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <stdint.h>
#include <unistd.h>

int rpcd_spawn_module_host(const char *executable, char *const argv[], char *const envp[], int link_fd, pid_t *pid) {
    /* dup2() onto 3 clears close-on-exec, but not when LINK_FD already is 3: move it out of the way first. */
    int source = fcntl(link_fd, F_DUPFD_CLOEXEC, 10);
    if (source < 0) return errno;
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int result = posix_spawn_file_actions_init(&actions);
    if (result != 0) {
        close(source);
        return result;
    }
    result = posix_spawnattr_init(&attributes);
    if (result != 0) {
        posix_spawn_file_actions_destroy(&actions);
        close(source);
        return result;
    }
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    result = posix_spawn_file_actions_adddup2(&actions, source, 3);
    if (result == 0) result = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (result == 0) result = posix_spawnattr_setpgroup(&attributes, 0);
    if (result == 0) result = posix_spawnattr_setsigmask(&attributes, &none);
    if (result == 0) result = posix_spawnattr_setsigdefault(&attributes, &defaults);
    if (result == 0) result = posix_spawn(pid, executable, &actions, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    close(source);
    return result;
}

int rpcd_wait_status_signal(int status, int *signal, int *code) {
    if (WIFSIGNALED(status)) {
        *signal = WTERMSIG(status);
        return 1;
    }
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return 0;
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
