import Foundation
import SharepipeLedger
import SharepipeSystem

/// The share lifecycle as one pure state machine (STYLE rule 11): a batch of shares enters a transition, the
/// machine returns the action to perform, the executor performs it and feeds back what happened, and so on until
/// the machine says the transition is done. The machine owns the order of the actions (DESIGN's crash orderings),
/// the states each transition starts from, attempt counting, retry times and the compensations after a failure;
/// it never touches a disk or a ledger, so every transition, every illegal one and every crash point is testable
/// without either.
///
/// Every action is a crash point: `SHAREPIPE_CRASH_AFTER=<transition>.<action>` (the `crashPoint` of the action)
/// stops the process right after it, and recovery (`ShareLifecycle.recovery`) finishes or undoes what it left.
package struct ShareLifecycle: Sendable {
    /// The transitions a share can take.
    enum Transition: String, Sendable, CaseIterable {
        /// staging → incoming (staged → published), with the sources removed once durable.
        case publish
        /// A share refused or rolled back by its loader before it was staged (→ rejected).
        case rollBack = "roll-back"
        /// A share its loader could not attempt (no space, say): `staging/S` removed, nothing recorded.
        case discard
        /// incoming → processing (published → claimed).
        case claim
        /// A claimed share's processor about to run: the run's start recorded (claimed, run started), with the
        /// successes of the worker's runs before it, so that a death of its daemon is charged to it; or, for a share
        /// that took its daemon down at `maxAttempts` consecutive deaths (or whose attempts are used up), a quarantine
        /// instead.
        case start
        /// Successful runs recorded as such (claimed, run succeeded) when no next run starts to carry them.
        case succeed
        /// processing removed (claimed → processed).
        case complete
        /// processing → incoming with a not-before time (claimed → published, attempts + 1).
        case retry
        /// processing → quarantine with reason.json (claimed → quarantined).
        case quarantine
        /// processing → incoming without counting an attempt (graceful shutdown).
        case release
        /// quarantine → incoming with attempts reset (quarantined → published).
        case requeue
        /// quarantine removed (quarantined → purged).
        case purge
        /// What recovery does to one share found dead in a stage, or recorded where it is not.
        case recover
        /// Loading shares' copies looked up by content and reserved in one step (`--duplicates flag|reject`), a batch
        /// of shares at once: no state changes; the answer names each copy's original, if it has one.
        case reserve
    }

    /// The retry policy: attempts allowed and the first backoff, doubling per attempt.
    package struct RetryPolicy: Sendable, Equatable {
        var maxAttempts: Int
        var retryDelayMilliseconds: Int64

        /// The not-before time of the next attempt after `attempt` (1-based) failed at `now` (ms).
        func notBefore(after attempt: Int, now: Int64) -> Int64 {
            now + (retryDelayMilliseconds << Int64(min(max(attempt - 1, 0), 30)))
        }

        package init(maxAttempts: Int, retryDelayMilliseconds: Int64) {
            self.maxAttempts = maxAttempts
            self.retryDelayMilliseconds = retryDelayMilliseconds
        }
    }

    /// The ledger change one `record` action commits (one transaction). `from` is what the ledger must find.
    enum Record: Sendable {
        /// Not `durable` only when the barrier that follows commits the ledger too (`publish`).
        case staged([StagedRecord], durable: Bool)
        case published([String], sourcesDone: [String])
        case unpublished([String], code: ShareError.Code?)
        case rolledBack(Manifest, code: ShareError.Code?)
        case claimed([String])
        /// The processor of a claimed share is about to run (committed before it runs), and the runs of `succeeded`
        /// ended in success (their completions follow in the next batch).
        case started(String, succeeded: [String])
        /// Runs that ended in success, their completions to follow in the next batch.
        case succeeded([String])
        case processed([Completion])
        case retry(String, code: ShareError.Code, durationMilliseconds: Int64, notBefore: Int64)
        case quarantined(String, code: ShareError.Code, durationMilliseconds: Int64?)
        case released(String)
        /// A dead claim whose processor was not running: back to published, nothing charged.
        case recovered(String)
        /// A dead claim whose processor was running when its daemon died: back to published, the death charged.
        case crashed(String)
        /// A dead claim whose processor had succeeded, its completion not recorded: recorded processed.
        case finished(String)
        case requeued(String)
        case purged(String)
        /// The row follows its share's directory, if it is still in the state it was listed in.
        case repair(String, from: ShareState, to: ShareState)
        /// The sources of published shares are gone (found and removed by the inbox after a crash).
        case sourcesDone([String])
        /// Every source record still staged is dealt with (the end of the inbox's recovery).
        case allSourcesDone
        /// The copies' contents looked up against the originals and reserved, share after share in this order.
        case reserved([ContentReservation])
        /// The reservations of shares that were never staged are forgotten (recovery removed their staging).
        case contentsReleased([String])

        /// The states the change starts from (`repair` and the inserts start from any).
        var from: [ShareState] {
            switch self {
            case .staged, .rolledBack, .repair, .sourcesDone, .allSourcesDone, .reserved, .contentsReleased: []
            case .published: [.staged]
            case .unpublished: [.staged]
            case .claimed: [.published]
            case .started, .succeeded, .processed, .retry, .quarantined, .released, .recovered, .crashed, .finished:
                [.claimed]
            case .requeued, .purged: [.quarantined]
            }
        }

        /// The state it leaves.
        var to: ShareState? {
            switch self {
            case .staged: .staged
            case .published, .retry, .released, .recovered, .crashed, .requeued: .published
            case .unpublished, .rolledBack: .rejected
            case .claimed, .started, .succeeded: .claimed
            case .processed, .finished: .processed
            case .quarantined: .quarantined
            case .purged: .purged
            case .repair(_, _, let state): state
            case .sourcesDone, .allSourcesDone, .reserved, .contentsReleased: nil
            }
        }

        var name: String {
            switch self {
            case .staged: "staged"
            case .published: "published"
            case .unpublished: "unpublished"
            case .rolledBack: "rolled-back"
            case .claimed: "claimed"
            case .started: "started"
            case .succeeded: "succeeded"
            case .processed: "processed"
            case .retry: "retry"
            case .quarantined: "quarantined"
            case .released: "released"
            case .recovered: "recovered"
            case .crashed: "crashed"
            case .finished: "finished"
            case .requeued: "requeued"
            case .purged: "purged"
            case .repair: "repaired"
            case .sourcesDone: "sources-done"
            case .allSourcesDone: "all-sources-done"
            case .reserved: "reserved"
            case .contentsReleased: "contents-released"
            }
        }
    }

    /// What a claimed share has behind it (attempts, and consecutive deaths while its processor ran).
    package typealias History = ClaimHistory

    /// One processed share: its id and how long the processor took.
    struct Completion: Sendable, Equatable {
        var shareID: String
        var durationMilliseconds: Int64
    }

    /// What the executor performs. Each names the share directories it covers; a batch action covers many.
    enum Action: Sendable {
        /// Makes the staged copies, manifests and `staging/S` entries durable (one barrier for the batch).
        case barrier([String])
        /// Commits one ledger change.
        case record(Record)
        /// Renames share directories from one stage into another, never replacing; reports which moved.
        case move([String], from: SpoolStage, to: SpoolStage)
        /// Takes each share's lock in `incoming`, before its claim moves it: the lock moves with the directory and
        /// is held until the claim ends, so no recovery (of this or another process) ever finds a claim unlocked.
        /// Reports which were locked; a lock held elsewhere is another claimer's.
        case lock([String])
        /// Makes the renames into or out of a stage durable.
        case sync(SpoolStage)
        /// Tells the sources' owner (the inbox) that these shares are durable: it removes their sources and reports
        /// the shares whose sources are all gone.
        case removeSources([String])
        /// Removes share directories (their entries, then the directories) from a stage. A claimed share's directory
        /// may instead be emptied (every copy truncated) and kept for a later share's staging (`ShareRecycler`):
        /// either way its content is gone and its name is free.
        case remove([String], from: SpoolStage)
        /// Writes `processing/S/reason.json` atomically.
        case writeReason(String, QuarantineReason)
        /// Removes a stale `reason.json` from a share directory.
        case removeReason(String, in: SpoolStage)

        /// The action's part of a crash-point name.
        var name: String {
            switch self {
            case .barrier: "barrier"
            case .record(let record): "record-" + record.name
            case .move(_, _, let to): "move-" + to.rawValue
            case .lock: "lock"
            case .sync(let stage): "sync-" + stage.rawValue
            case .removeSources: "remove-sources"
            case .remove(_, let stage): "remove-" + stage.rawValue
            case .writeReason: "write-reason"
            case .removeReason: "remove-reason"
            }
        }
    }

    /// What the executor feeds back after performing an action.
    enum Event: Sendable {
        /// The action applied to every share it named.
        case done
        /// The action applied to `done` only (a move, lock or source removal that some shares did not pass).
        case partly(done: [String])
        /// A claim recorded: each share's history (shares missing were in a state a claim does not start from).
        case claimed([String: History])
        /// Contents reserved: per reservation, in the run's order, each copy's original (nil: the copy is an original).
        case reserved([[DuplicateOrigin?]])
        /// The action failed as a whole.
        case failed(ShareError)
    }

    /// Where a run ends.
    enum Outcome: Sendable {
        /// Every share of the run took the transition, except `failed` (each with why).
        case finished(failed: [String: ShareError])
        /// Claimed shares, with each one's history.
        case claimed([String: History])
        /// Per reservation, in the run's order, each reserved copy's original (nil: it is one).
        case reserved([[DuplicateOrigin?]])
    }

    /// What the executor does next.
    enum Step: Sendable {
        case perform(Action)
        case finish(Outcome)
    }

    /// The named states of a run: the action performed last (its crash point) tells where a run is.
    enum Phase: Sendable, Equatable {
        case start
        case performed(String)
        case finished
    }

    /// Every crash point a run can pass (`SHAREPIPE_CRASH_AFTER` takes one), as docs/spool.md lists them.
    static let crashPoints: [String] = [
        "publish.barrier", "publish.record-staged", "publish.move-incoming", "publish.sync-incoming",
        "publish.remove-sources", "publish.record-published", "publish.remove-staging", "publish.record-unpublished",
        "publish.record-rolled-back",
        "roll-back.remove-staging", "roll-back.record-rolled-back", "discard.remove-staging",
        "claim.lock", "claim.move-processing", "claim.record-claimed", "claim.move-incoming",
        "start.record-started", "succeed.record-succeeded",
        "complete.record-processed", "complete.remove-processing",
        "retry.record-retry", "retry.move-incoming",
        "quarantine.write-reason", "quarantine.record-quarantined", "quarantine.move-quarantine",
        "quarantine.sync-quarantine",
        "release.record-released", "release.move-incoming",
        "requeue.record-requeued", "requeue.remove-reason", "requeue.move-incoming", "requeue.sync-incoming",
        "purge.record-purged", "purge.remove-quarantine", "purge.sync-quarantine",
        "recover.remove-staging", "recover.record-unpublished", "recover.remove-processing", "recover.sync-processing",
        "recover.write-reason", "recover.move-quarantine", "recover.sync-quarantine", "recover.remove-reason",
        "recover.record-recovered", "recover.record-crashed", "recover.record-finished", "recover.move-incoming",
        "recover.sync-incoming",
        "recover.record-repaired", "recover.record-published", "recover.record-sources-done",
        "recover.record-all-sources-done", "recover.record-contents-released", "reserve.record-reserved",
    ]

    let transition: Transition
    private(set) var phase: Phase = .start
    /// Shares still in the run.
    private(set) var shares: [String]
    private var failures: [String: ShareError] = [:]
    private var pending: [Action]
    /// What to do if the action in flight fails: the compensation, and whether the run ends failed.
    private var onFailure: Compensation
    private var histories: [String: History] = [:]
    /// What a reservation answered.
    private var origins: [[DuplicateOrigin?]] = []
    /// A publish run's staged records.
    private var records: [StagedRecord] = []

    /// How a failed action is handled.
    private enum Compensation: Sendable {
        /// Publish before the ledger knows the shares: remove the staging directories, record them rolled back.
        case unstage
        /// Publish after the ledger recorded them staged: remove, record unpublished.
        case unpublish
        /// A claim whose record failed (the ledger is full or gone): the shares it moved go back to `incoming`
        /// under its lock, claimable again at once rather than after the next sweep.
        case unclaim
        /// The failure is logged and the run goes on: the step's effect is rolled forward by recovery.
        case tolerate
        /// The run ends with the error; whatever the step left is recovery's.
        case abort
    }

    private init(_ transition: Transition, shares: [String], actions: [Action], onFailure: Compensation) {
        self.transition = transition
        self.shares = shares
        pending = actions
        self.onFailure = onFailure
    }

    /// The crash-point name of an action of this transition.
    func crashPoint(_ action: Action) -> String { transition.rawValue + "." + action.name }

    // MARK: Runs

    /// Publish (group commit): barrier, staged recorded, renamed into `incoming`, `incoming` synced, sources
    /// removed, published recorded.
    ///
    /// Where the barrier commits the ledger as well (`barrierCommitsLedger`: a SQLite ledger on the state file
    /// system, where the barrier is one `syncfs`), the staged rows are written first without a disk flush of their
    /// own, and the barrier makes them durable with the copies: the renames still follow both. A crash before the
    /// barrier leaves shares in `staging` whatever the ledger kept, which recovery removes as before.
    static func publish(_ records: [StagedRecord], barrierCommitsLedger: Bool = false) -> ShareLifecycle {
        let ids = records.map(\.manifest.shareId)
        let first: Action = barrierCommitsLedger ? .record(.staged(records, durable: false)) : .barrier(ids)
        var run = ShareLifecycle(.publish, shares: ids, actions: [first], onFailure: .unstage)
        run.records = records
        return run
    }

    /// A share its loader refused or rolled back: its staging removed, its row recorded rejected.
    static func rollBack(_ manifest: Manifest, code: ShareError.Code?) -> ShareLifecycle {
        let id = manifest.shareId
        return ShareLifecycle(
            .rollBack, shares: [id], actions: [.remove([id], from: .staging), .record(.rolledBack(manifest,
            code: code))],
            onFailure: .tolerate)
    }

    /// Reserve (batched): the copies' contents of every share of the batch looked up and reserved in one ledger
    /// transaction, share after share in the batch's order, so that of two shares with one content loaded at once
    /// (in one batch, or by two daemons), one is the original. A failure fails every share of the batch.
    static func reserve(_ reservations: [ContentReservation]) -> ShareLifecycle {
        ShareLifecycle(
            .reserve, shares: reservations.map(\.shareID), actions: [.record(.reserved(reservations))],
            onFailure: .abort)
    }

    /// A share its loader could not attempt: its staging removed; it never had a row.
    static func discard(_ shareID: String) -> ShareLifecycle {
        ShareLifecycle(.discard, shares: [shareID], actions: [.remove([shareID], from: .staging)], onFailure: .tolerate)
    }

    /// Claim: renamed into `processing` (one claimer wins), locked, claimed recorded; shares whose rows are in a
    /// state a claim does not start from go back to `incoming`.
    static func claim(_ shareIDs: [String]) -> ShareLifecycle {
        ShareLifecycle(.claim, shares: shareIDs, actions: [.lock(shareIDs)], onFailure: .abort)
    }

    /// Complete (batched): processed recorded (durable), then the copies removed. No sync follows the removal: a
    /// removal lost in a power cut leaves a share recorded processed, which recovery removes.
    static func complete(_ completions: [Completion]) -> ShareLifecycle {
        let ids = completions.map(\.shareID)
        return ShareLifecycle(
            .complete, shares: ids, actions: [.record(.processed(completions)), .remove(ids, from: .processing)],
            onFailure: .abort)
    }

    /// Start: the run's start recorded (its share still claimed, its run started) before the processor runs, so
    /// that a death of its daemon from here on is charged to it and a death before it never is; the same commit
    /// records the successes of `succeeded` (the worker's runs that ended since its last start), so that a death
    /// before their completions are recorded does not run them again. A share that must not run again (`refusal`)
    /// is quarantined instead, without running (the caller records `succeeded` on its own then).
    static func start(
        _ shareID: String, history: History, maxAttempts: Int, now: Int64, firstAttemptAt: Int64?,
        succeeded: [String] = []
    ) -> ShareLifecycle {
        guard let error = refusal(history, maxAttempts: maxAttempts) else {
            return ShareLifecycle(
                .start, shares: [shareID], actions: [.record(.started(shareID, succeeded: succeeded))],
                onFailure: .abort)
        }
        let reason = QuarantineReason(
            code: .processorFailed, message: "\(error.code.rawValue): \(error.message)",
            attempts: history.attempts + history.deaths,
            firstAttemptAt: Date.rfc3339(milliseconds: firstAttemptAt ?? now),
            lastAttemptAt: Date.rfc3339(milliseconds: now))
        return quarantine(shareID, reason: reason, code: error.code, durationMilliseconds: nil)
    }

    /// Succeed: runs that ended in success recorded as such, when no next start carries them.
    static func succeed(_ shareIDs: [String]) -> ShareLifecycle {
        ShareLifecycle(.succeed, shares: shareIDs, actions: [.record(.succeeded(shareIDs))], onFailure: .abort)
    }

    /// Whether a claimed share runs alone in its process: one with a death on its record starts only once the runs
    /// in progress have ended, and none starts beside it, so that a next death of its daemon is charged to it alone.
    /// Without it, a share that happened to run beside one that kills its daemon would be claimed, started and
    /// charged beside it again at every restart, and quarantined with it.
    package static func runsAlone(_ history: History) -> Bool {
        history.deaths > 0
    }

    /// Why a claimed share must not run again, nil when it may: its processor was running at `maxAttempts`
    /// consecutive deaths of its daemon (the share takes its daemon down), or its attempts are used up (made
    /// before `--max-attempts` was lowered).
    static func refusal(_ history: History, maxAttempts: Int) -> ShareError? {
        let allowed = max(1, maxAttempts)
        if history.deaths >= allowed {
            return ShareError(
                .processorFailed,
                "the processor was running at \(history.deaths) consecutive deaths of its daemon: "
                    + "the share takes its daemon down")
        }
        if history.attempts >= allowed {
            return ShareError(.processorFailed, "\(history.attempts) attempts made, \(allowed) allowed")
        }
        return nil
    }

    /// A failed attempt (`attempt` is 1-based): retried with a doubling delay while attempts are left, else
    /// quarantined.
    static func failed(
        _ shareID: String, attempt: Int, error: ShareError, durationMilliseconds: Int64, policy: RetryPolicy,
        now: Int64, firstAttemptAt: Int64?
    ) -> ShareLifecycle {
        if attempt < max(1, policy.maxAttempts) {
            let notBefore = policy.notBefore(after: attempt, now: now)
            return ShareLifecycle(
                .retry, shares: [shareID],
                actions: [
                    .record(.retry(shareID, code: error.code, durationMilliseconds: durationMilliseconds,
                        notBefore: notBefore)),
                    .move([shareID], from: .processing, to: .incoming),
                ], onFailure: .abort)
        }
        let reason = QuarantineReason(
            code: .processorFailed, message: "\(error.code.rawValue): \(error.message)", attempts: attempt,
            firstAttemptAt: Date.rfc3339(milliseconds: firstAttemptAt ?? now),
            lastAttemptAt: Date.rfc3339(milliseconds: now))
        return quarantine(shareID, reason: reason, code: error.code, durationMilliseconds: durationMilliseconds)
    }

    /// Quarantine: reason written, quarantined recorded, renamed into `quarantine`, `quarantine` synced.
    static func quarantine(
        _ shareID: String, reason: QuarantineReason, code: ShareError.Code, durationMilliseconds: Int64?
    ) -> ShareLifecycle {
        ShareLifecycle(
            .quarantine, shares: [shareID],
            actions: [
                .writeReason(shareID, reason),
                .record(.quarantined(shareID, code: code, durationMilliseconds: durationMilliseconds)),
                .move([shareID], from: .processing, to: .quarantine), .sync(.quarantine),
            ], onFailure: .abort)
    }

    /// Graceful shutdown: released recorded, back to `incoming`.
    static func release(_ shareID: String) -> ShareLifecycle {
        ShareLifecycle(
            .release, shares: [shareID],
            actions: [.record(.released(shareID)), .move([shareID], from: .processing, to: .incoming)],
            onFailure: .abort)
    }

    /// Requeue (`sharepipe requeue`): requeued recorded, reason removed, back to `incoming`, `incoming` synced.
    static func requeue(_ shareID: String) -> ShareLifecycle {
        ShareLifecycle(
            .requeue, shares: [shareID],
            actions: [
                .record(.requeued(shareID)), .removeReason(shareID, in: .quarantine),
                .move([shareID], from: .quarantine, to: .incoming), .sync(.incoming),
            ], onFailure: .abort)
    }

    /// Purge: purged recorded, the directory removed and `quarantine` synced.
    static func purge(_ shareID: String) -> ShareLifecycle {
        ShareLifecycle(
            .purge, shares: [shareID], actions: [.record(.purged(shareID)), .remove([shareID], from: .quarantine),
                .sync(.quarantine)],
            onFailure: .abort)
    }

    /// A recovery plan for one share (see `recovery(of:foundIn:recorded:hasReason:)`).
    static func recover(_ shareID: String, actions: [Action]) -> ShareLifecycle {
        ShareLifecycle(.recover, shares: [shareID], actions: actions, onFailure: .abort)
    }

    // MARK: The machine

    /// The first step of the run.
    mutating func start() -> Step {
        next()
    }

    /// Feeds back what the last action did; returns the next step.
    mutating func handle(_ event: Event, after action: Action) -> Step {
        phase = .performed(action.name)
        switch event {
        case .failed(let error):
            return fail(error, after: action)
        case .partly(let done):
            let left = Set(done)
            let dropped = shares.filter { !left.contains($0) }
            advance(after: action, done: done, dropped: dropped)
        case .claimed(let histories):
            self.histories = histories
            let strays = shares.filter { histories[$0] == nil }
            shares = shares.filter { histories[$0] != nil }
            if !strays.isEmpty {
                // Rows in a state a claim does not start from: the shares go back untouched for recovery.
                pending.insert(.move(strays, from: .processing, to: .incoming), at: 0)
            }
        case .reserved(let origins):
            self.origins = origins
        case .done:
            advance(after: action, done: nil, dropped: [])
        }
        return next()
    }

    private mutating func next() -> Step {
        if !pending.isEmpty { return .perform(pending.removeFirst()) }
        phase = .finished
        if transition == .claim { return .finish(.claimed(histories.filter { shares.contains($0.key) })) }
        if transition == .reserve && failures.isEmpty { return .finish(.reserved(origins)) }
        return .finish(.finished(failed: failures))
    }

    /// Queues what follows a successful action.
    private mutating func advance(after action: Action, done: [String]?, dropped: [String]) {
        switch (transition, action) {
        case (.publish, .barrier) where !ledgerHasStagedRows:
            pending = [.record(.staged(records, durable: true))]
        case (.publish, .barrier), (.publish, .record(.staged(_, durable: true))):
            onFailure = .unpublish
            pending = [.move(shares, from: .staging, to: .incoming)]
        case (.publish, .record(.staged(_, durable: false))):
            // Written before the barrier that commits them.
            onFailure = .unpublish
            pending = [.barrier(shares)]
        case (.publish, .move):
            // A share whose rename failed was recorded staged: it is removed and recorded unpublished.
            let error = ShareError(.io, "the share could not be renamed into incoming")
            for id in dropped { failures[id] = error }
            shares = done ?? shares
            onFailure = .tolerate
            pending = dropped.isEmpty ? [] : [.remove(dropped, from: .staging), .record(.unpublished(dropped,
            code: .io))]
            if !shares.isEmpty { pending += [.sync(.incoming), .removeSources(shares)] }
        case (.publish, .removeSources):
            // A share whose sources could not all be removed keeps its source records staged, so that a restart's
            // recovery removes them.
            pending = [.record(.published(shares, sourcesDone: done ?? shares))]
        case (.claim, .lock):
            shares = done ?? shares
            pending = shares.isEmpty ? [] : [.move(shares, from: .incoming, to: .processing)]
        case (.claim, .move(_, .incoming, .processing)):
            shares = done ?? shares
            onFailure = .unclaim
            pending = shares.isEmpty ? [] : [.record(.claimed(shares))]
        default:
            break
        }
    }

    /// Whether a publish run's staged rows are in the ledger: its compensation is then to unpublish them.
    private var ledgerHasStagedRows: Bool {
        if case .unpublish = onFailure { return true }
        return false
    }

    /// A failed action: its compensation, or the end of the run.
    private mutating func fail(_ error: ShareError, after action: Action) -> Step {
        switch onFailure {
        case .unstage:
            for id in shares { failures[id] = error }
            onFailure = .tolerate
            pending = [.remove(shares, from: .staging)] + records.map { .record(.rolledBack($0.manifest,
            code: error.code)) }
            shares = []
        case .unpublish:
            for id in shares { failures[id] = error }
            onFailure = .tolerate
            pending = [.remove(shares, from: .staging), .record(.unpublished(shares, code: error.code))]
            shares = []
        case .unclaim:
            for id in shares { failures[id] = error }
            onFailure = .tolerate
            pending = [.move(shares, from: .processing, to: .incoming)]
            shares = []
        case .tolerate:
            // The step's effect is rolled forward by recovery; the run goes on (a source removal that failed
            // removed none, as far as the ledger is told).
            advance(after: action, done: [], dropped: [])
        case .abort:
            for id in shares { failures[id] = error }
            pending = []
            shares = []
        }
        return next()
    }

    /// Whether a failed action of this run is only logged (the run goes on).
    var toleratesFailure: Bool {
        if case .tolerate = onFailure { return true }
        return false
    }
}
