import Foundation
import Synchronization

/// Records processed shares in batches and removes their copies, on its own thread, so that a worker hands a
/// finished share over and goes on to the next one.
///
/// Per batch: one ledger commit records every share processed (`synchronous=FULL`: durable), then each
/// `processing/S` is removed while its claim lock is still held, then the locks are released. No fsync of
/// `processing` follows the removals: a removal lost in a power cut leaves `processing/S` recorded processed, which
/// recovery removes. A crash before the commit runs those shares again after recovery (the at-least-once window the
/// SPEC allows, with the same share and file ids).
final class SpoolCompleter: Sendable {
    /// The steps of a batch; a test can stop the process right after either.
    enum Step: String, Sendable, CaseIterable {
        case recordProcessed = "record-processed", removed
    }

    /// Completions per batch, and queued at most before `complete` waits: each holds its claim's directory open,
    /// so workers must not run ahead of the removals without bound (they would run out of descriptors on a deep
    /// backlog). 128, or less under a low descriptor limit.
    let maxShares = min(128, max(8, (System.descriptorLimit() - 96) / 4))

    private static let crashAfter = ProcessInfo.processInfo.environment["SHAREPIPE_CRASH_AFTER"]
        .flatMap(Step.init(rawValue:))

    private final class Pending: Sendable {
        let claim: Mutex<ShareClaim?>
        let shareID: String
        let durationMilliseconds: Int64

        init(_ claim: consuming ShareClaim, durationMilliseconds: Int64) {
            shareID = claim.shareID
            self.durationMilliseconds = durationMilliseconds
            self.claim = Mutex(claim)
        }
    }

    private struct State {
        var queue: [Pending] = []
        var running = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var failure: ShareError?
    }

    private let state = Mutex(State())
    /// Signalled whenever the queue shrinks, for callers waiting under `maxQueued`.
    private let room = NSCondition()

    /// Queues a processed share for recording and removal; returns at once unless `maxQueued` completions are
    /// already waiting (then it blocks until the completer has taken some: callers are the consumer's own threads).
    func complete(_ claim: consuming ShareClaim, durationMilliseconds: Int64, spool: Spool) {
        let pending = Pending(claim, durationMilliseconds: durationMilliseconds)
        room.lock()
        while state.withLock({ $0.queue.count >= maxShares }) { room.wait() }
        room.unlock()
        let start = state.withLock { state in
            state.queue.append(pending)
            defer { state.running = true }
            return !state.running
        }
        if start {
            Thread { [self] in
                System.nameCurrentThread("sp-completer")
                run(spool)
            }.start()
        }
    }

    /// Returns once every queued completion is recorded and removed; throws the first ledger failure met since the
    /// last call (those shares stay in `processing` and are run again after recovery).
    func waitUntilIdle() async throws {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                if state.running || !state.queue.isEmpty {
                    state.idleWaiters.append(continuation)
                    return false
                }
                return true
            }
            if idle { continuation.resume() }
        }
        if let failure = state.withLock({ state in defer { state.failure = nil }; return state.failure }) {
            throw failure
        }
    }

    private func run(_ spool: Spool) {
        var lastBatchEnded: UInt64 = 0
        while true {
            // As for the publisher: in a steady flow a short wait lets the next commit cover more shares.
            if System.monotonicNanoseconds() - lastBatchEnded < SpoolPublisher.busyWindow,
                state.withLock({ $0.queue.count }) < maxShares / 4
            {
                System.pause(microseconds: SpoolPublisher.gatherMicroseconds)
            }
            let (batch, waiters): ([Pending], [CheckedContinuation<Void, Never>]) = state.withLock { state in
                let count = min(state.queue.count, maxShares)
                let taken = Array(state.queue.prefix(count))
                state.queue.removeFirst(count)
                if taken.isEmpty {
                    state.running = false
                    defer { state.idleWaiters = [] }
                    return ([], state.idleWaiters)
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
            perform(batch, spool: spool)
            lastBatchEnded = System.monotonicNanoseconds()
        }
    }

    private func perform(_ batch: [Pending], spool: Spool) {
        do {
            let violations = try spool.ledger.recordProcessed(batch.map { ($0.shareID, $0.durationMilliseconds) })
            spool.logViolations(violations, during: "complete")
            if Self.crashAfter == .recordProcessed { System.killSelf() }
        } catch {
            let shareError = error as? ShareError ?? ShareError(.io, "\(error)")
            state.withLock { state in if state.failure == nil { state.failure = shareError } }
            for pending in batch { pending.claim.withLock { $0 = nil } }
            return
        }
        // Removals are metadata work in separate directories: a few run at once.
        DispatchQueue.concurrentPerform(iterations: min(4, batch.count)) { lane in
            for pending in stride(from: lane, to: batch.count, by: 4).map({ batch[$0] }) {
                do {
                    try pending.claim.withLock { try $0?.removeDirectory(in: spool) }
                } catch {
                    spool.logger?.error("spool.remove_failed", [
                        ("code", .string(ShareError.Code.io.rawValue)), ("share", .string(pending.shareID)),
                    ])
                }
                pending.claim.withLock { $0 = nil }
            }
        }
        if Self.crashAfter == .removed { System.killSelf() }
    }
}
