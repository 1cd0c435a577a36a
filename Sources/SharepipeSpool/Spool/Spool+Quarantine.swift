import Foundation
import SharepipeSystem

/// Quarantine, requeue and purge are runs of `ShareLifecycle` (see there for their orderings); what stays here is
/// the reason file and retention.
extension Spool {
    func writeReason(_ reason: QuarantineReason, shareID: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try System.writeAtomically(
            Array(try encoder.encode(reason)), to: path(.processing, shareID), name: QuarantineReason.fileName)
    }

    /// Reads a quarantined share's `reason.json`.
    func quarantineReason(_ shareID: String) throws -> QuarantineReason {
        let bytes = try System.readFile(path(.quarantine, shareID) + "/" + QuarantineReason.fileName)
        do {
            return try JSONDecoder().decode(QuarantineReason.self, from: Data(bytes))
        } catch {
            throw ShareError(.io, "reason.json is malformed: \(error)")
        }
    }

    /// Deletes quarantined shares quarantined at least `age` ago (all of them when nil) and returns their ids
    /// (`sharepipe purge --quarantine`, and retention).
    @discardableResult
    package func purgeQuarantine(olderThan age: Duration? = nil) throws -> [String] {
        let cutoff = age.map { System.wallClockNanoseconds() - Self.nanoseconds($0) }
        var purged: [String] = []
        for shareID in try shareIDs(in: .quarantine) {
            if let cutoff, let status = try System.lstatIfPresent(path(.quarantine, shareID)),
                status.modificationTime > cutoff
            {
                continue
            }
            try purge(shareID)
            purged.append(shareID)
        }
        return purged
    }

    /// Retention: quarantined shares older than `quarantineTTL` purged, ledger events (and finished share rows)
    /// older than `eventRetention` pruned.
    @discardableResult
    package func applyRetention(
        quarantineTTL: Duration = .seconds(7 * 86_400), eventRetention: Duration = .seconds(30 * 86_400)
    ) throws -> RetentionReport {
        let purged = try purgeQuarantine(olderThan: quarantineTTL)
        let pruned = try ledger.prune(before: LedgerClock.now() - Self.nanoseconds(eventRetention) / 1_000_000)
        return RetentionReport(purgedShares: purged.count, prunedEvents: pruned)
    }

    package static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue + attoseconds / 1_000_000_000
    }
}

/// What one retention pass removed.
package struct RetentionReport: Sendable, Equatable {
    /// Quarantined shares deleted after their TTL.
    package var purgedShares: Int
    /// Ledger events dropped after the retention period.
    package var prunedEvents: Int
}
