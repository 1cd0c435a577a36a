import Foundation
import Glibc

/// `quarantine/S/reason.json`: why a share failed for good.
struct QuarantineReason: Codable, Sendable, Equatable {
    /// Always ERR_PROCESSOR_FAILED for a share the consumer gave up on.
    var code: ShareError.Code
    /// The last attempt's error, code first.
    var message: String
    /// Attempts made.
    var attempts: Int
    /// RFC 3339.
    var firstAttemptAt: String
    /// RFC 3339.
    var lastAttemptAt: String

    static let fileName = "reason.json"
}

/// Quarantine (kill -9 safe at every step):
/// 1. `processing/S/reason.json` written atomically — crash: recovery finds S claimed, removes the reason and moves S
///    back to `incoming` with attempts + 1 (the consumer quarantines it at its next claim);
/// 2. ledger: quarantined, committed — crash: recovery finds S recorded quarantined and finishes the move;
/// 3. `rename(processing/S, quarantine/S)`, `quarantine` fsynced.
///
/// Requeue records the share published (attempts reset) first, removes `reason.json`, then renames it back to
/// `incoming`; recovery finishes an interrupted requeue from the ledger state. Purge records the share purged, then
/// removes its directory (an interrupted purge is finished by the next one).
extension Spool {
    /// The last allowed attempt failed (it took `durationMilliseconds`), or no attempt is left (nil): the share
    /// moves to `quarantine` with `reason.json`, copies intact.
    func quarantine(_ claim: consuming ShareClaim, error: ShareError, durationMilliseconds: Int64?) throws {
        let shareID = claim.shareID
        let attempts = claim.previousAttempts + (durationMilliseconds == nil ? 0 : 1)
        let now = LedgerClock.now()
        let first = try ledger.firstAttemptAt(shareID: shareID) ?? now
        let reason = QuarantineReason(
            code: .processorFailed, message: "\(error.code.rawValue): \(error.message)", attempts: attempts,
            firstAttemptAt: Self.rfc3339(milliseconds: first), lastAttemptAt: Self.rfc3339(milliseconds: now))
        try writeReason(reason, shareID: shareID)
        logViolations(
            try ledger.recordQuarantined(shareID: shareID, code: error.code, durationMilliseconds: durationMilliseconds),
            during: "quarantine")
        try moveToQuarantine(shareID)
        _ = consume claim
    }

    func writeReason(_ reason: QuarantineReason, shareID: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try System.writeAtomically(
            Array(try encoder.encode(reason)), to: path(.processing, shareID), name: QuarantineReason.fileName)
    }

    /// Step 3 of quarantine, also used by recovery to finish it.
    func moveToQuarantine(_ shareID: String) throws {
        guard try ExclusiveMove.share(
            shareID, from: directories.processing, to: directories.quarantine, capabilities: capabilities)
        else {
            throw ShareError(.io, "share \(shareID) is both in processing and in quarantine", errno: EEXIST)
        }
        try directories.quarantine.sync()
    }

    /// Reads a quarantined share's `reason.json`.
    func quarantineReason(_ shareID: String) throws -> QuarantineReason {
        let bytes = try System.readFile(path(.quarantine, shareID) + "/" + QuarantineReason.fileName)
        do {
            return try JSONDecoder().decode(QuarantineReason.self, from: Data(bytes))
        } catch {
            throw ShareError(.io, "reason.json is malformed: \(error)")
        }
    }

    /// Puts a quarantined share back into `incoming` with its attempts reset (`sharepipe requeue`).
    /// A share id that is not in quarantine is ERR_IO with errno ENOENT.
    public func requeue(_ shareID: String) throws {
        guard UUID(uuidString: shareID) != nil,
            try System.lstatIfPresent(path(.quarantine, shareID))?.kind == .directory
        else { throw ShareError(.io, "no quarantined share \(shareID)", errno: ENOENT) }
        logViolations(try ledger.recordRequeued(shareID: shareID), during: "requeue")
        try finishRequeue(shareID)
    }

    /// The file-system half of requeue, also used by recovery to finish it.
    func finishRequeue(_ shareID: String) throws {
        try System.removeTree(path(.quarantine, shareID) + "/" + QuarantineReason.fileName)
        guard try ExclusiveMove.share(
            shareID, from: directories.quarantine, to: directories.incoming, capabilities: capabilities)
        else {
            throw ShareError(.io, "share \(shareID) is both in quarantine and in incoming", errno: EEXIST)
        }
        try directories.incoming.sync()
    }

    /// Deletes quarantined shares quarantined at least `age` ago (all of them when nil) and returns their ids
    /// (`sharepipe purge --quarantine`, and retention).
    @discardableResult
    public func purgeQuarantine(olderThan age: Duration? = nil) throws -> [String] {
        let cutoff = age.map { System.wallClockNanoseconds() - Self.nanoseconds($0) }
        var purged: [String] = []
        for shareID in try shareIDs(in: .quarantine) {
            if let cutoff, let status = try System.lstatIfPresent(path(.quarantine, shareID)),
                status.modificationTime > cutoff
            {
                continue
            }
            logViolations(try ledger.recordPurged(shareID: shareID), during: "purge")
            try removeShareDirectory(.quarantine, shareID)
            purged.append(shareID)
        }
        return purged
    }

    /// Retention: quarantined shares older than `quarantineTTL` purged, ledger events (and finished share rows)
    /// older than `eventRetention` pruned.
    @discardableResult
    public func applyRetention(
        quarantineTTL: Duration = .seconds(7 * 86_400), eventRetention: Duration = .seconds(30 * 86_400)
    ) throws -> RetentionReport {
        let purged = try purgeQuarantine(olderThan: quarantineTTL)
        let pruned = try ledger.prune(before: LedgerClock.now() - Self.nanoseconds(eventRetention) / 1_000_000)
        return RetentionReport(purgedShares: purged.count, prunedEvents: pruned)
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue + attoseconds / 1_000_000_000
    }

    static func rfc3339(milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000).rfc3339
    }
}

/// What one retention pass removed.
public struct RetentionReport: Sendable, Equatable {
    /// Quarantined shares deleted after their TTL.
    public var purgedShares: Int
    /// Ledger events dropped after the retention period.
    public var prunedEvents: Int
}
