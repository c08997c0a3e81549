import CRPCDHostSupport

/// How glibc's allocator serves a process of rpcd's: frame-sized buffers (up to 32 MiB) come from the heap
/// instead of an mmap of their own each. A large call otherwise maps and unmaps every buffer it touches, and
/// the page faults cost more than the copies (1 MiB echo: 0.42 -> 1.03 GB/s in rpcd, and a module host's 1 MiB
/// calls spent a fifth of their time faulting in fresh mappings: bench/README.md). The environment's own
/// settings (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_) still win.
package struct AllocatorTuning: Sendable {
    /// The largest block the heap serves; larger ones are mapped on their own.
    package var mmapThreshold: Int
    /// Freed memory kept at the heap's top for reuse before it is returned to the system.
    package var trimThreshold: Int

    /// The daemon: up to 64 MiB of freed heap kept, a few large calls' worth.
    package static let daemon = AllocatorTuning(mmapThreshold: 32 << 20, trimThreshold: 64 << 20)
    /// A module host: one call's buffers kept (8 MiB), so that an idle host gives back what a burst of large
    /// calls took, and its memory stays what its module holds (MemoryMax= counts it).
    package static let moduleHost = AllocatorTuning(mmapThreshold: 32 << 20, trimThreshold: 8 << 20)

    /// Applies the settings to this process; call it first, before threads allocate.
    package func apply() {
        rpcd_tune_allocator(mmapThreshold, trimThreshold)
    }
}
