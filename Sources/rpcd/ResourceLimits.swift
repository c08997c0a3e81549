#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import RPCCore
import RPCLogging

enum ResourceLimits {
    /// Raises the soft limit on open files to the hard limit: each connection is a descriptor, and the usual
    /// soft limit of 1024 would cap `MaxConnections=` long before memory does (systemd recommends this for
    /// daemons, see systemd.exec(5) LimitNOFILE=).
    static func raiseOpenFileLimit(logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        let previous = limit.rlim_cur
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            logger.warning("Could not raise the open file limit", metadata: [LogField.error: "errno \(errno)"])
        } else {
            logger.debug("Raised the open file limit", metadata: [LogField.previousValue: "\(previous)", LogField.newValue: "\(limit.rlim_cur)"])
        }
    }

    /// Keeps frame-sized buffers (up to 32 MiB) in the heap instead of glibc's per-allocation mmap: a large call
    /// otherwise maps and unmaps every buffer it touches, and the page faults cost more than the copies
    /// (1 MiB echo: 0.42 -> 1.03 GB/s, bench/README.md). Up to 64 MiB of freed heap is kept for reuse before
    /// it is returned to the system. Environment settings (MALLOC_MMAP_THRESHOLD_, ...) still win: glibc reads
    /// them first, and these calls are skipped when they are set.
    static func tuneAllocator(environment: [String: String]) {
        #if canImport(Glibc)
        // <malloc.h> is not part of Swift's Glibc module; mallopt(3) and its parameters are glibc's stable ABI.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        let trimThreshold: Int32 = -1, mmapThreshold: Int32 = -3  // M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
        if environment["MALLOC_MMAP_THRESHOLD_"] == nil { _ = mallopt(mmapThreshold, 32 << 20) }
        if environment["MALLOC_TRIM_THRESHOLD_"] == nil { _ = mallopt(trimThreshold, 64 << 20) }
        #endif
    }
}
