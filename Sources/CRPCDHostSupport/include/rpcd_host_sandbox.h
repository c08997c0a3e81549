/* The module host process's sandbox: Landlock (file system and network) and a memory limit. */
#ifndef RPCD_HOST_SANDBOX_H
#define RPCD_HOST_SANDBOX_H

#include <stddef.h>

/* Restricts the calling process and every thread it starts later, for good, with Landlock: beneath each of
 * READ_PATHS (directories or files) only reading and executing, beneath each of READWRITE_PATHS everything,
 * elsewhere nothing; no TCP bind or connect (Landlock ABI 4 and later); no signals to, and no abstract Unix
 * sockets of, processes outside the sandbox (ABI 6). Paths that do not exist are skipped. Sets
 * no_new_privs first (as systemd's NoNewPrivileges=yes does; harmless when already set).
 * Returns the Landlock ABI version applied (>= 1), 0 when there is no Landlock to use (an older kernel, Landlock
 * disabled, or its system calls filtered out: nothing applied), or
 * -errno on failure. */
int rpcd_landlock_restrict(const char *const read_paths[], size_t n_read, const char *const readwrite_paths[],
                           size_t n_readwrite);

/* Installs a seccomp filter on the calling thread and the threads it starts later that fails, with EPERM,
 * the system calls no module needs and an attacker wants: debugging other processes (ptrace,
 * process_vm_readv/writev), namespaces and mounts (unshare, setns, mount, pivot_root, chroot), kernel
 * interfaces with a history of exploits (bpf, perf_event_open, userfaultfd, io_uring_*, keyctl, add_key,
 * request_key), loading kernel code or rebooting, and setting the clock or host name. Sets no_new_privs.
 * System calls of another architecture's ABI (x32) are refused too. Returns 0 or -errno. */
int rpcd_seccomp_deny_dangerous(void);

/* Limits the process's data (heap and private writable mappings: RLIMIT_DATA) to BYTES. Returns 0 or -errno. */
int rpcd_limit_memory(unsigned long long bytes);

#endif
