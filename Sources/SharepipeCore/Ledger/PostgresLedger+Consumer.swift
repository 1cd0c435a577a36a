import Foundation

/// The consumer's records, and the leases on claims. Each call is one statement (one round trip), plus one to
/// name the state found when a share was not in a state the transition starts from.
extension PostgresLedger {
    /// One guarded transition of a batch, with its events, as one statement.
    ///
    /// Parameters: `$1` now (ms), `$2` the share ids, `$3` the states it starts from, `$4` the owner whose claims
    /// it applies to (NULL: any), then `extra` from `$5` on. `assignments` is the SET list (without `updated_at`);
    /// each of `events` is an `INSERT INTO events … SELECT … FROM u` over the updated rows `u` (id, attempts,
    /// bytes).
    /// Returns the updated rows (id, attempts) and the violations.
    private func transition(
        _ shareIDs: [String], from: [ShareState], ownedOnly: Bool, set assignments: String, events: [String],
        extra: [String?] = []
    ) throws -> (rows: PostgresRows, violations: [PreconditionViolation]) {
        guard !shareIDs.isEmpty else { return (PostgresRows(rows: [], changed: 0), []) }
        let inserts = events.enumerated().map { ", e\($0.offset) AS (\($0.element))" }.joined()
        let sql = """
            WITH u AS (
                UPDATE shares SET \(assignments), updated_at = $1
                WHERE id = ANY($2::text[]) AND state = ANY($3::text[]) AND ($4::text IS NULL OR claimed_by = $4)
                RETURNING id, attempts, bytes
            )\(inserts)
            SELECT id, attempts FROM u
            """
        let parameters: [String?] =
            [String(LedgerClock.now()), pgArray(shareIDs), pgArray(from.map(\.rawValue)), ownedOnly ? owner : nil]
            + extra
        return try connection.withSession { session in
            let rows = try session.query(sql, parameters)
            return (rows, try Self.violations(shareIDs, applied: rows, from: from, in: session))
        }
    }

    func recordClaimed(_ shareIDs: [String]) throws -> (attempts: [String: Int], violations: [PreconditionViolation]) {
        // A share renamed into `incoming` is published even while its publisher has not recorded it yet.
        let (rows, violations) = try transition(
            shareIDs, from: [.published, .staged], ownedOnly: false,
            set: "state = 'claimed', claimed_by = $5, lease_until = \(Self.serverNow) + $6",
            events: ["INSERT INTO events (at, share_id, event) SELECT $1, id, 'claimed' FROM u"],
            extra: [owner, String(lease.milliseconds)])
        var attempts: [String: Int] = [:]
        for row in rows.rows {
            if let id = row[0] { attempts[id] = row[1].flatMap { Int($0) } ?? 0 }
        }
        if !attempts.isEmpty { startHeartbeat() }
        return (attempts, violations)
    }

    func recordProcessed(_ completions: [(shareID: String, durationMilliseconds: Int64)]) throws
        -> [PreconditionViolation]
    {
        try transition(
            completions.map(\.shareID), from: [.claimed], ownedOnly: true,
            set: """
                state = 'processed', attempts = attempts + 1, not_before = 0, last_code = NULL, claimed_by = NULL,
                lease_until = NULL
                """,
            events: [
                """
                INSERT INTO events (at, share_id, event, duration_ms)
                SELECT $1, u.id, 'processed', d.ms FROM u JOIN unnest($5::text[], $6::bigint[]) AS d(id, ms) USING (id)
                """,
                "INSERT INTO events (at, share_id, event, bytes) SELECT $1, id, 'deleted', bytes FROM u",
            ],
            extra: [pgArray(completions.map(\.shareID)), pgArray(completions.map { String($0.durationMilliseconds) })]
        ).violations
    }

    func recordRetry(shareID: String, code: ShareError.Code, durationMilliseconds: Int64, notBefore: Int64) throws
        -> [PreconditionViolation]
    {
        try transition(
            [shareID], from: [.claimed], ownedOnly: true,
            set: """
                state = 'published', attempts = attempts + 1, not_before = $5, last_code = $6, claimed_by = NULL,
                lease_until = NULL
                """,
            events: [
                "INSERT INTO events (at, share_id, event, code, duration_ms) SELECT $1, id, 'failed', $6, $7 FROM u",
                "INSERT INTO events (at, share_id, event) SELECT $1, id, 'retried' FROM u",
            ],
            extra: [String(notBefore), code.rawValue, String(durationMilliseconds)]
        ).violations
    }

    func recordQuarantined(shareID: String, code: ShareError.Code, durationMilliseconds: Int64?) throws
        -> [PreconditionViolation]
    {
        try transition(
            [shareID], from: [.claimed], ownedOnly: true,
            set: """
                state = 'quarantined', attempts = attempts + $5, not_before = 0, last_code = $6, claimed_by = NULL,
                lease_until = NULL
                """,
            events: [
                """
                INSERT INTO events (at, share_id, event, code, duration_ms)
                SELECT $1, id, 'failed', $7, $8 FROM u WHERE $8::bigint IS NOT NULL
                """,
                "INSERT INTO events (at, share_id, event, code) SELECT $1, id, 'quarantined', $6 FROM u",
            ],
            extra: [
                durationMilliseconds == nil ? "0" : "1", ShareError.Code.processorFailed.rawValue, code.rawValue,
                durationMilliseconds.map { String($0) },
            ]
        ).violations
    }

    func recordReleased(shareID: String) throws -> [PreconditionViolation] {
        try transition(
            [shareID], from: [.claimed], ownedOnly: true,
            set: "state = 'published', claimed_by = NULL, lease_until = NULL",
            events: ["INSERT INTO events (at, share_id, event, code) SELECT $1, id, 'retried', $5 FROM u"],
            extra: [ShareError.Code.cancelled.rawValue]
        ).violations
    }

    func recordRecovered(shareID: String) throws -> [PreconditionViolation] {
        try transition(
            [shareID], from: [.claimed], ownedOnly: false,
            set: "state = 'published', attempts = attempts + 1, claimed_by = NULL, lease_until = NULL",
            events: ["INSERT INTO events (at, share_id, event) SELECT $1, id, 'recovered' FROM u"]
        ).violations
    }

    func recordRequeued(shareID: String) throws -> [PreconditionViolation] {
        try transition(
            [shareID], from: [.quarantined], ownedOnly: false,
            set: "state = 'published', attempts = 0, not_before = 0, last_code = NULL",
            events: ["INSERT INTO events (at, share_id, event) SELECT $1, id, 'published' FROM u"]
        ).violations
    }

    func recordPurged(shareID: String) throws -> [PreconditionViolation] {
        try transition(
            [shareID], from: [.quarantined], ownedOnly: false, set: "state = 'purged'",
            events: ["INSERT INTO events (at, share_id, event) SELECT $1, id, 'deleted' FROM u"]
        ).violations
    }

    func repair(shareID: String, to state: ShareState) throws {
        _ = try transition(
            [shareID], from: ShareState.allCases, ownedOnly: false,
            set: "state = $5, claimed_by = NULL, lease_until = NULL",
            events: ["INSERT INTO events (at, share_id, event, type) SELECT $1, id, 'repaired', $5 FROM u"],
            extra: [state.rawValue])
    }

    // MARK: Leases

    var leaseDuration: Duration? { lease }

    var reconnections: Int { connection.reconnections }

    /// Extends the leases of every claim this process holds.
    func renewLeases() throws {
        try connection.withSession { session in
            try session.query(
                """
                UPDATE shares SET lease_until = \(Self.serverNow) + $2
                WHERE state = 'claimed' AND claimed_by = $1
                """,
                [owner, String(lease.milliseconds)])
        }
    }

    func pickExpiredClaims(limit: Int) throws -> [String] {
        try connection.withSession { session in
            try session.query(
                """
                UPDATE shares SET lease_until = \(Self.serverNow) + $1
                WHERE id IN (
                    SELECT id FROM shares
                    WHERE state = 'claimed' AND COALESCE(lease_until, 0) < \(Self.serverNow)
                    ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED
                )
                RETURNING id
                """,
                [String(lease.milliseconds), String(limit)]
            ).rows.compactMap { $0.first ?? nil }
        }
    }

    /// Starts the heartbeat thread once: every third of the lease it renews this process's leases, for as long
    /// as this ledger lives. A failed renewal is tried again at the next beat; the lease outlives two misses.
    private func startHeartbeat() {
        heartbeat.withLock { thread in
            guard thread == nil else { return }
            let interval = max(Double(lease.milliseconds) / 3000, 0.05)
            let started = Thread { [weak self] in
                System.nameCurrentThread("sp-heartbeat")
                while !Thread.current.isCancelled {
                    Thread.sleep(forTimeInterval: interval)
                    guard let ledger = self else { return }
                    try? ledger.renewLeases()
                }
            }
            started.start()
            thread = started
        }
    }

    // MARK: Queries

    func state(ofShare shareID: String) throws -> ShareState? {
        try connection.withSession { session in
            try session.query("SELECT state FROM shares WHERE id = $1", [shareID]).scalar
                .flatMap(ShareState.init(rawValue:))
        }
    }

    func shareIDs(inState state: ShareState) throws -> [String] {
        try connection.withSession { session in
            try session.query("SELECT id FROM shares WHERE state = $1", [state.rawValue]).rows.compactMap { $0[0] }
        }
    }

    func pending() throws -> (shares: Int, bytes: Int64) {
        try connection.withSession { session in
            let row = try session.query(
                """
                SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM shares WHERE state IN ('staged', 'published', 'claimed')
                """
            ).rows.first
            return (row?[0].flatMap { Int($0) } ?? 0, row?[1].flatMap { Int64($0) } ?? 0)
        }
    }

    func deferredShares(now: Int64) throws -> [String: Int64] {
        try connection.withSession { session in
            var deferred: [String: Int64] = [:]
            for row in try session.query(
                "SELECT id, not_before FROM shares WHERE state = 'published' AND not_before > $1", [String(now)]
            ).rows {
                if let id = row[0], let notBefore = row[1].flatMap({ Int64($0) }) { deferred[id] = notBefore }
            }
            return deferred
        }
    }

    func attempts(ofShare shareID: String) throws -> Int {
        try connection.withSession { session in
            Int(try session.query("SELECT attempts FROM shares WHERE id = $1", [shareID]).scalar ?? "0") ?? 0
        }
    }

    func firstAttemptAt(shareID: String) throws -> Int64? {
        try connection.withSession { session in
            try session.query(
                """
                SELECT MIN(at) FROM events WHERE share_id = $1 AND event = 'claimed' AND seq > COALESCE(
                    (SELECT MAX(seq) FROM events WHERE share_id = $1 AND event = 'published'), 0)
                """,
                [shareID]
            ).scalar.flatMap { Int64($0) }
        }
    }

    func prune(before cutoff: Int64) throws -> Int {
        try connection.transaction { session in
            let events = try session.query("DELETE FROM events WHERE at < $1", [String(cutoff)])
            try session.query(
                "DELETE FROM shares WHERE state IN ('processed', 'rejected', 'purged') AND updated_at < $1",
                [String(cutoff)])
            try session.query("DELETE FROM contents WHERE created_at < $1", [String(cutoff)])
            try session.query(
                "DELETE FROM sources WHERE state = 'done' AND NOT EXISTS (SELECT 1 FROM shares WHERE id = share_id)")
            return events.changed
        }
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
