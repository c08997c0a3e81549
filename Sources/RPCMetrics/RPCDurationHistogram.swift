import Synchronization

/// A histogram of durations with fixed buckets: one relaxed atomic per bucket and one for the sum, so that
/// recording is two adds and no lock, and reading (`snapshot`) is a load per bucket. Thread-safe.
///
/// Buckets hold the observations up to their bound and above the one before (the exposition makes them
/// cumulative); the count is their total, so `_count` always equals the `+Inf` bucket.
package final class RPCDurationHistogram: @unchecked Sendable {
    /// The upper bounds, in nanoseconds, ascending.
    package let bounds: [Int64]
    /// The bounds as the exposition's `le` values (seconds in decimal), made once.
    package let boundLabels: [String]
    /// `bounds.count + 1` counters, the last for what is above every bound. Allocated once, never moved:
    /// `Atomic` needs a stable address (unchecked Sendable: only atomics are reached through it).
    private let counts: UnsafeMutablePointer<Atomic<Int>>
    private let sumNanoseconds = Atomic<Int>(0)

    package init(buckets: [Duration]) {
        bounds = buckets.map(Self.nanoseconds)
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "bucket bounds must ascend")
        boundLabels = bounds.map(Self.seconds)
        counts = .allocate(capacity: bounds.count + 1)
        for index in 0...bounds.count { (counts + index).initialize(to: Atomic(0)) }
    }

    deinit {
        counts.deinitialize(count: bounds.count + 1)
        counts.deallocate()
    }

    package func record(_ duration: Duration) {
        record(nanoseconds: Self.nanoseconds(duration))
    }

    /// Records one duration given in nanoseconds (what the router measures: converting a `Duration` divides
    /// 128-bit integers).
    package func record(nanoseconds: Int64) {
        let nanoseconds = max(0, nanoseconds)
        var index = 0
        while index < bounds.count, nanoseconds > bounds[index] { index += 1 }
        counts[index].wrappingAdd(1, ordering: .relaxed)
        sumNanoseconds.wrappingAdd(Int(nanoseconds), ordering: .relaxed)
    }

    /// The histogram now: read bucket by bucket while calls go on, so a call recorded meanwhile may be in one
    /// figure and not yet in another (as in any scrape).
    package struct Snapshot: Sendable, Equatable {
        /// `(bound in seconds, observations up to it)`, cumulative, without `+Inf` (that is `count`).
        package var buckets: [(bound: Double, count: Int)]
        package var count: Int
        package var sumNanoseconds: Int64

        package var sumSeconds: Double { Double(sumNanoseconds) / 1e9 }

        package static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.count == rhs.count && lhs.sumNanoseconds == rhs.sumNanoseconds
                && lhs.buckets.elementsEqual(rhs.buckets) { $0.bound == $1.bound && $0.count == $1.count }
        }
    }

    package var snapshot: Snapshot {
        var buckets: [(bound: Double, count: Int)] = []
        buckets.reserveCapacity(bounds.count)
        var total = 0
        for (index, bound) in bounds.enumerated() {
            total += counts[index].load(ordering: .relaxed)
            buckets.append((Double(bound) / 1e9, total))
        }
        total += counts[bounds.count].load(ordering: .relaxed)
        return Snapshot(
            buckets: buckets, count: total, sumNanoseconds: Int64(sumNanoseconds.load(ordering: .relaxed)))
    }

    /// Nanoseconds as seconds in decimal, exact and without an exponent, as swift-prometheus wrote its bounds
    /// (`0.00001`, `2.5`, `1.0`): the bounds' `le` values and the sum.
    static func seconds(_ nanoseconds: Int64) -> String {
        let whole = nanoseconds / 1_000_000_000
        var fraction = String(nanoseconds % 1_000_000_000)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.count > 1, fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(whole).\(fraction)"
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}
