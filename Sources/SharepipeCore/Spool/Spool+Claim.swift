import Glibc

/// A share claimed by this process. The exclusive lock on the directory `processing/S` is held for as long as this
/// value lives; the kernel releases it when the process dies, which is how recovery tells a dead claim from a live
/// one.
struct ShareClaim: ~Copyable {
    /// The claimed share.
    let shareID: String
    /// Attempts recorded before this one.
    let previousAttempts: Int
    fileprivate let lock: DirectoryLock
}

/// Claim, process, complete (kill -9 safe at every step):
/// 1. `rename(incoming/S, processing/S)` without replacing: one claimer wins, the others get ENOENT and move on;
/// 2. the directory `processing/S` opened and locked with an exclusive `flock` (the lock belongs to the directory
///    and moves with it, as the loader's lock on `staging/S` does — so the claimer waits the few milliseconds until
///    the loader that published S lets go), then checked to still be the directory at `processing/S` — a claimer
///    that finds its share gone (a recovery moved it back meanwhile) moves on.
///    Crash after 1 or 2: the lock is free, so recovery (at start-up, before workers start, taking the same lock)
///    moves `processing/S` back to `incoming`; no processor ran, so no attempt is counted;
/// 3. ledger: claimed; the processor runs per copied attachment — crash: recovery moves S back with attempts + 1;
/// 4. ledger: processed, committed — crash before this: S runs again after recovery (at-least-once);
/// 5. `processing/S` removed while still locked, and `processing` fsynced — crash before this: recovery finds S
///    recorded processed and removes it.
///
/// A failed attempt is recorded first (attempts + 1, not-before time, state published) and then renamed back to
/// `incoming`; the last allowed attempt quarantines the share (see `quarantine`). Each record is committed before
/// the rename that follows it, so recovery rolls an interrupted transition forward from the ledger state.
extension Spool {
    /// Claims a share in `incoming`; nil when another claimer won it or it is gone.
    func claim(_ shareID: String) throws -> ShareClaim? {
        do {
            guard try System.renameNoReplace(path(.incoming, shareID), to: path(.processing, shareID)) else {
                return nil
            }
        } catch let error as ShareError where error.errno == ENOENT {
            return nil
        }
        guard let lock = try DirectoryLock.acquire(path(.processing, shareID), waiting: true) else { return nil }
        let attempts = try ledger.recordClaimed(shareID: shareID)
        return ShareClaim(shareID: shareID, previousAttempts: attempts, lock: lock)
    }

    /// Success: the share is recorded processed, then its directory removed (the lock is released after that).
    func complete(_ claim: consuming ShareClaim, durationMilliseconds: Int64) throws {
        try ledger.recordProcessed(shareID: claim.shareID, durationMilliseconds: durationMilliseconds)
        try removeShareDirectory(.processing, claim.shareID)
        _ = consume claim
    }

    /// A failed attempt with attempts left: back to `incoming`, not to be claimed before `notBefore`.
    func retry(_ claim: consuming ShareClaim, error: ShareError, durationMilliseconds: Int64, notBefore: Int64) throws {
        try ledger.recordRetry(
            shareID: claim.shareID, code: error.code, durationMilliseconds: durationMilliseconds, notBefore: notBefore)
        try moveBack(claim.shareID)
        _ = consume claim
    }

    /// Graceful shutdown: an unfinished share goes back to `incoming` without counting an attempt.
    func release(_ claim: consuming ShareClaim) throws {
        try ledger.recordReleased(shareID: claim.shareID)
        try moveBack(claim.shareID)
        _ = consume claim
    }

    /// Unlinks one entry of a share directory without a stat first; a directory is removed as a tree.
    private static func removeEntry(_ name: String, in directory: Int32) throws {
        do {
            try System.unlink(name, relativeTo: directory)
        } catch let error as ShareError where error.errno == EISDIR {
            try System.removeTree(name, relativeTo: directory)
        } catch let error as ShareError where error.errno == ENOENT {}
    }

    /// Renames `processing/S` back to `incoming/S`.
    func moveBack(_ shareID: String) throws {
        guard try System.renameNoReplace(path(.processing, shareID), to: path(.incoming, shareID)) else {
            throw ShareError(.io, "share \(shareID) is both in processing and in incoming", errno: EEXIST)
        }
    }

    /// Removes a share directory (its entries, then the directory) and fsyncs the stage directory. Call it with the
    /// share's lock held, or where no claimer can be.
    func removeShareDirectory(_ stage: Stage, _ shareID: String) throws {
        let share = path(stage, shareID)
        do {
            let directory = try FileDescriptor.openDirectory(share)
            for name in try System.listDirectory(".", relativeTo: directory.rawValue) {
                try Self.removeEntry(name, in: directory.rawValue)
            }
            try System.removeDirectory(share)
        } catch let error as ShareError where error.errno == ENOENT {}
        try System.syncDirectory(path(stage))
    }
}
