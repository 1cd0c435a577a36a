extension SQLiteLedger {
    /// Processed, failed and quarantined events after `sequence`, oldest first.
    func metricEvents(after sequence: Int64, limit: Int) throws -> [MetricEvent] {
        try database.withConnection { connection in
            try connection.query(
                """
                SELECT e.seq, e.event, e.code, e.at - (SELECT MAX(s.mtime) / 1000000 FROM sources s WHERE s.share_id = e.share_id)
                FROM events e WHERE e.seq > ? AND e.event IN ('processed', 'failed', 'quarantined')
                    AND NOT (e.event = 'failed' AND e.attachment IS NOT NULL)
                ORDER BY e.seq LIMIT ?
                """, [.integer(sequence), .integer(Int64(limit))]
            ).compactMap { row in
                guard let sequence = row[0].integer, let event = row[1].text.flatMap(LedgerEvent.init) else { return nil }
                return MetricEvent(
                    sequence: sequence, event: event, code: row[2].text.flatMap(ShareError.Code.init(rawValue:)),
                    latencySeconds: row[3].integer.map { Double(max(0, $0)) / 1000 })
            }
        }
    }

    /// The newest event sequence number, so metrics start counting from now.
    func lastEventSequence() throws -> Int64 {
        try database.withConnection { connection in
            try connection.query("SELECT COALESCE(MAX(seq), 0) FROM events").first?.first?.integer ?? 0
        }
    }
}
