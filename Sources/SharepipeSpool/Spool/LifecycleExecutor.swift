import Foundation
import SharepipeLedger
import SharepipeSystem
import Synchronization

/// The one executor of the share lifecycle: it performs the actions `ShareLifecycle` returns on the spool's
/// directories and ledger, and feeds back what happened. Publishes, completions and content reservations are
/// batched (group commit): whatever is queued when a lane comes round forms one run, so each barrier and commit is
/// paid once per batch; a lone share is a batch of one at once. The other transitions (claim, retry, quarantine,
/// release, requeue, purge, recovery) run on the caller's thread, one run each, through the same `perform`.
///
/// Its `LifecycleFaults`, given by whoever opened the spool, may kill the process right after an action (the crash
/// tests stop at every one) or fail an action instead of performing it (the failure-path tests).
package final class LifecycleExecutor: Sendable {
    /// Shares per publish batch, and bytes.
    static let maxShares = 256
    static let maxBytes: Int64 = 64 << 20
    /// A batch that starts within this long (ns) of the last one's end waits `gatherMicroseconds` for company.
    static let busyWindow: UInt64 = 5_000_000
    static let gatherMicroseconds: UInt32 = 4_000

    /// What became of a share handed over for publishing.
    package enum PublishOutcome: Sendable {
        case published
        case failed(ShareError)
    }

    /// A share handed over for publishing, and whom to tell.
    private final class PendingPublish: Sendable {
        let record: StagedRecord
        /// The share's sources (the inbox's hold on them, a lock among it), let go before the loader is told.
        private let held: Mutex<(any ShareSources)?>
        /// The lock on `staging/S`, held until the share is published or rolled back.
        let lock: Mutex<DirectoryLock?>
        let continuation: Mutex<CheckedContinuation<PublishOutcome, Never>?>

        init(_ share: consuming StagedShare) {
            record = share.record
            held = Mutex(share.sources)
            lock = Mutex(Optional(share.lock))
            continuation = Mutex(nil)
        }

        var bytes: Int64 { record.manifest.attachments.reduce(0) { $0 + ($1.bytes ?? 0) } }

        var sources: (any ShareSources)? { held.withLock { $0 } }

        /// Lets go of the staging lock and the sources, then tells the loader: a loader that tries the same source
        /// again at once (a publish that failed) must not find it still held by this batch.
        func finish(_ outcome: PublishOutcome) {
            lock.withLock { $0 = nil }
            held.withLock { $0 = nil }
            continuation.withLock { $0 }?.resume(returning: outcome)
        }
    }

    /// A loading share's content reservation handed over for the next reserve batch, and whom to tell.
    private struct PendingReservation: Sendable {
        let reservation: ContentReservation
        let continuation: CheckedContinuation<[DuplicateOrigin?], any Error>
    }

    /// A processed share handed over for recording and removal.
    private final class PendingCompletion: Sendable {
        let claim: Mutex<ShareClaim?>
        let completion: ShareLifecycle.Completion

        init(_ claim: consuming ShareClaim, durationMilliseconds: Int64) {
            completion = .init(shareID: claim.shareID, durationMilliseconds: durationMilliseconds)
            self.claim = Mutex(claim)
        }
    }

    private struct Queues {
        var publishes: [PendingPublish] = []
        var completions: [PendingCompletion] = []
        var reservations: [PendingReservation] = []
        var publishing = false
        var completing = false
        var reserving = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var completionFailure: ShareError?
    }

    private let queues = Mutex(Queues())
    /// Signalled whenever the completion queue shrinks, for callers waiting under `maxCompletions`.
    private let room = NSCondition()
    private let publishLane = WorkerThread(name: "sp-publish")
    private let completeLane = WorkerThread(name: "sp-complete")
    private let reserveLane = WorkerThread(name: "sp-reserve")
    /// Completions queued at most before `complete` waits: each holds its claim's directory open.
    let maxCompletions = min(128, max(8, (System.descriptorLimit() - 96) / 4))
    /// Injected faults; nil in production.
    package let faults: LifecycleFaults?

    init(faults: LifecycleFaults?) {
        self.faults = faults
        publishLane.start()
        completeLane.start()
        reserveLane.start()
    }

    deinit {
        publishLane.stop()
        completeLane.stop()
        reserveLane.stop()
    }

    /// Shares waiting for the next publish batch.
    var queuedPublishes: Int { queues.withLock { $0.publishes.count } }

    // MARK: Batched transitions

    /// Hands a staged share over; returns once it is published, or failed and rolled back (its sources untouched).
    func publish(_ share: consuming StagedShare, spool: Spool) async -> PublishOutcome {
        let pending = PendingPublish(share)
        return await withCheckedContinuation { continuation in
            pending.continuation.withLock { $0 = continuation }
            let start = queues.withLock { queues in
                queues.publishes.append(pending)
                defer { queues.publishing = true }
                return !queues.publishing
            }
            if start { Task(executorPreference: publishLane) { self.drainPublishes(spool) } }
        }
    }

    /// Hands a loading share's content reservation over; returns each copy's original once the batch it joined is
    /// committed, or throws the batch's failure.
    func reserve(_ reservation: ContentReservation, spool: Spool) async throws -> [DuplicateOrigin?] {
        try await withCheckedThrowingContinuation { continuation in
            let start = queues.withLock { queues in
                queues.reservations.append(PendingReservation(reservation: reservation, continuation: continuation))
                defer { queues.reserving = true }
                return !queues.reserving
            }
            if start { Task(executorPreference: reserveLane) { self.drainReservations(spool) } }
        }
    }

    /// Queues a processed share for recording and removal; returns at once unless `maxCompletions` are already
    /// waiting (then it blocks until some are taken: callers are the consumer's own threads).
    func complete(_ claim: consuming ShareClaim, durationMilliseconds: Int64, spool: Spool) {
        let pending = PendingCompletion(claim, durationMilliseconds: durationMilliseconds)
        room.lock()
        while queues.withLock({ $0.completions.count >= maxCompletions }) { room.wait() }
        room.unlock()
        let start = queues.withLock { queues in
            queues.completions.append(pending)
            defer { queues.completing = true }
            return !queues.completing
        }
        if start { Task(executorPreference: completeLane) { self.drainCompletions(spool) } }
    }

    /// Returns once every queued completion is recorded and removed; throws the first ledger failure met since the
    /// last call (those shares stay in `processing` and run again after recovery).
    package func waitUntilIdle() async throws {
        await withCheckedContinuation { continuation in
            let idle = queues.withLock { queues in
                if queues.completing || !queues.completions.isEmpty {
                    queues.idleWaiters.append(continuation)
                    return false
                }
                return true
            }
            if idle { continuation.resume() }
        }
        if let failure = queues.withLock({ queues in defer { queues.completionFailure = nil }; return queues.completionFailure }) {
            throw failure
        }
    }

    /// Every lane's rule before it takes a batch: in a steady flow (the last batch ended a moment ago) and with fewer
    /// than `enough` queued, a short wait lets the batch fill; a lone share, with nothing done for a while, never
    /// waits.
    private static func gather(after lastBatchEnded: UInt64, queued: Int, enough: Int) {
        if System.monotonicNanoseconds() - lastBatchEnded < busyWindow, queued < enough {
            System.pause(microseconds: gatherMicroseconds)
        }
    }

    private func drainPublishes(_ spool: Spool) {
        var lastBatchEnded: UInt64 = 0
        while true {
            faults?.waitWhileHeld()
            Self.gather(after: lastBatchEnded, queued: queuedPublishes, enough: Self.maxShares / 4)
            let batch: [PendingPublish] = queues.withLock { queues in
                var taken: [PendingPublish] = []
                var bytes: Int64 = 0
                while let next = queues.publishes.first, taken.count < Self.maxShares,
                    taken.isEmpty || bytes + next.bytes <= Self.maxBytes
                {
                    taken.append(queues.publishes.removeFirst())
                    bytes += next.bytes
                }
                if taken.isEmpty { queues.publishing = false }
                return taken
            }
            if batch.isEmpty { return }
            faults?.batchesPublished.add(1, ordering: .relaxed)
            var run = ShareLifecycle.publish(batch.map(\.record))
            let context = RunContext(sources: Dictionary(
                batch.compactMap { pending in pending.sources.map { (pending.record.manifest.shareId, $0) } },
                uniquingKeysWith: { first, _ in first }))
            let outcome = execute(&run, spool: spool, context: context)
            let failed: [String: ShareError] = if case .finished(let failed) = outcome { failed } else { [:] }
            context.releaseSources()
            // Releases the staging locks (the directories are in `incoming`, or removed) and tells the loaders.
            for pending in batch {
                pending.finish(failed[pending.record.manifest.shareId].map { .failed($0) } ?? .published)
            }
            if failed.count < batch.count { spool.notifyPublished() }
            lastBatchEnded = System.monotonicNanoseconds()
        }
    }

    private func drainCompletions(_ spool: Spool) {
        var lastBatchEnded: UInt64 = 0
        while true {
            Self.gather(
                after: lastBatchEnded, queued: queues.withLock { $0.completions.count }, enough: maxCompletions / 4)
            let (batch, waiters): ([PendingCompletion], [CheckedContinuation<Void, Never>]) = queues.withLock {
                queues in
                let count = min(queues.completions.count, maxCompletions)
                let taken = Array(queues.completions.prefix(count))
                queues.completions.removeFirst(count)
                if taken.isEmpty {
                    queues.completing = false
                    defer { queues.idleWaiters = [] }
                    return ([], queues.idleWaiters)
                }
                return (taken, [])
            }
            room.lock()
            room.broadcast()
            room.unlock()
            if batch.isEmpty {
                for waiter in waiters { waiter.resume() }
                return
            }
            let context = RunContext(sources: [:])
            // The context becomes the only owner of each claim's lock, so that each is released the moment its
            // directory is removed (a deep backlog must not hold a batch of removed directories open).
            for pending in batch {
                if let claim = pending.claim.withLock({ claim in defer { claim = nil }; return claim }) {
                    context.adopt(claim.held)
                }
            }
            var run = ShareLifecycle.complete(batch.map(\.completion))
            if case .finished(let failed) = execute(&run, spool: spool, context: context),
            let error = failed.values.first {
                queues.withLock { queues in if queues.completionFailure == nil { queues.completionFailure = error } }
            }
            context.releaseAll()
            lastBatchEnded = System.monotonicNanoseconds()
        }
    }

    private func drainReservations(_ spool: Spool) {
        var lastBatchEnded: UInt64 = 0
        while true {
            Self.gather(
                after: lastBatchEnded, queued: queues.withLock { $0.reservations.count }, enough: Self.maxShares / 4)
            let batch: [PendingReservation] = queues.withLock { queues in
                let taken = Array(queues.reservations.prefix(Self.maxShares))
                queues.reservations.removeFirst(taken.count)
                if taken.isEmpty { queues.reserving = false }
                return taken
            }
            if batch.isEmpty { return }
            var run = ShareLifecycle.reserve(batch.map(\.reservation))
            let outcome = execute(&run, spool: spool, context: RunContext(sources: [:]))
            for (index, pending) in batch.enumerated() {
                switch outcome {
                case .reserved(let origins):
                    pending.continuation.resume(returning: origins[index])
                case .finished(let failed):
                    pending.continuation.resume(throwing: failed[pending.reservation.shareID]
                        ?? ShareError(.io, "the reservation was not made"))
                case .claimed:
                    pending.continuation.resume(throwing: ShareError(.io, "a reservation cannot claim"))
                }
            }
            lastBatchEnded = System.monotonicNanoseconds()
        }
    }

    // MARK: Performing

    /// What a run needs besides share ids: the locks of the shares it covers and their sources' owners.
    final class RunContext: Sendable {
        private let held: Mutex<[String: any ShareSources]>
        private let locks = Mutex<[String: HeldLock]>([:])

        init(sources: [String: any ShareSources]) {
            held = Mutex(sources)
        }

        /// The sources of a share of the run (a publish's), if it has any.
        func sources(of shareID: String) -> (any ShareSources)? { held.withLock { $0[shareID] } }

        /// Lets go of every share's sources (the run is over).
        func releaseSources() { held.withLock { $0 = [:] } }

        /// Covers a lock already held (a claim being completed), or one the run took.
        func adopt(_ lock: HeldLock) { locks.withLock { $0[lock.shareID] = lock } }

        func lock(_ shareID: String) -> HeldLock? { locks.withLock { $0[shareID] } }

        /// The locks taken by the run, handed to the caller.
        func take() -> [String: HeldLock] { locks.withLock { locks in defer { locks = [:] }; return locks } }

        func release(_ shareID: String) { _ = locks.withLock { $0.removeValue(forKey: shareID) } }

        func releaseAll() { locks.withLock { $0 = [:] } }
    }

    /// Runs a transition to its end: each action performed, its crash point passed, its outcome fed back.
    /// `stoppingAfter` ends the run right after that crash point, as a crash would (the harness's crash points).
    @discardableResult
    func execute(
        _ run: inout ShareLifecycle, spool: Spool, context: RunContext, stoppingAfter stop: String? = nil
    ) -> ShareLifecycle.Outcome {
        var step = run.start()
        while case .perform(let action) = step {
            let point = run.crashPoint(action)
            let event: ShareLifecycle.Event
            if let faults, faults.failure.withLock({ $0 }) == point {
                event = .failed(ShareError(.io, "injected failure at \(point)", errno: Errno.io))
            } else {
                do {
                    event = try perform(action, spool: spool, context: context, crashPoint: point)
                } catch {
                    event = .failed(error as? ShareError ?? ShareError(.io, "\(error)"))
                }
            }
            if case .failed(let error) = event {
                spool.logger?.error("lifecycle.action_failed", [
                    ("code", .string(error.code.rawValue)), ("action", .string(point)),
                    ("shares", .int(Int64(run.shares.count))), ("errno", .int(Int64(error.errno ?? 0))),
                ])
            }
            if let faults, faults.crashAfter == point { System.killSelf() }
            if stop == point { return .finished(failed: [:]) }
            step = run.handle(event, after: action)
        }
        guard case .finish(let outcome) = step else { return .finished(failed: [:]) }
        return outcome
    }

    private func perform(
        _ action: ShareLifecycle.Action, spool: Spool, context: RunContext, crashPoint: String
    ) throws -> ShareLifecycle.Event {
        let directories = spool.directories
        switch action {
        case .barrier(let ids):
            // One syncfs where it is a barrier, else each copy, manifest and staging/S synced (FileSystemCapabilities).
            try spool.barrier.makeDurable(ids, in: directories.staging)
            return .done
        case .record(let record):
            return try spool.apply(record, during: crashPoint)
        case .move(let ids, let from, let to):
            var moved: [String] = []
            for id in ids {
                if from == .staging {
                    // Share ids are fresh UUIDs: nothing in `incoming` can have the name.
                    try directories.staging.rename(id, into: directories.incoming)
                    moved.append(id)
                    continue
                }
                do {
                    // Never replacing, by renameat2(RENAME_NOREPLACE) or, where the file system refuses it, by the
                    // link-based protocols of ExclusiveMove.
                    let done = from == .incoming && to == .processing
                        ? try ExclusiveMove.claim(
                            id, from: directories.incoming, to: directories.processing,
                            capabilities: spool.capabilities)
                        : try ExclusiveMove.share(
                            id, from: directories[from], to: directories[to], capabilities: spool.capabilities)
                    if done {
                        moved.append(id)
                    } else if from != .incoming {
                        throw ShareError(
                            .io, "share \(id) is both in \(from.rawValue) and in \(to.rawValue)", errno: Errno.exists)
                    }
                } catch let error as ShareError where error.errno == Errno.noEntry && from == .incoming {
                    // Another claimer won, or the share is gone.
                }
            }
            return moved.count == ids.count ? .done : .partly(done: moved)
        case .lock(let ids):
            var locked: [String] = []
            for id in ids {
                // A publisher lets go of its share a few milliseconds after it is published; a lock still held
                // after that is another claimer's, or a retry's still moving the share back.
                guard let lock = try DirectoryLock.acquire(spool.path(.incoming, id), patience: .milliseconds(100))
                else { continue }
                context.adopt(HeldLock(shareID: id, lock: lock))
                locked.append(id)
            }
            return locked.count == ids.count ? .done : .partly(done: locked)
        case .sync(let stage):
            try directories[stage].sync()
            return .done
        case .removeSources(let ids):
            var done: [String] = []
            var touched: [AnyHashable: any SyncableDirectory] = [:]
            for id in ids {
                guard let sources = context.sources(of: id) else {
                    done.append(id)
                    continue
                }
                let result = sources.removeAfterPublish(shareID: id, logger: spool.logger)
                for directory in result.touched { touched[directory.syncIdentity] = directory }
                if result.complete { done.append(id) }
            }
            for directory in touched.values { try? directory.syncForRemovals() }
            return done.count == ids.count ? .done : .partly(done: done)
        case .remove(let ids, let stage):
            try remove(ids, from: stage, spool: spool, context: context)
            return .done
        case .writeReason(let id, let reason):
            try spool.writeReason(reason, shareID: id)
            return .done
        case .removeReason(let id, let stage):
            try System.removeTree(spool.path(stage, id) + "/" + QuarantineReason.fileName)
            return .done
        }
    }

    /// Removes share directories; claimed ones through their still-held lock, a few at once (metadata work in
    /// separate directories). A removal that fails is logged: recovery finishes it.
    private func remove(_ ids: [String], from stage: Spool.Stage, spool: Spool, context: RunContext) throws {
        if ids.count == 1 {
            return try removeOne(ids[0], from: stage, spool: spool, context: context)
        }
        let lanes = min(4, ids.count)
        DispatchQueue.concurrentPerform(iterations: lanes) { lane in
            for index in stride(from: lane, to: ids.count, by: lanes) {
                do {
                    try removeOne(ids[index], from: stage, spool: spool, context: context)
                } catch {
                    spool.logger?.error("spool.remove_failed", [
                        ("code", .string(ShareError.Code.io.rawValue)), ("share", .string(ids[index])),
                    ])
                }
            }
        }
    }

    private func removeOne(_ id: String, from stage: Spool.Stage, spool: Spool, context: RunContext) throws {
        if stage == .processing, let held = context.lock(id) {
            defer { context.release(id) }
            // Emptied and kept for a later share where that is safe and cheaper (ShareRecycler), else removed.
            if spool.recycler.keep(id, locked: held.lock.directory, from: spool.directories.processing) { return }
            try held.removeDirectory(in: spool)
        } else {
            try spool.directories[stage].removeTree(id)
        }
    }
}

/// The owner of a published share's sources (the inbox): told once the share is durable, it removes them.
package protocol ShareSources: Sendable {
    /// Removes the sources; `complete` when every one is gone, `touched` the directories whose removals must be
    /// made durable (each synced once per batch).
    func removeAfterPublish(shareID: String, logger: Logger?) -> (complete: Bool, touched: [any SyncableDirectory])
}

/// A directory whose entry removals are made durable once per batch.
package protocol SyncableDirectory: Sendable {
    var syncIdentity: AnyHashable { get }
    func syncForRemovals() throws
}
