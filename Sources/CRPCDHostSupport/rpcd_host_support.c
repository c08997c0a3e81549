#define _GNU_SOURCE
#include <sys/mman.h>

#include "rpcd_host_support.h"

int rpcd_memfd_create(const char *name) {
    return memfd_create(name, MFD_CLOEXEC);
}
