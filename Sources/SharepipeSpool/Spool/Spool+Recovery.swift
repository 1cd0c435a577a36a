import Foundation
import SharepipeLedger
import SharepipeSystem

/// What recovery found and did.
public struct RecoveryReport: Sendable, Equatable {
    /// Unpublished shares deleted from `staging`.
    public var stagingRemoved = 0
    /// Dead claims moved back to `incoming` (a death charged to those whose processor was running).
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

/// Recovery: every share nobody works on (its lock is free) in `staging`, `processing` or `quarantine` gets the
/// plan `ShareLifecycle.recovery` gives for its directory and its row, run by the one executor; then every row in
/// a non-terminal state is reconciled with the directory its share is in. A staging directory or a claim whose lock
/// is held by a live process is never touched, so recovery is safe while loaders and consumers of this or other
/// processes run: the daemon runs it at start (before `InboxRecovery` scans the inbox) and then periodically, so
/// that a dead daemon's staging and claims are finished by the living.
extension Spool {
    /// Recovery run again while it finds a share locked, for `patience` at most, the reports added up (the live
    /// count is the last run's). For a process that simulates its own crash, as tests and `LifecycleHarness` do: a
    /// dropped claim's `flock` lock belongs to the open file, and a child that another thread is spawning holds a
    /// copy of every descriptor until its exec closes them, so the lock can outlive its release for an instant.
    package func recover(retryingLockedFor patience: Duration) throws -> RecoveryReport {
        var total = try recover()
        let deadline = ContinuousClock.now + patience
        while total.liveClaims > 0, ContinuousClock.now < deadline {
            System.pause(microseconds: 5_000)
            let report = try recover()
            total.stagingRemoved += report.stagingRemoved
            total.returnedToIncoming += report.returnedToIncoming
            total.completed += report.completed
            total.rolledForward += report.rolledForward
            total.repaired += report.repaired
            total.liveClaims = report.liveClaims
        }
        return total
    }

    public func recover() throws -> RecoveryReport {
        var report = RecoveryReport()
        var liveClaims: Set<String> = []
        var removedStaging: [String] = []
        try recycler.removeUnlocked()
        for stage in [Stage.staging, .processing, .quarantine] {
            let names = stage == .staging ? try directories.staging.names() : try shareIDs(in: stage)
            for shareID in names {
                if stage == .quarantine {
                    // Only an interrupted requeue has work here; nobody holds a lock on a quarantined share.
                    guard try ledger.state(ofShare: shareID) == .published else { continue }
                    try recoverOne(shareID, in: stage, lock: nil, report: &report)
                    continue
                }
                if stage == .staging, let status = try directories.staging.statusIfPresent(shareID),
                    status.kind != .directory
                {
                    // Not a share: a stray entry is removed as a dead staging would be.
                    try directories.staging.removeTree(shareID)
                    report.stagingRemoved += 1
                    continue
                }
                guard let lock = try DirectoryLock.acquire(path(stage, shareID)) else {
                    // Locked by a live loader or claimer, or gone meanwhile.
                    if try directories[stage].statusIfPresent(shareID) != nil {
                        report.liveClaims += 1
                        liveClaims.insert(shareID)
                    }
                    continue
                }
                if stage == .staging && UUID(uuidString: shareID) == nil {
                    try directories.staging.removeTree(shareID)
                    report.stagingRemoved += 1
                    continue
                }
                try recoverOne(shareID, in: stage, lock: HeldLock(shareID: shareID, lock: lock), report: &report)
                if stage == .staging { removedStaging.append(shareID) }
            }
        }
        if report.stagingRemoved > 0 { try directories.staging.sync() }
        // Content reserved by the duplicate check for a share that never got staged no longer holds its content.
        if !removedStaging.isEmpty {
            var run = ShareLifecycle.recover(removedStaging[0], actions: [.record(.contentsReleased(removedStaging))])
            if case .finished(let failed) = executor.execute(&run, spool: self, context: .init(sources: [:])),
                let error = failed.values.first
            {
                throw error
            }
        }
        if report.returnedToIncoming > 0 { try directories.incoming.sync() }
        try reconcile(skipping: liveClaims, report: &report)
        return report
    }

    private func recoverOne(_ shareID: String, in stage: Stage, lock: HeldLock?, report: inout RecoveryReport) throws {
        let recorded = try ledger.state(ofShare: shareID)
        let hasReason = try System.lstatIfPresent(path(stage, shareID) + "/" + QuarantineReason.fileName) != nil
        let reason = recorded == .quarantined && !hasReason ? try recoveredReason(shareID) : nil
        let runState = recorded == .claimed ? try ledger.runState(ofShare: shareID) : .notStarted
        var (run, kind) = ShareLifecycle.recovery(
            of: shareID, foundIn: stage, recorded: recorded, run: runState, hasReason: hasReason, reason: reason)
        let context = LifecycleExecutor.RunContext(sources: [:])
        if let lock { context.adopt(lock) }
        if case .finished(let failed) = executor.execute(&run, spool: self, context: context),
            let error = failed.values.first
        {
            throw error
        }
        switch kind {
        case .stagingRemoved: report.stagingRemoved += 1
        case .returnedToIncoming: report.returnedToIncoming += 1
        case .completed: report.completed += 1
        case .rolledForward: report.rolledForward += 1
        case .none: break
        }
    }

    /// Makes every row in a non-terminal state follow the directory its share is in.
    private func reconcile(skipping liveClaims: Set<String>, report: inout RecoveryReport) throws {
        var published: [String] = []
        for state in [ShareState.staged, .published, .claimed, .quarantined] {
            // Only this state directory's shares: another's, on a shared ledger, are in directories not seen here.
            for shareID in try ledger.shareIDs(inState: state, spool: id) where !liveClaims.contains(shareID) {
                let found = try Stage.allCases.first { try directories[$0].statusIfPresent(shareID) != nil }
                guard let (record, isRepair) = ShareLifecycle.reconciliation(
                    of: shareID, recorded: state, foundIn: found)
                else { continue }
                // The listing is a snapshot, and a running daemon's sweep walks it while shares move on: a share
                // published, claimed, processed and removed since the listing has a row that moved on with it (its
                // directory is removed only after its row is recorded processed), so only a row still as listed is
                // made to follow. A flood of 19,660 drops once had ten processed shares recorded rejected this way.
                // The row is read again here (a row that moved on is skipped quietly), and the repair itself
                // applies only to a row still in the listed state (one that moved on in between is left alone).
                guard try ledger.state(ofShare: shareID) == state else { continue }
                guard isRepair else {
                    published.append(shareID)
                    continue
                }
                if let target = record.to {
                    logViolations(
                        [PreconditionViolation(shareID: shareID, expected: [state], found: target)],
                        during: "recover.reconcile")
                }
                var run = ShareLifecycle.recover(shareID, actions: [.record(record)])
                executor.execute(&run, spool: self, context: .init(sources: [:]))
                // Counted once the row reads as repaired: the guard leaves a row that moved on in between alone.
                if let target = record.to, try ledger.state(ofShare: shareID) == target { report.repaired += 1 }
            }
        }
        if !published.isEmpty {
            var run = ShareLifecycle.recover(
                published[0], actions: [.record(.published(published, sourcesDone: []))])
            executor.execute(&run, spool: self, context: .init(sources: [:]))
        }
    }

    /// The reason for a quarantine whose `reason.json` was not yet written when the process died.
    private func recoveredReason(_ shareID: String) throws -> QuarantineReason {
        let now = LedgerClock.now()
        let attempts = try ledger.attempts(ofShare: shareID)
        let first = try ledger.firstAttemptAt(shareID: shareID) ?? now
        return QuarantineReason(
            code: .processorFailed, message: "ERR_PROCESSOR_FAILED: the processor failed \(attempts) times",
            attempts: attempts, firstAttemptAt: Date.rfc3339(milliseconds: first),
            lastAttemptAt: Date.rfc3339(milliseconds: now))
    }

    /// Whether a share was published: it is in `incoming`, `processing` or `quarantine`, or recorded past publishing.
    package func isPublished(_ shareID: String) throws -> Bool {
        if let state = try ledger.state(ofShare: shareID), state != .staged && state != .rejected {
            return true
        }
        return try [Stage.incoming, .processing, .quarantine].contains { stage in
            try System.lstatIfPresent(path(stage, shareID)) != nil
        }
    }
}
