import Foundation

/// A value bound to or read from a statement. The ledger stores integers and text only.
package enum SQLValue: Sendable, Equatable, ExpressibleByStringLiteral {
    case integer(Int64), text(String), null

    package init(stringLiteral value: String) { self = .text(value) }
    package init(_ value: Int) { self = .integer(Int64(value)) }
    package init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
    package init(_ value: String?) { self = value.map { .text($0) } ?? .null }

    var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
    package var text: String? { if case .text(let value) = self { value } else { nil } }
    /// The integer as an `Int`, 0 for NULL.
    package var int: Int { Int(integer ?? 0) }
    /// An integer of ms since the epoch as a date.
    var date: Date? { integer.map { Date(timeIntervalSince1970: Double($0) / 1000) } }
}

/// One statement: SQL with `?` placeholders (the driver numbers them where its database wants `$1`, `$2` …) and the
/// values bound to them in order.
package struct SQLStatement: Sendable {
    var sql: String
    var parameters: [SQLValue]

    package init(_ sql: String, _ parameters: [SQLValue] = []) {
        self.sql = sql
        self.parameters = parameters
    }
}

/// What a statement returned: its rows, and how many rows it inserted, updated or deleted.
package struct SQLResult: Sendable {
    package var rows: [[SQLValue]]
    var changed: Int

    /// The first column of the first row.
    package var scalar: SQLValue { rows.first?.first ?? .null }
}

/// Everything the ledger's SQL needs that differs between SQLite and PostgreSQL; the rest is written once.
package struct SQLDialect: Sendable {
    /// Column types: a 64-bit integer, and an auto-numbered 64-bit primary key.
    let bigint: String, serialKey: String
    /// Appended to a `SELECT` of rows the transaction goes on to change, locking them until it ends (SQLite: none,
    /// a write transaction holds the whole database); and to one that picks rows to change, skipping those held.
    let lockRows: String, skipLocked: String
    /// The database's clock, ms since the epoch (leases use it: clock skew between hosts cannot expire a claim).
    let now: String
    /// Statements that serialize migrations and make the schema version readable.
    let migrationPrelude: [String]
    /// One integer: 1 when the schema version can be read without creating anything, 0 for an empty database.
    let schemaPresent: String
    /// The schema version, and the statement that records a new one.
    let schemaVersion: String, setSchemaVersion: @Sendable (Int) -> String
    /// Whether placeholders are numbered (`$1`) rather than `?`; what starts a transaction that will write.
    let numberedPlaceholders: Bool, begin: String
    /// Takes a lock on a key (`?` class, `?` key, both 32-bit) held until the transaction ends, so that transactions
    /// about one thing run one after the other; nil where `begin` already serializes every writer (SQLite).
    var keyLock: String? = nil

    /// `sql` with its placeholders written the way this database wants them (the ledger's SQL has no `?` inside a
    /// string literal).
    func placeholders(_ sql: String) -> String {
        guard numberedPlaceholders else { return sql }
        let parts = sql.split(separator: "?", omittingEmptySubsequences: false)
        return parts.indices.map { $0 == 0 ? String(parts[$0]) : "$\($0)" + parts[$0] }.joined()
    }
}

/// A connection to the ledger's database, thin: statements in, typed rows out. Implementations own the connection
/// and its locking; the ledger's SQL is in `LedgerStore`.
package protocol SQLDriver: AnyObject, Sendable {
    var dialect: SQLDialect { get }
    /// Runs the statements in one transaction, all or none, and returns their results in order. A commit that is not
    /// `durable` may return before it is on disk where the database allows it (a power cut may lose it, never
    /// corrupt it).
    func execute(_ statements: [SQLStatement], durable: Bool) throws -> [SQLResult]
    /// Runs `body` on one connection, held for it alone.
    func withSession<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// How many times the driver reconnected to its server after losing it.
    var reconnections: Int { get }
}

extension SQLDriver {
    /// One statement, in a transaction of its own.
    @discardableResult
    package func run(_ sql: String, _ parameters: [SQLValue] = []) throws -> SQLResult {
        try execute([SQLStatement(sql, parameters)], durable: true)[0]
    }

    /// Runs `body` between the dialect's `begin` and `COMMIT` on `session`; `ROLLBACK` when it throws.
    func inTransaction<T>(_ session: any SQLSession, _ body: () throws -> T) throws -> T {
        _ = try session.run([SQLStatement(dialect.begin)])
        do {
            let result = try body()
            _ = try session.run([SQLStatement("COMMIT")])
            return result
        } catch {
            _ = try? session.run([SQLStatement("ROLLBACK")])
            throw error
        }
    }
}

/// One connection, held by one caller.
package protocol SQLSession {
    /// Runs the statements in order and returns their results (PostgreSQL: one pipeline, all or none; SQLite: each
    /// autocommitted unless in a transaction).
    func run(_ statements: [SQLStatement]) throws -> [SQLResult]
}
