/// The three queries `show` and `events` need (the events query is `TimelineSQL`'s); nothing here writes.
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

    /// Events matching `condition` (on the alias `e`), by sequence, with each consumer event's attempt.
    private func events(where condition: String, _ parameters: [String?], limit: Int?) throws -> [TimelineEvent] {
        try connection.withSession { session in
            try session.query(TimelineSQL.select(where: condition, limit: limit), parameters).rows.compactMap { row in
                guard let sequence = row[0].flatMap({ Int64($0) }), let shareID = row[2], let event = row[3] else {
                    return nil
                }
                let attachment = row[4].flatMap { Int($0) }
                return TimelineEvent(
                    sequence: sequence, time: row[1].flatMap { Int64($0) } ?? 0, shareId: shareID, event: event,
                    attempt: TimelineSQL.attempt(
                        event: event, attachment: attachment, claims: row[9].flatMap { Int($0) } ?? 0,
                        released: row[10].flatMap { Int($0) } ?? 0),
                    attachment: attachment, typeIdentifier: row[5], bytes: row[6].flatMap { Int64($0) },
                    code: row[7], durationMilliseconds: row[8].flatMap { Int64($0) })
            }
        }
    }
}
