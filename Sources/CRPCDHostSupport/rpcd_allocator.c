#include "rpcd_allocator.h"

#include <limits.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

void rpcd_tune_allocator(size_t mmap_threshold, size_t trim_threshold) {
#ifdef __GLIBC__
    if (getenv("MALLOC_MMAP_THRESHOLD_") == NULL && mmap_threshold <= INT_MAX)
        mallopt(M_MMAP_THRESHOLD, (int)mmap_threshold);
    if (getenv("MALLOC_TRIM_THRESHOLD_") == NULL && trim_threshold <= INT_MAX)
        mallopt(M_TRIM_THRESHOLD, (int)trim_threshold);
#else
    (void)mmap_threshold;
    (void)trim_threshold;
#endif
}
