/* C helpers for rpcd's module host that Swift cannot reach through Glibc's module map. */
#ifndef RPCD_HOST_SUPPORT_H
#define RPCD_HOST_SUPPORT_H

#include <stdint.h>
#include <sys/types.h>

/* A private, sealed copy of the first `size` bytes of the open file `source`, as an anonymous memory file
 * (memfd_create(2) with MFD_CLOEXEC | MFD_ALLOW_SEALING) that nobody can write, shrink or grow once this
 * returns (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL). Of a 64-bit ELF file only the ELF and
 * program headers and the segments they describe are copied, at their offsets: everything else (section headers,
 * symbol tables, debug information) reads as zeros and takes no memory, so an unstripped module costs what a
 * stripped one does. Any other file is copied whole. A module is mapped from such a copy,
 * never from its file, so `cp` over the file, truncating it or rewriting it in place cannot change code
 * that is already mapped (a MAP_PRIVATE mapping of the file itself still reads pages the file's new
 * contents, or SIGBUS past a truncation, until they are first touched).
 * Returns the descriptor, or -1 with errno set; EIO means the file had fewer than `size` bytes when read
 * (it changed while being copied), ENOEXEC that it is a 64-bit ELF file whose program headers describe more
 * than its `size` bytes (cut short: mapping it would SIGBUS). */
int rpcd_sealed_copy(int source, off_t size, const char *name);

/* The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and how often it has given up the CPU of its own
 * accord: to sleep, wait for I/O or a lock (getrusage(RUSAGE_THREAD)'s ru_nvcsw; being preempted is not
 * counted). Two system calls. 0, or -1 with errno set. */
int rpcd_thread_usage(int64_t *cpu_nanoseconds, int64_t *voluntary_switches);

#endif
