import Foundation
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
    public let spool: Spool
    /// Where each claimed share goes.
    public let processor: any Processor
    /// Workers, retries, polling, shutdown and retention.
    public let configuration: ConsumerConfiguration
    private let doorbell = Doorbell()
    /// `processing` as an absolute path, for the paths handed to processors.
    private let processingDirectory: String

    /// A consumer of `spool`.
    public init(spool: Spool, processor: any Processor, configuration: ConsumerConfiguration = .init()) {
        self.spool = spool
        self.processor = processor
        self.configuration = configuration
        let root = spool.root.hasPrefix("/") ? spool.root : FileManager.default.currentDirectoryPath + "/" + spool.root
        processingDirectory = root + "/" + Spool.Stage.processing.rawValue
    }

    /// Processes shares as they are published until the task is cancelled; idle workers look at `incoming` every
    /// `pollInterval`, or at once when `wake()` is called. Quarantine and ledger retention run hourly.
    public func run() async throws {
        _ = try await work(untilEmpty: false)
    }

    /// Processes everything in `incoming`, retries included, and returns once it is empty and nothing is in
    /// flight (`sharepipe consume`, `--oneshot`).
    public func drain() async throws -> ConsumeSummary {
        try await work(untilEmpty: true)
    }

    /// Tells idle workers that a share was just published.
    public func wake() {
        doorbell.ring()
    }

    private func work(untilEmpty: Bool) async throws -> ConsumeSummary {
        let dispatcher = Dispatcher(
            spool: spool, configuration: configuration, doorbell: doorbell, untilEmpty: untilEmpty)
        let threads = (0..<max(1, configuration.workers)).map { WorkerThread(name: "sp-consumer-\($0)") }
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
        return try dispatcher.result()
    }

    private func runPool(_ dispatcher: Dispatcher, threads: [WorkerThread]) async {
        let deadline = configuration.shutdownDeadline
        await withTaskGroup(of: Bool.self) { group in
            for thread in threads {
                group.addTask(executorPreference: thread) {
                    await worker(dispatcher)
                    return true
                }
            }
            group.addTask {
                await dispatcher.waitForStop()
                if !Task.isCancelled { try? await Task.sleep(for: deadline) }
                return false
            }
            var workers = threads.count
            while let isWorker = await group.next() {
                if isWorker { workers -= 1 }
                if !isWorker || workers == 0 { group.cancelAll() }
            }
        }
    }

    private func worker(_ dispatcher: Dispatcher) async {
        while true {
            do {
                switch try dispatcher.next() {
                case .finished:
                    return
                case .wait(let duration):
                    await doorbell.wait(upTo: duration)
                    if Task.isCancelled { return }
                case .claim(let shareID):
                    var claimed = false
                    defer { dispatcher.finished(shareID, claimed: claimed) }
                    claimed = try await handle(shareID, dispatcher)
                }
            } catch {
                dispatcher.fail(error)
                return
            }
        }
    }

    /// One attempt at one share; false when another claimer had it first.
    private func handle(_ shareID: String, _ dispatcher: Dispatcher) async throws -> Bool {
        guard let claim = try spool.claim(shareID) else { return false }
        let maxAttempts = max(1, configuration.maxAttempts)
        let attempt = claim.previousAttempts + 1
        if claim.previousAttempts >= maxAttempts {
            // Every allowed attempt is used up; the last ones were cut short by crashes.
            let error = ShareError(
                .processorFailed, "\(claim.previousAttempts) attempts made, the last interrupted by a crash")
            try spool.quarantine(claim, error: error, durationMilliseconds: nil)
            dispatcher.count(\.quarantined)
            log(.error, "share.quarantined", shareID, attempt: attempt - 1, code: error.code)
            return true
        }
        let started = System.monotonicNanoseconds()
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
                return true
            }
            failure = error as? ShareError ?? ShareError(.processorFailed, "the processor failed: \(error)")
        }
        let duration = Int64((System.monotonicNanoseconds() - started) / 1_000_000)
        guard let failure else {
            try spool.complete(claim, durationMilliseconds: duration)
            dispatcher.count(\.processed)
            log(.info, "share.processed", shareID, attempt: attempt, milliseconds: duration)
            return true
        }
        if attempt >= maxAttempts {
            try spool.quarantine(claim, error: failure, durationMilliseconds: duration)
            dispatcher.count(\.quarantined)
            log(.error, "share.quarantined", shareID, attempt: attempt, code: failure.code, milliseconds: duration)
        } else {
            let delay = (Spool.nanoseconds(configuration.retryDelay) / 1_000_000) << min(attempt - 1, 30)
            try spool.retry(claim, error: failure, durationMilliseconds: duration, notBefore: Ledger.now() + delay)
            dispatcher.count(\.retried)
            log(.warning, "share.retry", shareID, attempt: attempt, code: failure.code, milliseconds: duration)
        }
        return true
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

/// Hands shares to workers: a queue of claimable share ids refilled from `incoming` when it runs dry, skipping
/// shares whose backoff has not expired and shares already being claimed.
private final class Dispatcher: Sendable {
    enum Next {
        case claim(String)
        case wait(Duration)
        case finished
    }

    private struct State {
        /// Claimable ids, newest first, so the oldest is popped from the end.
        var candidates: [String] = []
        var inFlight: Set<String> = []
        /// Ids another claimer won since the last wait; not offered again until then.
        var lost: Set<String> = []
        /// The earliest not-before time of a deferred share in `incoming`, ms since the epoch.
        var earliestDeferred: Int64?
        var nextRetention: Int64 = 0
        var stopping = false
        var error: ShareError?
        var otherError: String?
        var summary = ConsumeSummary()
    }

    private let spool: Spool
    private let configuration: ConsumerConfiguration
    private let doorbell: Doorbell
    private let stopBell = Doorbell()
    private let untilEmpty: Bool
    private let state = Mutex(State())

    init(spool: Spool, configuration: ConsumerConfiguration, doorbell: Doorbell, untilEmpty: Bool) {
        self.spool = spool
        self.configuration = configuration
        self.doorbell = doorbell
        self.untilEmpty = untilEmpty
    }

    func next() throws -> Next {
        try state.withLock { state in
            if state.stopping { return .finished }
            if state.candidates.isEmpty { try refill(&state) }
            if let shareID = state.candidates.popLast() {
                state.inFlight.insert(shareID)
                return .claim(shareID)
            }
            if untilEmpty && state.inFlight.isEmpty && state.earliestDeferred == nil { return .finished }
            state.lost = []
            var wait = configuration.pollInterval
            if let earliest = state.earliestDeferred {
                wait = min(wait, .milliseconds(max(1, earliest - Ledger.now())))
            }
            return .wait(wait)
        }
    }

    private func refill(_ state: inout State) throws {
        let now = Ledger.now()
        if now >= state.nextRetention {
            try spool.applyRetention(
                quarantineTTL: configuration.quarantineTTL, eventRetention: configuration.eventRetention)
            state.nextRetention = now + 3_600_000
        }
        let deferred = try spool.ledger.deferredShares(now: now)
        var earliest: Int64?
        var candidates: [String] = []
        for shareID in try spool.shareIDs(in: .incoming)
        where !state.inFlight.contains(shareID) && !state.lost.contains(shareID) {
            if let notBefore = deferred[shareID] {
                earliest = min(earliest ?? notBefore, notBefore)
            } else {
                candidates.append(shareID)
            }
        }
        state.candidates = candidates.reversed()
        state.earliestDeferred = earliest
    }

    func finished(_ shareID: String, claimed: Bool) {
        state.withLock { state in
            state.inFlight.remove(shareID)
            if !claimed { state.lost.insert(shareID) }
        }
        doorbell.ring()
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
