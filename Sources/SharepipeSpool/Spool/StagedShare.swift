import SharepipeLedger
import SharepipeSystem

/// A share whose copies and manifest are written in `staging/S`, handed by the loader to the lifecycle's executor.
/// It owns the lock on `staging/S` (which moves with the directory into `incoming`) and, for an inbox drop, the
/// sources behind its copies, which their owner removes once the share is published.
package struct StagedShare: ~Copyable, Sendable {
    var record: StagedRecord
    let lock: DirectoryLock
    /// The owner of the copied attachments' sources (nil for shares that do not come from a folder of files).
    let sources: (any ShareSources)?

    var shareID: String { record.manifest.shareId }

    package init(record: StagedRecord, lock: consuming DirectoryLock, sources: (any ShareSources)? = nil) {
        self.record = record
        self.lock = lock
        self.sources = sources
    }
}
