import Foundation

/// What `sharepipe status` shows: counts per stage, pending bytes, recent failures by code, oldest pending age.
public struct SpoolStatus: Sendable, Equatable {
    /// Shares being written.
    public var staging = 0
    /// Shares published and waiting for a consumer.
    public var incoming = 0
    /// Shares claimed by a consumer.
    public var processing = 0
    /// Shares that failed for good.
    public var quarantine = 0
    /// Shares processed and removed (within the event retention).
    public var processed = 0
    /// Shares rejected before publishing (within the event retention).
    public var rejected = 0
    /// Bytes of the shares published and not yet processed.
    public var pendingBytes: Int64 = 0
    /// When the oldest share still waiting was created.
    public var oldestPendingCreatedAt: Date?
    /// Failures in the last 24 hours (attachments refused by the loader, attempts failed in a processor), by code.
    public var recentFailures: [ShareError.Code: Int] = [:]
}

/// One share in `sharepipe ls`.
public struct ShareListing: Sendable, Equatable {
    /// The share's UUID.
    public var shareId: String
    /// Where it is.
    public var stage: Spool.Stage
    /// Copied attachments.
    public var attachments: Int
    /// Bytes copied.
    public var bytes: Int64
    /// When it was created.
    public var createdAt: Date
    /// Processor attempts made.
    public var attempts: Int
    /// The last failure's code, if any.
    public var lastCode: ShareError.Code?
    /// When a share waiting for a retry may be claimed again.
    public var notBefore: Date?
    /// Who holds the claim on a share in processing (host:pid:boot-id), when the ledger records it (PostgreSQL).
    public var claimedBy: String? = nil
}

extension Spool {
    /// Counts per stage and recent failures, from the ledger.
    public func status(now: Date = Date()) throws -> SpoolStatus {
        try ledger.status(now: Int64(now.timeIntervalSince1970 * 1000))
    }

    /// Every share that is not finished (staging, incoming, processing, quarantine), oldest first.
    public func listShares() throws -> [ShareListing] {
        try ledger.listShares()
    }
}

extension SQLiteLedger {
    /// The stage of each unfinished ledger state.
    static let stages: [String: Spool.Stage] = [
        "staged": .staging, "published": .incoming, "claimed": .processing, "quarantined": .quarantine,
    ]

    func status(now: Int64) throws -> SpoolStatus {
        try database.withConnection { connection in
            var status = SpoolStatus()
            for row in try connection.query("SELECT state, COUNT(*) FROM shares GROUP BY state") {
                let count = Int(row[1].integer ?? 0)
                switch row[0].text {
                case "staged": status.staging = count
                case "published": status.incoming = count
                case "claimed": status.processing = count
                case "quarantined": status.quarantine = count
                case "processed": status.processed = count
                case "rejected": status.rejected = count
                default: break
                }
            }
            let pending = try connection.query(
                """
                SELECT COALESCE(SUM(bytes), 0), MIN(created_at) FROM shares
                WHERE state IN ('staged', 'published', 'claimed')
                """
            ).first
            status.pendingBytes = pending?[0].integer ?? 0
            status.oldestPendingCreatedAt = pending?[1].integer.map { Date(timeIntervalSince1970: Double($0) / 1000) }
            for row in try connection.query(
                """
                SELECT code, COUNT(*) FROM events WHERE event = 'failed' AND code IS NOT NULL AND at >= ?
                GROUP BY code
                """,
                [.integer(now - 86_400_000)])
            {
                if let code = row[0].text.flatMap(ShareError.Code.init(rawValue:)) {
                    status.recentFailures[code] = Int(row[1].integer ?? 0)
                }
            }
            return status
        }
    }

    func listShares() throws -> [ShareListing] {
        try database.withConnection { connection in
            try connection.query(
                """
                SELECT id, state, attachments, bytes, created_at, attempts, last_code, not_before FROM shares
                WHERE state IN ('staged', 'published', 'claimed', 'quarantined') ORDER BY created_at, id
                """
            ).compactMap { row in
                guard let id = row[0].text, let stage = row[1].text.flatMap({ Self.stages[$0] }) else { return nil }
                let notBefore = row[7].integer ?? 0
                return ShareListing(
                    shareId: id, stage: stage, attachments: Int(row[2].integer ?? 0), bytes: row[3].integer ?? 0,
                    createdAt: Date(timeIntervalSince1970: Double(row[4].integer ?? 0) / 1000),
                    attempts: Int(row[5].integer ?? 0), lastCode: row[6].text.flatMap(ShareError.Code.init(rawValue:)),
                    notBefore: notBefore > 0 ? Date(timeIntervalSince1970: Double(notBefore) / 1000) : nil)
            }
        }
    }
}
