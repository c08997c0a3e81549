#if canImport(Glibc)
import Glibc
#endif

/// The standard process metrics (the names every Prometheus client library exports), read from /proc/self
/// when scraped. Linux only; elsewhere, or if /proc cannot be read, the values are absent, not zero.
package struct ProcessMetrics: Sendable {
    package var cpuSeconds: Double?
    package var residentBytes: Double?
    package var virtualBytes: Double?
    package var openFDs: Double?
    package var maxFDs: Double?
    package var startTime: Double?

    package static func read() -> ProcessMetrics {
        var metrics = ProcessMetrics()
        #if os(Linux)
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        // /proc/self/stat: the fields after the command's closing parenthesis; utime and stime are the 12th and
        // 13th of them, starttime the 20th, vsize the 21st and rss (pages) the 22nd.
        if let stat = Self.contents("/proc/self/stat"), let close = stat.lastIndex(of: ")") {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 21, let utime = Double(fields[11]), let stime = Double(fields[12]),
               let start = Double(fields[19]), let vsize = Double(fields[20]), let rss = Double(fields[21]) {
                metrics.cpuSeconds = (utime + stime) / ticks
                metrics.virtualBytes = vsize
                metrics.residentBytes = rss * pageSize
                if let boot = Self.bootTime() { metrics.startTime = boot + start / ticks }
            }
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { metrics.maxFDs = Double(limit.rlim_cur) }
        if let directory = opendir("/proc/self/fd") {
            var count = 0
            while readdir(directory) != nil { count += 1 }
            closedir(directory)
            metrics.openFDs = Double(count - 3)  // ".", ".." and the directory's own descriptor
        }
        #endif
        return metrics
    }

    func render(into text: inout String) {
        let values: [(RPCMetricFamily, Double?)] = [
            (.processCPU, cpuSeconds), (.processRSS, residentBytes), (.processVirtual, virtualBytes),
            (.processOpenFDs, openFDs), (.processMaxFDs, maxFDs), (.processStart, startTime),
        ]
        for (family, value) in values {
            guard let value else { continue }
            RPCMetricRegistry.header(family, into: &text)
            RPCMetricRegistry.sample(family.name, value, into: &text)
        }
    }

    #if os(Linux)
    /// The kernel's boot time (the `btime` line of /proc/stat), in seconds since the epoch.
    private static func bootTime() -> Double? {
        guard let stat = contents("/proc/stat") else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6))
        }
        return nil
    }

    private static func contents(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
    #endif
}
