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

    /// Signalled whenever the completion queue shrinks, for callers waiting under `maxCompletions`.
    private let room = NSCondition()
    private let publishLane: BatchLane<PendingPublish>
    private let completeLane: BatchLane<PendingCompletion>
    private let reserveLane: BatchLane<PendingReservation>
    /// The first ledger failure of a completion batch since `waitUntilIdle` last reported one.
    private let completionFailure = Mutex<ShareError?>(nil)
    /// Completions queued at most before `complete` waits: each holds its claim's directory open.
    let maxCompletions = min(128, max(8, (System.descriptorLimit() - 96) / 4))
    /// Injected faults; nil in production.
    package let faults: LifecycleFaults?

    init(faults: LifecycleFaults?) {
        self.faults = faults
        let (maxShares, maxBytes, maxCompletions) = (Self.maxShares, Self.maxBytes, maxCompletions)
        publishLane = BatchLane(
            name: "sp-publish", enough: maxShares / 4, company: .announced,
            take: { queue in
                var taken: [PendingPublish] = []
                var bytes: Int64 = 0
                while let next = queue.first, taken.count < maxShares, taken.isEmpty || bytes + next.bytes <= maxBytes {
                    taken.append(queue.removeFirst())
                    bytes += next.bytes
                }
                return taken
            },
            beforeBatch: { faults?.waitWhileHeld() })
        completeLane = BatchLane(
            name: "sp-complete", enough: maxCompletions / 4, company: .steadyFlow,
            take: BatchLane.first(maxCompletions),
            afterTake: { [room] in
                room.lock()
                room.broadcast()
                room.unlock()
            })
        reserveLane = BatchLane(
            name: "sp-reserve", enough: maxShares / 4, company: .steadyFlowOfWaiters, take: BatchLane.first(maxShares))
    }

    /// Shares waiting for the next publish batch.
    var queuedPublishes: Int { publishLane.queued }

    /// Whether no publish, completion or reservation is queued or being performed.
    var isIdle: Bool { publishLane.isIdle && completeLane.isIdle && reserveLane.isIdle }

    // MARK: Batched transitions

    /// Hands a staged share over (ending its `arrival`); returns once it is published, or failed and rolled back
    /// (its sources untouched).
    func publish(_ share: consuming StagedShare, arrival: LaneArrival?, spool: Spool) async -> PublishOutcome {
        let pending = PendingPublish(share)
        return await withCheckedContinuation { continuation in
            pending.continuation.withLock { $0 = continuation }
            publishLane.submit(pending, arrival: arrival) { batch in self.publish(batch, spool: spool) }
        }
    }

    /// A share on its way to the publish lane: the lane waits for it (within its gather bound) while it is loaded.
    func expectPublish() -> LaneArrival { publishLane.expect() }

    /// Hands a loading share's content reservation over; returns each copy's original once the batch it joined is
    /// committed, or throws the batch's failure.
    func reserve(_ reservation: ContentReservation, spool: Spool) async throws -> [DuplicateOrigin?] {
        try await withCheckedThrowingContinuation { continuation in
            reserveLane.submit(PendingReservation(reservation: reservation, continuation: continuation)) { batch in
                self.reserve(batch, spool: spool)
            }
        }
    }

    /// Queues a processed share for recording and removal; returns at once unless `maxCompletions` are already
    /// waiting (then it blocks until some are taken: callers are the consumer's own threads).
    func complete(_ claim: consuming ShareClaim, durationMilliseconds: Int64, spool: Spool) {
        let pending = PendingCompletion(claim, durationMilliseconds: durationMilliseconds)
        room.lock()
        while completeLane.queued >= maxCompletions { room.wait() }
        room.unlock()
        completeLane.submit(pending) { batch in self.complete(batch, spool: spool) }
    }

    /// Returns once every queued completion is recorded and removed; throws the first ledger failure met since the
    /// last call (those shares stay in `processing` and run again after recovery).
    package func waitUntilIdle() async throws {
        await completeLane.waitUntilIdle()
        if let failure = completionFailure.withLock({ failure in defer { failure = nil }; return failure }) {
            throw failure
        }
    }

    /// One publish batch: one run of `ShareLifecycle.publish`, then every loader told.
    private func publish(_ batch: [PendingPublish], spool: Spool) {
        faults?.batchesPublished.add(1, ordering: .relaxed)
        var run = ShareLifecycle.publish(batch.map(\.record), barrierCommitsLedger: spool.barrier.commitsLedger)
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
    }

    /// One completion batch: recorded processed, the directories removed or recycled.
    private func complete(_ batch: [PendingCompletion], spool: Spool) {
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
            completionFailure.withLock { failure in if failure == nil { failure = error } }
        }
        context.releaseAll()
    }

    /// One reserve batch: one transaction, each loader told its copies' originals or the batch's failure.
    private func reserve(_ batch: [PendingReservation], spool: Spool) {
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
