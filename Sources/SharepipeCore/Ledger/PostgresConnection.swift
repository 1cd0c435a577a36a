import CPQ
import Foundation
import Synchronization

/// The rows of one PostgreSQL statement, as text (nil for NULL), and the rows it changed.
struct PostgresRows: Sendable {
    var rows: [[String?]]
    var changed: Int

    /// The first column of the first row.
    var scalar: String? { rows.first?.first ?? nil }
}

/// One libpq connection, used by one thread at a time behind a lock. Every libpq call of sharepipe is in this file.
///
/// Parameters and results travel as text. A connection the server dropped (restart, network) is noticed before the
/// next call and opened again; while the server cannot be reached, calls fail at once with
/// ERR_CONTAINER_UNAVAILABLE and a new attempt is made only after a backoff (0.1 s, doubling up to 5 s), so callers
/// that retry in a loop do not hammer the server. Errors name the setting and a redacted target
/// (`postgresql://user@host:port/db`), never the password.
final class PostgresConnection: Sendable {
    /// The setting the URL came from, for error messages (`--ledger`).
    let setting: String
    /// The URL without its password.
    let target: String
    /// Statements sent to the server since the connection was made (benchmarks and tests count them).
    let roundTrips = Atomic<Int>(0)

    /// The libpq handle and the reconnect schedule; only touched with the lock held.
    private final class State: @unchecked Sendable {
        var handle: OpaquePointer?
        var retryAt: UInt64 = 0
        var backoff: UInt64 = PostgresConnection.firstBackoff
        var reconnections = 0
        var everConnected = false
    }

    private static let firstBackoff: UInt64 = 100_000_000
    private static let maxBackoff: UInt64 = 5_000_000_000

    private let url: String
    private let state: Mutex<State>

    /// Checks the URL and connects; a URL libpq cannot parse, or a server that cannot be reached or refuses the
    /// login, is ERR_CONTAINER_UNAVAILABLE naming `setting`.
    init(url: String, setting: String) throws {
        self.url = url
        self.setting = setting
        target = try Self.redacted(url, setting: setting)
        state = Mutex(State())
        try state.withLock { state in try connect(state) }
    }

    deinit {
        state.withLock { state in
            if let handle = state.handle { PQfinish(handle) }
        }
    }

    /// How many times the connection was opened again after it was lost; a change tells a watcher that the server
    /// went away and came back.
    var reconnections: Int { state.withLock { $0.reconnections } }

    /// Runs `body` with the connection, holding its lock; the connection is opened again first if it was lost.
    @discardableResult
    func withSession<T>(_ body: (Session) throws -> T) throws -> T {
        try state.withLock { state in
            try ensureConnected(state)
            guard let handle = state.handle else { throw unavailable("not connected") }
            let session = Session(handle: handle, connection: self)
            do {
                return try body(session)
            } catch {
                if PQstatus(handle) != CONNECTION_OK {
                    PQfinish(handle)
                    state.handle = nil
                }
                throw error
            }
        }
    }

    /// Runs `body` in one transaction (`BEGIN` … `COMMIT`); rolls back when it throws.
    @discardableResult
    func transaction<T>(_ body: (Session) throws -> T) throws -> T {
        try withSession { session in
            try session.query("BEGIN")
            do {
                let result = try body(session)
                try session.query("COMMIT")
                return result
            } catch {
                _ = try? session.query("ROLLBACK")
                throw error
            }
        }
    }

    /// The statements of a connection, only reachable while its lock is held.
    struct Session {
        fileprivate let handle: OpaquePointer
        fileprivate let connection: PostgresConnection

        /// Runs one statement with text parameters (`$1`, `$2` …) and returns its rows as text.
        @discardableResult
        func query(_ sql: String, _ parameters: [String?] = []) throws -> PostgresRows {
            let copies = parameters.map { $0.flatMap { strdup($0) } }
            defer { for copy in copies { free(copy) } }
            let values = copies.map { UnsafePointer<CChar>($0) }
            connection.roundTrips.add(1, ordering: .relaxed)
            let result = values.withUnsafeBufferPointer { buffer in
                PQexecParams(handle, sql, Int32(parameters.count), nil, buffer.baseAddress, nil, nil, 0)
            }
            guard let result else { throw connection.failure(handle, result: nil) }
            defer { PQclear(result) }
            let status = PQresultStatus(result)
            guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
                throw connection.failure(handle, result: result)
            }
            var rows: [[String?]] = []
            let columns = PQnfields(result)
            for row in 0..<PQntuples(result) {
                rows.append((0..<columns).map { column in
                    PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
                })
            }
            let changed = Int(String(cString: PQcmdTuples(result))) ?? 0
            return PostgresRows(rows: rows, changed: changed)
        }
    }

    // MARK: Connecting

    private func ensureConnected(_ state: State) throws {
        if let handle = state.handle {
            // Reads whatever the server sent while the connection was idle: a server that shut down has sent its
            // goodbye and closed the socket, which turns the status bad here instead of failing the next statement.
            if PQconsumeInput(handle) == 1 && PQstatus(handle) == CONNECTION_OK { return }
            PQfinish(handle)
            state.handle = nil
            state.retryAt = 0
        }
        let now = System.monotonicNanoseconds()
        guard now >= state.retryAt else {
            let wait = Double(state.retryAt - now) / 1e9
            throw unavailable("the server cannot be reached; next attempt in \(String(format: "%.1f", wait)) s")
        }
        try connect(state)
    }

    private func connect(_ state: State) throws {
        // libpq's defaults first, then the URL, which wins: a connect timeout, so an unreachable host fails a call
        // in seconds, and the application name the server's activity view shows.
        let keywords = ["connect_timeout", "fallback_application_name", "dbname"]
        let values = ["5", "sharepipe", url]
        let handle = withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in PQconnectdbParams(keywordPointers, valuePointers, 1) }
        }
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map { Self.oneLine(PQerrorMessage($0)) } ?? "out of memory"
            if let handle { PQfinish(handle) }
            state.retryAt = System.monotonicNanoseconds() + state.backoff
            state.backoff = min(state.backoff * 2, Self.maxBackoff)
            throw unavailable("cannot connect: \(message)")
        }
        // Notices (such as "already exists, skipping") would go to stderr; errors still come back as errors.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        if state.everConnected { state.reconnections += 1 }
        state.everConnected = true
        state.handle = handle
        state.backoff = Self.firstBackoff
        state.retryAt = 0
    }

    // MARK: Errors

    private func unavailable(_ detail: String) -> ShareError {
        ShareError(.containerUnavailable, "ledger \(target) (\(setting)): \(detail)")
    }

    /// A failed statement: a lost connection or a server shutting down is ERR_CONTAINER_UNAVAILABLE, anything
    /// else ERR_IO with the server's message and SQLSTATE.
    fileprivate func failure(_ handle: OpaquePointer, result: OpaquePointer?) -> ShareError {
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

/// Calls `body` with a NULL-terminated array of C strings that live for the call.
private func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
    let copies = strings.map { strdup($0) }
    defer { for copy in copies { free(copy) } }
    let pointers = copies.map { UnsafePointer<CChar>($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
