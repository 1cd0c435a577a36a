import Foundation
import SharepipeSystem

/// The moves that must never replace what is at their destination, one function per kind, each branching on the
/// probed capabilities of its file system: `renameat2(RENAME_NOREPLACE)` where it is honoured, else a protocol
/// built from `link(2)` (or `mkdir(2)`), which never replaces a name on any POSIX file system, NFS and FUSE included.
package enum ExclusiveMove {
    /// The name every claimer links its own claim file to, inside `incoming/S`.
    static let claimName = ".claim"
    /// The prefix of a claimer's own claim file, `.claim.<owner>`.
    static let claimPrefix = ".claim."

    /// Claims `incoming/S` by moving it to `processing/S`; false when another claimer won it or it is gone.
    ///
    /// Without `RENAME_NOREPLACE` (DESIGN "Where the file system refuses a primitive"):
    /// 1. the claimer creates its own file `incoming/S/.claim.<owner>` (`O_EXCL`; `<owner>` is a fresh UUID) and
    ///    takes an exclusive `flock` on it, held until the claim is over;
    /// 2. it `link`s that file to `incoming/S/.claim`; it has won when the link succeeded, or — a lost reply
    ///    retried by an NFSv3 client answers EEXIST to the very call that made the link — when `.claim` is its
    ///    own file (same inode, or its file has two links);
    /// 3. the winner, and only it, renames `incoming/S` to `processing/S` with a plain `rename`, then removes every
    ///    `.claim*` file from `processing/S`.
    ///
    /// Why two racing daemons cannot both win: `link` is one atomic operation on the server (the NFS server, the
    /// FUSE server's own file system) and fails with EEXIST for every caller but the first, so `.claim` names
    /// exactly one claimer's file; a claimer renames only after its own link stands, so exactly one renames. The
    /// rename itself consumes the name `incoming/S`, so even a second renamer (see stale claims) would find it
    /// gone (ENOENT) rather than move the share a second time. The winner's clean-up leaves the share as it was
    /// published; a loser whose create raced the rename finds its file in `processing/S` and removes it there.
    ///
    /// A claimer that dies between the link and the rename leaves `.claim` behind, and its `flock` dies with it: the
    /// next claimer to meet a `.claim` that is not its own takes the lock without waiting — it is granted only when
    /// no live owner holds it — checks that `.claim` still names the file it locked, removes it and tries once
    /// more. A share moved back to `incoming` by recovery with claim files inside is cleaned the same way. Locks are
    /// `flock`s, which the kernel keeps per host (FUSE) or carries to the server (NFSv4); see docs/several-hosts.md.
    static func claim(
        _ shareID: String, from incoming: OpenDirectory, to processing: OpenDirectory,
        capabilities: FileSystemCapabilities
    ) throws -> Bool {
        if capabilities.renameNoReplace {
            return try incoming.renameNoReplace(shareID, into: processing)
        }
        let mine = shareID + "/" + claimPrefix + UUID().uuidString.lowercased()
        let claim = shareID + "/" + claimName
        let owned: FileDescriptor
        do {
            owned = try incoming.create(mine)
        } catch let error as ShareError where error.errno == Errno.noEntry || error.errno == Errno.notDirectory {
            return false
        }
        guard try owned.lock(exclusive: true, nonBlocking: true) else { return false }
        var won = false
        defer {
            // A loser removes its own file: from `incoming/S`, or from `processing/S` when its create raced the
            // winner's rename (the path was resolved before the rename, the file made after it).
            if !won, (try? incoming.unlink(mine)) == nil { try? processing.unlink(mine) }
        }
        for attempt in 0..<2 {
            let linked = try linkClaim(mine, to: claim, in: incoming, owned: owned)
            if linked {
                won = true
                break
            }
            guard attempt == 0, try removeStaleClaim(claim, in: incoming) else { return false }
        }
        do {
            try incoming.rename(shareID, into: processing)
        } catch let error as ShareError where error.errno == Errno.noEntry {
            // Only a second renamer after a stale-claim race can meet this: the share was moved by the other.
            won = false
            return false
        } catch let error as ShareError where error.errno == Errno.notEmpty || error.errno == Errno.exists {
            // A share of that id is in `processing` already (a broken spool): refused, as RENAME_NOREPLACE would,
            // and the claim taken back so that the share is not blocked for others once it is repaired.
            won = false
            try? incoming.unlink(claim)
            return false
        }
        for name in try processing.names(in: shareID) where name.hasPrefix(claimName) {
            try? processing.unlink(shareID + "/" + name)
        }
        _ = consume owned
        return true
    }

    /// Step 2 of the claim: whether `claim` now names the claimer's own file.
    private static func linkClaim(
        _ mine: String, to claim: String, in incoming: OpenDirectory, owned: borrowing FileDescriptor
    ) throws -> Bool {
        do {
            if try incoming.link(mine, to: claim) { return true }
        } catch let error as ShareError where error.errno == Errno.noEntry || error.errno == Errno.notDirectory {
            return false
        }
        let own = try owned.status()
        guard let current = try incoming.statusIfPresent(claim) else { return false }
        return current.isSameFile(as: own) || own.linkCount >= 2
    }

    /// Removes a `.claim` whose owner is gone (its lock free); true when one was removed.
    private static func removeStaleClaim(_ claim: String, in incoming: OpenDirectory) throws -> Bool {
        let stale: FileDescriptor
        do {
            stale = try incoming.openForReading(claim)
        } catch let error as ShareError where error.errno == Errno.noEntry || error.errno == Errno.notDirectory {
            return true
        }
        guard try stale.lock(exclusive: true, nonBlocking: true) else { return false }
        guard let current = try incoming.statusIfPresent(claim), try current.isSameFile(as: stale.status()) else {
            return true
        }
        do {
            try incoming.unlink(claim)
        } catch let error as ShareError where error.errno == Errno.noEntry {}
        return true
    }

    /// Moves a share directory between stages by its lock holder (requeue, retry, release, quarantine, recovery);
    /// false when a share of that id is already at the destination.
    ///
    /// Without `RENAME_NOREPLACE`: the destination is checked to be free, then a plain `rename`. Exclusive because
    /// only the holder of the share's lock moves it (the claim's `flock` on `processing/S`, recovery's, or the
    /// operator command on a share no consumer may claim), and because a share directory is never empty — it holds
    /// its manifest from staging on — while `rename` replaces only an empty directory: a share that appeared at the
    /// destination after the check makes the rename fail (ENOTEMPTY or EEXIST) instead of being replaced.
    static func share(
        _ shareID: String, from source: OpenDirectory, to target: OpenDirectory, capabilities: FileSystemCapabilities
    ) throws -> Bool {
        if capabilities.renameNoReplace {
            return try source.renameNoReplace(shareID, into: target)
        }
        guard try target.statusIfPresent(shareID) == nil else { return false }
        do {
            try source.rename(shareID, into: target)
        } catch let error as ShareError where error.errno == Errno.notEmpty || error.errno == Errno.exists {
            return false
        }
        return true
    }

    /// Moves an inbox entry (a file or a folder) to `destination`, a path that must not exist yet (`.rejected/`);
    /// false when it does.
    ///
    /// Without `RENAME_NOREPLACE`: a file is linked to its new name and unlinked from the old one (`link` fails
    /// with EEXIST instead of replacing); a folder reserves its new name with `mkdir` (EEXIST likewise) and is
    /// renamed onto the empty directory it made. A crash between the two steps leaves a file under both names (it is
    /// ingested again, and rejected again, from the inbox) or an empty folder in `.rejected/`.
    package static func inboxEntry(_ source: String, to destination: String,
    capabilities: FileSystemCapabilities) throws
        -> Bool
    {
        if capabilities.renameNoReplace {
            return try System.renameNoReplace(source, to: destination)
        }
        if try System.lstat(source).kind == .directory {
            return try System.moveDirectoryByReservation(source, to: destination)
        }
        return try System.moveFileByLink(source, to: destination)
    }
}
