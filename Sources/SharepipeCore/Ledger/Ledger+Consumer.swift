/// The consumer's records. Every transition is one transaction, committed before the file system follows it, so
/// that recovery can roll an interrupted transition forward from the recorded state of an unlocked `processing/S`:
///
/// - `published`: claimed but not yet recorded, or a retry or release recorded — back to `incoming`, attempts kept;
/// - `claimed`: the processor may have run — back to `incoming`, attempts + 1, event recovered;
/// - `processed`: the copies are removed;
/// - `quarantined`: moved on to `quarantine/S`.
extension Ledger {
    /// Claim: the share is being worked on. Returns the attempts already made.
    func recordClaimed(shareID: String) throws -> Int {
        try database.transaction { connection in
            try connection.query(
                "UPDATE shares SET state = 'claimed', updated_at = ? WHERE id = ?",
                [.integer(Self.now()), .text(shareID)])
            try Self.append(.claimed, shareID: shareID, to: connection)
            let attempts = try connection.query("SELECT attempts FROM shares WHERE id = ?", [.text(shareID)])
            return Int(attempts.first?.first?.integer ?? 0)
        }
    }

    /// Complete: the processor succeeded; the copies are removed right after this commits (recovery removes them
    /// if a crash comes first).
    func recordProcessed(shareID: String, durationMilliseconds: Int64) throws {
        try database.transaction { connection in
            try connection.query(
                """
                UPDATE shares SET state = 'processed', attempts = attempts + 1, not_before = 0, last_code = NULL,
                updated_at = ? WHERE id = ?
                """,
                [.integer(Self.now()), .text(shareID)])
            let bytes = try connection.query("SELECT bytes FROM shares WHERE id = ?", [.text(shareID)])
            try Self.append(.processed, shareID: shareID, durationMilliseconds: durationMilliseconds, to: connection)
            try Self.append(.deleted, shareID: shareID, bytes: bytes.first?.first?.integer, to: connection)
        }
    }

    /// A failed attempt with attempts left: the share goes back to `incoming`, not to be claimed before
    /// `notBefore` (milliseconds since the epoch).
    func recordRetry(shareID: String, code: ShareError.Code, durationMilliseconds: Int64, notBefore: Int64) throws {
        try database.transaction { connection in
            try connection.query(
                """
                UPDATE shares SET state = 'published', attempts = attempts + 1, not_before = ?, last_code = ?,
                updated_at = ? WHERE id = ?
                """,
                [.integer(notBefore), .text(code.rawValue), .integer(Self.now()), .text(shareID)])
            try Self.append(
                .failed, shareID: shareID, code: code, durationMilliseconds: durationMilliseconds, to: connection)
            try Self.append(.retried, shareID: shareID, to: connection)
        }
    }

    /// The last allowed attempt failed (it took `durationMilliseconds`), or no attempt is left (nil): the share is
    /// quarantined with ERR_PROCESSOR_FAILED.
    func recordQuarantined(shareID: String, code: ShareError.Code, durationMilliseconds: Int64?) throws {
        try database.transaction { connection in
            try connection.query(
                """
                UPDATE shares SET state = 'quarantined', attempts = attempts + ?, not_before = 0, last_code = ?,
                updated_at = ? WHERE id = ?
                """,
                [.integer(durationMilliseconds == nil ? 0 : 1), .text(ShareError.Code.processorFailed.rawValue),
                 .integer(Self.now()), .text(shareID)])
            if let durationMilliseconds {
                try Self.append(
                    .failed, shareID: shareID, code: code, durationMilliseconds: durationMilliseconds, to: connection)
            }
            try Self.append(.quarantined, shareID: shareID, code: .processorFailed, to: connection)
        }
    }

    /// Graceful shutdown: an unfinished share goes back to `incoming` without counting an attempt.
    func recordReleased(shareID: String) throws {
        try database.transaction { connection in
            try connection.query(
                "UPDATE shares SET state = 'published', updated_at = ? WHERE id = ?",
                [.integer(Self.now()), .text(shareID)])
            try Self.append(.retried, shareID: shareID, code: .cancelled, to: connection)
        }
    }

    /// Recovery: a claim whose claimer died goes back to `incoming`; the interrupted attempt counts.
    func recordRecovered(shareID: String) throws {
        try database.transaction { connection in
            try connection.query(
                "UPDATE shares SET state = 'published', attempts = attempts + 1, updated_at = ? WHERE id = ?",
                [.integer(Self.now()), .text(shareID)])
            try Self.append(.recovered, shareID: shareID, to: connection)
        }
    }

    /// Requeue: a quarantined share is published again with its attempts reset.
    func recordRequeued(shareID: String) throws {
        try database.transaction { connection in
            try connection.query(
                """
                UPDATE shares SET state = 'published', attempts = 0, not_before = 0, last_code = NULL, updated_at = ?
                WHERE id = ?
                """,
                [.integer(Self.now()), .text(shareID)])
            try Self.append(.published, shareID: shareID, to: connection)
        }
    }

    /// Purge: a quarantined share was deleted.
    func recordPurged(shareID: String) throws {
        try setState("purged", shareID: shareID, event: .deleted)
    }

    /// Recovery: a share left in `staging` was deleted; a row still staged becomes rejected.
    func recordStagingRemoved(shareID: String) throws {
        guard try state(ofShare: shareID) == "staged" else { return }
        try recordRejected(shareID: shareID, code: nil)
    }

    /// Shares in `incoming` whose next attempt must wait: share id → not-before time (ms since the epoch).
    func deferredShares(now: Int64 = Ledger.now()) throws -> [String: Int64] {
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

    /// Attempts recorded for a share.
    func attempts(ofShare shareID: String) throws -> Int {
        try database.withConnection { connection in
            let rows = try connection.query("SELECT attempts FROM shares WHERE id = ?", [.text(shareID)])
            return Int(rows.first?.first?.integer ?? 0)
        }
    }

    /// When the first attempt since the share was last published by hand (requeue) started, ms since the epoch.
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

    /// Retention: drops events, and the rows of finished shares, last touched before `cutoff` (ms since the
    /// epoch). Returns the number of events dropped.
    func prune(before cutoff: Int64) throws -> Int {
        try database.transaction { connection in
            let count = try connection.query("SELECT COUNT(*) FROM events WHERE at < ?", [.integer(cutoff)])
            try connection.query("DELETE FROM events WHERE at < ?", [.integer(cutoff)])
            try connection.query(
                "DELETE FROM shares WHERE state IN ('processed', 'rejected', 'purged') AND updated_at < ?",
                [.integer(cutoff)])
            try connection.query("DELETE FROM sources WHERE state = 'done' AND share_id NOT IN (SELECT id FROM shares)")
            return Int(count.first?.first?.integer ?? 0)
        }
    }
}

extension Ledger {
    /// Ids of the shares recorded in a state.
    func shareIDs(inState state: String) throws -> [String] {
        try database.withConnection { connection in
            try connection.query("SELECT id FROM shares WHERE state = ?", [.text(state)]).compactMap { $0.first?.text }
        }
    }
}
