import Synchronization

/// One gauge series of rpcd's registry: a relaxed atomic integer (every gauge rpcd exports counts something:
/// connections, bytes, states). Thread-safe.
package final class RPCGauge: Sendable {
    private let current = Atomic<Int>(0)

    package init() {}

    package func increment() {
        current.wrappingAdd(1, ordering: .relaxed)
    }

    package func decrement() {
        current.wrappingSubtract(1, ordering: .relaxed)
    }

    package func set(to value: Int) {
        current.store(value, ordering: .relaxed)
    }

    package var value: Int { current.load(ordering: .relaxed) }
}
