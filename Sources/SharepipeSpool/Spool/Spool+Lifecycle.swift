import Foundation
import SharepipeLedger
import SharepipeSystem

/// A share claimed by this process. The exclusive lock on the directory `processing/S` is held for as long as this
/// object lives; the kernel releases it when the process dies, which is how recovery tells a dead claim from a live
/// one.
package final class ShareClaim: Sendable {
    /// The claimed share.
    package let shareID: String
    /// Attempts recorded before this one.
    package let previousAttempts: Int
    /// The consecutive deaths of a daemon its processor was running at, before this claim.
    package let previousDeaths: Int
    let held: HeldLock

    init(history: ShareLifecycle.History, held: HeldLock) {
        shareID = held.shareID
        previousAttempts = history.attempts
        previousDeaths = history.deaths
        self.held = held
    }

    package var history: ShareLifecycle.History { .init(attempts: previousAttempts, deaths: previousDeaths) }
}

/// The lock on a claimed `processing/S`, taken by the claim's `lock` action before the claim is recorded.
final class HeldLock: Sendable {
    let shareID: String
    let lock: DirectoryLock

    init(shareID: String, lock: consuming DirectoryLock) {
        self.shareID = shareID
        self.lock = lock
    }

    /// Removes `processing/S` while its lock is held: its entries through the locked descriptor, then the directory
    /// itself.
    func removeDirectory(in spool: Spool) throws {
        try lock.removeContents()
        do {
            try spool.directories.processing.removeDirectory(shareID)
        } catch let error as ShareError where error.errno == Errno.noEntry {}
    }
}

/// What happened to a failed attempt.
package enum FailedAttempt: Sendable, Equatable {
    case retried
    case quarantined
}

/// What the start of a claim's run did: recorded it (the processor may run), or quarantined the share, which must
/// not run again (`ShareLifecycle.refusal`), with why.
package enum RunStart: Sendable {
    case started
    case quarantined(ShareError)
}

/// The spool's transitions, each a run of `ShareLifecycle` performed by the one executor. Nothing else moves a
/// share between directories or records its state.
extension Spool {
    /// Hands a staged share to the executor's next publish batch (ending its `arrival`, if it was announced);
    /// returns once it is published, or rolled back.
    package func publish(
        _ share: consuming StagedShare, arrival: LaneArrival? = nil
    ) async -> LifecycleExecutor.PublishOutcome {
        await executor.publish(share, arrival: arrival, spool: self)
    }

    /// Announces a share about to be loaded: until it is handed to `publish` with this arrival (or the arrival is
    /// released), the publish batch it will join waits for it rather than leave without it.
    package func expectPublish() -> LaneArrival { executor.expectPublish() }

    /// A share its loader refused or rolled back: `staging/S` removed, the row recorded rejected.
    package func rollBack(_ manifest: Manifest, code: ShareError.Code?) {
        var run = ShareLifecycle.rollBack(manifest, code: code)
        executor.execute(&run, spool: self, context: .init(sources: [:]))
    }

    /// A share its loader could not attempt: `staging/S` removed, nothing recorded.
    package func discard(_ shareID: String) {
        var run = ShareLifecycle.discard(shareID)
        executor.execute(&run, spool: self, context: .init(sources: [:]))
    }

    /// Looks up the contents of a loading share's copies and reserves them (the duplicate check) in the executor's
    /// next reserve batch; each copy's original, in the reservation's order.
    package func reserveContents(_ reservation: ContentReservation) async throws -> [DuplicateOrigin?] {
        try await executor.reserve(reservation, spool: self)
    }

    /// The inbox found and removed the sources of published shares (a crash came between publish and removal).
    package func sourcesRemoved(of shareIDs: [String]) {
        var run = ShareLifecycle.recover(shareIDs[0], actions: [.record(.sourcesDone(shareIDs))])
        executor.execute(&run, spool: self, context: .init(sources: [:]))
    }

    /// The inbox's recovery dealt with every source record still staged.
    package func allSourcesRemoved() throws {
        var run = ShareLifecycle.recover("", actions: [.record(.allSourcesDone)])
        try finish(&run, context: .init(sources: [:]))
    }

    /// Claims shares in `incoming`, recording all the claims in one commit; shares another claimer won, or that are
    /// gone, are left out.
    package func claim(_ shareIDs: [String]) throws -> [ShareClaim] {
        guard !shareIDs.isEmpty else { return [] }
        var run = ShareLifecycle.claim(shareIDs)
        let context = LifecycleExecutor.RunContext(sources: [:])
        let outcome = executor.execute(&run, spool: self, context: context)
        let locks = context.take()
        switch outcome {
        case .claimed(let histories):
            return shareIDs.compactMap { id in
                guard let history = histories[id], let held = locks[id] else { return nil }
                return ShareClaim(history: history, held: held)
            }
        case .finished(let failed):
            if let error = failed.values.first { throw error }
            return []
        case .reserved:
            return []
        }
    }

    /// Records the start of a claim's run, committed before its processor runs: from here on a death of this
    /// process is charged to the share. The same commit records the successes of `succeeded` (runs of this worker
    /// whose completions are still to be handed over). A share that must not run again is quarantined instead.
    package func start(
        _ claim: ShareClaim, maxAttempts: Int, now: Int64 = LedgerClock.now(), succeeded: [String] = []
    ) throws -> RunStart {
        let refusal = ShareLifecycle.refusal(claim.history, maxAttempts: maxAttempts)
        if refusal != nil && !succeeded.isEmpty { try succeed(succeeded) }
        let first = refusal == nil ? nil : try ledger.firstAttemptAt(shareID: claim.shareID)
        var run = ShareLifecycle.start(
            claim.shareID, history: claim.history, maxAttempts: maxAttempts, now: now, firstAttemptAt: first,
            succeeded: refusal == nil ? succeeded : [])
        let context = LifecycleExecutor.RunContext(sources: [:])
        if refusal != nil { context.adopt(claim.held) }
        try finish(&run, context: context)
        return refusal.map { .quarantined($0) } ?? .started
    }

    /// Records that the runs of these claims succeeded (their completions follow), when no start carries them.
    package func succeed(_ shareIDs: [String]) throws {
        guard !shareIDs.isEmpty else { return }
        var run = ShareLifecycle.succeed(shareIDs)
        try finish(&run, context: .init(sources: [:]))
    }

    /// Success, recorded and removed in the executor's next completion batch.
    package func complete(_ claim: ShareClaim, durationMilliseconds: Int64) {
        executor.complete(claim, durationMilliseconds: durationMilliseconds, spool: self)
    }

    /// Completes one claim now, on the caller's thread, through the same run as the batched completion; with
    /// `stoppingAfter` (a crash point such as `complete.record-processed`) the run stops there as a crash would,
    /// and the claim's lock goes with the claim (the harness's crash points drive the production path this way).
    package func complete(_ claim: ShareClaim, durationMilliseconds: Int64, stoppingAfter point: String?) throws {
        var run = ShareLifecycle.complete([.init(shareID: claim.shareID, durationMilliseconds: durationMilliseconds)])
        let context = LifecycleExecutor.RunContext(sources: [:])
        context.adopt(claim.held)
        if case .finished(let failed) = executor.execute(&run, spool: self, context: context, stoppingAfter: point),
            let error = failed.values.first
        {
            throw error
        }
    }

    /// A failed attempt: retried with a doubling delay while attempts are left, quarantined otherwise.
    @discardableResult
    package func fail(
        _ claim: consuming ShareClaim, error: ShareError, durationMilliseconds: Int64,
        policy: ShareLifecycle.RetryPolicy, now: Int64 = LedgerClock.now()
    ) throws -> FailedAttempt {
        let attempt = claim.previousAttempts + 1
        let quarantines = attempt >= max(1, policy.maxAttempts)
        let first = quarantines ? try ledger.firstAttemptAt(shareID: claim.shareID) : nil
        var run = ShareLifecycle.failed(
            claim.shareID, attempt: attempt, error: error, durationMilliseconds: durationMilliseconds, policy: policy,
            now: now, firstAttemptAt: first)
        let context = LifecycleExecutor.RunContext(sources: [:])
        context.adopt(claim.held)
        try finish(&run, context: context)
        return run.transition == .retry ? .retried : .quarantined
    }

    /// Graceful shutdown: an unfinished share goes back to `incoming` without counting an attempt.
    package func release(_ claim: ShareClaim) throws {
        var run = ShareLifecycle.release(claim.shareID)
        try finish(&run, context: .init(sources: [:]))
    }

    /// Puts a quarantined share back into `incoming` with its attempts reset (`sharepipe requeue`).
    /// A share id that is not in quarantine is ERR_IO with errno ENOENT.
    package func requeue(_ shareID: String) throws {
        guard UUID(uuidString: shareID) != nil,
            try System.lstatIfPresent(path(.quarantine, shareID))?.kind == .directory
        else { throw ShareError(.io, "no quarantined share \(shareID)", errno: Errno.noEntry) }
        var run = ShareLifecycle.requeue(shareID)
        try finish(&run, context: .init(sources: [:]))
    }

    /// Purges one quarantined share.
    func purge(_ shareID: String) throws {
        var run = ShareLifecycle.purge(shareID)
        try finish(&run, context: .init(sources: [:]))
    }

    /// Runs a single-share transition; its failure is thrown.
    private func finish(_ run: inout ShareLifecycle, context: LifecycleExecutor.RunContext) throws {
        if case .finished(let failed) = executor.execute(&run, spool: self, context: context),
            let error = failed.values.first
        {
            throw error
        }
    }

    /// Commits one ledger change of the lifecycle and reports what it did.
    func apply(_ record: ShareLifecycle.Record, during point: String) throws -> ShareLifecycle.Event {
        var violations: [PreconditionViolation] = []
        switch record {
        case .staged(let records, let durable):
            try ledger.recordStaged(records, spool: id, durable: durable)
        case .published(let ids, let sourcesDone):
            violations = try ledger.recordPublished(ids, sourcesDone: sourcesDone)
        case .unpublished(let ids, let code):
            violations = try ledger.recordUnpublished(ids, code: code)
        case .rolledBack(let manifest, let code):
            try ledger.recordRolledBack(manifest, code: code, spool: id)
        case .claimed(let ids):
            let (histories, claimViolations) = try ledger.recordClaimed(ids)
            logViolations(claimViolations, during: point)
            return .claimed(histories)
        case .started(let id, let succeeded):
            violations = try ledger.recordRuns(started: id, succeeded: succeeded)
        case .succeeded(let ids):
            violations = try ledger.recordRuns(started: nil, succeeded: ids)
        case .processed(let completions):
            violations = try ledger.recordProcessed(completions.map { ($0.shareID, $0.durationMilliseconds) })
        case .retry(let id, let code, let duration, let notBefore):
            violations = try ledger.recordRetry(
                shareID: id, code: code, durationMilliseconds: duration, notBefore: notBefore)
        case .quarantined(let id, let code, let duration):
            violations = try ledger.recordQuarantined(shareID: id, code: code, durationMilliseconds: duration)
        case .released(let id):
            violations = try ledger.recordReleased(shareID: id)
        case .recovered(let id):
            violations = try ledger.recordRecovered(shareID: id)
        case .crashed(let id):
            violations = try ledger.recordCrashed(shareID: id)
        case .finished(let id):
            violations = try ledger.recordFinished(shareID: id)
        case .requeued(let id):
            violations = try ledger.recordRequeued(shareID: id)
        case .purged(let id):
            violations = try ledger.recordPurged(shareID: id)
        case .repair(let id, let from, let state):
            violations = try ledger.repair(shareID: id, from: [from], to: state)
        case .sourcesDone(let ids):
            violations = try ledger.recordPublished([], sourcesDone: ids)
        case .allSourcesDone:
            try ledger.markAllSourcesDone(spool: id)
        case .reserved(let reservations):
            return .reserved(try ledger.reserveContents(reservations))
        case .contentsReleased(let ids):
            try ledger.releaseContents(ofShares: ids)
        }
        logViolations(violations, during: point)
        return .done
    }
}
