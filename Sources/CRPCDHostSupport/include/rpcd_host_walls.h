/* The parts of a module host's walls that rpcd sets up from outside it: what Swift's Glibc module does not
 * reach (extended attributes). */
#ifndef RPCD_HOST_WALLS_H
#define RPCD_HOST_WALLS_H

#include <sys/types.h>

/* 1 if systemd delegated the cgroup directory PATH (its trusted.delegate or user.delegate attribute is "1"),
 * else 0. */
int rpcd_cgroup_is_delegated(const char *path);

/* Gives user UID read, write and (for a directory) search access to PATH itself, by an entry of its POSIX
 * access ACL, keeping every other entry (the ACL's mask grows to cover it, as setfacl's does). Needs PATH's
 * owner or CAP_FOWNER. Returns 0, or -errno (EOPNOTSUPP: the file system keeps no ACLs). */
int rpcd_acl_grant_user(const char *path, uid_t uid);

#endif
