/* glibc's allocator settings for rpcd and its module hosts: <malloc.h> is not part of Swift's Glibc module. */
#ifndef RPCD_ALLOCATOR_H
#define RPCD_ALLOCATOR_H

#include <stddef.h>

/* Keeps blocks up to `mmap_threshold` bytes in the heap instead of glibc's per-allocation mmap, and up to
 * `trim_threshold` bytes of freed memory at the heap's top before returning it to the system
 * (mallopt(3): M_MMAP_THRESHOLD, M_TRIM_THRESHOLD). A setting the environment already gives
 * (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_) is left as glibc read it. */
void rpcd_tune_allocator(size_t mmap_threshold, size_t trim_threshold);

#endif
