import Foundation
import Glibc
import Synchronization

/// Publishes staged shares in batches (group commit), on its own thread.
///
/// Whatever is staged when the thread comes round forms one batch (at most `maxShares` shares and `maxBytes`
/// bytes); a lone share is a batch of one at once, never waiting for company. Every share of a batch passes each
/// step before any passes the next, so DESIGN's per-share orderings hold, and each barrier is paid once per batch:
///
/// 1. `barrier` — one `syncfs` of the state file system makes every copy, manifest and `staging/S` entry of the
///    batch durable; where `syncfs` is no barrier, each file and `staging/S` is synced (`DurabilityBarrier`).
///    Crash before: recovery deletes `staging/S`; the sources are untouched.
/// 2. `recordStaged` — one ledger commit records the shares and their source identities as staged.
///    Crash after: recovery deletes `staging/S` and records the shares rejected; the sources are ingested again.
/// 3. `renamed` — each `staging/S` renamed to `incoming/S`, then one fsync of `incoming`. The shares are visible.
///    Crash after: recovery records them published and, since their sources are recorded staged, unlinks each
///    source whose identity and SHA-256 match (exactly-once ingest).
/// 4. `sourcesUnlinked` — each source unlinked if its name still names the locked inode, the emptied folders of
///    folder shares removed, one fsync per inbox directory touched.
/// 5. `recordPublished` — one commit records the shares published and their sources done.
///
/// `syncfs` rather than one fsync per file: measured on ext4 here, one `syncfs` after n small copies costs about the
/// same as one fsync (one journal commit), while n fsyncs — even issued from parallel threads — cost several
/// commits, and each fsync of a directory needs a descriptor opened only for it. Its price is that it also flushes
/// unrelated dirty data of the state file system; the state directory is meant to be sharepipe's own. Where `syncfs`
/// is no barrier (FUSE, NFS: see `FileSystemCapabilities`) the barrier syncs file by file (`DurabilityBarrier`);
/// on ext4 that measured about a fifth slower (docs/spool.md), so `syncfs` stays wherever it is a barrier.
final class SpoolPublisher: Sendable {
    /// The steps of a batch, in order; a test can stop the process right after any of them.
    enum Step: String, Sendable, CaseIterable {
        case barrier, recordStaged = "record-staged", renamed, sourcesUnlinked = "sources-unlinked"
        case recordPublished = "record-published"
    }

    /// What became of a submitted share.
    enum Outcome: Sendable {
        case published
        case failed(ShareError)
    }

    static let maxShares = 256
    static let maxBytes: Int64 = 64 << 20
    /// A batch that starts within this long (ns) of the last one's end waits `gatherMicroseconds` for company.
    static let busyWindow: UInt64 = 5_000_000
    static let gatherMicroseconds: UInt32 = 4_000

    /// `SHAREPIPE_CRASH_AFTER=<step>` kills the process with SIGKILL right after that step of the first batch; the
    /// crash tests use it to stop at every step deterministically.
    private static let crashAfter = ProcessInfo.processInfo.environment["SHAREPIPE_CRASH_AFTER"]
        .flatMap(Step.init(rawValue:))

    /// One submitted share and whom to tell.
    private final class Pending: Sendable {
        let record: StagedRecord
        let sources: [InboxSource]
        let folders: [InboxDirectory]
        /// Held until the share is published or rolled back, then released.
        let lock: Mutex<DirectoryLock?>
        let continuation: Mutex<CheckedContinuation<Outcome, Never>?>

        init(_ share: consuming StagedShare) {
            record = share.record
            sources = share.sources
            folders = share.folders
            lock = Mutex(Optional(share.lock))
            continuation = Mutex(nil)
        }

        var shareID: String { record.manifest.shareId }
        var bytes: Int64 { record.manifest.attachments.reduce(0) { $0 + ($1.bytes ?? 0) } }

        /// Releases the staging lock (and, by dropping this object, the sources) and tells the waiter.
        func finish(_ outcome: Outcome) {
            lock.withLock { $0 = nil }
            continuation.withLock { $0 }?.resume(returning: outcome)
        }
    }

    private struct State {
        var queue: [Pending] = []
        var running = false
    }

    private let state = Mutex(State())
    /// A failure to inject at a step instead of performing it (tests of the failure paths).
    let injectedFailure = Mutex<Step?>(nil)
    /// Batches published so far (each one durability barrier).
    let batchesPublished = Atomic<Int>(0)
    /// While set, no batch starts: submissions queue up (tests of batching).
    private let holding = NSCondition()
    nonisolated(unsafe) private var held = false

    /// Holds (or lets go of) the next batch.
    func hold(_ hold: Bool) {
        holding.lock()
        held = hold
        holding.broadcast()
        holding.unlock()
    }

    /// Shares waiting for the next batch.
    var queued: Int { state.withLock { $0.queue.count } }

    /// Hands a staged share over and returns once it is published (or failed, rolled back, its sources untouched).
    func publish(_ share: consuming StagedShare, spool: Spool) async -> Outcome {
        let pending = Pending(share)
        return await withCheckedContinuation { continuation in
            pending.continuation.withLock { $0 = continuation }
            let start = state.withLock { state in
                state.queue.append(pending)
                defer { state.running = true }
                return !state.running
            }
            if start {
                Thread { [self] in
                    System.nameCurrentThread("sp-publisher")
                    run(spool)
                }.start()
            }
        }
    }

    /// Publishes batches until the queue is empty, then lets the thread end (the next submission starts another).
    private func run(_ spool: Spool) {
        var lastBatchEnded: UInt64 = 0
        while true {
            holding.lock()
            while held { holding.wait() }
            holding.unlock()
            // In a steady flow (the last batch ended a moment ago) a short wait lets the next batch fill; a lone
            // share, with nothing published for a while, never waits.
            if System.monotonicNanoseconds() - lastBatchEnded < Self.busyWindow, queued < Self.maxShares / 4 {
                System.pause(microseconds: Self.gatherMicroseconds)
            }
            let batch: [Pending] = state.withLock { state in
                var taken: [Pending] = []
                var bytes: Int64 = 0
                while let next = state.queue.first, taken.count < Self.maxShares,
                    taken.isEmpty || bytes + next.bytes <= Self.maxBytes
                {
                    taken.append(state.queue.removeFirst())
                    bytes += next.bytes
                }
                if taken.isEmpty { state.running = false }
                return taken
            }
            if batch.isEmpty { return }
            perform(batch, spool: spool)
            lastBatchEnded = System.monotonicNanoseconds()
        }
    }

    private func step(_ step: Step) throws {
        if injectedFailure.withLock({ $0 }) == step {
            throw ShareError(.io, "injected failure at \(step.rawValue)", errno: EIO)
        }
    }

    private func reached(_ step: Step) {
        if Self.crashAfter == step { System.killSelf() }
    }

    private func perform(_ batch: [Pending], spool: Spool) {
        batchesPublished.add(1, ordering: .relaxed)
        let records = batch.map(\.record)
        do {
            try step(.barrier)
            try spool.barrier.makeDurable(batch.map(\.shareID), in: spool.directories.staging)
            reached(.barrier)
        } catch {
            return rollBack(batch, spool: spool, error: error, recorded: false)
        }
        do {
            try step(.recordStaged)
            try spool.ledger.recordStaged(records)
            reached(.recordStaged)
        } catch {
            return rollBack(batch, spool: spool, error: error, recorded: false)
        }

        var published: [Pending] = []
        for pending in batch {
            do {
                try step(.renamed)
                try spool.directories.staging.rename(pending.shareID, into: spool.directories.incoming)
                published.append(pending)
            } catch {
                rollBack([pending], spool: spool, error: error, recorded: true)
            }
        }
        guard !published.isEmpty else { return }
        do {
            try spool.directories.incoming.sync()
        } catch {
            // The renames stand (a consumer may already see them); only their durability is in doubt, and recovery
            // rolls a staged share found in `incoming` forward after a power cut.
            spool.logger?.error("spool.sync_failed", [("code", .string(ShareError.Code.io.rawValue))])
        }
        reached(.renamed)

        var done: [String] = []
        var touched: [InboxDirectory.DirectoryIdentity: InboxDirectory] = [:]
        for pending in published {
            var complete = true
            do {
                for source in pending.sources {
                    do {
                        try step(.sourcesUnlinked)
                        if try source.unlinkIfSame() { touched[source.directory.identity] = source.directory }
                    } catch {
                        complete = false
                        spool.logger?.error("inbox.unlink_failed", [
                            ("code", .string(ShareError.Code.io.rawValue)), ("share", .string(pending.shareID)),
                            ("errno", .int(Int64((error as? ShareError)?.errno ?? 0))),
                        ])
                    }
                }
                for folder in pending.folders {
                    guard let parent = folder.parent else { continue }
                    if (try? parent.directory.removeDirectory(folder.name)) != nil {
                        touched[parent.identity] = parent
                    }
                }
            }
            // A source that could not be unlinked keeps its staged record, so a restart's recovery removes it.
            if complete { done.append(pending.shareID) }
        }
        for inbox in touched.values { try? inbox.directory.sync() }
        reached(.sourcesUnlinked)

        do {
            try step(.recordPublished)
            let ids = published.map(\.shareID)
            spool.logViolations(try spool.ledger.recordPublished(ids, sourcesDone: done), during: "publish")
            reached(.recordPublished)
        } catch {
            // Published all the same: recovery records a staged share found in `incoming` as published.
            spool.logger?.error("ledger.publish_record_failed", [
                ("code", .string(ShareError.Code.io.rawValue)), ("shares", .int(Int64(published.count))),
            ])
        }
        // Releases the staging locks (the directories are in `incoming`) and, once the loaders let go of their
        // providers, the source locks.
        for pending in published { pending.finish(.published) }
    }

    /// A share that cannot be published: `staging/S` removed (its lock still held), the ledger told, the sources
    /// left where they are.
    private func rollBack(_ batch: [Pending], spool: Spool, error: any Error, recorded: Bool) {
        let shareError = error as? ShareError ?? ShareError(.io, "\(error)")
        for pending in batch {
            try? spool.directories.staging.removeTree(pending.shareID)
        }
        let ids = batch.map(\.shareID)
        if recorded {
            _ = try? spool.ledger.recordUnpublished(ids, code: shareError.code)
        } else {
            for pending in batch { try? spool.ledger.recordRolledBack(pending.record.manifest, code: shareError.code) }
        }
        for pending in batch { pending.finish(.failed(shareError)) }
    }
}
