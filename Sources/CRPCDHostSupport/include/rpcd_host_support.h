/* C helpers for rpcd's module host that Swift cannot reach through Glibc's module map. */
#ifndef RPCD_HOST_SUPPORT_H
#define RPCD_HOST_SUPPORT_H

/* memfd_create(2) with MFD_CLOEXEC: glibc declares it only under _GNU_SOURCE. Returns -1 and sets errno
 * on failure. */
int rpcd_memfd_create(const char *name);

#endif
