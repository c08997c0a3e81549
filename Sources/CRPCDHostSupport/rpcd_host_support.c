#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "rpcd_host_support.h"

int rpcd_sealed_copy(int source, off_t size, const char *name) {
    int memory = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (memory < 0) return -1;
    /* Copy in the kernel (sendfile from a regular file to a memfd), from offset 0 whatever the source's
     * file position is. */
    off_t offset = 0;
    while (offset < size) {
        ssize_t copied = sendfile(memory, source, &offset, (size_t)(size - offset));
        if (copied < 0 && errno == EINTR) continue;
        if (copied <= 0) {
            int saved = copied == 0 ? EIO : errno;
            close(memory);
            errno = saved;
            return -1;
        }
    }
    if (fcntl(memory, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int saved = errno;
        close(memory);
        errno = saved;
        return -1;
    }
    return memory;
}
