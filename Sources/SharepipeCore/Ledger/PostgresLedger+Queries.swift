import Foundation

/// What `status`, `ls` and the metrics read: every daemon's shares, since they share the database.
extension PostgresLedger {
    func status(now: Int64) throws -> SpoolStatus {
        try connection.withSession { session in
            var status = SpoolStatus()
            for row in try session.query("SELECT state, COUNT(*) FROM shares GROUP BY state").rows {
                let count = row[1].flatMap { Int($0) } ?? 0
                switch row[0] {
                case "staged": status.staging = count
                case "published": status.incoming = count
                case "claimed": status.processing = count
                case "quarantined": status.quarantine = count
                case "processed": status.processed = count
                case "rejected": status.rejected = count
                default: break
                }
            }
            let pending = try session.query(
                """
                SELECT COALESCE(SUM(bytes), 0), MIN(created_at) FROM shares
                WHERE state IN ('staged', 'published', 'claimed')
                """
            ).rows.first
            status.pendingBytes = pending?[0].flatMap { Int64($0) } ?? 0
            status.oldestPendingCreatedAt = pending?[1].flatMap { Int64($0) }
                .map { Date(timeIntervalSince1970: Double($0) / 1000) }
            for row in try session.query(
                """
                SELECT code, COUNT(*) FROM events WHERE event = 'failed' AND code IS NOT NULL AND at >= $1
                GROUP BY code
                """,
                [String(now - 86_400_000)]
            ).rows {
                if let code = row[0].flatMap(ShareError.Code.init(rawValue:)) {
                    status.recentFailures[code] = row[1].flatMap { Int($0) } ?? 0
                }
            }
            return status
        }
    }

    func listShares() throws -> [ShareListing] {
        try connection.withSession { session in
            try session.query(
                """
                SELECT id, state, attachments, bytes, created_at, attempts, last_code, not_before, claimed_by
                FROM shares
                WHERE state IN ('staged', 'published', 'claimed', 'quarantined') ORDER BY created_at, id
                """
            ).rows.compactMap { row in
                guard let id = row[0], let stage = row[1].flatMap({ SQLiteLedger.stages[$0] }) else { return nil }
                let notBefore = row[7].flatMap { Int64($0) } ?? 0
                return ShareListing(
                    shareId: id, stage: stage, attachments: row[2].flatMap { Int($0) } ?? 0,
                    bytes: row[3].flatMap { Int64($0) } ?? 0,
                    createdAt: Date(timeIntervalSince1970: Double(row[4].flatMap { Int64($0) } ?? 0) / 1000),
                    attempts: row[5].flatMap { Int($0) } ?? 0,
                    lastCode: row[6].flatMap(ShareError.Code.init(rawValue:)),
                    notBefore: notBefore > 0 ? Date(timeIntervalSince1970: Double(notBefore) / 1000) : nil,
                    claimedBy: row[8])
            }
        }
    }

    func metricEvents(after sequence: Int64, limit: Int) throws -> [MetricEvent] {
        try connection.withSession { session in
            try session.query(
                """
                SELECT e.seq, e.event, e.code,
                    e.at - (SELECT MAX(s.mtime) / 1000000 FROM sources s WHERE s.share_id = e.share_id)
                FROM events e WHERE e.seq > $1 AND e.event IN ('processed', 'failed', 'quarantined')
                    AND NOT (e.event = 'failed' AND e.attachment IS NOT NULL)
                ORDER BY e.seq LIMIT $2
                """,
                [String(sequence), String(limit)]
            ).rows.compactMap { row in
                guard let sequence = row[0].flatMap({ Int64($0) }), let event = row[1].flatMap(LedgerEvent.init)
                else { return nil }
                return MetricEvent(
                    sequence: sequence, event: event, code: row[2].flatMap(ShareError.Code.init(rawValue:)),
                    latencySeconds: row[3].flatMap { Int64($0) }.map { Double(max(0, $0)) / 1000 })
            }
        }
    }

    func lastEventSequence() throws -> Int64 {
        try connection.withSession { session in
            Int64(try session.query("SELECT COALESCE(MAX(seq), 0) FROM events").scalar ?? "0") ?? 0
        }
    }

    /// The server's clock minus this host's, in ms (positive: the server is ahead), the round trip split evenly.
    static func clockSkew(_ connection: PostgresConnection) throws -> Int64 {
        let before = LedgerClock.now()
        let server = try connection.withSession { session in
            Int64(try session.query("SELECT \(serverNow)").scalar ?? "0") ?? 0
        }
        let after = LedgerClock.now()
        return server - (before + after) / 2
    }
}
