/// The three queries `show` and `events` need, as `SQLiteLedger+Timeline` words them; nothing here writes.
extension PostgresLedger {
    func shareRecord(_ shareID: String) throws -> ShareRecord? {
        try connection.withSession { session in
            try session.query(
                """
                SELECT id, state, source_app, created_at, attachments, bytes, attempts, last_code FROM shares
                WHERE id = $1
                """,
                [shareID]
            ).rows.first.flatMap { row in
                guard let id = row[0], let state = row[1] else { return nil }
                return ShareRecord(
                    shareId: id, state: state, sourceApp: row[2], createdAt: row[3].flatMap { Int64($0) } ?? 0,
                    attachments: row[4].flatMap { Int($0) } ?? 0, bytes: row[5].flatMap { Int64($0) } ?? 0,
                    attempts: row[6].flatMap { Int($0) } ?? 0, lastCode: row[7])
            }
        }
    }

    func timeline(ofShare shareID: String) throws -> [TimelineEvent] {
        try events(where: "e.share_id = $1", [shareID], limit: nil)
    }

    func events(after sequence: Int64, limit: Int) throws -> [TimelineEvent] {
        try events(where: "e.seq > $1", [String(sequence)], limit: limit)
    }

    /// Events matching `condition` (on the alias `e`), by sequence, with each consumer event's attempt: the claims
    /// of its share since it was last requeued, less the claims released unfinished at shutdown.
    private func events(where condition: String, _ parameters: [String?], limit: Int?) throws -> [TimelineEvent] {
        try connection.withSession { session in
            let since = """
                p.share_id = e.share_id AND p.seq <= e.seq AND p.seq > COALESCE((SELECT MAX(q.seq) FROM events q
                WHERE q.share_id = e.share_id AND q.event = 'published' AND q.seq <= e.seq AND EXISTS (SELECT 1
                FROM events r WHERE r.share_id = q.share_id AND r.event = 'quarantined' AND r.seq < q.seq)), 0)
                """
            let rows = try session.query(
                """
                SELECT e.seq, e.at, e.share_id, e.event, e.attachment, e.type, e.bytes, e.code, e.duration_ms,
                    (SELECT COUNT(*) FROM events p WHERE \(since) AND p.event = 'claimed'),
                    (SELECT COUNT(*) FROM events p WHERE \(since) AND p.seq < e.seq AND p.event = 'retried'
                        AND p.code = 'ERR_CANCELLED')
                FROM events e WHERE \(condition) ORDER BY e.seq\(limit.map { " LIMIT \($0)" } ?? "")
                """,
                parameters
            ).rows
            return rows.compactMap { row in
                guard let sequence = row[0].flatMap({ Int64($0) }), let shareID = row[2], let event = row[3] else {
                    return nil
                }
                let claims = row[9].flatMap { Int($0) } ?? 0
                let released = row[10].flatMap { Int($0) } ?? 0
                let attachment = row[4].flatMap { Int($0) }
                let loaderEvent = ["staged", "published", "rejected"].contains(event)
                    || (event == "failed" && attachment != nil)
                return TimelineEvent(
                    sequence: sequence, time: row[1].flatMap { Int64($0) } ?? 0, shareId: shareID, event: event,
                    attempt: loaderEvent || claims == 0 ? nil : claims - released, attachment: attachment,
                    typeIdentifier: row[5], bytes: row[6].flatMap { Int64($0) }, code: row[7],
                    durationMilliseconds: row[8].flatMap { Int64($0) })
            }
        }
    }
}
