import Synchronization

/// One counter series of rpcd's registry (`RPCMetricRegistry`): a relaxed atomic integer, so counting is one
/// add on any thread and reading it (`value`) is one load, for the exposition and `rpcd.info` alike.
package final class RPCCounter: Sendable {
    private let count = Atomic<Int>(0)

    package init() {}

    @inlinable
    package func increment() {
        increment(by: 1)
    }

    /// Adds `amount` (never negative: a counter only grows).
    package func increment(by amount: Int) {
        count.wrappingAdd(amount, ordering: .relaxed)
    }

    package var value: Int { count.load(ordering: .relaxed) }
}
