import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// What only the PostgreSQL ledger does: migrations under an advisory lock, leases across hosts, connection errors.
@Suite(.enabled(if: TestPostgres.enabled, TestPostgres.skipReason), .timeLimit(.minutes(5)))
struct PostgresLedgerTests {
    /// A ledger store on the PostgreSQL database at `url`.
    private func store(
        _ url: String, lease: Duration = .seconds(30), owner: String = LedgerStore.currentOwner()
    ) throws -> LedgerStore {
        try LedgerStore(driver: PostgresDriver(url: url, setting: "--ledger"), lease: lease, owner: owner)
    }

    private let latest = LedgerStore.migrations(PostgresDriver.dialect).count

    /// Publishes one share and returns its id.
    private func published(_ ledger: LedgerStore) throws -> String {
        let share = LedgerConformanceTests.record()
        try ledger.recordStaged([share])
        _ = try ledger.recordPublished([share.manifest.shareId], sourcesDone: [share.manifest.shareId])
        return share.manifest.shareId
    }

    @Test func migratesAnEmptyDatabaseOnceWhenDaemonsStartTogether() async throws {
        let url = try TestPostgres.freshDatabase()
        let versions = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<4 {
                group.addTask {
                    let ledger = try store(url, owner: "host-\(index)")
                    return try LedgerStore.schemaVersion(ledger.driver)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(versions == Array(repeating: latest, count: 4))
    }

    @Test func migratesFromThePreviousVersionKeepingRows() throws {
        let url = try TestPostgres.freshDatabase()
        let old = try PostgresDriver(url: url, setting: "test")
        try LedgerStore.migrate(old, to: latest - 1)
        #expect(try LedgerStore.schemaVersion(old) == latest - 1)
        try old.run(
            """
            INSERT INTO shares (id, created_at, state, attempts, bytes, updated_at)
            VALUES ('old-claim', 1, 'claimed', 1, 10, 1)
            """)
        let ledger = try store(url, lease: .milliseconds(200))
        #expect(try LedgerStore.schemaVersion(ledger.driver) == latest)
        #expect(try ledger.state(ofShare: "old-claim") == .claimed)
        #expect(try ledger.pending() == (1, 10))
        // A claim from before leases has none: it counts as expired.
        #expect(try ledger.pickExpiredClaims(limit: 10) == ["old-claim"])
    }

    @Test func refusesASchemaNewerThanItself() throws {
        let url = try TestPostgres.freshDatabase()
        let ledger = try store(url)
        try ledger.driver.run("UPDATE sharepipe_schema SET version = 99")
        let error = try #require(throws: ShareError.self) { try store(url) }
        #expect(error.code == .containerUnavailable)
        #expect(error.message.contains("schema version 99"))
    }

    @Test func leasesKeepLiveClaimsAndHandExpiredOnesToOneOtherDaemon() async throws {
        let url = try TestPostgres.freshDatabase()
        var hostA: LedgerStore? = try store(url, lease: .milliseconds(300), owner: "host-a:1:boot")
        let hostB = try store(url, lease: .milliseconds(300), owner: "host-b:2:boot")
        let hostC = try store(url, lease: .milliseconds(300), owner: "host-c:3:boot")
        let id = try published(try #require(hostA))
        #expect(try hostA?.recordClaimed([id]).histories.mapValues(\.attempts) == [id: 0])
        #expect(try hostB.listShares().map(\.claimedBy) == ["host-a:1:boot"])

        // Another host cannot complete a claim it does not hold.
        #expect(try hostB.recordProcessed([(id, 1)])
            == [PreconditionViolation(shareID: id, expected: [.claimed], found: .claimed)])
        // The heartbeat keeps the lease alive well past its length.
        // The scenario: three lease lengths of real time, since the lease is the server's and the heartbeat the
        // ledger's own thread; looked at every 50 ms.
        let live = ContinuousClock.now
        while ContinuousClock.now - live < .milliseconds(900) {
            #expect(try hostB.pickExpiredClaims(limit: 10).isEmpty)
            try await Task.sleep(for: .milliseconds(50))
        }

        hostA = nil
        var picked: [String] = []
        #expect(try await eventually(every: .milliseconds(50)) {
            picked = try hostB.pickExpiredClaims(limit: 10)
            return !picked.isEmpty
        })
        #expect(picked == [id])
        // Picked by B: C skips it while B checks it.
        #expect(try hostC.pickExpiredClaims(limit: 10).isEmpty)
        #expect(try hostB.recordRecovered(shareID: id).isEmpty)
        // Its processor never started: nothing is charged.
        #expect(try hostB.attempts(ofShare: id) == 0)
        #expect(try hostC.recordClaimed([id]).histories == [id: .init(attempts: 0, deaths: 0)])
        #expect(try hostC.recordProcessed([(id, 1)]).isEmpty)
    }

    @Test func aWrongPasswordNamesTheSettingButNotThePassword() throws {
        let url = try TestPostgres.serverURL()
        let wrong = TestPostgres.withWrongPassword(url)
        try #require(wrong != url, "SHAREPIPE_TEST_PG has no password to get wrong")
        let error = try #require(throws: ShareError.self) { try store(wrong) }
        #expect(error.code == .containerUnavailable)
        #expect(error.message.contains("--ledger"))
        #expect(error.message.contains("password authentication failed"))
        #expect(!error.message.contains("not-the-password"))
    }

    @Test func anUnreachableServerOrABadURLIsContainerUnavailable() throws {
        let unreachable = try #require(throws: ShareError.self) {
            try store("postgresql://nobody:secret@127.0.0.1:1/db")
        }
        #expect(unreachable.code == .containerUnavailable)
        #expect(unreachable.message.contains("postgresql://nobody@127.0.0.1:1/db"))
        #expect(!unreachable.message.contains("secret"))
        let malformed = try #require(throws: ShareError.self) {
            try store("postgresql://u:secret@host/db?nonsense=1")
        }
        #expect(malformed.code == .containerUnavailable)
        #expect(malformed.message.hasPrefix("--ledger: not a valid PostgreSQL connection URL"))
        #expect(!malformed.message.contains("secret"))
    }

    @Test func aBatchCostsOneRoundTrip() throws {
        let driver = try PostgresDriver(url: try TestPostgres.freshDatabase(), setting: "--ledger")
        let ledger = try LedgerStore(driver: driver, lease: .seconds(30))
        let shares = (0..<50).map { LedgerConformanceTests.record(inode: UInt64($0)) }
        let ids = shares.map(\.manifest.shareId)
        let start = driver.roundTrips.load(ordering: .relaxed)
        try ledger.recordStaged(shares)
        _ = try ledger.recordPublished(ids, sourcesDone: ids)
        _ = try ledger.recordClaimed(ids)
        _ = try ledger.recordProcessed(ids.map { ($0, 1) })
        #expect(driver.roundTrips.load(ordering: .relaxed) - start == 4)
        #expect(try ledger.status(now: LedgerClock.now()).processed == 50)
    }
}
