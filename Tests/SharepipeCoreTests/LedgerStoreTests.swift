import Foundation
import Synchronization
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// The one ledger store on both backends: ledgers the previous sharepipe made open and migrate, the ownership guard
/// holds on both, daemons opening one fresh SQLite ledger together all open it, and no PostgreSQL call waits behind
/// another's round trip.
@Suite(.timeLimit(.minutes(5))) struct LedgerStoreTests {
    /// The schema the previous sharepipe (two ledger implementations) created: SQLite at version 2, PostgreSQL at 3.
    static func previousSchema(_ kind: LedgerKind) -> [String] {
        switch kind {
        case .sqlite:
            """
            CREATE TABLE shares (id TEXT PRIMARY KEY, source_app TEXT, created_at INTEGER NOT NULL, state TEXT NOT NULL,
                attachments INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL DEFAULT 0,
                attempts INTEGER NOT NULL DEFAULT 0, not_before INTEGER NOT NULL DEFAULT 0, last_code TEXT,
                updated_at INTEGER NOT NULL);
            CREATE INDEX shares_state ON shares(state);
            CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, share_id TEXT NOT NULL,
                event TEXT NOT NULL, attachment INTEGER, type TEXT, bytes INTEGER, code TEXT, duration_ms INTEGER);
            CREATE INDEX events_share ON events(share_id);
            CREATE INDEX events_at ON events(at);
            CREATE TABLE sources (share_id TEXT NOT NULL, device INTEGER NOT NULL, inode INTEGER NOT NULL,
                size INTEGER NOT NULL, mtime INTEGER NOT NULL, sha256 TEXT NOT NULL, state TEXT NOT NULL);
            CREATE INDEX sources_state ON sources(state);
            CREATE INDEX sources_share ON sources(share_id);
            PRAGMA user_version = 2
            """.components(separatedBy: ";")
        case .postgresql:
            """
            CREATE TABLE sharepipe_schema (version INTEGER NOT NULL);
            INSERT INTO sharepipe_schema (version) VALUES (3);
            CREATE TABLE shares (id TEXT PRIMARY KEY, source_app TEXT, created_at BIGINT NOT NULL, state TEXT NOT NULL,
                attachments INTEGER NOT NULL DEFAULT 0, bytes BIGINT NOT NULL DEFAULT 0,
                attempts INTEGER NOT NULL DEFAULT 0, not_before BIGINT NOT NULL DEFAULT 0, last_code TEXT,
                updated_at BIGINT NOT NULL);
            CREATE INDEX shares_state ON shares(state);
            CREATE TABLE events (seq BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL, share_id TEXT NOT NULL,
                event TEXT NOT NULL, attachment INTEGER, type TEXT, bytes BIGINT, code TEXT, duration_ms BIGINT);
            CREATE INDEX events_share ON events(share_id);
            CREATE INDEX events_at ON events(at);
            CREATE TABLE sources (share_id TEXT NOT NULL, device BIGINT NOT NULL, inode BIGINT NOT NULL,
                size BIGINT NOT NULL, mtime BIGINT NOT NULL, sha256 TEXT NOT NULL, state TEXT NOT NULL);
            CREATE INDEX sources_state ON sources(state);
            CREATE INDEX sources_share ON sources(share_id);
            ALTER TABLE shares ADD COLUMN claimed_by TEXT, ADD COLUMN lease_until BIGINT;
            CREATE INDEX shares_lease ON shares(lease_until) WHERE state = 'claimed'
            """.components(separatedBy: ";")
        }
    }

    @Test(arguments: LedgerKind.available)
    func aLedgerThePreviousSharepipeMadeOpensWithItsRows(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let database = try kind.database(in: dir)
            _ = try kind.driver(database).execute(
                (Self.previousSchema(kind) + [
                    """
                    INSERT INTO shares (id, created_at, state, attachments, bytes, updated_at)
                    VALUES ('old-published', 1, 'published', 1, 5, 1)
                    """,
                    """
                    INSERT INTO shares (id, created_at, state, attempts, bytes, updated_at)
                    VALUES ('old-claim', 1, 'claimed', 1, 10, 1)
                    """,
                    "INSERT INTO events (at, share_id, event) VALUES (1, 'old-claim', 'claimed')",
                    """
                    INSERT INTO sources (share_id, device, inode, size, mtime, sha256, state)
                    VALUES ('old-published', 1, 2, 5, 3, 'ab', 'staged')
                    """,
                ]).map { SQLStatement($0) },
                durable: true)

            let ledger = try kind.store(database, owner: "host-a:1:boot")
            let latest = LedgerStore.migrations(ledger.driver.dialect).count
            #expect(try LedgerStore.schemaVersion(ledger.driver) == latest)
            #expect(try ledger.pending() == (2, 15))
            #expect(try ledger.stagedSources().map(\.shareID) == ["old-published"])
            #expect(try ledger.lastEventSequence() == 1)
            // A claim made before the ownership guard has no owner, and no run recorded as started: recovery takes it
            // back without charging it.
            #expect(try ledger.runState(ofShare: "old-claim") == .notStarted)
            #expect(try ledger.recordRecovered(shareID: "old-claim").isEmpty)
            #expect(try ledger.attempts(ofShare: "old-claim") == 1)
            // New claims record their owner; event numbers go on from the old ones.
            #expect(try ledger.recordClaimed(["old-published"]).histories.mapValues(\.attempts) == ["old-published": 0])
            #expect(try ledger.listShares().first { $0.shareId == "old-published" }?.claimedBy == "host-a:1:boot")
            #expect(try ledger.timeline(ofShare: "old-published").map(\.sequence) == [3])
            #expect(try ledger.recordProcessed([("old-published", 1)]).isEmpty)
            // The next start finds nothing to migrate and everything kept.
            let reopened = try kind.store(database)
            #expect(try LedgerStore.schemaVersion(reopened.driver) == latest)
            #expect(try reopened.state(ofShare: "old-published") == .processed)
        }
    }

    @Test(arguments: LedgerKind.available)
    func onlyTheClaimerFinishesAClaimAndRecoveryHandsItOn(kind: LedgerKind) async throws {
        try await withTemporaryDirectory { dir in
            let database = try kind.database(in: dir)
            let hostA = try kind.store(database, owner: "host-a:1:boot")
            let hostB = try kind.store(database, owner: "host-b:2:boot")
            let share = LedgerConformanceTests.record()
            let id = share.manifest.shareId
            try hostA.recordStaged([share])
            _ = try hostA.recordPublished([id], sourcesDone: [id])
            #expect(try hostA.recordClaimed([id]).histories.mapValues(\.attempts) == [id: 0])
            #expect(try hostB.listShares().map(\.claimedBy) == ["host-a:1:boot"])

            let held = [PreconditionViolation(shareID: id, expected: [.claimed], found: .claimed)]
            #expect(try hostB.recordProcessed([(id, 1)]) == held)
            #expect(try hostB.recordRetry(shareID: id, code: .io, durationMilliseconds: 1, notBefore: 0) == held)
            #expect(try hostB.recordQuarantined(shareID: id, code: .io, durationMilliseconds: 1) == held)
            #expect(try hostB.recordReleased(shareID: id) == held)
            #expect(try hostB.recordRuns(started: id, succeeded: []) == held)
            #expect(try hostA.recordRuns(started: id, succeeded: []).isEmpty)
            #expect(try hostB.timeline(ofShare: id).map(\.event) == ["staged", "published", "claimed"])
            #expect(try hostB.attempts(ofShare: id) == 0)

            // Recovery (of a claim whose claimer is gone) is anyone's; the claim then passes to another daemon, with
            // the death of a running processor charged.
            #expect(try hostB.recordCrashed(shareID: id).isEmpty)
            #expect(try hostB.recordClaimed([id]).histories == [id: .init(attempts: 0, deaths: 1)])
            #expect(try hostA.recordProcessed([(id, 1)]) == held)
            #expect(try hostB.recordProcessed([(id, 1)]).isEmpty)
            #expect(try hostA.state(ofShare: id) == .processed)
            #expect(try hostA.listShares().isEmpty)
        }
    }

    /// SQLite's busy handler as configured, and none at all: then the driver's own retries do all the waiting.
    @Test(arguments: [Duration.seconds(5), .zero])
    func daemonsOpeningOneFreshLedgerTogetherAllOpenIt(busyTimeout: Duration) async throws {
        try await withTemporaryDirectory { dir in
            for round in 0..<4 {
                let path = dir + "/ledger-\(round).sqlite"
                let errors = await StartGate.run(threads: 12) { index in
                    let driver = try SQLiteDriver(path: path, busyTimeout: busyTimeout)
                    let ledger = try LedgerStore(driver: driver, owner: "daemon-\(index)")
                    try ledger.recordStaged([LedgerConformanceTests.record(inode: UInt64(index))])
                }
                #expect(errors.isEmpty, "round \(round): \(errors)")
                let ledger = try LedgerStore(driver: SQLiteDriver(path: path))
                #expect(try ledger.pending().shares == 12)
                let latest = LedgerStore.migrations(SQLiteDriver.dialect).count
                #expect(try LedgerStore.schemaVersion(ledger.driver) == latest)
            }
        }
    }

    /// Each call's commits are as durable as it asks, whatever the call before asked: SQLite's `synchronous` is `FULL`
    /// (2) for a durable call and `NORMAL` (1) for one that is not, for lone statements, transactions and sessions.
    @Test func eachCallCommitsAsDurablyAsItAsks() async throws {
        try await withTemporaryDirectory { dir in
            let driver = try SQLiteDriver(path: dir + "/ledger.sqlite")
            func level(durable: Bool) throws -> Int {
                try driver.execute([SQLStatement("PRAGMA synchronous")], durable: durable)[0].scalar.int
            }
            let table = SQLStatement("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
            let insert = SQLStatement("INSERT INTO t (x) VALUES (1)")
            #expect(try level(durable: true) == 2)
            #expect(try level(durable: false) == 1)
            #expect(try level(durable: false) == 1)
            #expect(try level(durable: true) == 2)
            _ = try driver.execute([table, insert], durable: false)
            #expect(try driver.withSession { try $0.run([SQLStatement("PRAGMA synchronous")])[0].scalar.int } == 2)
            _ = try driver.execute([table, insert], durable: false)
            #expect(try driver.run("PRAGMA synchronous").scalar.int == 2)
            #expect(try driver.run("SELECT COUNT(*) FROM t").scalar.int == 2)
        }
    }

    /// The heartbeat renews all of a daemon's leases in one statement while its completer records batches of the
    /// same rows: both must lock rows in one order (by id), or PostgreSQL finds a deadlock and fails one of them (a
    /// completion that fails is processed again after recovery).
    @Test(.enabled(if: TestPostgres.enabled, TestPostgres.skipReason))
    func leaseRenewalsAndCompletionsOfTheSameRowsNeverDeadlock() async throws {
        let ledger = try LedgerKind.postgresql.make(in: "")
        // Random (v4) ids: the rows' order on disk is not their ids' order.
        let records = (0..<600).map { _ in LedgerConformanceTests.record() }
        let ids = records.map(\.manifest.shareId)
        try ledger.recordStaged(records)
        _ = try ledger.recordPublished(ids, sourcesDone: ids)
        _ = try ledger.recordClaimed(ids)
        let done = Atomic<Bool>(false)
        let renewals = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let renewing = Thread {
            while !done.load(ordering: .relaxed) {
                do { try ledger.renewLeases() } catch { failures.withLock { $0.append("renew: \(error)") } }
                renewals.add(1, ordering: .relaxed)
            }
        }
        renewing.start()
        #expect(try await eventually(.seconds(30)) { renewals.load(ordering: .relaxed) > 0 })
        let shuffled = ids.shuffled()
        for batch in stride(from: 0, to: shuffled.count, by: 24).map({ Array(shuffled[$0..<min($0 + 24, shuffled.count)]) }) {
            do {
                _ = try ledger.recordProcessed(batch.map { ($0, 1) })
            } catch {
                failures.withLock { $0.append("complete: \(error)") }
            }
        }
        done.store(true, ordering: .relaxed)
        #expect(try await eventually(.seconds(30)) { renewing.isFinished })
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        #expect(renewals.load(ordering: .relaxed) >= 5, "the renewals ran alongside the completions")
        #expect(try ledger.pending().shares == 0)
    }

    @Test(.enabled(if: TestPostgres.enabled, TestPostgres.skipReason))
    func aSlowPostgresQueryHoldsUpNeitherOtherCallsNorTheLeases() async throws {
        let ledger = try LedgerKind.postgresql.make(in: "")
        let share = LedgerConformanceTests.record()
        let id = share.manifest.shareId
        try ledger.recordStaged([share])
        _ = try ledger.recordClaimed([id])
        // The slow query waits for an advisory lock that a connection of another driver holds until the checks are
        // done; on a thread of its own, started here (a Task could wait for a free cooperative thread while the
        // whole suite runs).
        let holder = try PostgresDriver(url: TestPostgres.freshDatabase(), setting: "SHAREPIPE_TEST_PG")
        let key = Int.random(in: 1..<Int(Int32.max))
        _ = try holder.run("SELECT pg_advisory_lock(\(key))")
        let slowFailure = Mutex<String?>(nil)
        let slow = Thread {
            do { _ = try ledger.driver.run("SELECT pg_advisory_lock(\(key))") } catch {
                slowFailure.withLock { $0 = "\(error)" }
            }
        }
        slow.start()
        let waiting = "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = \(key)"
        #expect(try await eventually(.seconds(30)) { try holder.run(waiting).scalar.int == 1 })
        // Asked through the same ledger while the slow query waits on the server.
        try ledger.renewLeases()
        #expect(try ledger.state(ofShare: id) == .claimed)
        #expect(!slow.isFinished, "the slow query ended before the other calls did")
        _ = try holder.run("SELECT pg_advisory_unlock(\(key))")
        #expect(try await eventually(.seconds(30)) { slow.isFinished })
        #expect(slowFailure.withLock { $0 } == nil)
    }
}

/// Threads of their own, released at the same instant.
private final class StartGate: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var open = false
    private var errors: [String] = []
    private var running = 0

    /// Runs `body` on `threads` new threads at once and returns the errors they threw, once all have ended.
    static func run(threads: Int, _ body: @escaping @Sendable (Int) throws -> Void) async -> [String] {
        let gate = StartGate()
        gate.running = threads
        return await withCheckedContinuation { continuation in
            for index in 0..<threads {
                Thread {
                    gate.condition.lock()
                    while !gate.open { gate.condition.wait() }
                    gate.condition.unlock()
                    var failure: String?
                    do { try body(index) } catch { failure = "thread \(index): \(error)" }
                    gate.condition.lock()
                    if let failure { gate.errors.append(failure) }
                    gate.running -= 1
                    let finished = gate.running == 0 ? gate.errors : nil
                    gate.condition.unlock()
                    if let finished { continuation.resume(returning: finished) }
                }.start()
            }
            gate.condition.lock()
            gate.open = true
            gate.condition.broadcast()
            gate.condition.unlock()
        }
    }
}
