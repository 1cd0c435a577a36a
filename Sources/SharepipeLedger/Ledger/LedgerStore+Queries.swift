import Foundation
import SharepipeSystem

/// What the engine, `status`, `ls`, `show`, `events` and the metrics read; nothing here changes a share.
extension LedgerStore {
    /// The states of a share on its way: pending work and bytes.
    static let pendingStates = "('staged', 'published', 'claimed')"

    /// Source identities still recorded as staged: the crash window between publish and source deletion.
    package func stagedSources() throws -> [(shareID: String, identity: SourceIdentity)] {
        try stagedSources(where: "", [])
    }

    /// The staged source records of one inode number (on any device: device numbers change when a file system is
    /// mounted again): a daemon that takes a file another one published and died before unlinking finds it here.
    package func stagedSources(inode: UInt64) throws -> [(shareID: String, identity: SourceIdentity)] {
        try stagedSources(where: " AND inode = ?", [.integer(Int64(bitPattern: inode))])
    }

    private func stagedSources(where condition: String, _ parameters: [SQLValue]) throws
        -> [(shareID: String, identity: SourceIdentity)]
    {
        let sql = "SELECT share_id, device, inode, size, mtime, sha256 FROM sources WHERE state = 'staged'" + condition
        return try driver.run(sql, parameters).rows.compactMap { row in
            guard let shareID = row[0].text, let device = row[1].integer, let inode = row[2].integer,
                let size = row[3].integer, let mtime = row[4].integer, let sha256 = row[5].text
            else { return nil }
            return (shareID, SourceIdentity(
                device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode), size: size,
                modificationTime: mtime, sha256: sha256))
        }
    }

    /// The recorded state of a share, nil when it is unknown.
    package func state(ofShare shareID: String) throws -> ShareState? {
        try driver.run("SELECT state FROM shares WHERE id = ?", [.text(shareID)]).scalar.text
            .flatMap(ShareState.init(rawValue:))
    }

    /// Ids of the shares recorded in a state.
    /// With `spool`, only the shares staged in that state directory (and those recorded before shares had one).
    package func shareIDs(inState state: ShareState, spool: String? = nil) throws -> [String] {
        let result = if let spool {
            try driver.run(
                "SELECT id FROM shares WHERE state = ? AND (spool = ? OR spool IS NULL)",
                [.text(state.rawValue), .text(spool)])
        } else {
            try driver.run("SELECT id FROM shares WHERE state = ?", [.text(state.rawValue)])
        }
        return result.rows.compactMap { $0[0].text }
    }

    /// Shares staged, published or claimed, and their bytes.
    package func pending() throws -> (shares: Int, bytes: Int64) {
        let row = try driver.run(
            "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM shares WHERE state IN \(Self.pendingStates)"
        ).rows.first
        return (row?[0].int ?? 0, row?[1].integer ?? 0)
    }

    /// Published shares whose next attempt must wait: id → not-before (ms since the epoch).
    package func deferredShares(now: Int64) throws -> [String: Int64] {
        let rows = try driver.run(
            "SELECT id, not_before FROM shares WHERE state = 'published' AND not_before > ?", [.integer(now)]).rows
        return Dictionary(rows.compactMap { row in row[0].text.map { ($0, row[1].integer ?? 0) } }) { $1 }
    }

    /// Where a share's row records its processor's run (the recovery of a dead claim).
    package func runState(ofShare shareID: String) throws -> RunState {
        RunState(rawValue: try driver.run("SELECT run FROM shares WHERE id = ?", [.text(shareID)]).scalar.int)
            ?? .notStarted
    }

    /// Attempts recorded for a share.
    package func attempts(ofShare shareID: String) throws -> Int {
        try driver.run("SELECT attempts FROM shares WHERE id = ?", [.text(shareID)]).scalar.int
    }

    /// When the first attempt since the share was last published by hand started, ms since the epoch.
    package func firstAttemptAt(shareID: String) throws -> Int64? {
        try driver.run(
            """
            SELECT MIN(at) FROM events WHERE share_id = ? AND event = 'claimed' AND seq > COALESCE(
                (SELECT MAX(seq) FROM events WHERE share_id = ? AND event = 'published'), 0)
            """,
            [.text(shareID), .text(shareID)]
        ).scalar.integer
    }

    /// Retention: drops events, and rows of finished shares, last touched before `cutoff`. Returns events dropped.
    package func prune(before cutoff: Int64) throws -> Int {
        try driver.execute(
            [
                SQLStatement("DELETE FROM events WHERE at < ?", [.integer(cutoff)]),
                SQLStatement(
                    "DELETE FROM shares WHERE state IN ('processed', 'rejected', 'purged') AND updated_at < ?",
                    [.integer(cutoff)]),
                SQLStatement(
                    "DELETE FROM sources WHERE state = 'done' AND NOT EXISTS (SELECT 1 FROM shares WHERE id = share_id)"),
                SQLStatement("DELETE FROM contents WHERE created_at < ?", [.integer(cutoff)]),
                // issue 33: deliveries acknowledged (pending and failed ones stay until delivered or retried).
                SQLStatement("DELETE FROM outbox WHERE state = 'delivered' AND delivered_at < ?", [.integer(cutoff)]),
                SQLStatement(
                    """
                    DELETE FROM outbox_shares WHERE NOT EXISTS (SELECT 1 FROM shares WHERE id = share_id)
                        AND NOT EXISTS (SELECT 1 FROM outbox WHERE outbox.share_id = outbox_shares.share_id)
                    """),
            ],
            durable: true
        )[0].changed
    }

    /// Counts per state, pending bytes, oldest pending, recent failures.
    package func status(now: Int64) throws -> SpoolStatus {
        var status = SpoolStatus()
        let counts: [String: WritableKeyPath<SpoolStatus, Int>] = [
            "staged": \.staging, "published": \.incoming, "claimed": \.processing, "quarantined": \.quarantine,
            "processed": \.processed, "rejected": \.rejected,
        ]
        for row in try driver.run("SELECT state, COUNT(*) FROM shares GROUP BY state").rows {
            if let field = row[0].text.flatMap({ counts[$0] }) { status[keyPath: field] = row[1].int }
        }
        let pending = try driver.run(
            "SELECT COALESCE(SUM(bytes), 0), MIN(created_at) FROM shares WHERE state IN \(Self.pendingStates)"
        ).rows.first
        status.pendingBytes = pending?[0].integer ?? 0
        status.oldestPendingCreatedAt = pending?[1].date
        for row in try driver.run(
            "SELECT code, COUNT(*) FROM events WHERE event = 'failed' AND code IS NOT NULL AND at >= ? GROUP BY code",
            [.integer(now - 86_400_000)]
        ).rows {
            guard let code = row[0].text.flatMap(ShareError.Code.init(rawValue:)) else { continue }
            status.recentFailures[code] = row[1].int
        }
        return status
    }

    /// Every unfinished share, oldest first.
    package func listShares() throws -> [ShareListing] {
        try driver.run(
            """
            SELECT id, state, attachments, bytes, created_at, attempts, last_code, not_before, claimed_by FROM shares
            WHERE state IN ('staged', 'published', 'claimed', 'quarantined') ORDER BY created_at, id
            """
        ).rows.compactMap { row in
            guard let id = row[0].text, let stage = row[1].text.flatMap(ShareState.init)?.stage else { return nil }
            return ShareListing(
                shareId: id, stage: stage, attachments: row[2].int, bytes: row[3].integer ?? 0,
                createdAt: row[4].date ?? Date(timeIntervalSince1970: 0), attempts: row[5].int,
                lastCode: row[6].text.flatMap(ShareError.Code.init(rawValue:)),
                notBefore: row[7].int > 0 ? row[7].date : nil, claimedBy: row[8].text)
        }
    }

    /// Processed, failed and quarantined events after `sequence`, oldest first.
    package func metricEvents(after sequence: Int64, limit: Int) throws -> [MetricEvent] {
        try driver.run(
            """
            SELECT e.seq, e.event, e.code,
                e.at - (SELECT MAX(s.mtime) / 1000000 FROM sources s WHERE s.share_id = e.share_id)
            FROM events e WHERE e.seq > ? AND e.event IN ('processed', 'failed', 'quarantined')
                AND NOT (e.event = 'failed' AND e.attachment IS NOT NULL)
            ORDER BY e.seq LIMIT ?
            """,
            [.integer(sequence), SQLValue(limit)]
        ).rows.compactMap { row in
            guard let sequence = row[0].integer, let event = row[1].text.flatMap(LedgerEvent.init) else { return nil }
            return MetricEvent(
                sequence: sequence, event: event, code: row[2].text.flatMap(ShareError.Code.init(rawValue:)),
                latencySeconds: row[3].integer.map { Double(max(0, $0)) / 1000 })
        }
    }

    /// The newest event sequence number.
    package func lastEventSequence() throws -> Int64 {
        try driver.run("SELECT COALESCE(MAX(seq), 0) FROM events").scalar.integer ?? 0
    }

    /// A share's row, nil when the ledger does not know it (`sharepipe show`).
    package func shareRecord(_ shareID: String) throws -> ShareRecord? {
        try driver.run(
            "SELECT id, state, source_app, created_at, attachments, bytes, attempts, last_code FROM shares WHERE id=?",
            [.text(shareID)]
        ).rows.first.flatMap { row in
            guard let id = row[0].text, let state = row[1].text else { return nil }
            return ShareRecord(
                shareId: id, state: state, sourceApp: row[2].text, createdAt: row[3].integer ?? 0,
                attachments: row[4].int, bytes: row[5].integer ?? 0, attempts: row[6].int, lastCode: row[7].text)
        }
    }

    /// A share's events, oldest first.
    package func timeline(ofShare shareID: String) throws -> [TimelineEvent] {
        try events(where: "e.share_id = ?", [.text(shareID)], limit: nil)
    }

    /// Events after a sequence number, oldest first (`sharepipe events`).
    package func events(after sequence: Int64, limit: Int) throws -> [TimelineEvent] {
        try events(where: "e.seq > ?", [.integer(sequence)], limit: limit)
    }

    /// Events matching `condition` (on the alias `e`), by sequence, each with the number of claims of its share since
    /// it was last requeued (a requeue publishes a quarantined share again, attempts reset), less the claims released
    /// unfinished at shutdown since then (a release does not count an attempt): the attempt it belongs to. The
    /// loader's events, and those before the first claim, have none.
    private func events(where condition: String, _ parameters: [SQLValue], limit: Int?) throws -> [TimelineEvent] {
        let since = """
            p.share_id = e.share_id AND p.seq <= e.seq AND p.seq > COALESCE((SELECT MAX(q.seq) FROM events q
            WHERE q.share_id = e.share_id AND q.event = 'published' AND q.seq <= e.seq AND EXISTS (SELECT 1
            FROM events r WHERE r.share_id = q.share_id AND r.event = 'quarantined' AND r.seq < q.seq)), 0)
            """
        let sql = """
            SELECT e.seq, e.at, e.share_id, e.event, e.attachment, e.type, e.bytes, e.code, e.duration_ms,
                (SELECT COUNT(*) FROM events p WHERE \(since) AND p.event = 'claimed'),
                (SELECT COUNT(*) FROM events p WHERE \(since) AND p.seq < e.seq AND p.event = 'retried'
                    AND p.code = 'ERR_CANCELLED')
            FROM events e WHERE \(condition) ORDER BY e.seq\(limit.map { " LIMIT \($0)" } ?? "")
            """
        return try driver.run(sql, parameters).rows.compactMap { row in
            guard let sequence = row[0].integer, let shareID = row[2].text, let event = row[3].text else { return nil }
            let attachment = row[4].integer.map { Int($0) }
            let loaderEvent = ["staged", "published", "rejected"].contains(event)
                || (event == "failed" && attachment != nil)
            let claims = row[9].int
            return TimelineEvent(
                sequence: sequence, time: row[1].integer ?? 0, shareId: shareID, event: event,
                attempt: loaderEvent || claims == 0 ? nil : claims - row[10].int, attachment: attachment,
                typeIdentifier: row[5].text, bytes: row[6].integer, code: row[7].text,
                durationMilliseconds: row[8].integer)
        }
    }
}
