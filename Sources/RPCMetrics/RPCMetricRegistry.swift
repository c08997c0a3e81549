import Synchronization

/// rpcd's own store of series: every counter, gauge and histogram of `RPCMetricFamily`, by family and label
/// values, in the order they were made. One set of numbers with two readers: the Prometheus exposition
/// (`exposition`) and the typed reads of `rpcd.info`, `rpcd.metrics` and the status line, which load the
/// same atomics and never render or parse text.
///
/// A series is made once, where the configuration declares what it counts, and found again (not made twice)
/// when asked for with the same labels: a reload's new registry of services counts on in the same series.
/// Thread-safe; making and listing series take a lock, recording does not.
package final class RPCMetricRegistry: Sendable {
    /// What one series holds.
    package enum Series: Sendable {
        case counter(RPCCounter)
        case gauge(RPCGauge)
        case histogram(RPCDurationHistogram)
        /// A count kept elsewhere (an atomic a component needs to read itself), read when listed.
        case countedElsewhere(@Sendable () -> Int)
        /// A value kept elsewhere, read when listed.
        case measuredElsewhere(@Sendable () -> Int)
    }

    /// One series: its label values, in the order of the family's `labels`.
    package struct Entry: Sendable {
        package let labels: [String]
        package let series: Series
    }

    private struct Family: Sendable {
        var index: [[String]: Int] = [:]
        var entries: [Entry] = []
    }

    private let families = Mutex<[String: Family]>([:])

    package init() {}

    /// The counter of `family` with `labels` (values in the order of `family.labels`), made on first use.
    package func counter(_ family: RPCMetricFamily, _ labels: [String] = []) -> RPCCounter {
        precondition(family.kind == .counter)
        guard case .counter(let counter) = series(family, labels, make: { .counter(RPCCounter()) }) else {
            preconditionFailure("\(family.name)\(labels) is not a counter")
        }
        return counter
    }

    package func gauge(_ family: RPCMetricFamily, _ labels: [String] = []) -> RPCGauge {
        precondition(family.kind == .gauge)
        guard case .gauge(let gauge) = series(family, labels, make: { .gauge(RPCGauge()) }) else {
            preconditionFailure("\(family.name)\(labels) is not a gauge")
        }
        return gauge
    }

    package func histogram(_ family: RPCMetricFamily, _ labels: [String], buckets: [Duration]) -> RPCDurationHistogram {
        precondition(family.kind == .histogram)
        guard case .histogram(let histogram) = series(
            family, labels, make: { .histogram(RPCDurationHistogram(buckets: buckets)) }) else {
            preconditionFailure("\(family.name)\(labels) is not a histogram")
        }
        return histogram
    }

    /// Exports a value kept elsewhere as `family` (a counter or a gauge), read each time it is listed.
    package func export(_ family: RPCMetricFamily, _ labels: [String] = [], value: @escaping @Sendable () -> Int) {
        precondition(family.kind != .histogram)
        _ = series(family, labels) { family.kind == .counter ? .countedElsewhere(value) : .measuredElsewhere(value) }
    }

    /// `family`'s series, in the order they were made.
    package func entries(_ family: RPCMetricFamily) -> [Entry] {
        families.withLock { $0[family.name]?.entries ?? [] }
    }

    private func series(_ family: RPCMetricFamily, _ labels: [String], make: () -> Series) -> Series {
        precondition(labels.count == family.labels.count, "\(family.name): \(labels) for \(family.labels)")
        return families.withLock { families in
            if let index = families[family.name]?.index[labels] { return families[family.name]!.entries[index].series }
            let series = make()
            families[family.name, default: Family()].index[labels] = families[family.name]?.entries.count ?? 0
            families[family.name]!.entries.append(Entry(labels: labels, series: series))
            return series
        }
    }
}
