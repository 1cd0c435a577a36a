import CSQLite
import Synchronization

/// A value bound to or read from SQLite.
enum SQLiteValue: Sendable, Equatable {
    case integer(Int64)
    case text(String)
    case null

    var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }
}

extension SQLiteValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    init(integerLiteral value: Int64) { self = .integer(value) }
    init(stringLiteral value: String) { self = .text(value) }
    init(_ value: Int) { self = .integer(Int64(value)) }
    init(_ value: Int64) { self = .integer(value) }
    init(_ value: String?) { self = value.map { .text($0) } ?? .null }
}

/// One SQLite connection, used by one thread at a time behind a lock; statements are prepared once and cached.
final class SQLiteDatabase: @unchecked Sendable {
    /// The statements of a connection, only reachable while its lock is held.
    final class Connection: @unchecked Sendable {
        fileprivate let handle: OpaquePointer
        private var statements: [String: OpaquePointer] = [:]

        fileprivate init(handle: OpaquePointer) {
            self.handle = handle
        }

        fileprivate func finalizeAll() {
            for statement in statements.values { sqlite3_finalize(statement) }
            statements = [:]
        }

        /// Runs one statement and returns its rows.
        @discardableResult
        func query(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
            let statement = try prepared(sql)
            defer {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            }
            for (position, value) in bindings.enumerated() {
                let column = Int32(position + 1)
                switch value {
                case .integer(let number): sqlite3_bind_int64(statement, column, number)
                case .text(let string): sqlite3_bind_text(statement, column, string, -1, sqliteTransient)
                case .null: sqlite3_bind_null(statement, column)
                }
            }
            var rows: [[SQLiteValue]] = []
            while true {
                let result = sqlite3_step(statement)
                if result == SQLITE_DONE { return rows }
                guard result == SQLITE_ROW else { throw error("step") }
                var row: [SQLiteValue] = []
                for column in 0..<sqlite3_column_count(statement) {
                    switch sqlite3_column_type(statement, column) {
                    case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                    case SQLITE_NULL: row.append(.null)
                    default: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                    }
                }
                rows.append(row)
            }
        }

        /// Rows changed by the last INSERT, UPDATE or DELETE.
        var changes: Int { Int(sqlite3_changes(handle)) }

        /// Runs several statements separated by semicolons, without bindings (schema, pragmas).
        func execute(script: String) throws {
            guard sqlite3_exec(handle, script, nil, nil, nil) == SQLITE_OK else { throw error("exec") }
        }

        private func prepared(_ sql: String) throws -> OpaquePointer {
            if let statement = statements[sql] { return statement }
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
                throw error("prepare")
            }
            statements[sql] = statement
            return statement
        }

        fileprivate func error(_ operation: String) -> ShareError {
            let message = String(cString: sqlite3_errmsg(handle))
            return ShareError(.io, "ledger \(operation) failed: \(message) (sqlite \(sqlite3_extended_errcode(handle)))")
        }
    }

    private let connection: Mutex<Connection>
    private let handle: OpaquePointer

    /// Opens (creating if needed) a database in WAL mode with a busy timeout.
    init(path: String) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw ShareError(.containerUnavailable, "ledger could not be opened: \(message)")
        }
        self.handle = handle
        let connection = Connection(handle: handle)
        do {
            try connection.execute(script: """
                PRAGMA busy_timeout = 10000;
                PRAGMA journal_mode = WAL;
                PRAGMA synchronous = FULL;
                PRAGMA foreign_keys = ON;
                """)
        } catch {
            sqlite3_close(handle)
            throw error
        }
        self.connection = Mutex(connection)
    }

    deinit {
        connection.withLock { $0.finalizeAll() }
        sqlite3_close(handle)
    }

    /// Runs `body` with the connection, holding its lock.
    @discardableResult
    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        try connection.withLock { connection in try body(connection) }
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction; rolls back when it throws. A transaction that is not
    /// `durable` commits without waiting for the disk (`synchronous=NORMAL` for this commit only): a power cut may
    /// lose it, never corrupt it, and the next durable commit makes it durable too.
    @discardableResult
    func transaction<T>(durable: Bool = true, _ body: (Connection) throws -> T) throws -> T {
        try connection.withLock { connection in
            if !durable { try connection.execute(script: "PRAGMA synchronous = NORMAL") }
            defer { if !durable { try? connection.execute(script: "PRAGMA synchronous = FULL") } }
            try connection.query("BEGIN IMMEDIATE")
            do {
                let result = try body(connection)
                try connection.query("COMMIT")
                return result
            } catch {
                _ = try? connection.query("ROLLBACK")
                throw error
            }
        }
    }
}

/// SQLITE_TRANSIENT: SQLite copies bound text before the call returns.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
