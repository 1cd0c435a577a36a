import SharepipeLedger
import Synchronization

/// The outbox's gauges (issue 33), counted in the ledger at every metrics refresh: deliveries pending and kept as
/// failed, for every daemon on the ledger.
package final class NotifyMetrics: Sendable {
    private let counts = Mutex((pending: 0, failed: 0))

    package func refresh(from ledger: LedgerStore) throws {
        let fresh = try ledger.notificationCounts()
        counts.withLock { $0 = fresh }
    }

    package var pending: Int { counts.withLock { $0.pending } }
    package var failed: Int { counts.withLock { $0.failed } }

    /// The status line's part: nothing while nothing waits.
    package var statusPart: String {
        let (pending, failed) = counts.withLock { ($0.pending, $0.failed) }
        return pending + failed > 0 ? ", notifications pending \(pending), failed \(failed)" : ""
    }

    package var samples: [(String, String, String, [(String, String)])] {
        let (pending, failed) = counts.withLock { ($0.pending, $0.failed) }
        return [
            ("notifications_pending", "gauge", "Notification deliveries not yet acknowledged.",
             [("", String(pending))]),
            ("notifications_failed", "gauge", "Notification deliveries kept as failed after --notify-max-age.",
             [("", String(failed))]),
        ]
    }
}
