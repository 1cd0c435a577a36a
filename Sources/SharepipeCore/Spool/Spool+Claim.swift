import Glibc

/// A share claimed by this process. The exclusive lock on the directory `processing/S` is held for as long as this
/// object lives; the kernel releases it when the process dies, which is how recovery tells a dead claim from a live
/// one.
package final class ShareClaim: Sendable {
    /// The claimed share.
    package let shareID: String
    /// Attempts recorded before this one.
    package let previousAttempts: Int
    private let held: HeldLock

    fileprivate init(previousAttempts: Int, held: HeldLock) {
        shareID = held.shareID
        self.previousAttempts = previousAttempts
        self.held = held
    }

    /// Removes the claimed `processing/S` while its lock is held: its entries through the locked descriptor, then
    /// the directory itself. Not fsynced; see `SpoolCompleter`.
    func removeDirectory(in spool: Spool) throws {
        try held.lock.removeContents()
        do {
            try spool.directories.processing.removeDirectory(shareID)
        } catch let error as ShareError where error.errno == ENOENT {}
    }
}

/// A lock on `processing/S` taken before the claim is recorded.
private final class HeldLock: Sendable {
    let shareID: String
    let lock: DirectoryLock

    init(shareID: String, lock: consuming DirectoryLock) {
        self.shareID = shareID
        self.lock = lock
    }
}

/// Claim, process, complete (kill -9 safe at every step):
/// 1. `rename(incoming/S, processing/S)` without replacing (`ExclusiveMove.claim`): one claimer wins, the others
///    get ENOENT and move on;
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
    /// Claims shares in `incoming`, recording all the claims in one commit; shares another claimer won, or that are
    /// gone, are left out.
    package func claim(_ shareIDs: [String]) throws -> [ShareClaim] {
        var held: [HeldLock] = []
        for shareID in shareIDs {
            do {
                guard try ExclusiveMove.claim(
                    shareID, from: directories.incoming, to: directories.processing, capabilities: capabilities)
                else { continue }
            } catch let error as ShareError where error.errno == ENOENT {
                continue
            }
            guard let lock = try DirectoryLock.acquire(path(.processing, shareID), waiting: true) else { continue }
            held.append(HeldLock(shareID: shareID, lock: lock))
        }
        guard !held.isEmpty else { return [] }
        let (attempts, violations) = try ledger.recordClaimed(held.map(\.shareID))
        logViolations(violations, during: "claim")
        var claims: [ShareClaim] = []
        for entry in held {
            guard let previous = attempts[entry.shareID] else {
                // Its row is in a state a claim cannot start from: the share goes back untouched for recovery.
                try moveBack(entry.shareID)
                continue
            }
            claims.append(ShareClaim(previousAttempts: previous, held: entry))
        }
        return claims
    }

    /// Success, recorded and removed in the completer's next batch.
    func complete(_ claim: ShareClaim, durationMilliseconds: Int64) {
        completer.complete(claim, durationMilliseconds: durationMilliseconds, spool: self)
    }

    /// The completer's two steps one share at a time, for a harness that stops between them (SharepipeTesting):
    /// the processed record, committed now.
    package func recordProcessed(_ claim: ShareClaim, durationMilliseconds: Int64) throws {
        logViolations(try ledger.recordProcessed([(claim.shareID, durationMilliseconds)]), during: "complete")
    }

    /// The completer's second step: the claimed directory removed (its lock is released when the claim goes).
    package func removeClaimed(_ claim: ShareClaim) throws {
        try claim.removeDirectory(in: self)
    }

    /// A failed attempt with attempts left: back to `incoming`, not to be claimed before `notBefore`.
    func retry(_ claim: ShareClaim, error: ShareError, durationMilliseconds: Int64, notBefore: Int64) throws {
        logViolations(
            try ledger.recordRetry(
                shareID: claim.shareID, code: error.code, durationMilliseconds: durationMilliseconds,
                notBefore: notBefore),
            during: "retry")
        try moveBack(claim.shareID)
    }

    /// Graceful shutdown: an unfinished share goes back to `incoming` without counting an attempt.
    func release(_ claim: ShareClaim) throws {
        logViolations(try ledger.recordReleased(shareID: claim.shareID), during: "release")
        try moveBack(claim.shareID)
    }

    /// Renames `processing/S` back to `incoming/S`.
    func moveBack(_ shareID: String) throws {
        guard try ExclusiveMove.share(
            shareID, from: directories.processing, to: directories.incoming, capabilities: capabilities)
        else {
            throw ShareError(.io, "share \(shareID) is both in processing and in incoming", errno: EEXIST)
        }
    }

    /// Removes a share directory (its entries, then the directory) and fsyncs the stage directory. Call it with the
    /// share's lock held, or where no claimer can be.
    func removeShareDirectory(_ stage: Stage, _ shareID: String) throws {
        try directories[stage].removeTree(shareID)
        try directories[stage].sync()
    }
}
