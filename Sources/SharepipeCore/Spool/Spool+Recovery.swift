import Foundation
import Glibc

/// What recovery found and did.
public struct RecoveryReport: Sendable, Equatable {
    /// Unpublished shares deleted from `staging`.
    public var stagingRemoved = 0
    /// Dead claims moved back to `incoming` (their interrupted attempt counted).
    public var returnedToIncoming = 0
    /// Dead claims already recorded processed, whose copies were removed.
    public var completed = 0
    /// Interrupted quarantines and requeues finished.
    public var rolledForward = 0
    /// Shares in `staging` or `processing` held (locked) by a live process, left alone.
    public var liveClaims = 0
    /// Ledger rows that disagreed with their share's directory and were made to follow it.
    public var repaired = 0
}

/// Recovery at start-up: call `recover()` before this process's loader and consumers start (the daemon then runs
/// `InboxRecovery` before it scans the inbox). Loaders and consumers of other processes are safe: their locks
/// are honoured.
extension Spool {
    /// Deletes unpublished shares, sends dead claims back to `incoming` (or finishes what the ledger recorded for
    /// them), finishes interrupted requeues, then reconciles every ledger row in a non-terminal state with the
    /// directory its share is in: the row follows the directory, and each repair is logged with a code.
    /// A staging directory or a claim whose lock is held by a live process is never touched.
    public func recover() throws -> RecoveryReport {
        var report = RecoveryReport()
        var removed: [String] = []
        for name in try directories.staging.names() {
            guard try !isLiveStaging(name) else {
                report.liveClaims += 1
                continue
            }
            try directories.staging.removeTree(name)
            if UUID(uuidString: name) != nil { removed.append(name) }
            report.stagingRemoved += 1
        }
        if report.stagingRemoved > 0 { try directories.staging.sync() }
        let unpublished = try removed.filter { try ledger.state(ofShare: $0) == .staged }
        if !unpublished.isEmpty { logViolations(try ledger.recordUnpublished(unpublished, code: nil), during: "recover") }
        // Content reserved by the duplicate check for a share that never got staged no longer holds its content.
        try ledger.releaseContents(ofShares: removed)

        var liveClaims: Set<String> = []
        for shareID in try shareIDs(in: .processing) {
            guard let lock = try DirectoryLock.acquire(path(.processing, shareID)) else {
                report.liveClaims += 1
                liveClaims.insert(shareID)
                continue
            }
            let reason = QuarantineReason.fileName
            switch try ledger.state(ofShare: shareID) {
            case .processed, .purged:
                try removeShareDirectory(.processing, shareID)
                report.completed += 1
            case .quarantined:
                if try System.lstatIfPresent(path(.processing, shareID) + "/" + reason) == nil {
                    try writeReason(recoveredReason(shareID), shareID: shareID)
                }
                try moveToQuarantine(shareID)
                report.rolledForward += 1
            case .claimed:
                try System.removeTree(path(.processing, shareID) + "/" + reason)
                logViolations(try ledger.recordRecovered(shareID: shareID), during: "recover")
                try moveBack(shareID)
                report.returnedToIncoming += 1
            case .published:
                try System.removeTree(path(.processing, shareID) + "/" + reason)
                try moveBack(shareID)
                report.returnedToIncoming += 1
            case .staged, .rejected, nil:
                // Claimed by rename before its publisher recorded it (staged), or a row that disagrees: the share
                // goes back to `incoming`, and the reconciliation below makes the row say so.
                try System.removeTree(path(.processing, shareID) + "/" + reason)
                try moveBack(shareID)
                report.returnedToIncoming += 1
            }
            _ = consume lock
        }
        if report.returnedToIncoming > 0 { try directories.incoming.sync() }

        for shareID in try shareIDs(in: .quarantine) where try ledger.state(ofShare: shareID) == .published {
            try finishRequeue(shareID)
            report.rolledForward += 1
        }
        try reconcile(skipping: liveClaims, report: &report)
        return report
    }

    /// Makes every row in a non-terminal state follow the directory its share is in. A staged share found in
    /// `incoming` is the publisher's crash window and rolls forward as a normal publish; anything else is a
    /// repair, logged as a precondition violation.
    private func reconcile(skipping liveClaims: Set<String>, report: inout RecoveryReport) throws {
        let expected: [(ShareState, Stage)] = [
            (.staged, .staging), (.published, .incoming), (.claimed, .processing), (.quarantined, .quarantine),
        ]
        var published: [String] = []
        for (state, stage) in expected {
            for shareID in try ledger.shareIDs(inState: state) where !liveClaims.contains(shareID) {
                if try directories[stage].statusIfPresent(shareID) != nil { continue }
                let found = try Stage.allCases.first { other in
                    try other != stage && directories[other].statusIfPresent(shareID) != nil
                }
                if state == .staged && found == .incoming {
                    published.append(shareID)
                    continue
                }
                if found == .processing { continue }
                let target: ShareState = switch found {
                case .incoming: .published
                case .quarantine: .quarantined
                case .staging: .staged
                case .processing: .claimed
                case nil: state == .staged ? .rejected : .purged
                }
                logViolations([PreconditionViolation(shareID: shareID, expected: [state], found: target)], during: "reconcile")
                try ledger.repair(shareID: shareID, to: target)
                report.repaired += 1
            }
        }
        if !published.isEmpty { logViolations(try ledger.recordPublished(published, sourcesDone: []), during: "recover") }
    }

    /// Whether a loader of a live process holds the lock on a staging directory.
    private func isLiveStaging(_ name: String) throws -> Bool {
        do {
            let directory = try directories.staging.open(name, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
            return try !directory.lock(exclusive: true, nonBlocking: true)
        } catch let error as ShareError where [ENOENT, ENOTDIR, ELOOP].contains(error.errno) {
            return false
        }
    }

    /// The reason for a quarantine whose `reason.json` was not yet written when the process died.
    private func recoveredReason(_ shareID: String) throws -> QuarantineReason {
        let now = LedgerClock.now()
        let attempts = try ledger.attempts(ofShare: shareID)
        let first = try ledger.firstAttemptAt(shareID: shareID) ?? now
        return QuarantineReason(
            code: .processorFailed, message: "ERR_PROCESSOR_FAILED: the processor failed \(attempts) times",
            attempts: attempts, firstAttemptAt: Self.rfc3339(milliseconds: first),
            lastAttemptAt: Self.rfc3339(milliseconds: now))
    }

    /// Whether a share was published: it is in `incoming`, `processing` or `quarantine`, or recorded past publishing.
    func isPublished(_ shareID: String) throws -> Bool {
        if let state = try ledger.state(ofShare: shareID), state != .staged && state != .rejected {
            return true
        }
        return try [Stage.incoming, .processing, .quarantine].contains { stage in
            try System.lstatIfPresent(path(stage, shareID)) != nil
        }
    }

}
