import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// The PostgreSQL server the tests use: `SHAREPIPE_TEST_PG`, a libpq URL (`.ci/run` starts a throw-away cluster and
/// sets it). Outside CI, tests that need it are skipped with a printed reason when it is unset; with `CI=true` they
/// run and fail.
enum TestPostgres {
    static let environment = ProcessInfo.processInfo.environment
    static let url = environment["SHAREPIPE_TEST_PG"].flatMap { $0.isEmpty ? nil : $0 }
    static let required = environment["CI"] == "true"

    /// Whether tests that need the server run.
    static let enabled: Bool = {
        if url == nil && !required {
            print("PostgreSQL tests skipped: SHAREPIPE_TEST_PG is unset (set it to a libpq URL, or run .ci/run)")
        }
        return url != nil || required
    }()

    static let skipReason: Comment = "SHAREPIPE_TEST_PG is unset (set it to a libpq URL, or run .ci/run)"

    /// The server URL; fails the test when it is unset (in CI).
    static func serverURL() throws -> String {
        try #require(url, "SHAREPIPE_TEST_PG must be set when CI=true")
    }

    /// A fresh, empty schema on the server, and a URL whose connections use it (`search_path`), so that every test
    /// has a database of its own without the cost of CREATE DATABASE.
    static func freshDatabase() throws -> String {
        let server = try serverURL()
        let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try PostgresDriver(url: server, setting: "SHAREPIPE_TEST_PG").run("CREATE SCHEMA \(schema)")
        let separator = server.contains("?") ? "&" : "?"
        return server + separator + "options=-c%20search_path%3D\(schema)"
    }

    /// `url` with its password replaced.
    static func withWrongPassword(_ url: String) -> String {
        guard let components = URLComponents(string: url), components.password != nil else { return url }
        var changed = components
        changed.password = "not-the-password"
        return changed.string ?? url
    }
}

/// The two ledgers the conformance tests run against.
enum LedgerKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgresql

    var testDescription: String { rawValue }

    /// SQLite, and PostgreSQL when its tests run.
    static var available: [LedgerKind] { TestPostgres.enabled ? allCases : [.sqlite] }

    /// A new, empty database of this kind: a file for SQLite, a schema of its own for PostgreSQL.
    func database(in directory: String) throws -> String {
        self == .sqlite ? directory + "/ledger-\(UUID().uuidString).sqlite" : try TestPostgres.freshDatabase()
    }

    /// A driver of `database`.
    func driver(_ database: String) throws -> any SQLDriver {
        self == .sqlite ? try SQLiteDriver(path: database) : try PostgresDriver(url: database, setting: "--ledger")
    }

    /// A ledger store on `database`, with leases as a daemon has them (PostgreSQL only).
    func store(_ database: String, owner: String = LedgerStore.currentOwner()) throws -> LedgerStore {
        try LedgerStore(driver: driver(database), lease: self == .sqlite ? nil : .seconds(30), owner: owner)
    }

    /// A new, empty ledger of this kind.
    func make(in directory: String) throws -> LedgerStore {
        try store(try database(in: directory))
    }
}
