/* Starting module host processes: posix_spawn(3) with the file actions and attributes Swift reaches only
 * awkwardly. */
#ifndef RPCD_HOST_SPAWN_H
#define RPCD_HOST_SPAWN_H

#include <sys/types.h>

/* Starts EXECUTABLE with ARGV and ENVP (NULL-terminated), with LINK_FD as its descriptor
 * 3 and no other descriptor beyond 0-2 (rpcd opens everything else close-on-exec), in a process group of its
 * own (a terminal's Ctrl-C reaches rpcd, which stops its hosts itself), with default signal dispositions
 * and an empty signal mask. Returns 0 and sets *PID, or an errno value. */
int rpcd_spawn_module_host(const char *executable, char *const argv[], char *const envp[], int link_fd, pid_t *pid);

/* waitpid(2)'s status, decoded: returns 1 and sets *SIGNAL when the process was killed by a signal, 0 and
 * sets *CODE when it exited. */
int rpcd_wait_status_signal(int status, int *signal, int *code);

/* In a module host process: starts a thread that ends the process (_exit) once its parent, rpcd, is gone,
 * even while the module blocks every other thread (rpcd killed with SIGKILL closes the link, but a hung
 * host never reads it). Returns 0, or an errno value. */
int rpcd_exit_with_parent(void);

#endif
