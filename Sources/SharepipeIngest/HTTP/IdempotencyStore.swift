/// The first answer to a `POST /v1/shares` with an `Idempotency-Key`, kept for 24 hours per (token NAME, key), so a
/// retried request gets it again (`200`) and nothing is ingested twice. The ledger keeps them
/// (`LedgerStore+HTTP.swift`), so every daemon on one ledger sees every key.
protocol IdempotencyStore: Sendable {
    /// The stored answer, when one younger than `maxAge` exists.
    func answer(scope: String, key: String, maxAge: Duration) throws -> StoredAnswer?
    /// Stores the answer (durably) once its share is published.
    func store(_ answer: StoredAnswer, scope: String, key: String) throws
    /// Removes answers older than `maxAge`.
    func expire(maxAge: Duration) throws
}

/// A stored first answer: its share and its body.
struct StoredAnswer: Codable, Sendable, Equatable {
    var shareId: String
    var status: Int
    var body: [UInt8]
}
