/* Starting a handler program from its module host (docs/HANDLER-PROTOCOL.md): what Swift reaches only
 * awkwardly (fork and exec with three pipes in place of the standard descriptors). */
#ifndef RPCD_PROGRAM_SPAWN_H
#define RPCD_PROGRAM_SPAWN_H

#include <sys/types.h>

/* Starts PATH with ARGV and ENVP (NULL-terminated), its standard input, output and error the pipe ends
 * STDIN_FD, STDOUT_FD and STDERR_FD and no other descriptor, default signal dispositions and an empty signal
 * mask, the working directory /, in the host's process group (whatever stops the host's group stops it), ended by SIGKILL if the host
 * dies. Returns 0 and sets *PID, or an errno value: of fork, or of the step in the child that failed (the
 * child is then reaped). */
int rpcd_program_spawn(const char *path, char *const *argv, char *const *envp, int stdin_fd, int stdout_fd,
                       int stderr_fd, pid_t *pid);

/* Starts a command method's command (HandlerCommand) as rpcd_program_spawn starts a program, but with /dev/null
 * as its standard input and in a process group of its own (its id the command's pid), which
 * rpcd_command_reap and a timeout kill whole. */
int rpcd_command_spawn(const char *path, char *const *argv, char *const *envp, int stdout_fd, int stderr_fd, pid_t *pid);

/* Waits, blocking, for the command PID to end; then kills what is left of its process group (children that
 * would outlive it) and reaps it. Returns 0 and sets *SIGNAL (nonzero: killed by that signal) and *CODE (its
 * exit status), or -errno. */
int rpcd_command_reap(pid_t pid, int *signal, int *code);

/* pipe2(FDS, O_CLOEXEC): 0 or an errno value. */
int rpcd_program_pipe(int fds[2]);

/* Waits for PID to end, at most TIMEOUT_MS (-1: without end); returns 1 and sets *SIGNAL (nonzero: killed by
 * that signal) or *CODE (its exit status), 0 if it still runs, or -errno. */
int rpcd_program_wait(pid_t pid, int timeout_ms, int *signal, int *code);

/* Ends the host as PID ended: with the signal that killed it (its default action), or its exit status, so
 * that rpcd reports the program's own termination. Never returns. */
void rpcd_program_exit_as(int signal, int code) __attribute__((noreturn));

#endif
