import Foundation
import SharepipeLedger

extension Spool {
    /// Counts per stage and recent failures, from the ledger.
    package func status(now: Date = Date()) throws -> SpoolStatus {
        try ledger.status(now: Int64(now.timeIntervalSince1970 * 1000))
    }

    /// Every share that is not finished (staging, incoming, processing, quarantine), oldest first.
    package func listShares() throws -> [ShareListing] {
        try ledger.listShares()
    }
}

extension Spool {
    /// The ledger's row for a share, nil when the ledger does not know it (or no longer: see event retention).
    package func shareRecord(_ shareID: String) throws -> ShareRecord? {
        try ledger.shareRecord(shareID)
    }

    /// Every event of one share, in the order they were recorded.
    package func timeline(ofShare shareID: String) throws -> [TimelineEvent] {
        try ledger.timeline(ofShare: shareID)
    }

    /// Events recorded after `sequence` (all of them for 0), oldest first, at most `limit`.
    package func events(after sequence: Int64, limit: Int = 1000) throws -> [TimelineEvent] {
        try ledger.events(after: sequence, limit: limit)
    }
}
