#define _GNU_SOURCE
#include "rpcd_host_walls.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

int rpcd_cgroup_is_delegated(const char *path) {
    static const char *const names[] = {"trusted.delegate", "user.delegate"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char value[8];
        ssize_t length = getxattr(path, names[i], value, sizeof value);
        if (length > 0 && value[0] == '1') return 1;
    }
    return 0;
}

/* The kernel's POSIX ACL extended attribute (system.posix_acl_access): a version, then entries sorted by tag
 * and, for named entries, id. */
enum { acl_version = 2, acl_user_obj = 0x01, acl_user = 0x02, acl_group_obj = 0x04, acl_group = 0x08, acl_mask = 0x10, acl_other = 0x20 };
struct acl_entry {
    uint16_t tag;
    uint16_t perm;
    uint32_t id;
};
#define ACL_UNDEFINED_ID UINT32_MAX
enum { max_entries = 256 };

static int by_tag_and_id(const void *a, const void *b) {
    const struct acl_entry *x = a, *y = b;
    if (x->tag != y->tag) return x->tag < y->tag ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

int rpcd_acl_grant_user(const char *path, uid_t uid) {
    struct stat info;
    if (stat(path, &info) != 0) return -errno;
    struct {
        uint32_t version;
        struct acl_entry entries[max_entries + 2];
    } acl;
    size_t count;
    ssize_t length = getxattr(path, "system.posix_acl_access", &acl, sizeof acl - 2 * sizeof(struct acl_entry));
    if (length < 0 && errno != ENODATA) return -errno;
    if (length < 0) {
        /* No ACL yet: the one the mode bits stand for. */
        acl.version = acl_version;
        acl.entries[0] = (struct acl_entry){acl_user_obj, (info.st_mode >> 6) & 7, ACL_UNDEFINED_ID};
        acl.entries[1] = (struct acl_entry){acl_group_obj, (info.st_mode >> 3) & 7, ACL_UNDEFINED_ID};
        acl.entries[2] = (struct acl_entry){acl_other, info.st_mode & 7, ACL_UNDEFINED_ID};
        count = 3;
    } else {
        if ((size_t)length < sizeof acl.version || acl.version != acl_version) return -EINVAL;
        count = ((size_t)length - sizeof acl.version) / sizeof(struct acl_entry);
    }
    uint16_t wanted = S_ISDIR(info.st_mode) ? 7 : 6;
    /* This user's entry (replaced), and the mask (recomputed below). */
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        if ((acl.entries[i].tag == acl_user && acl.entries[i].id == uid) || acl.entries[i].tag == acl_mask) continue;
        acl.entries[kept++] = acl.entries[i];
    }
    acl.entries[kept++] = (struct acl_entry){acl_user, wanted, (uint32_t)uid};
    /* The mask bounds the group class (the owning group, named users and groups): it must let each named entry
     * through, and never hide what the group had. */
    uint16_t mask = 0;
    for (size_t i = 0; i < kept; i++) {
        uint16_t tag = acl.entries[i].tag;
        if (tag == acl_user || tag == acl_group || tag == acl_group_obj) mask |= acl.entries[i].perm;
    }
    acl.entries[kept++] = (struct acl_entry){acl_mask, mask, ACL_UNDEFINED_ID};
    qsort(acl.entries, kept, sizeof acl.entries[0], by_tag_and_id);
    size_t size = sizeof acl.version + kept * sizeof(struct acl_entry);
    return setxattr(path, "system.posix_acl_access", &acl, size, 0) == 0 ? 0 : -errno;
}
