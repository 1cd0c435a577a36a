import Foundation

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

/// The three queries `show` and `events` need; nothing here writes.
extension SQLiteLedger {
    /// The share's row.
    func shareRecord(_ shareID: String) throws -> ShareRecord? {
        try database.withConnection { connection in
            try connection.query(
                """
                SELECT id, state, source_app, created_at, attachments, bytes, attempts, last_code FROM shares
                WHERE id = ?
                """,
                [.text(shareID)]
            ).first.flatMap { row in
                guard let id = row[0].text, let state = row[1].text else { return nil }
                return ShareRecord(
                    shareId: id, state: state, sourceApp: row[2].text, createdAt: row[3].integer ?? 0,
                    attachments: Int(row[4].integer ?? 0), bytes: row[5].integer ?? 0,
                    attempts: Int(row[6].integer ?? 0), lastCode: row[7].text)
            }
        }
    }

    /// Every event of one share, by sequence.
    func timeline(ofShare shareID: String) throws -> [TimelineEvent] {
        try events(where: "e.share_id = ?", [.text(shareID)], limit: nil)
    }

    /// Events after `sequence`, by sequence, at most `limit`.
    func events(after sequence: Int64, limit: Int) throws -> [TimelineEvent] {
        try events(where: "e.seq > ?", [.integer(sequence)], limit: limit)
    }

    /// Events matching `condition` (on the alias `e`), by sequence. The attempt of a consumer event is the number of
    /// claims of its share since it was last requeued, less the claims released unfinished at shutdown (a release
    /// does not count an attempt); the loader's events have none.
    private func events(where condition: String, _ bindings: [SQLiteValue], limit: Int?) throws -> [TimelineEvent] {
        try database.withConnection { connection in
            let rows = try connection.query(TimelineSQL.select(where: condition, limit: limit), bindings)
            return rows.compactMap { row in
                guard let sequence = row[0].integer, let shareID = row[2].text, let event = row[3].text else {
                    return nil
                }
                let attachment = row[4].integer.map { Int($0) }
                return TimelineEvent(
                    sequence: sequence, time: row[1].integer ?? 0, shareId: shareID, event: event,
                    attempt: TimelineSQL.attempt(
                        event: event, attachment: attachment, claims: Int(row[9].integer ?? 0),
                        released: Int(row[10].integer ?? 0)),
                    attachment: attachment, typeIdentifier: row[5].text, bytes: row[6].integer,
                    code: row[7].text, durationMilliseconds: row[8].integer)
            }
        }
    }
}

/// The events query both ledgers run for `show` and `events`: each event with the number of claims of its share
/// since it was last requeued (a requeue publishes a quarantined share again, attempts reset) and the claims
/// released unfinished at shutdown since then. `condition` is on the alias `e`.
enum TimelineSQL {
    static func select(where condition: String, limit: Int?) -> String {
        let since = """
            p.share_id = e.share_id AND p.seq <= e.seq AND p.seq > COALESCE((SELECT MAX(q.seq) FROM events q
            WHERE q.share_id = e.share_id AND q.event = 'published' AND q.seq <= e.seq AND EXISTS (SELECT 1
            FROM events r WHERE r.share_id = q.share_id AND r.event = 'quarantined' AND r.seq < q.seq)), 0)
            """
        return """
            SELECT e.seq, e.at, e.share_id, e.event, e.attachment, e.type, e.bytes, e.code, e.duration_ms,
                (SELECT COUNT(*) FROM events p WHERE \(since) AND p.event = 'claimed'),
                (SELECT COUNT(*) FROM events p WHERE \(since) AND p.seq < e.seq AND p.event = 'retried'
                    AND p.code = 'ERR_CANCELLED')
            FROM events e WHERE \(condition) ORDER BY e.seq\(limit.map { " LIMIT \($0)" } ?? "")
            """
    }

    /// The attempt shown for an event: none for the loader's events or before the first claim.
    static func attempt(event: String, attachment: Int?, claims: Int, released: Int) -> Int? {
        let loaderEvent = ["staged", "published", "rejected"].contains(event)
            || (event == "failed" && attachment != nil)
        return loaderEvent || claims == 0 ? nil : claims - released
    }
}
