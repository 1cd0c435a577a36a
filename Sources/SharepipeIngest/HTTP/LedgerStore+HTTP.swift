import SharepipeLedger
import SharepipeSystem

/// issue 19: HTTP `Idempotency-Key` answers in the ledger, so every daemon on one ledger (one SQLite file, or
/// PostgreSQL across hosts) returns the first answer to a repeated key.
extension LedgerStore: IdempotencyStore {
    func answer(scope: String, key: String, maxAge: Duration) throws -> StoredAnswer? {
        let oldest = LedgerClock.now() - maxAge.milliseconds
        let row = try driver.run(
            """
            SELECT share_id, status, body FROM http_idempotency
            WHERE scope = ? AND idempotency_key = ? AND created_at >= ?
            """, [.text(scope), .text(key), .integer(oldest)]
        ).rows.first
        guard let row, let shareID = row[0].text, let body = row[2].text else { return nil }
        return StoredAnswer(shareId: shareID, status: row[1].int, body: Array(body.utf8))
    }

    func store(_ answer: StoredAnswer, scope: String, key: String) throws {
        // One transaction: an expired answer for the key is replaced, a live one is kept (the first answer wins).
        let oldest = LedgerClock.now() - HTTPServer.idempotencyWindow.milliseconds
        _ = try driver.execute(
            [
                SQLStatement(
                    "DELETE FROM http_idempotency WHERE scope = ? AND idempotency_key = ? AND created_at < ?",
                    [.text(scope), .text(key), .integer(oldest)]),
                SQLStatement(
                    """
                    INSERT INTO http_idempotency (scope, idempotency_key, share_id, status, body, created_at)
                    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, idempotency_key) DO NOTHING
                    """,
                    [
                        .text(scope), .text(key), .text(answer.shareId), .integer(Int64(answer.status)),
                        .text(String(decoding: answer.body, as: UTF8.self)), .integer(LedgerClock.now()),
                    ]),
            ],
            durable: true)
    }

    func expire(maxAge: Duration) throws {
        try driver.run(
            "DELETE FROM http_idempotency WHERE created_at < ?", [.integer(LedgerClock.now() - maxAge.milliseconds)])
    }
}
