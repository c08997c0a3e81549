import RPCCore
import Synchronization

/// The bytes of received frames rpcd holds at once, across every connection: `MaxBufferedBytes=`.
///
/// A connection reserves a frame's bytes when its length arrives (or when it arrives whole) and releases them
/// once the frame's calls are answered; a reservation that would pass the limit fails, and the frame is
/// refused. Lock-free and safe from any event loop; the count lives in `RPCStatistics.bufferedBytes` so that
/// `rpcd.info` shows it.
final class InboundByteBudget: Sendable {
    let limit: Int
    private let statistics: RPCStatistics

    init(limit: Int, statistics: RPCStatistics) {
        self.limit = limit
        self.statistics = statistics
    }

    /// Takes `bytes` from the budget, or nothing if that would pass the limit.
    func reserve(_ bytes: Int) -> Bool {
        var used = statistics.bufferedBytes.load(ordering: .relaxed)
        while true {
            guard used + bytes <= limit else { return false }
            let (exchanged, original) = statistics.bufferedBytes.weakCompareExchange(
                expected: used, desired: used + bytes, ordering: .relaxed)
            if exchanged { return true }
            used = original
        }
    }

    func release(_ bytes: Int) {
        statistics.bufferedBytes.increment(by: -bytes)
    }

    var bytesInUse: Int { statistics.bufferedBytes.value }
}
