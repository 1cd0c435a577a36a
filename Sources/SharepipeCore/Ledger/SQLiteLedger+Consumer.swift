/// The consumer's records. Every transition is committed before the file system follows it, so that recovery can
/// roll an interrupted transition forward from the recorded state of an unlocked `processing/S`:
///
/// - `published`: claimed but not yet recorded, or a retry or release recorded — back to `incoming`, attempts kept;
/// - `claimed`: the processor may have run — back to `incoming`, attempts + 1, event recovered;
/// - `processed`: the copies are removed;
/// - `quarantined`: moved on to `quarantine/S`.
extension SQLiteLedger {
    func recordClaimed(_ shareIDs: [String]) throws -> (attempts: [String: Int], violations: [PreconditionViolation]) {
        guard !shareIDs.isEmpty else { return ([:], []) }
        let now = LedgerClock.now()
        // Not durable: a claim lost in a power cut leaves a published row for a share in `processing` (or back in
        // `incoming`), which recovery moves back without counting an attempt.
        return try database.transaction(durable: false) { connection in
            var attempts: [String: Int] = [:]
            var violations: [PreconditionViolation] = []
            for shareID in shareIDs {
                // A share renamed into `incoming` is published even while its publisher has not recorded it yet.
                if let violation = try Self.transition(
                    shareID, from: [.published, .staged], set: "state = 'claimed', updated_at = ?", [.integer(now)],
                    on: connection)
                {
                    violations.append(violation)
                    continue
                }
                try Self.append(.claimed, shareID: shareID, at: now, to: connection)
                let rows = try connection.query("SELECT attempts FROM shares WHERE id = ?", [.text(shareID)])
                attempts[shareID] = Int(rows.first?.first?.integer ?? 0)
            }
            return (attempts, violations)
        }
    }

    func recordProcessed(_ completions: [(shareID: String, durationMilliseconds: Int64)]) throws
        -> [PreconditionViolation]
    {
        guard !completions.isEmpty else { return [] }
        let now = LedgerClock.now()
        return try database.transaction { connection in
            var violations: [PreconditionViolation] = []
            for (shareID, duration) in completions {
                if let violation = try Self.transition(
                    shareID, from: [.claimed],
                    set: """
                        state = 'processed', attempts = attempts + 1, not_before = 0, last_code = NULL, updated_at = ?
                        """,
                    [.integer(now)], on: connection)
                {
                    violations.append(violation)
                    continue
                }
                let bytes = try connection.query("SELECT bytes FROM shares WHERE id = ?", [.text(shareID)])
                try Self.append(.processed, shareID: shareID, durationMilliseconds: duration, at: now, to: connection)
                try Self.append(.deleted, shareID: shareID, bytes: bytes.first?.first?.integer, at: now, to: connection)
            }
            return violations
        }
    }

    func recordRetry(shareID: String, code: ShareError.Code, durationMilliseconds: Int64, notBefore: Int64) throws
        -> [PreconditionViolation]
    {
        let now = LedgerClock.now()
        return try database.transaction { connection in
            if let violation = try Self.transition(
                shareID, from: [.claimed],
                set: "state = 'published', attempts = attempts + 1, not_before = ?, last_code = ?, updated_at = ?",
                [.integer(notBefore), .text(code.rawValue), .integer(now)], on: connection)
            {
                return [violation]
            }
            try Self.append(
                .failed, shareID: shareID, code: code, durationMilliseconds: durationMilliseconds, at: now,
                to: connection)
            try Self.append(.retried, shareID: shareID, at: now, to: connection)
            return []
        }
    }

    func recordQuarantined(shareID: String, code: ShareError.Code, durationMilliseconds: Int64?) throws
        -> [PreconditionViolation]
    {
        let now = LedgerClock.now()
        return try database.transaction { connection in
            if let violation = try Self.transition(
                shareID, from: [.claimed],
                set: "state = 'quarantined', attempts = attempts + ?, not_before = 0, last_code = ?, updated_at = ?",
                [.integer(durationMilliseconds == nil ? 0 : 1), .text(ShareError.Code.processorFailed.rawValue),
                 .integer(now)], on: connection)
            {
                return [violation]
            }
            if let durationMilliseconds {
                try Self.append(
                    .failed, shareID: shareID, code: code, durationMilliseconds: durationMilliseconds, at: now,
                    to: connection)
            }
            try Self.append(.quarantined, shareID: shareID, code: .processorFailed, at: now, to: connection)
            return []
        }
    }

    func recordReleased(shareID: String) throws -> [PreconditionViolation] {
        try single(shareID, from: [.claimed], set: "state = 'published'", event: .retried, code: .cancelled)
    }

    func recordRecovered(shareID: String) throws -> [PreconditionViolation] {
        try single(shareID, from: [.claimed], set: "state = 'published', attempts = attempts + 1", event: .recovered)
    }

    func recordRequeued(shareID: String) throws -> [PreconditionViolation] {
        try single(
            shareID, from: [.quarantined],
            set: "state = 'published', attempts = 0, not_before = 0, last_code = NULL", event: .published)
    }

    func recordPurged(shareID: String) throws -> [PreconditionViolation] {
        try single(shareID, from: [.quarantined], set: "state = 'purged'", event: .deleted)
    }

    func repair(shareID: String, to state: ShareState) throws {
        let now = LedgerClock.now()
        try database.transaction { connection in
            try connection.query(
                "UPDATE shares SET state = ?, updated_at = ? WHERE id = ?",
                [.text(state.rawValue), .integer(now), .text(shareID)])
            try Self.append(.repaired, shareID: shareID, type: state.rawValue, at: now, to: connection)
        }
    }

    /// One guarded transition of one share, with its event, in one commit.
    private func single(
        _ shareID: String, from: [ShareState], set assignments: String, event: LedgerEvent,
        code: ShareError.Code? = nil
    ) throws -> [PreconditionViolation] {
        let now = LedgerClock.now()
        return try database.transaction { connection in
            if let violation = try Self.transition(
                shareID, from: from, set: assignments + ", updated_at = ?", [.integer(now)], on: connection)
            {
                return [violation]
            }
            try Self.append(event, shareID: shareID, code: code, at: now, to: connection)
            return []
        }
    }

    func deferredShares(now: Int64) throws -> [String: Int64] {
        try database.withConnection { connection in
            var deferred: [String: Int64] = [:]
            for row in try connection.query(
                "SELECT id, not_before FROM shares WHERE state = 'published' AND not_before > ?", [.integer(now)])
            {
                if let id = row[0].text, let notBefore = row[1].integer { deferred[id] = notBefore }
            }
            return deferred
        }
    }

    func attempts(ofShare shareID: String) throws -> Int {
        try database.withConnection { connection in
            let rows = try connection.query("SELECT attempts FROM shares WHERE id = ?", [.text(shareID)])
            return Int(rows.first?.first?.integer ?? 0)
        }
    }

    func firstAttemptAt(shareID: String) throws -> Int64? {
        try database.withConnection { connection in
            try connection.query(
                """
                SELECT MIN(at) FROM events WHERE share_id = ?1 AND event = 'claimed' AND seq > COALESCE(
                    (SELECT MAX(seq) FROM events WHERE share_id = ?1 AND event = 'published'), 0)
                """,
                [.text(shareID)]
            ).first?.first?.integer
        }
    }

    func prune(before cutoff: Int64) throws -> Int {
        try database.transaction { connection in
            let count = try connection.query("SELECT COUNT(*) FROM events WHERE at < ?", [.integer(cutoff)])
            try connection.query("DELETE FROM events WHERE at < ?", [.integer(cutoff)])
            try connection.query(
                "DELETE FROM shares WHERE state IN ('processed', 'rejected', 'purged') AND updated_at < ?",
                [.integer(cutoff)])
            try connection.query("DELETE FROM contents WHERE created_at < ?", [.integer(cutoff)])
            try connection.query("DELETE FROM sources WHERE state = 'done' AND share_id NOT IN (SELECT id FROM shares)")
            return Int(count.first?.first?.integer ?? 0)
        }
    }
}
