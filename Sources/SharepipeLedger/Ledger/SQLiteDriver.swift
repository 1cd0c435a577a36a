import CSQLite
import Foundation
import SharepipeSystem
import Synchronization

/// The driver of `ledger.sqlite`: one connection per process behind a lock, WAL with `synchronous=FULL` (a commit is
/// durable before the file-system step it guards), statements prepared once. A lone `SELECT` runs on a second,
/// read-only connection instead: under WAL it reads the last commit without waiting for a writer's fsync (the inbox
/// looks up every file it takes while publish batches commit). SQLite's busy handler does not wait for
/// every lock (a fresh file's first opening, its switch to WAL, racing migrations), so every operation, all or
/// nothing, is retried on a busy or locked database until `busyDeadline`; write transactions are `BEGIN IMMEDIATE`,
/// taking the write lock where the busy handler waits for it, never after a read.
package final class SQLiteDriver: SQLDriver {
    static let dialect = SQLDialect(
        bigint: "INTEGER", serialKey: "INTEGER PRIMARY KEY AUTOINCREMENT", lockRows: "", skipLocked: "",
        now: "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)", migrationPrelude: [],
        schemaPresent: "SELECT 1", schemaVersion: "PRAGMA user_version",
        setSchemaVersion: { "PRAGMA user_version = \($0)" }, numberedPlaceholders: false,
        begin: "BEGIN IMMEDIATE")

    package var dialect: SQLDialect { Self.dialect }
    package var reconnections: Int { 0 }

    /// The database file.
    package let path: String
    private let connection: Mutex<Connection>
    /// The connection of lone reads.
    private let reader: Mutex<Connection>
    private let busyDeadline: Duration

    /// Opens (creating if needed) the database at `path`; a file that cannot be opened is ERR_CONTAINER_UNAVAILABLE.
    /// SQLite's busy handler waits up to `busyTimeout` for a lock before the retries begin.
    package init(path: String, busyDeadline: Duration = .seconds(30), busyTimeout: Duration = .seconds(5)) throws {
        func open() throws -> OpaquePointer {
            var handle: OpaquePointer?
            let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
            guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
                let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
                sqlite3_close(handle)
                throw ShareError(.containerUnavailable, "ledger could not be opened: \(message)")
            }
            // Before anything else touches the file: wait for other processes' locks rather than fail.
            sqlite3_busy_timeout(handle, Int32(busyTimeout.milliseconds))
            return handle
        }
        connection = Mutex(Connection(handle: try open()))
        self.path = path
        self.busyDeadline = busyDeadline
        _ = try Self.retrying(connection, until: busyDeadline) { session in
            try session.run(["PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON"].map {
                SQLStatement($0)
            })
        }
        // Opened once the file is in WAL mode; it never writes, and its page cache stays small.
        reader = Mutex(Connection(handle: try open()))
        _ = try Self.retrying(reader, until: busyDeadline) { session in
            try session.run(["PRAGMA query_only = ON", "PRAGMA cache_size = -512"].map { SQLStatement($0) })
        }
    }

    package func execute(_ statements: [SQLStatement], durable: Bool) throws -> [SQLResult] {
        // One statement is atomic on its own, and a read then takes no write lock.
        if statements.count == 1 {
            // A read the second connection could not answer (anything but a busy database, which it waits out) is
            // answered by the first, as every read was before there was a second.
            if Self.isRead(statements[0].sql),
                let results = try? Self.retrying(reader, until: busyDeadline, { try $0.run(statements) })
            {
                return results
            }
            return try withSession(durable: durable) { try $0.run(statements) }
        }
        return try withSession(durable: durable) { session in
            try inTransaction(session) { try session.run(statements) }
        }
    }

    /// Runs `body` with the connection, again after a short pause while the database is busy, until the deadline.
    /// The commits in `body` are durable.
    package func withSession<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try withSession(durable: true, body)
    }

    /// `withSession`, its commits fsyncing the log or not as `durable` says.
    private func withSession<T>(durable: Bool, _ body: (Connection) throws -> T) throws -> T {
        try Self.retrying(connection, until: busyDeadline) { session in
            try session.synchronize(durable: durable)
            return try body(session)
        }
    }

    /// Whether a lone statement only reads (`SELECT …`), and may run on the read-only connection.
    private static func isRead(_ sql: String) -> Bool {
        sql.utf8.prefix(7).elementsEqual("SELECT ".utf8)
    }

    /// Runs `body` with `connection`, again after a short pause while the database is busy, until `busyDeadline`.
    private static func retrying<T>(
        _ connection: borrowing Mutex<Connection>, until busyDeadline: Duration, _ body: (Connection) throws -> T
    ) throws -> T {
        let deadline = ContinuousClock.now + busyDeadline
        var pause = 0.001
        while true {
            do {
                return try connection.withLock { try body($0) }
            } catch let busy as Busy {
                guard ContinuousClock.now < deadline else { throw busy.error }
                Thread.sleep(forTimeInterval: pause)
                pause = min(pause * 2, 0.05)
            }
        }
    }

    /// SQLITE_BUSY or SQLITE_LOCKED: another connection holds a lock this operation needs.
    private struct Busy: Error {
        let error: ShareError
    }

    /// The handle and its prepared statements, only reachable while the driver's lock is held.
    private final class Connection: SQLSession, @unchecked Sendable {
        let handle: OpaquePointer
        private var statements: [String: OpaquePointer] = [:]
        /// Whether commits fsync the log (`synchronous = FULL`, as opened) or not (`NORMAL`).
        private var durableCommits = true

        init(handle: OpaquePointer) {
            self.handle = handle
        }

        deinit {
            for statement in statements.values { sqlite3_finalize(statement) }
            sqlite3_close(handle)
        }

        func run(_ statements: [SQLStatement]) throws -> [SQLResult] {
            try statements.map(run)
        }

        private func run(_ statement: SQLStatement) throws -> SQLResult {
            let prepared = try prepare(statement.sql)
            defer {
                sqlite3_reset(prepared)
                sqlite3_clear_bindings(prepared)
            }
            for (position, value) in statement.parameters.enumerated() {
                let column = Int32(position + 1)
                switch value {
                case .integer(let number): sqlite3_bind_int64(prepared, column, number)
                case .text(let string): sqlite3_bind_text(prepared, column, string, -1, sqliteTransient)
                case .null: sqlite3_bind_null(prepared, column)
                }
            }
            var rows: [[SQLValue]] = []
            while true {
                let result = sqlite3_step(prepared)
                if result == SQLITE_DONE { break }
                guard result == SQLITE_ROW else { throw failure("step") }
                rows.append((0..<sqlite3_column_count(prepared)).map { column in
                    switch sqlite3_column_type(prepared, column) {
                    case SQLITE_INTEGER: .integer(sqlite3_column_int64(prepared, column))
                    case SQLITE_NULL: .null
                    default: .text(String(cString: sqlite3_column_text(prepared, column)))
                    }
                })
            }
            let changed = sqlite3_stmt_readonly(prepared) != 0 ? 0 : Int(sqlite3_changes(handle))
            return SQLResult(rows: rows, changed: changed)
        }

        /// Makes the next commits fsync the log or not. Only a change is run: SQLite parses a `PRAGMA` again each
        /// time it runs, so it is not kept prepared.
        func synchronize(durable: Bool) throws {
            guard durable != durableCommits else { return }
            let pragma = durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL"
            guard sqlite3_exec(handle, pragma, nil, nil, nil) == SQLITE_OK else { throw failure("exec") }
            durableCommits = durable
        }

        private func prepare(_ sql: String) throws -> OpaquePointer {
            if let statement = statements[sql] { return statement }
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
                throw failure("prepare")
            }
            statements[sql] = statement
            return statement
        }

        private func failure(_ operation: String) -> any Error {
            let code = sqlite3_extended_errcode(handle)
            let message = String(cString: sqlite3_errmsg(handle))
            let error = ShareError(.io, "ledger \(operation) failed: \(message) (sqlite \(code))")
            return code & 0xFF == SQLITE_BUSY || code & 0xFF == SQLITE_LOCKED ? Busy(error: error) : error
        }
    }
}

/// SQLITE_TRANSIENT: SQLite copies bound text before the call returns.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
