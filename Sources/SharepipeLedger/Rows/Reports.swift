import Foundation
import SharepipeSystem

/// What `sharepipe status` shows: counts per stage, pending bytes, recent failures by code, oldest pending age.
package struct SpoolStatus: Sendable, Equatable {
    /// Shares being written.
    package var staging = 0
    /// Shares published and waiting for a consumer.
    package var incoming = 0
    /// Shares claimed by a consumer.
    package var processing = 0
    /// Shares that failed for good.
    package var quarantine = 0
    /// Shares processed and removed (within the event retention).
    package var processed = 0
    /// Shares rejected before publishing (within the event retention).
    package var rejected = 0
    /// Bytes of the shares published and not yet processed.
    package var pendingBytes: Int64 = 0
    /// When the oldest share still waiting was created.
    package var oldestPendingCreatedAt: Date?
    /// Failures in the last 24 hours (attachments refused by the loader, attempts failed in a processor), by code.
    package var recentFailures: [ShareError.Code: Int] = [:]
}

/// One share in `sharepipe ls`.
package struct ShareListing: Sendable, Equatable {
    /// The share's UUID.
    package var shareId: String
    /// Where it is.
    package var stage: SpoolStage
    /// Copied attachments.
    package var attachments: Int
    /// Bytes copied.
    package var bytes: Int64
    /// When it was created.
    package var createdAt: Date
    /// Processor attempts made.
    package var attempts: Int
    /// The last failure's code, if any.
    package var lastCode: ShareError.Code?
    /// When a share waiting for a retry may be claimed again.
    package var notBefore: Date?
    /// Who holds the claim on a share in processing (host:pid:boot-id).
    package var claimedBy: String? = nil
}

/// One lifecycle event from the ledger, as `sharepipe show` and `sharepipe events` print it. Events carry ids, stages,
/// codes, sizes and type identifiers — never content or file names.
package struct TimelineEvent: Sendable, Equatable {
    /// The event's position in the ledger; later events have larger numbers.
    package var sequence: Int64
    /// When it was recorded, milliseconds since the epoch.
    package var time: Int64
    /// The share it belongs to.
    package var shareId: String
    /// What happened: staged, published, claimed, processed, deleted, failed, retried, quarantined, rejected,
    /// recovered.
    package var event: String
    /// The processor attempt it belongs to, from 1; nil for the loader's events.
    package var attempt: Int?
    /// The attachment it is about, for the loader's per-attachment events.
    package var attachment: Int?
    /// The attachment's type identifier.
    package var typeIdentifier: String?
    /// Bytes copied, or removed.
    package var bytes: Int64?
    /// The error code of a failure.
    package var code: String?
    /// How long the step took.
    package var durationMilliseconds: Int64?
}

/// A share's row in the ledger.
package struct ShareRecord: Sendable, Equatable {
    /// The share's UUID.
    package var shareId: String
    /// staged, published, claimed, processed, quarantined, rejected or purged.
    package var state: String
    /// The sharing app's bundle identifier.
    package var sourceApp: String?
    /// When it was created, milliseconds since the epoch.
    package var createdAt: Int64
    /// Copied attachments.
    package var attachments: Int
    /// Bytes copied.
    package var bytes: Int64
    /// Processor attempts counted.
    package var attempts: Int
    /// The last failure's code.
    package var lastCode: String?
}

/// A consumer-side event for the metrics: what happened, its code, and for a processed share the time from its
/// sources' last write to processed.
package struct MetricEvent: Sendable {
    package var sequence: Int64
    package var event: LedgerEvent
    package var code: ShareError.Code?
    package var latencySeconds: Double?
}
