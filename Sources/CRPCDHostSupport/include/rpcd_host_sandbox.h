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

/* Limits the process's data (heap and private writable mappings: RLIMIT_DATA) to BYTES. Returns 0 or -errno. */
int rpcd_limit_memory(unsigned long long bytes);

#endif
