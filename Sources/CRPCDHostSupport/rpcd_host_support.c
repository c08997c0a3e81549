#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <sys/sendfile.h>
#include <string.h>
#include <unistd.h>

#include "rpcd_host_support.h"

/* Copies bytes [start, end) of `source` to the same offsets of `memory`. 0, or -1 with errno set (EIO: the
 * file ended early). */
static int copy_range(int memory, int source, off_t start, off_t end) {
    if (lseek(memory, start, SEEK_SET) < 0) return -1;
    off_t offset = start;
    while (offset < end) {
        ssize_t copied = sendfile(memory, source, &offset, (size_t)(end - offset));
        if (copied < 0 && errno == EINTR) continue;
        if (copied <= 0) {
            if (copied == 0) errno = EIO;
            return -1;
        }
    }
    return 0;
}

/* The byte ranges of an ELF file that the dynamic loader reads or maps: the ELF header and program headers,
 * and the file contents of every segment they describe (PT_LOAD, and PT_NOTE, PT_DYNAMIC, ... which usually
 * lie within one). Up to `capacity` ranges into starts/ends; their number, or 0 if
 * `source` is not a 64-bit ELF file with headers it can use (then the whole file is copied), or CUT_SHORT if it
 * is one whose program headers or segments pass `size`: a file cut short, which the dynamic loader would map
 * past its end (SIGBUS on the first touch). */
#define CUT_SHORT ((size_t)-1)
static size_t segment_ranges(int source, off_t size, off_t *starts, off_t *ends, size_t capacity) {
    Elf64_Ehdr header;
    if (pread(source, &header, sizeof header, 0) != (ssize_t)sizeof header) return 0;
    if (memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) return 0;
    if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 || header.e_phnum >= capacity) return 0;
    off_t table_end = (off_t)header.e_phoff + (off_t)header.e_phnum * (off_t)sizeof(Elf64_Phdr);
    if (header.e_phoff < sizeof header) return 0;
    if (table_end > size) return CUT_SHORT;
    size_t count = 0;
    starts[count] = 0;
    ends[count++] = table_end;
    for (Elf64_Half index = 0; index < header.e_phnum; index++) {
        Elf64_Phdr segment;
        off_t at = (off_t)header.e_phoff + (off_t)index * (off_t)sizeof segment;
        if (pread(source, &segment, sizeof segment, at) != (ssize_t)sizeof segment) return 0;
        if (segment.p_filesz == 0) continue;
        if (segment.p_offset > (Elf64_Off)size || segment.p_filesz > (Elf64_Off)size - segment.p_offset) return CUT_SHORT;
        starts[count] = (off_t)segment.p_offset;
        ends[count++] = (off_t)(segment.p_offset + segment.p_filesz);
    }
    return count;
}

int rpcd_sealed_copy(int source, off_t size, const char *name) {
    int memory = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (memory < 0) return -1;
    /* Copy in the kernel (sendfile from a regular file to a memfd), from the offsets given whatever the source's
     * file position is. Only what the dynamic loader reads (the segments): the rest (symbol tables, debug information, often
     * two thirds of a module built with -g) stays a hole, which reads as zeros and takes no memory. */
    enum { most_ranges = 64 };
    off_t starts[most_ranges], ends[most_ranges];
    size_t count = segment_ranges(source, size, starts, ends, most_ranges);
    if (count == CUT_SHORT) {
        close(memory);
        errno = ENOEXEC;
        return -1;
    }
    if (count == 0) {
        starts[0] = 0;
        ends[0] = size;
        count = 1;
    }
    int failed = ftruncate(memory, size);
    for (size_t index = 0; index < count && failed == 0; index++) failed = copy_range(memory, source, starts[index], ends[index]);
    if (failed == 0) failed = fcntl(memory, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    if (failed != 0) {
        int saved = errno;
        close(memory);
        errno = saved;
        return -1;
    }
    return memory;
}

int rpcd_thread_usage(int64_t *cpu_nanoseconds, int64_t *voluntary_switches) {
    struct timespec cpu;
    struct rusage usage;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) != 0 || getrusage(RUSAGE_THREAD, &usage) != 0) return -1;
    *cpu_nanoseconds = (int64_t)cpu.tv_sec * 1000000000 + cpu.tv_nsec;
    *voluntary_switches = usage.ru_nvcsw;
    return 0;
}
