import Foundation
import SharepipeSystem
import Synchronization

/// The ledger, written once over an `SQLDriver`: the schema and its migrations, every transition and every query —
/// share records and lifecycle events with codes and sizes, never content, never file names; nothing else holds SQL.
/// SQLite (daemons on one host) and PostgreSQL (several hosts) differ only in their driver and `SQLDialect`.
///
/// A transition is a list of guarded `Change`s applied in one transaction (`apply`). With a lease (PostgreSQL), a
/// claim records `lease_until`, renewed by a heartbeat thread while the process lives; another daemon picks a claim
/// whose lease expired (`pickExpiredClaims`) and recovers it if its `flock` is free. Times are the client's clock,
/// except leases, which use the database's. The design, step by step: docs/ledger.md.
package final class LedgerStore: Sendable {
    package let driver: any SQLDriver
    /// Who holds the claims this ledger records: host:pid:boot-id.
    let owner: String
    /// How long a claim's lease lasts without a heartbeat; nil for a ledger without leases, whose claimers share
    /// one host, where a claim's `flock` alone tells a dead claimer from a live one.
    package let leaseDuration: Duration?
    /// The thread renewing this process's leases, started by the first claim.
    private let heartbeat = Mutex<LeaseHeartbeat?>(nil)
    /// issue 33: whom the transitions write outbox rows for (none unless the daemon notifies).
    package let outboxTargets = Mutex(OutboxTargets())

    /// Opens the ledger over `driver`, bringing its schema up to date. A schema newer than this sharepipe is refused.
    package init(driver: any SQLDriver, lease: Duration? = nil, owner: String = LedgerStore.currentOwner()) throws {
        self.driver = driver
        self.leaseDuration = lease
        self.owner = owner
        try Self.migrate(driver)
    }

    deinit {
        heartbeat.withLock { $0?.stop() }
    }

    /// Who this process is, for `claimed_by`: host:pid:boot-id.
    package static func currentOwner() -> String {
        "\(System.hostName()):\(System.processID):\(System.bootID())"
    }

    // MARK: Schema

    /// `migrations[i]` takes a database from version i to i + 1. SQLite ledgers made before the ownership guard are
    /// at version 2, PostgreSQL ones at 3; both kinds end at the same schema.
    package static func migrations(_ dialect: SQLDialect) -> [[String]] {
        let bigint = dialect.bigint
        return [
            [
                """
                CREATE TABLE shares (id TEXT PRIMARY KEY, source_app TEXT, created_at \(bigint) NOT NULL,
                    state TEXT NOT NULL, attachments INTEGER NOT NULL DEFAULT 0, bytes \(bigint) NOT NULL DEFAULT 0,
                    attempts INTEGER NOT NULL DEFAULT 0, not_before \(bigint) NOT NULL DEFAULT 0, last_code TEXT,
                    updated_at \(bigint) NOT NULL)
                """,
                """
                CREATE TABLE events (seq \(dialect.serialKey), at \(bigint) NOT NULL, share_id TEXT NOT NULL,
                    event TEXT NOT NULL, attachment INTEGER, type TEXT, bytes \(bigint), code TEXT,
                    duration_ms \(bigint))
                """,
                """
                CREATE TABLE sources (share_id TEXT NOT NULL, device \(bigint) NOT NULL, inode \(bigint) NOT NULL,
                    size \(bigint) NOT NULL, mtime \(bigint) NOT NULL, sha256 TEXT NOT NULL, state TEXT NOT NULL)
                """,
                "CREATE INDEX shares_state ON shares(state)", "CREATE INDEX events_share ON events(share_id)",
                "CREATE INDEX events_at ON events(at)", "CREATE INDEX sources_state ON sources(state)",
            ],
            // v2: sources looked up by share (marking them done, a processed share's latency).
            ["CREATE INDEX sources_share ON sources(share_id)"],
            // v3: who holds a claim (the ownership guard) and, with leases, until when.
            [
                "ALTER TABLE shares ADD COLUMN claimed_by TEXT", "ALTER TABLE shares ADD COLUMN lease_until \(bigint)",
                "CREATE INDEX shares_lease ON shares(lease_until) WHERE state = 'claimed'",
            ],
            // v4 (issue 19): the first answer to each HTTP Idempotency-Key, per token NAME, for every daemon.
            [
                """
                CREATE TABLE http_idempotency (scope TEXT NOT NULL, idempotency_key TEXT NOT NULL,
                    share_id TEXT NOT NULL, status INTEGER NOT NULL, body TEXT NOT NULL, created_at \(bigint) NOT NULL,
                    PRIMARY KEY (scope, idempotency_key))
                """,
                "CREATE INDEX http_idempotency_created ON http_idempotency(created_at)",
            ],
            // v5: the contents of copies, for the duplicate check (issue 21).
            contentsMigration(dialect),
            // v6 (issue 19): the records of resumable uploads, for every daemon's `status`.
            uploadsMigration(dialect),
            // v7 (issue 23): every inbox file is looked up by device and inode (a source already published by a
            // daemon that died before unlinking it); through `sources_state` that read every staged row, 5 % of
            // the daemon's CPU in a 2,000-drop burst.
            ["CREATE INDEX sources_file ON sources(device, inode)"],
            // v8: the state directory a share was staged in (its `spool-id`), so that the recovery of one state
            // directory never repairs the rows of another's shares on a shared ledger. NULL: rows made before.
            ["ALTER TABLE shares ADD COLUMN spool TEXT"],
            // v9: inbox files are looked up by inode alone: a device number is not an identity across a restart
            // (a FUSE or NFS file system mounted again gets another) nor across hosts.
            ["DROP INDEX sources_file", "CREATE INDEX sources_inode ON sources(inode)"],
            // v10 (issue 33): the notification outbox.
            outboxMigration(dialect),
            // v11 (issue 34): where a claim's processor run is (`RunState`), and the consecutive deaths of a daemon
            // the share's processor was running at.
            [
                "ALTER TABLE shares ADD COLUMN run INTEGER NOT NULL DEFAULT 0",
                "ALTER TABLE shares ADD COLUMN deaths INTEGER NOT NULL DEFAULT 0",
            ],
            // v12 (issue 33): fewer of the outbox's indexes written with each event.
            outboxIndexMigration,
        ]
    }

    /// Applies the migrations up to `version` (all of them by default; tests stop early to build an older schema),
    /// in one transaction that daemons starting together take one after the other.
    static func migrate(_ driver: any SQLDriver, to version: Int? = nil) throws {
        let dialect = driver.dialect
        let steps = migrations(dialect)
        let target = version ?? steps.count
        if try schemaVersion(driver) == target { return }
        try driver.withSession { session in try driver.inTransaction(session) {
            _ = try session.run(dialect.migrationPrelude.map { SQLStatement($0) })
            let found = try session.run([SQLStatement(dialect.schemaVersion)])[0].scalar.int
            guard found <= steps.count else {
                let newer = "ledger schema version \(found) is newer than this sharepipe's \(steps.count)"
                throw ShareError(.containerUnavailable, newer)
            }
            guard found < target else { return }
            let statements = steps[found..<target].joined().map { SQLStatement($0) }
            _ = try session.run(statements + [SQLStatement(dialect.setSchemaVersion(target))])
        } }
    }

    /// The schema version of the database, 0 when it has none; creates nothing.
    package static func schemaVersion(_ driver: any SQLDriver) throws -> Int {
        guard try driver.run(driver.dialect.schemaPresent).scalar.int == 1 else { return 0 }
        return try driver.run(driver.dialect.schemaVersion).scalar.int
    }

    // MARK: Changes

    /// One share's guarded transition: `set` (SQL assignments with `?` placeholders bound to `values`) applies only
    /// when the row is in one of `from` and, when `owned`, claimed by this process; `events` are written, and with
    /// `forgetSources` its source records deleted, only then.
    struct Change {
        var shareID: String, from: [ShareState], owned: Bool, set: String, values: [SQLValue], events: [Event]
        var forgetSources: Bool

        init(
            _ shareID: String, from: [ShareState] = [.claimed], owned: Bool = false, set: String,
            values: [SQLValue] = [], forgetSources: Bool = false, _ events: Event...
        ) {
            (self.shareID, self.from, self.owned, self.set, self.values, self.forgetSources, self.events) =
                (shareID, from, owned, set, values, forgetSources, events)
        }
    }

    /// An event written by a change; its bytes are the share row's when `rowBytes`.
    struct Event {
        var event: LedgerEvent, code: ShareError.Code?, duration: Int64?, type: String?, rowBytes: Bool

        init(
            _ event: LedgerEvent, code: ShareError.Code? = nil, duration: Int64? = nil, type: String? = nil,
            rowBytes: Bool = false
        ) { (self.event, self.code, self.duration, self.type, self.rowBytes) = (event, code, duration, type, rowBytes) }
    }

    /// What a transition out of `claimed` clears.
    static let unclaimed = "claimed_by = NULL, lease_until = NULL, run = 0"
    /// What a run that ended (processed, or failed) clears as well: the deaths of runs before it were not in a row.
    static let ended = "deaths = 0, \(unclaimed)"

    /// Applies the changes and then `extra` in one transaction. Returns, for each share a change applied to, its
    /// attempts and deaths as they were before, and a violation (with the state found) for each share it did not
    /// apply to.
    @discardableResult
    func apply(_ changes: [Change], extra: [SQLStatement] = [], durable: Bool = true) throws
        -> (histories: [String: ClaimHistory], violations: [PreconditionViolation])
    {
        guard !changes.isEmpty || !extra.isEmpty else { return ([:], []) }
        let now = SQLValue.integer(LedgerClock.now())
        var statements: [SQLStatement] = []
        // Where each change's row (as found, locked) and its update are among the statements.
        var positions = Array(repeating: (found: 0, update: 0), count: changes.count)
        var wroteOutbox = false
        // Rows are locked in one order, so that two daemons changing the same shares cannot deadlock.
        for index in changes.indices.sorted(by: { changes[$0].shareID < changes[$1].shareID }) {
            let change = changes[index]
            let id = SQLValue.text(change.shareID)
            let states = change.from.map { "'\($0.rawValue)'" }.joined(separator: ", ")
            let condition = "id = ? AND state IN (\(states))" + (change.owned ? " AND claimed_by = ?" : "")
            let bound: [SQLValue] = change.owned ? [id, .text(owner)] : [id]
            positions[index].found = statements.count
            statements.append(
                SQLStatement("SELECT state, attempts, deaths FROM shares WHERE id = ?" + driver.dialect.lockRows, [id]))
            for event in change.events {
                // Typed NULLs: PostgreSQL cannot infer a parameter's type from a select list.
                statements.append(SQLStatement(
                    """
                    INSERT INTO events (at, share_id, event, code, duration_ms, type, bytes) SELECT ?, id, ?,
                        CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT), \(event.rowBytes ? "bytes" : "NULL")
                    FROM shares WHERE \(condition)
                    """,
                    [now, .text(event.event.rawValue), SQLValue(event.code?.rawValue),
                     SQLValue(event.duration), SQLValue(event.type)] + bound))
            }
            let outbox = outboxStatements(for: change, condition: condition, bound: bound)
            wroteOutbox = wroteOutbox || !outbox.isEmpty
            statements += outbox
            if change.forgetSources {
                statements.append(SQLStatement(
                    "DELETE FROM sources WHERE share_id IN (SELECT id FROM shares WHERE \(condition))", bound))
            }
            positions[index].update = statements.count
            statements.append(SQLStatement(
                "UPDATE shares SET \(change.set), updated_at = ? WHERE \(condition)", change.values + [now] + bound))
        }
        // issue 33: a publish or an outbox row wakes the other daemons' consumers and notifiers (PostgreSQL).
        if let wake = driver.dialect.wakeOthers,
            wroteOutbox || changes.contains(where: { $0.events.contains { $0.event == .published } })
        {
            statements.append(SQLStatement(wake))
        }
        let results = try driver.execute(statements + extra, durable: durable)
        if wroteOutbox { outboxWritten() }
        var histories: [String: ClaimHistory] = [:]
        var violations: [PreconditionViolation] = []
        for (change, position) in zip(changes, positions) {
            let found = results[position.found].rows.first
            if results[position.update].changed > 0 {
                histories[change.shareID] = .init(attempts: found?[1].int ?? 0, deaths: found?[2].int ?? 0)
            } else {
                let state = found?[0].text.flatMap(ShareState.init(rawValue:))
                violations.append(PreconditionViolation(shareID: change.shareID, expected: change.from, found: state))
            }
        }
        return (histories, violations)
    }

    /// One change in a transaction of its own.
    private func apply(_ change: Change) throws -> [PreconditionViolation] {
        try apply([change]).violations
    }

    /// A share's row and its attachment events, unguarded (a new share).
    private static func inserts(
        _ manifest: Manifest, state: ShareState, code: ShareError.Code?, at now: SQLValue, spool: String?
    ) -> [SQLStatement] {
        let copied = manifest.attachments.filter { $0.status == .copied }
        let row = SQLStatement(
            """
            INSERT INTO shares (id, source_app, created_at, state, attachments, bytes, last_code, updated_at, spool)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(manifest.shareId), SQLValue(manifest.sourceApp), now, .text(state.rawValue), SQLValue(copied.count),
             .integer(copied.reduce(0) { $0 + ($1.bytes ?? 0) }), SQLValue(code?.rawValue), now, SQLValue(spool)])
        return [row] + manifest.attachments.map { attachment in
            event(
                attachment.status == .copied ? .staged : .failed, manifest.shareId, at: now,
                attachment: attachment.index, type: attachment.typeIdentifier, bytes: attachment.bytes,
                code: attachment.error?.code)
        }
    }

    /// One event row.
    private static func event(
        _ event: LedgerEvent, _ shareID: String, at now: SQLValue, attachment: Int? = nil, type: String? = nil,
        bytes: Int64? = nil, code: ShareError.Code? = nil
    ) -> SQLStatement {
        SQLStatement(
            "INSERT INTO events (at, share_id, event, attachment, type, bytes, code) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [now, .text(shareID), .text(event.rawValue), SQLValue(attachment.map(Int64.init)), SQLValue(type),
             SQLValue(bytes), SQLValue(code?.rawValue)])
    }

    // MARK: Transitions

    /// Publish: the shares, their attachment events and source identities, state staged, in one commit — durable
    /// unless the caller makes it durable itself (a barrier of the file system the ledger is on).
    package func recordStaged(_ shares: [StagedRecord], spool: String? = nil, durable: Bool = true) throws {
        guard !shares.isEmpty else { return }
        let now = SQLValue.integer(LedgerClock.now())
        _ = try driver.execute(shares.flatMap { share in
            Self.inserts(share.manifest, state: .staged, code: nil, at: now, spool: spool)
                + Self.contentInserts(share.manifest, dialect: driver.dialect) + outboxDetails(share.manifest)
                + share.sources.map { source in
                SQLStatement(
                    "INSERT INTO sources (share_id, device, inode, size, mtime, sha256, state) VALUES (?,?,?,?,?,?,?)",
                    [.text(share.manifest.shareId), .integer(Int64(bitPattern: source.device)),
                     .integer(Int64(bitPattern: source.inode)), .integer(source.size),
                     .integer(source.modificationTime), .text(source.sha256), "staged"])
            }
        }, durable: durable)
    }

    /// Publish: staged → published after the renames into `incoming`, and the source records of the shares in
    /// `sourcesDone` marked done, in one commit. A share already past published is not a violation.
    package func recordPublished(_ shareIDs: [String], sourcesDone: [String]) throws -> [PreconditionViolation] {
        // Not durable: if a power cut loses it, recovery finds the shares in `incoming` and their sources recorded
        // staged, and rolls both forward. A consumer may claim (and finish) a share between its rename and this record.
        try apply(
            shareIDs.map { Change($0, from: [.staged], set: "state = 'published'", Event(.published)) },
            extra: sourcesDone.map { SQLStatement("UPDATE sources SET state = 'done' WHERE share_id=?", [.text($0)]) },
            durable: false
        ).violations.filter { $0.found == nil || $0.found == .rejected }
    }

    /// A share that was never staged (refused, or rolled back by its policy): its row and attachment events, state
    /// rejected, in one commit.
    package func recordRolledBack(_ manifest: Manifest, code: ShareError.Code?, spool: String? = nil) throws {
        let now = SQLValue.integer(LedgerClock.now())
        _ = try driver.execute(
            Self.inserts(manifest, state: .rejected, code: code, at: now, spool: spool)
                + [Self.event(.rejected, manifest.shareId, at: now, code: code)]
                + outboxDetails(manifest) + outboxStatements(rejected: manifest.shareId),
            durable: true)
        outboxWritten()
    }

    /// Staged → rejected: a share whose staging was removed before it was published; its sources are forgotten.
    package func recordUnpublished(_ shareIDs: [String], code: ShareError.Code?) throws -> [PreconditionViolation] {
        try apply(shareIDs.map { id in
            Change(
                id, from: [.staged], set: "state = 'rejected', last_code = ?", values: [SQLValue(code?.rawValue)],
                forgetSources: true, Event(.rejected, code: code))
        }).violations
    }

    /// Marks every staged source record of the shares staged in the state directory `spool` (and of shares
    /// recorded before shares had one) done, once its recovery has dealt with them.
    package func markAllSourcesDone(spool: String) throws {
        try driver.run(
            """
            UPDATE sources SET state = 'done' WHERE state = 'staged' AND share_id IN (
                SELECT id FROM shares WHERE spool = ? OR spool IS NULL)
            """, [.text(spool)])
    }

    /// Published → claimed, in one commit. Returns the history of each share claimed.
    package func recordClaimed(_ shareIDs: [String]) throws
        -> (histories: [String: ClaimHistory], violations: [PreconditionViolation])
    {
        let leaseUntil = leaseDuration.map { "\(driver.dialect.now) + \($0.milliseconds)" } ?? "NULL"
        // A share renamed into `incoming` is published even while its publisher has not recorded it yet. Not
        // durable: a claim lost in a power cut leaves a published row for a share in `processing` (or back in
        // `incoming`), which recovery moves back without counting an attempt.
        let result = try apply(shareIDs.map { id in
            Change(
                id, from: [.published, .staged], set: "state = 'claimed', claimed_by = ?, lease_until = \(leaseUntil)",
                values: [.text(owner)], Event(.claimed))
        }, durable: false)
        if !result.histories.isEmpty { startHeartbeat() }
        return result
    }

    /// Runs of claims this process holds: `started` about to run its processor, `succeeded` ended in success (their
    /// completions follow), in one commit. Not durable (no fsync; a commit all the same, which a kill -9 of this
    /// process does not undo): what a power cut loses leaves a share uncharged for that cut, or run again, and the
    /// next durable commit (a completion batch's) makes it durable.
    package func recordRuns(started: String?, succeeded: [String]) throws -> [PreconditionViolation] {
        let changes = succeeded.map { Change($0, owned: true, set: "run = \(RunState.succeeded.rawValue)") }
            + (started.map { [Change($0, owned: true, set: "run = \(RunState.started.rawValue)")] } ?? [])
        return try apply(changes, durable: false).violations
    }

    /// Claimed → processed (attempts + 1), and the copies' deletion, in one commit.
    package func recordProcessed(_ completions: [(shareID: String, durationMilliseconds: Int64)]) throws
        -> [PreconditionViolation]
    {
        let set = "state = 'processed', attempts = attempts + 1, not_before = 0, last_code = NULL, \(Self.ended)"
        return try apply(completions.map { completion in
            Change(
                completion.shareID, owned: true, set: set,
                Event(.processed, duration: completion.durationMilliseconds), Event(.deleted, rowBytes: true))
        }).violations
    }

    /// Claimed → published with attempts + 1 and a not-before time (ms since the epoch).
    package func recordRetry(shareID: String, code: ShareError.Code, durationMilliseconds: Int64,
    notBefore: Int64) throws
        -> [PreconditionViolation]
    {
        try apply(Change(
            shareID, owned: true,
            set: "state = 'published', attempts = attempts + 1, not_before = ?, last_code = ?, \(Self.ended)",
            values: [.integer(notBefore), .text(code.rawValue)],
            Event(.failed, code: code, duration: durationMilliseconds), Event(.retried)))
    }

    /// Claimed → quarantined with ERR_PROCESSOR_FAILED; `durationMilliseconds` nil when no attempt ran.
    package func recordQuarantined(shareID: String, code: ShareError.Code, durationMilliseconds: Int64?) throws
        -> [PreconditionViolation]
    {
        // With no attempt run (nil), none is counted nor a failure written.
        var change = Change(
            shareID, owned: true,
            set: "state = 'quarantined', attempts = attempts + ?, not_before = 0, last_code = ?, \(Self.unclaimed)",
            values: [.integer(durationMilliseconds == nil ? 0 : 1), .text(ShareError.Code.processorFailed.rawValue)],
            Event(.quarantined, code: .processorFailed))
        if let duration = durationMilliseconds {
            change.events.insert(Event(.failed, code: code, duration: duration), at: 0)
        }
        return try apply(change)
    }

    /// Claimed → published without counting an attempt (graceful shutdown).
    package func recordReleased(shareID: String) throws -> [PreconditionViolation] {
        try apply(Change(
            shareID, owned: true, set: "state = 'published', \(Self.unclaimed)", Event(.retried, code: .cancelled)))
    }

    /// Claimed → published, nothing charged: a dead claim whose processor was not running.
    package func recordRecovered(shareID: String) throws -> [PreconditionViolation] {
        try apply(Change(shareID, set: "state = 'published', \(Self.unclaimed)", Event(.recovered)))
    }

    /// Claimed → published with deaths + 1: a dead claim whose processor was running when its daemon died. The
    /// event `crashed` is the death in the share's timeline.
    package func recordCrashed(shareID: String) throws -> [PreconditionViolation] {
        try apply(Change(
            shareID, set: "state = 'published', deaths = deaths + 1, \(Self.unclaimed)",
            Event(.crashed, code: .processorFailed)))
    }

    /// Claimed → processed (attempts + 1), and the copies' deletion: a dead claim whose processor had succeeded.
    /// The processed event has no duration (it died with its claimer).
    package func recordFinished(shareID: String) throws -> [PreconditionViolation] {
        let set = "state = 'processed', attempts = attempts + 1, not_before = 0, last_code = NULL, \(Self.ended)"
        return try apply(Change(shareID, set: set, Event(.processed), Event(.deleted, rowBytes: true)))
    }

    /// Quarantined → published with attempts reset (requeue).
    package func recordRequeued(shareID: String) throws -> [PreconditionViolation] {
        try apply(Change(
            shareID, from: [.quarantined],
            set: "state = 'published', attempts = 0, deaths = 0, not_before = 0, last_code = NULL",
            Event(.published)))
    }

    /// Quarantined → purged.
    package func recordPurged(shareID: String) throws -> [PreconditionViolation] {
        try apply(Change(shareID, from: [.quarantined], set: "state = 'purged'", Event(.deleted)))
    }

    /// Recovery: the row follows the directory, if it is still in one of `from` (a reconciliation passes the state
    /// it listed the row in: a row that moved on since is left alone, and reported as a violation); an event
    /// `repaired` records it.
    @discardableResult
    package func repair(
        shareID: String, from: [ShareState] = ShareState.allCases, to state: ShareState
    ) throws -> [PreconditionViolation] {
        try apply(Change(
            shareID, from: from, set: "state = ?, \(Self.unclaimed)", values: [.text(state.rawValue)],
            Event(.repaired, type: state.rawValue)))
    }

    // MARK: Leases

    /// How many times the ledger reconnected to its server after losing it; a change means the server went away
    /// and came back, and claims that failed to record meanwhile may be waiting for recovery.
    package var reconnections: Int { driver.reconnections }

    /// Extends the leases of every claim this process holds.
    func renewLeases() throws {
        guard let lease = leaseDuration else { return }
        // The rows are locked in id order, as every transition locks them: in the order they lie on disk, the
        // renewal and a completion of the same rows could each hold a row the other waits for (a deadlock).
        try driver.run(
            """
            UPDATE shares SET lease_until = \(driver.dialect.now) + ? WHERE id IN (
                SELECT id FROM shares WHERE state = 'claimed' AND claimed_by = ? ORDER BY id\(driver.dialect.lockRows))
            """,
            [.integer(lease.milliseconds), .text(owner)])
    }

    /// Claims whose lease expired, picked for this process: their leases are extended, so that other processes
    /// skip them while this one checks whether their claimer is gone. Empty for a ledger without leases.
    package func pickExpiredClaims(limit: Int) throws -> [String] {
        guard let lease = leaseDuration else { return [] }
        let now = driver.dialect.now
        return try driver.run(
            """
            UPDATE shares SET lease_until = \(now) + ? WHERE id IN (
                SELECT id FROM shares WHERE state = 'claimed' AND COALESCE(lease_until, 0) < \(now)
                ORDER BY lease_until LIMIT ?\(driver.dialect.skipLocked)
            ) RETURNING id
            """,
            [.integer(lease.milliseconds), SQLValue(limit)]
        ).rows.compactMap { $0[0].text }
    }

    /// Starts the heartbeat once: every third of the lease it renews this process's leases, for as long as this
    /// ledger lives. A failed renewal is tried again at the next beat; the lease outlives two misses.
    private func startHeartbeat() {
        guard let lease = leaseDuration else { return }
        heartbeat.withLock { heartbeat in
            guard heartbeat == nil else { return }
            heartbeat = LeaseHeartbeat(interval: max(Double(lease.milliseconds) / 3000, 0.05)) { [weak self] in
                try? self?.renewLeases()
            }
        }
    }

    /// The database's clock minus this host's, in ms (positive: the database is ahead), the round trip split evenly.
    package static func clockSkew(_ driver: any SQLDriver) throws -> Int64 {
        let before = LedgerClock.now()
        let database = try driver.run("SELECT \(driver.dialect.now)").scalar.integer ?? 0
        let after = LedgerClock.now()
        return database - (before + after) / 2
    }
}
