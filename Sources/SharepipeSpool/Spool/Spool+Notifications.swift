import SharepipeLedger
/// The outbox for the operator's commands (issue 33): `notifications ls|retry` and `status`.
extension Spool {
    /// Deliveries in the given states, oldest first.
    package func notifications(states: [NotificationState], limit: Int) throws -> [NotificationRecord] {
        try ledger.notifications(states: states, limit: limit)
    }

    /// Failed deliveries (all, or those of these event ids) tried again with a fresh delivery window; how many.
    package func retryNotifications(ids: [String]?) throws -> Int {
        try ledger.retryNotifications(ids: ids)
    }

    /// Deliveries pending and kept as failed.
    package func notificationCounts() throws -> (pending: Int, failed: Int) {
        try ledger.notificationCounts()
    }
}
