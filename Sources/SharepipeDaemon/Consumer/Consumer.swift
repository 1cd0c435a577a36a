import Foundation
import SharepipeSpool
import SharepipeSystem
import Synchronization

/// The main app's half of the contract: N workers claim published shares, hand each to a `Processor`, and delete
/// the copies once processed. A failed attempt is retried with exponential backoff (`retryDelay`, doubling) up to
/// `maxAttempts`, then the share is quarantined with ERR_PROCESSOR_FAILED.
///
/// Call `Spool.recover()` at start-up, before this process's loader and consumers run. Shutdown is graceful: cancelling
/// `run()` or `drain()` stops claiming, lets in-flight work finish within `shutdownDeadline`, then cancels it and
/// releases what did not finish back to `incoming` without counting an attempt. Errors of the spool or the ledger
/// itself (not of a processor) stop every worker and are thrown once they are done.
public struct Consumer: Sendable {
    /// The spool consumed.
    package let spool: Spool
    /// Where each claimed share goes.
    package let processor: any Processor
    /// Workers, retries, polling, shutdown and retention.
    package let configuration: ConsumerConfiguration
    private let doorbell: Doorbell
    /// What `isBusy` reads: the running dispatcher, and a wake it has not looked at yet.
    private let activity = ConsumerActivity()
    /// `processing` as an absolute path, for the paths handed to processors.
    private let processingDirectory: String

    /// A consumer of `spool`.
    public init(spool: Spool, processor: any Processor, configuration: ConsumerConfiguration = .init()) {
        self.spool = spool
        self.processor = processor
        self.configuration = configuration
        doorbell = Doorbell(clock: configuration.clock)
        let root = spool.root.hasPrefix("/") ? spool.root : FileManager.default.currentDirectoryPath + "/" + spool.root
        processingDirectory = root + "/" + Spool.Stage.processing.rawValue
    }

    /// Processes shares as they are published until the task is cancelled; idle workers look at `incoming` every
    /// `pollInterval`, or at once when `wake()` is called. Quarantine and ledger retention run hourly.
    public func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await work(untilEmpty: false) }
            group.addTask { [clock = configuration.clock] in
                while !Task.isCancelled {
                    _ = try applyRetention()
                    try? await clock.sleep(for: .seconds(3600))
                }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Purges quarantined shares past their TTL and prunes old ledger events (hourly in `run()`, once per `drain()`).
    @discardableResult
    package func applyRetention() throws -> RetentionReport {
        try spool.applyRetention(
            quarantineTTL: configuration.quarantineTTL, eventRetention: configuration.eventRetention)
    }

    /// Processes everything in `incoming`, retries included, and returns once it is empty and nothing is in
    /// flight (`sharepipe consume`, `--oneshot`).
    public func drain() async throws -> ConsumeSummary {
        try applyRetention()
        return try await work(untilEmpty: true)
    }

    /// Tells idle workers that a share was just published.
    public func wake() {
        activity.woken.store(true, ordering: .relaxed)
        doorbell.ring()
    }

    /// Whether shares are claimed, waiting to be claimed from the last look at `incoming`, running, or waiting to be
    /// recorded, or a wake (a share just published) is not looked at yet. In memory only: the notifier's hold reads
    /// it every few milliseconds.
    package var isBusy: Bool {
        activity.woken.load(ordering: .relaxed) || activity.dispatcher.withLock { $0?.isBusy ?? false }
    }

    private func work(untilEmpty: Bool) async throws -> ConsumeSummary {
        System.raiseDescriptorLimit()
        let dispatcher = Dispatcher(
            spool: spool, configuration: configuration, doorbell: doorbell, untilEmpty: untilEmpty,
            activity: activity)
        activity.dispatcher.withLock { $0 = dispatcher }
        defer { activity.dispatcher.withLock { if $0 === dispatcher { $0 = nil } } }
        let threads = (0..<max(1, configuration.workers)).map { Lane(name: "sp-consumer-\($0)") }
        for thread in threads { thread.start() }
        defer { for thread in threads { thread.stop() } }
        // Unstructured so that cancelling the caller does not cancel in-flight work at once: it first stops the
        // claiming, and the pool itself cancels the workers when the shutdown deadline passes.
        let pool = Task { await runPool(dispatcher, threads: threads) }
        await withTaskCancellationHandler {
            await pool.value
        } onCancel: {
            dispatcher.stop()
        }
        // Claims taken in the last batch and never started go back without counting an attempt.
        for claim in dispatcher.unstarted() {
            do { try spool.release(claim) } catch { dispatcher.fail(error) }
        }
        do {
            try await spool.executor.waitUntilIdle()
        } catch {
            dispatcher.fail(error)
        }
        return try dispatcher.result()
    }

    private func runPool(_ dispatcher: Dispatcher, threads: [Lane]) async {
        let deadline = configuration.shutdownDeadline
        let clock = configuration.clock
        await withTaskGroup(of: Bool.self) { group in
            for thread in threads {
                group.addTask(executorPreference: thread) {
                    await worker(dispatcher)
                    return true
                }
            }
            group.addTask {
                await dispatcher.waitForStop()
                if !Task.isCancelled { try? await clock.sleep(for: deadline) }
                return false
            }
            var workers = threads.count
            while let isWorker = await group.next() {
                if isWorker { workers -= 1 }
                if !isWorker || workers == 0 { group.cancelAll() }
            }
        }
    }

    /// A run of this worker that succeeded, its completion not handed over yet: its success is recorded with the
    /// worker's next start (one commit for both), or on its own when the worker has nothing to start.
    private struct Success {
        let claim: ShareClaim
        let durationMilliseconds: Int64
    }

    private func worker(_ dispatcher: Dispatcher) async {
        var success: Success?
        while true {
            do {
                switch try dispatcher.next() {
                case .finished:
                    try record(&success, dispatcher)
                    return
                case .wait(let duration):
                    try record(&success, dispatcher)
                    await doorbell.wait(upTo: duration)
                    if Task.isCancelled { return }
                case .claim(let claim):
                    defer { dispatcher.finished(claim.shareID) }
                    try await handle(claim, dispatcher, after: &success)
                }
            } catch {
                // The completion is recorded all the same if the ledger takes it; else recovery runs the share again.
                if let success {
                    spool.complete(success.claim, durationMilliseconds: success.durationMilliseconds)
                    dispatcher.recorded()
                }
                dispatcher.fail(error)
                return
            }
        }
    }

    /// Records a pending success on its own and hands its completion over.
    private func record(_ success: inout Success?, _ dispatcher: Dispatcher) throws {
        guard let pending = success else { return }
        try spool.succeed([pending.claim.shareID])
        success = nil
        spool.complete(pending.claim, durationMilliseconds: pending.durationMilliseconds)
        dispatcher.recorded()
    }

    /// One attempt at one claimed share; `success` is the worker's last successful run, whose success is recorded
    /// with this one's start, and becomes this run's when it succeeds.
    private func handle(_ claim: ShareClaim, _ dispatcher: Dispatcher, after success: inout Success?) async throws {
        let shareID = claim.shareID
        let clock = configuration.clock
        let maxAttempts = max(1, configuration.maxAttempts)
        let attempt = claim.previousAttempts + 1
        let policy = ShareLifecycle.RetryPolicy(
            maxAttempts: maxAttempts, retryDelayMilliseconds: Spool.nanoseconds(configuration.retryDelay) / 1_000_000)
        // The run's start is committed before the processor runs: a death of this process from here on is charged to
        // the share, a death before never is. A share that took its daemon down too often is quarantined instead.
        let start = try spool.start(
            claim, maxAttempts: maxAttempts, now: clock.wallMilliseconds(),
            succeeded: success.map { [$0.claim.shareID] } ?? [])
        if let previous = success {
            success = nil
            spool.complete(previous.claim, durationMilliseconds: previous.durationMilliseconds)
            dispatcher.recorded()
        }
        if case .quarantined(let error) = start {
            dispatcher.count(\.quarantined)
            log(.error, "share.quarantined", shareID, attempt: attempt - 1, code: error.code)
            return
        }
        let started = clock.monotonicNanoseconds()
        var failure: ShareError?
        do {
            let manifest = try spool.manifest(.processing, shareID)
            let share = try ClaimedShare(
                manifest: manifest, directory: processingDirectory + "/" + shareID, attempt: attempt)
            try await processor.process(share)
        } catch {
            if Task.isCancelled {
                try spool.release(claim)
                dispatcher.count(\.released)
                return
            }
            failure = error as? ShareError ?? ShareError(.processorFailed, "the processor failed: \(error)")
        }
        let duration = Int64((clock.monotonicNanoseconds() - started) / 1_000_000)
        guard let failure else {
            success = Success(claim: claim, durationMilliseconds: duration)
            dispatcher.succeeded()
            dispatcher.count(\.processed)
            log(.info, "share.processed", shareID, attempt: attempt, milliseconds: duration)
            return
        }
        let failedAt = clock.wallMilliseconds()
        switch try spool.fail(claim, error: failure, durationMilliseconds: duration, policy: policy, now: failedAt) {
        case .quarantined:
            dispatcher.count(\.quarantined)
            log(.error, "share.quarantined", shareID, attempt: attempt, code: failure.code, milliseconds: duration)
        case .retried:
            dispatcher.count(\.retried)
            log(.warning, "share.retry", shareID, attempt: attempt, code: failure.code, milliseconds: duration)
        }
    }

    private func log(
        _ level: Logger.Level, _ event: String, _ shareID: String, attempt: Int, code: ShareError.Code? = nil,
        milliseconds: Int64? = nil
    ) {
        guard let logger = configuration.logger else { return }
        var fields: [(String, Logger.Value)] = [("share", .string(shareID)), ("attempt", .int(Int64(attempt)))]
        if let code { fields.append(("code", .string(code.rawValue))) }
        if let milliseconds { fields.append(("duration_ms", .int(milliseconds))) }
        logger.log(level, event, fields)
    }
}

/// Hands claimed shares to workers. When its pool of claims runs dry, one worker refills it — lists `incoming`,
/// skips shares whose backoff has not expired, and claims a few with one ledger commit — while the others wait; the
/// lock is never held across the file system or the ledger. Claiming no more than the workers can start (or a small
/// part of a deep backlog) keeps the other consumers of the spool (another daemon, `consume`) in the work.
private final class Dispatcher: Sendable {
    enum Next {
        case claim(ShareClaim)
        case wait(Duration)
        case finished
    }


    private struct State {
        /// Claimed shares not yet handed out, oldest last.
        var claims: [ShareClaim] = []
        /// Claimable ids from the last listing of `incoming`, not yet tried, oldest last.
        var candidates: [String] = []
        var inFlight = 0
        /// The share running alone (`ShareLifecycle.runsAlone`), if one is.
        var alone: String?
        /// Successful runs whose success is not recorded yet: to the ledger they are still running, so a share that
        /// runs alone waits for them too.
        var unrecorded = 0
        var refilling = false
        /// Whether the last refill found nothing claimable (everything deferred, or lost to other claimers).
        var dry = false
        /// The earliest not-before time of a deferred share in `incoming`, ms since the epoch.
        var earliestDeferred: Int64?
        var stopping = false
        var error: ShareError?
        var otherError: String?
        var summary = ConsumeSummary()
    }

    private let spool: Spool
    private let configuration: ConsumerConfiguration
    private let doorbell: Doorbell
    private let stopBell: Doorbell
    private let untilEmpty: Bool
    private let activity: ConsumerActivity
    private let state = Mutex(State())

    init(
        spool: Spool, configuration: ConsumerConfiguration, doorbell: Doorbell, untilEmpty: Bool,
        activity: ConsumerActivity
    ) {
        self.spool = spool
        self.configuration = configuration
        self.doorbell = doorbell
        self.untilEmpty = untilEmpty
        self.activity = activity
        stopBell = Doorbell(clock: configuration.clock)
    }

    /// Claims in the pool or candidates left from the last listing, shares running or not yet recorded, a refill.
    var isBusy: Bool {
        state.withLock { state in
            !state.claims.isEmpty || !state.candidates.isEmpty || state.inFlight > 0 || state.unrecorded > 0
                || state.refilling
        }
    }

    func next() throws -> Next {
        enum Step { case give(ShareClaim), refill, wait(Duration), finished }
        while true {
            let step: Step = state.withLock { state in
                if state.stopping { return .finished }
                if let claim = state.claims.last {
                    // A share with a death on its record runs alone; `finished` rings when a run ends.
                    let alone = ShareLifecycle.runsAlone(claim.history)
                    if state.alone != nil || (alone && state.inFlight + state.unrecorded > 0) {
                        return .wait(configuration.pollInterval)
                    }
                    state.claims.removeLast()
                    if alone { state.alone = claim.shareID }
                    state.inFlight += 1
                    return .give(claim)
                }
                if !state.refilling && !state.dry {
                    state.refilling = true
                    // The refill looks at `incoming`: a wake before now is seen (`isBusy` covers the refill).
                    activity.woken.store(false, ordering: .relaxed)
                    return .refill
                }
                if untilEmpty && state.dry && !state.refilling && state.inFlight == 0 && state.earliestDeferred == nil {
                    return .finished
                }
                var wait = configuration.pollInterval
                if let earliest = state.earliestDeferred {
                    wait = min(wait, .milliseconds(max(1, earliest - configuration.clock.wallMilliseconds())))
                }
                // The next wait ends with a fresh look at `incoming`.
                state.dry = false
                return .wait(state.refilling ? .milliseconds(5) : wait)
            }
            switch step {
            case .give(let claim): return .claim(claim)
            case .wait(let duration): return .wait(duration)
            case .finished: return .finished
            case .refill:
                do {
                    try refill()
                } catch {
                    state.withLock { $0.refilling = false }
                    throw error
                }
            }
        }
    }

    /// Claims the next few candidates, listing `incoming` again only once the last listing is used up.
    private func refill() throws {
        var candidates = state.withLock { state in
            defer { state.candidates = [] }
            return state.candidates
        }
        var earliest = state.withLock { $0.earliestDeferred }
        if candidates.isEmpty {
            let deferred = try spool.ledger.deferredShares(now: configuration.clock.wallMilliseconds())
            earliest = nil
            for shareID in try spool.shareIDs(in: .incoming).reversed() {
                if let notBefore = deferred[shareID] {
                    earliest = min(earliest ?? notBefore, notBefore)
                } else {
                    candidates.append(shareID)
                }
            }
        }
        // One share per worker, or a sixteenth of a deep backlog (at most 64), so that a batch of claims costs one
        // commit while fifteen sixteenths stay for the other consumers of the spool.
        let batch = Array(candidates.suffix(min(64, max(1, configuration.workers, candidates.count / 16))))
        candidates.removeLast(batch.count)
        let claims = try spool.claim(batch.reversed())
        state.withLock { state in
            state.claims = claims.reversed() + state.claims
            state.candidates = candidates
            state.refilling = false
            state.dry = claims.isEmpty && candidates.isEmpty
            state.earliestDeferred = earliest
        }
        if !claims.isEmpty { doorbell.ring() }
    }

    /// A run succeeded; its success is recorded later (`recorded`).
    func succeeded() {
        state.withLock { $0.unrecorded += 1 }
    }

    /// A success counted by `succeeded` is recorded (or handed over to the completion as is).
    func recorded() {
        state.withLock { $0.unrecorded -= 1 }
        doorbell.ring()
    }

    func finished(_ shareID: String) {
        state.withLock { state in
            state.inFlight -= 1
            if state.alone == shareID { state.alone = nil }
        }
        doorbell.ring()
    }

    /// Claims never handed out, taken off the pool (at shutdown).
    func unstarted() -> [ShareClaim] {
        state.withLock { state in
            defer { state.claims = [] }
            return state.claims
        }
    }

    func count(_ field: WritableKeyPath<ConsumeSummary, Int> & Sendable) {
        state.withLock { $0.summary[keyPath: field] += 1 }
    }

    /// Stops claiming; in-flight work goes on.
    func stop() {
        state.withLock { $0.stopping = true }
        doorbell.ring()
        stopBell.ring()
    }

    /// A failure of the spool or the ledger: every worker stops.
    func fail(_ error: any Error) {
        state.withLock { state in
            if state.error == nil && state.otherError == nil {
                if let error = error as? ShareError { state.error = error } else { state.otherError = "\(error)" }
            }
        }
        stop()
    }

    /// Returns once `stop()` was called, or when the task is cancelled.
    func waitForStop() async {
        while !state.withLock({ $0.stopping }) && !Task.isCancelled {
            await stopBell.wait(upTo: .seconds(3600))
        }
    }

    func result() throws -> ConsumeSummary {
        try state.withLock { state in
            if let error = state.error { throw error }
            if let other = state.otherError { throw ShareError(.io, other) }
            return state.summary
        }
    }
}

/// What `Consumer.isBusy` reads, shared by the consumer's copies: the dispatcher of the running `run()` or `drain()`,
/// and whether a wake came that no refill has looked at yet.
private final class ConsumerActivity: Sendable {
    let dispatcher = Mutex<Dispatcher?>(nil)
    let woken = Atomic<Bool>(false)
}
