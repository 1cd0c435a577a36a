import Foundation
import Glibc

/// What recovery found and did.
public struct RecoveryReport: Sendable, Equatable {
    /// Unpublished shares deleted from `staging`.
    public var stagingRemoved = 0
    /// Dead claims moved back to `incoming` (their interrupted attempt counted).
    public var returnedToIncoming = 0
    /// Dead claims already recorded processed, whose copies were removed.
    public var completed = 0
    /// Interrupted quarantines and requeues finished.
    public var rolledForward = 0
    /// Shares in `staging` or `processing` held (locked) by a live process, left alone.
    public var liveClaims = 0
}

/// Recovery at start-up: call `recover()` before this process's loader and consumers start, then
/// `recoverInbox(_:)` before the inbox is scanned. Loaders and consumers of other processes are safe: their locks
/// are honoured.
extension Spool {
    /// Deletes unpublished shares, sends dead claims back to `incoming` (or finishes what the ledger recorded for
    /// them), finishes interrupted requeues, and repairs ledger rows of shares published before a crash.
    /// A staging directory or a claim whose lock is held by a live process (a loader or consumer running beside
    /// this one) is never touched.
    public func recover() throws -> RecoveryReport {
        var report = RecoveryReport()
        for name in try System.listDirectory(path(.staging)) {
            guard try !isLiveStaging(name) else {
                report.liveClaims += 1
                continue
            }
            try System.removeTree(path(.staging, name))
            if UUID(uuidString: name) != nil { try ledger.recordStagingRemoved(shareID: name) }
            report.stagingRemoved += 1
        }
        if report.stagingRemoved > 0 { try System.syncDirectory(path(.staging)) }

        for shareID in try shareIDs(in: .processing) {
            guard let lock = try DirectoryLock.acquire(path(.processing, shareID)) else {
                report.liveClaims += 1
                continue
            }
            switch try ledger.state(ofShare: shareID) {
            case "processed", "purged":
                try removeShareDirectory(.processing, shareID)
                report.completed += 1
            case "quarantined":
                if try System.lstatIfPresent(path(.processing, shareID) + "/" + QuarantineReason.fileName) == nil {
                    try writeReason(recoveredReason(shareID), shareID: shareID)
                }
                try moveToQuarantine(shareID)
                report.rolledForward += 1
            case "published":
                try System.removeTree(path(.processing, shareID) + "/" + QuarantineReason.fileName)
                try moveBack(shareID)
                report.returnedToIncoming += 1
            default:
                try System.removeTree(path(.processing, shareID) + "/" + QuarantineReason.fileName)
                try ledger.recordRecovered(shareID: shareID)
                try moveBack(shareID)
                report.returnedToIncoming += 1
            }
            _ = consume lock
        }
        if report.returnedToIncoming > 0 { try System.syncDirectory(path(.incoming)) }

        for shareID in try shareIDs(in: .quarantine) where try ledger.state(ofShare: shareID) == "published" {
            try finishRequeue(shareID)
            report.rolledForward += 1
        }
        for shareID in try ledger.shareIDs(inState: "staged") {
            if try System.lstatIfPresent(path(.incoming, shareID)) != nil {
                try ledger.recordPublished(shareID: shareID)
            } else if try System.lstatIfPresent(path(.staging, shareID)) == nil {
                try ledger.recordRejected(shareID: shareID, code: nil)
            }
        }
        return report
    }

    /// Whether a loader of a live process holds the lock on a staging directory.
    private func isLiveStaging(_ name: String) throws -> Bool {
        guard try System.lstatIfPresent(path(.staging, name))?.kind == .directory else { return false }
        do {
            let directory = try FileDescriptor.openDirectory(path(.staging, name))
            return try !directory.lock(exclusive: true, nonBlocking: true)
        } catch let error as ShareError where error.errno == ENOENT {
            return false
        }
    }

    /// The reason for a quarantine whose `reason.json` was not yet written when the process died.
    private func recoveredReason(_ shareID: String) throws -> QuarantineReason {
        let now = Ledger.now()
        let attempts = try ledger.attempts(ofShare: shareID)
        let first = try ledger.firstAttemptAt(shareID: shareID) ?? now
        return QuarantineReason(
            code: .processorFailed, message: "ERR_PROCESSOR_FAILED: the processor failed \(attempts) times",
            attempts: attempts, firstAttemptAt: Self.rfc3339(milliseconds: first),
            lastAttemptAt: Self.rfc3339(milliseconds: now))
    }

    /// Exactly-once ingest after a crash between publishing a share and deleting its inbox sources (publish step 5).
    ///
    /// Consults only the source records still staged. A file in `inbox` (walked without following symlinks,
    /// skipping hidden names) is unlinked only when its share was published — it is in `incoming`, `processing` or
    /// `quarantine`, or recorded past publishing — and its device, inode, size and modification time match the
    /// record and its SHA-256 equals the recorded one. Directories emptied this way are removed. Then every
    /// staged record is marked done, so identities are never a permanent "seen" set. Returns the removed paths,
    /// relative to `inbox`. Call after `recover()` and before the inbox is scanned.
    public func recoverInbox(_ inbox: String) throws -> [String] {
        let records = try ledger.stagedSources()
        guard !records.isEmpty else { return [] }
        var wanted: [InboxKey: [String]] = [:]
        var publishedCache: [String: Bool] = [:]
        for (shareID, identity) in records {
            let published = try publishedCache[shareID] ?? isPublished(shareID)
            publishedCache[shareID] = published
            if published { wanted[InboxKey(identity), default: []].append(identity.sha256) }
        }
        var removed: [String] = []
        if !wanted.isEmpty, try System.lstatIfPresent(inbox)?.kind == .directory {
            _ = try removeMatches(in: inbox, relative: "", wanted: wanted, depth: 0, removed: &removed)
        }
        try ledger.markAllSourcesDone()
        return removed
    }

    private struct InboxKey: Hashable {
        var device: UInt64, inode: UInt64, size: Int64, modificationTime: Int64

        init(_ identity: SourceIdentity) {
            (device, inode, size, modificationTime) =
                (identity.device, identity.inode, identity.size, identity.modificationTime)
        }

        init(_ status: FileStatus) {
            (device, inode, size, modificationTime) =
                (status.device, status.inode, status.size, status.modificationTime)
        }
    }

    private func isPublished(_ shareID: String) throws -> Bool {
        if let state = try ledger.state(ofShare: shareID),
            ["published", "claimed", "processed", "quarantined", "purged"].contains(state)
        {
            return true
        }
        return try [Stage.incoming, .processing, .quarantine].contains { stage in
            try System.lstatIfPresent(path(stage, shareID)) != nil
        }
    }

    /// Unlinks matching files under `directory`; returns whether this emptied the directory.
    private func removeMatches(
        in directory: String, relative: String, wanted: [InboxKey: [String]], depth: Int, removed: inout [String]
    ) throws -> Bool {
        var remaining = 0
        var removedHere = 0
        for name in try System.listDirectory(directory) {
            let path = directory + "/" + name
            let relativePath = relative.isEmpty ? name : relative + "/" + name
            guard !name.hasPrefix("."), let status = try System.lstatIfPresent(path) else {
                remaining += 1
                continue
            }
            if status.kind == .directory, depth < 32,
                try removeMatches(in: path, relative: relativePath, wanted: wanted, depth: depth + 1, removed: &removed)
            {
                try System.removeDirectory(path)
                removedHere += 1
            } else if status.kind == .regular, let hashes = wanted[InboxKey(status)],
                hashes.contains(try Self.sha256(ofFile: path))
            {
                try System.unlink(path)
                removed.append(relativePath)
                removedHere += 1
            } else {
                remaining += 1
            }
        }
        if removedHere > 0 { try System.syncDirectory(directory) }
        return depth > 0 && remaining == 0 && removedHere > 0
    }

    private static func sha256(ofFile path: String) throws -> String {
        let file = try FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        let hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = try buffer.withUnsafeMutableBytes { (raw) throws in try file.read(into: raw) }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        }
        return hasher.finalize()
    }
}
