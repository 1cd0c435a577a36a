import Foundation
import SharepipeLedger
import SharepipeSystem
import Synchronization

/// Makes a batch of staged shares durable before the ledger records them (the publisher's `barrier` step), the way
/// the state file system allows (DESIGN "Group commit", step 2, and "Where the file system refuses a primitive"):
///
/// - where `syncfs(2)` is a barrier (a local block-device file system), one `syncfs` commits every copy, manifest
///   and `staging/S` entry of the batch in one journal commit;
/// - elsewhere (FUSE, NFS, …: `syncfs` flushes the page cache but asks nobody to make it durable), each copy and
///   manifest is `fdatasync`ed and each `staging/S` `fsync`ed — once per batch for each of them — issued in
///   parallel from a small pool of long-lived threads: on NFS each sync is a COMMIT round trip, on FUSE a request
///   to its server, so their latencies overlap instead of adding up.
///
/// A `syncfs` also commits whatever else of that file system is written: a SQLite ledger there (its write-ahead
/// log beside it) needs no disk flush of its own for a commit the barrier follows (`commitsLedger`).
struct DurabilityBarrier: Sendable {
    /// How the barrier is made.
    let method: FileSystemCapabilities.Barrier
    /// Whether the barrier commits the ledger's writes too: one `syncfs` of the file system its SQLite file is on.
    let commitsLedger: Bool

    /// A barrier for a state file system with these capabilities, whose `staging` is open, and the spool's ledger.
    init(_ capabilities: FileSystemCapabilities, staging: OpenDirectory, ledger: LedgerStore) {
        method = capabilities.barrier
        commitsLedger = method == .syncfs && Self.sameFileSystem(ledger, staging)
    }

    /// Whether the ledger is a SQLite file (opened without following links; its log is written beside it) on the
    /// file system `staging` is on.
    private static func sameFileSystem(_ ledger: LedgerStore, _ staging: OpenDirectory) -> Bool {
        guard let path = (ledger.driver as? SQLiteDriver)?.path, let file = (try? System.lstatIfPresent(path)) ?? nil,
            let folder = try? staging.status()
        else { return false }
        return file.device == folder.device
    }

    /// Makes `staging/S` durable, with everything in it, for each of `shareIDs`.
    func makeDurable(_ shareIDs: [String], in staging: OpenDirectory) throws {
        switch method {
        case .syncfs:
            try staging.syncFileSystem()
        case .fsync:
            var jobs: [@Sendable () throws -> Void] = []
            for shareID in shareIDs {
                jobs += try Self.syncJobs(shareID, in: staging)
            }
            try SyncPool.shared.perform(jobs)
        }
    }

    /// One job per file (`fdatasync`) and per directory (`fsync`, after its entries' jobs are listed) of a tree.
    private static func syncJobs(_ path: String, in staging: OpenDirectory) throws -> [@Sendable () throws -> Void] {
        var jobs: [@Sendable () throws -> Void] = []
        for name in try staging.names(in: path) {
            let entry = path + "/" + name
            guard let status = try staging.statusIfPresent(entry) else { continue }
            switch status.kind {
            case .regular:
                jobs.append {
                    try staging.openForReading(entry).dataSync()
                }
            case .directory:
                jobs += try syncJobs(entry, in: staging)
            default:
                continue
            }
        }
        // A directory's own fsync makes its entries durable; the files' data syncs run beside it (neither orders
        // the other: the ledger commit waits for all of them).
        jobs.append {
            try staging.openDirectory(path).sync()
        }
        return jobs
    }
}

/// A fixed pool of threads for blocking sync calls, created once per process on first use: a batch hands its jobs
/// over and waits for all of them; no thread is created per batch.
final class SyncPool: Sendable {
    /// The process's pool.
    static let shared = SyncPool(threads: 4)

    private final class Batch: Sendable {
        let remaining: Mutex<Int>
        let failure = Mutex<ShareError?>(nil)
        let done = DispatchSemaphore(value: 0)

        init(count: Int) { remaining = Mutex(count) }

        func finish(_ error: (any Error)?) {
            if let error {
                let shareError = error as? ShareError ?? ShareError(.io, "\(error)")
                failure.withLock { if $0 == nil { $0 = shareError } }
            }
            if remaining.withLock({ count in count -= 1; return count }) == 0 { done.signal() }
        }
    }

    private struct Job: Sendable {
        let work: @Sendable () throws -> Void
        let batch: Batch
    }

    private let queue = Mutex<[Job]>([])
    private let available = DispatchSemaphore(value: 0)

    private init(threads: Int) {
        for index in 0..<threads {
            Lane.detached("sp-sync-\(index)") { [self] in work() }
        }
    }

    /// Runs every job on the pool and returns when all have ended; throws the first failure.
    func perform(_ jobs: [@Sendable () throws -> Void]) throws {
        guard !jobs.isEmpty else { return }
        let batch = Batch(count: jobs.count)
        queue.withLock { queue in queue += jobs.map { Job(work: $0, batch: batch) } }
        for _ in jobs { available.signal() }
        batch.done.wait()
        if let failure = batch.failure.withLock({ $0 }) { throw failure }
    }

    private func work() {
        while true {
            available.wait()
            guard let job = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
            do {
                try job.work()
                job.batch.finish(nil)
            } catch {
                job.batch.finish(error)
            }
        }
    }
}
