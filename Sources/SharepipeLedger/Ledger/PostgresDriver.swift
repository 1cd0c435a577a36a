import CPQ
import Foundation
import SharepipeSystem
import Synchronization

/// The driver of a PostgreSQL ledger, with every libpq call of sharepipe: a small pool of connections, none held under
/// a lock across a connect or a round trip (the lease heartbeat never waits behind a slow query); one `execute` is one
/// pipeline, an implicit transaction in one round trip. A dropped connection is replaced before use; an unreachable
/// server fails calls at once with ERR_CONTAINER_UNAVAILABLE until a backoff (0.1 s doubling to 5 s) allows a new
/// connect. Errors name the setting and a redacted target (`postgresql://user@host:port/db`).
package final class PostgresDriver: SQLDriver {
    static let dialect = SQLDialect(
        bigint: "BIGINT", serialKey: "BIGSERIAL PRIMARY KEY", lockRows: " FOR UPDATE",
        skipLocked: " FOR UPDATE SKIP LOCKED", now: "(extract(epoch from clock_timestamp()) * 1000)::bigint",
        migrationPrelude: [
            // Serializes the migrations of every sharepipe ledger in the database ("sharepip" in ASCII).
            "SELECT pg_advisory_xact_lock(8315178058578342256)",
            "CREATE TABLE IF NOT EXISTS sharepipe_schema (version INTEGER NOT NULL)",
            "INSERT INTO sharepipe_schema (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM sharepipe_schema)",
        ],
        schemaPresent: "SELECT CASE WHEN to_regclass('sharepipe_schema') IS NULL THEN 0 ELSE 1 END",
        schemaVersion: "SELECT version FROM sharepipe_schema",
        setSchemaVersion: { "UPDATE sharepipe_schema SET version = \($0)" }, numberedPlaceholders: true,
        begin: "BEGIN", keyLock: "SELECT pg_advisory_xact_lock(CAST(? AS INTEGER), CAST(? AS INTEGER))")

    package var dialect: SQLDialect { Self.dialect }
    /// The setting the URL came from (`--ledger`), and the URL without its password, for error messages.
    package let setting: String, target: String
    /// Round trips to the server (benchmarks and tests count them).
    let roundTrips = Atomic<Int>(0)

    private let url: String
    private let pool = Mutex(Pool())

    /// The idle connections, the reconnect schedule, and whether a connection was lost since the last connect.
    private struct Pool {
        var idle: [Connection] = [], retryAt: UInt64 = 0, backoff = PostgresDriver.firstBackoff
        var lost = false, reconnections = 0
    }

    private static let (firstBackoff, maxBackoff, maxIdle): (UInt64, UInt64, Int) = (100_000_000, 5_000_000_000, 4)

    /// Checks the URL and connects once; a URL libpq cannot parse, or a server that cannot be reached or refuses the
    /// login, is ERR_CONTAINER_UNAVAILABLE naming `setting`.
    package init(url: String, setting: String) throws {
        self.url = url
        self.setting = setting
        target = try Self.redacted(url, setting: setting)
        let first = try connect()
        pool.withLock { $0.idle.append(first) }
    }

    package var reconnections: Int { pool.withLock { $0.reconnections } }

    package func execute(_ statements: [SQLStatement], durable: Bool) throws -> [SQLResult] {
        try withSession { try $0.run(statements) }
    }

    /// Runs `body` with a connection of its own, given back to the pool afterwards unless the server dropped it.
    package func withSession<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        let connection = try checkOut()
        defer { checkIn(connection) }
        return try body(connection)
    }

    private func checkOut() throws -> Connection {
        while true {
            let (idle, wait) = pool.withLock { pool -> (Connection?, UInt64) in
                if let idle = pool.idle.popLast() { return (idle, 0) }
                let now = System.monotonicNanoseconds()
                return (nil, pool.retryAt > now ? pool.retryAt - now : 0)
            }
            guard let idle else {
                guard wait == 0 else {
                    let seconds = String(format: "%.1f", Double(wait) / 1e9)
                    throw unavailable("the server cannot be reached; next attempt in \(seconds) s")
                }
                return try connect()
            }
            if idle.isAlive { return idle }
            pool.withLock { $0.lost = true }
        }
    }

    private func checkIn(_ connection: Connection) {
        let alive = connection.isAlive
        // A connection beyond the idle limit is closed by its deinit, once the caller lets go of it.
        pool.withLock { pool in
            if !alive { pool.lost = true } else if pool.idle.count < Self.maxIdle { pool.idle.append(connection) }
        }
    }

    /// Opens a connection, outside the pool's lock; a failure pushes the next attempt back.
    private func connect() throws -> Connection {
        // libpq's defaults first, then the URL, which wins: a connect timeout, so an unreachable host fails a call
        // in seconds, and the application name the server's activity view shows.
        let keywords = ["connect_timeout", "fallback_application_name", "dbname"]
        let values = ["5", "sharepipe", url]
        let handle = System.withCStrings(keywords) { keywordPointers in
            System.withCStrings(values) { valuePointers in PQconnectdbParams(keywordPointers, valuePointers, 1) }
        }
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map { Self.oneLine(PQerrorMessage($0)) } ?? "out of memory"
            if let handle { PQfinish(handle) }
            pool.withLock { pool in
                pool.retryAt = System.monotonicNanoseconds() + pool.backoff
                pool.backoff = min(pool.backoff * 2, Self.maxBackoff)
            }
            throw unavailable("cannot connect: \(message)")
        }
        // Notices (such as "already exists, skipping") would go to stderr; errors still come back as errors.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        pool.withLock { pool in
            if pool.lost { pool.reconnections += 1 }
            pool.lost = false
            pool.backoff = Self.firstBackoff
            pool.retryAt = 0
        }
        return Connection(handle: handle, driver: self)
    }

    /// One libpq connection, used by one caller at a time (the pool hands it out).
    private final class Connection: SQLSession, @unchecked Sendable {
        let handle: OpaquePointer
        unowned let driver: PostgresDriver

        init(handle: OpaquePointer, driver: PostgresDriver) {
            self.handle = handle
            self.driver = driver
        }

        deinit { PQfinish(handle) }

        /// Reads whatever the server sent while the connection was idle: a server that shut down has sent its
        /// goodbye and closed the socket, which turns the status bad here instead of failing the next statement.
        /// A connection left in a pipeline by a failure is not reused either.
        var isAlive: Bool {
            PQconsumeInput(handle) == 1 && PQstatus(handle) == CONNECTION_OK
                && PQpipelineStatus(handle) == PQ_PIPELINE_OFF
        }

        /// Sends the statements in one pipeline (an implicit transaction: all or none) and reads their results.
        func run(_ statements: [SQLStatement]) throws -> [SQLResult] {
            guard PQenterPipelineMode(handle) == 1 else { throw driver.failure(handle, result: nil) }
            driver.roundTrips.add(1, ordering: .relaxed)
            for statement in statements { try send(statement) }
            guard PQpipelineSync(handle) == 1 else { throw driver.failure(handle, result: nil) }
            var results: [SQLResult] = []
            var failure: ShareError?
            // A NULL ends one statement's results; the pipeline ends with its sync (or with a connection lost).
            var ended = 0
            while ended <= statements.count {
                guard let result = PQgetResult(handle) else {
                    ended += 1
                    continue
                }
                defer { PQclear(result) }
                let status = PQresultStatus(result)
                if status == PGRES_PIPELINE_SYNC { break }
                if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                    results.append(Self.read(result))
                } else if status != PGRES_PIPELINE_ABORTED {
                    failure = failure ?? driver.failure(handle, result: result)
                }
            }
            if PQexitPipelineMode(handle) != 1 && failure == nil { failure = driver.failure(handle, result: nil) }
            if let failure { throw failure }
            guard results.count == statements.count else { throw driver.failure(handle, result: nil) }
            return results
        }

        /// Parameters go as text, typed as 64-bit integers or text (a NULL's type the server infers).
        private func send(_ statement: SQLStatement) throws {
            let sql = PostgresDriver.dialect.placeholders(statement.sql)
            let types: [Oid] = statement.parameters.map { $0.integer != nil ? 20 : $0.text != nil ? 25 : 0 }
            let values = statement.parameters.map { $0.integer.map { String($0) } ?? $0.text }
            let sent = System.withCStrings(values) { valuePointers in
                types.withUnsafeBufferPointer { typeBuffer in
                    PQsendQueryParams(
                        handle, sql, Int32(values.count), typeBuffer.baseAddress, valuePointers, nil, nil, 0)
                }
            }
            guard sent == 1 else { throw driver.failure(handle, result: nil) }
        }

        /// Integer columns (int2/4/8, and numeric sums) as integers, the rest as text.
        private static func read(_ result: OpaquePointer) -> SQLResult {
            let columns = PQnfields(result)
            let types = (0..<columns).map { PQftype(result, $0) }
            let rows = (0..<PQntuples(result)).map { row in
                (0..<columns).map { column -> SQLValue in
                    guard PQgetisnull(result, row, column) == 0 else { return .null }
                    let text = String(cString: PQgetvalue(result, row, column))
                    let integral = [20, 21, 23, 1700].contains(types[Int(column)])
                    return integral ? Int64(text).map { .integer($0) } ?? .text(text) : .text(text)
                }
            }
            return SQLResult(rows: rows, changed: Int(String(cString: PQcmdTuples(result))) ?? 0)
        }
    }

    // MARK: Errors

    private func unavailable(_ detail: String) -> ShareError {
        ShareError(.containerUnavailable, "ledger \(target) (\(setting)): \(detail)")
    }

    /// A failed statement: a lost connection or a server shutting down is ERR_CONTAINER_UNAVAILABLE, anything
    /// else ERR_IO with the server's message and SQLSTATE.
    private func failure(_ handle: OpaquePointer, result: OpaquePointer?) -> ShareError {
        let message = result.map { Self.oneLine(PQresultErrorMessage($0)) } ?? ""
        let text = message.isEmpty ? Self.oneLine(PQerrorMessage(handle)) : message
        let sqlState = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) }
        if PQstatus(handle) != CONNECTION_OK || sqlState.map(Self.isConnectionState) == true {
            return unavailable("connection lost: \(text)")
        }
        return ShareError(.io, "ledger statement failed: \(text) (SQLSTATE \(sqlState ?? "none"))")
    }

    /// Connection exceptions (08), and the server shutting down or starting up (57P01–57P03).
    private static func isConnectionState(_ state: String) -> Bool {
        state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state)
    }

    private static func oneLine(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "" }
        return String(cString: message).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }

    /// `postgresql://user@host:port/dbname` from what libpq parses out of `url` (with the `PG*` environment
    /// variables filling what the URL leaves out), never the password.
    static func redacted(_ url: String, setting: String) throws -> String {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            let detail = error.map { String(cString: $0).split(separator: ":").first.map(String.init) ?? "" } ?? ""
            PQfreemem(error)
            throw ShareError(
                .containerUnavailable,
                "\(setting): not a valid PostgreSQL connection URL\(detail.isEmpty ? "" : " (\(detail))")")
        }
        defer { PQconninfoFree(options) }
        var parts: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { parts[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        let user = parts["user"].map { $0 + "@" } ?? ""
        let port = parts["port"].map { ":" + $0 } ?? ""
        let database = parts["dbname"].map { "/" + $0 } ?? ""
        return "postgresql://\(user)\(parts["host"] ?? parts["hostaddr"] ?? "")\(port)\(database)"
    }
}
