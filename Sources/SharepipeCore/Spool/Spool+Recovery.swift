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
    /// Ledger rows that disagreed with their share's directory and were made to follow it.
    public var repaired = 0
}

/// Recovery at start-up: call `recover()` before this process's loader and consumers start, then
/// `recoverInbox(_:)` before the inbox is scanned. Loaders and consumers of other processes are safe: their locks
/// are honoured.
extension Spool {
    /// Deletes unpublished shares, sends dead claims back to `incoming` (or finishes what the ledger recorded for
    /// them), finishes interrupted requeues, then reconciles every ledger row in a non-terminal state with the
    /// directory its share is in: the row follows the directory, and each repair is logged with a code.
    /// A staging directory or a claim whose lock is held by a live process is never touched.
    public func recover() throws -> RecoveryReport {
        var report = RecoveryReport()
        var removed: [String] = []
        for name in try directories.staging.names() {
            guard try !isLiveStaging(name) else {
                report.liveClaims += 1
                continue
            }
            try directories.staging.removeTree(name)
            if UUID(uuidString: name) != nil { removed.append(name) }
            report.stagingRemoved += 1
        }
        if report.stagingRemoved > 0 { try directories.staging.sync() }
        let unpublished = try removed.filter { try ledger.state(ofShare: $0) == .staged }
        if !unpublished.isEmpty { logViolations(try ledger.recordUnpublished(unpublished, code: nil), during: "recover") }

        var liveClaims: Set<String> = []
        for shareID in try shareIDs(in: .processing) {
            guard let lock = try DirectoryLock.acquire(path(.processing, shareID)) else {
                report.liveClaims += 1
                liveClaims.insert(shareID)
                continue
            }
            let reason = QuarantineReason.fileName
            switch try ledger.state(ofShare: shareID) {
            case .processed, .purged:
                try removeShareDirectory(.processing, shareID)
                report.completed += 1
            case .quarantined:
                if try System.lstatIfPresent(path(.processing, shareID) + "/" + reason) == nil {
                    try writeReason(recoveredReason(shareID), shareID: shareID)
                }
                try moveToQuarantine(shareID)
                report.rolledForward += 1
            case .claimed:
                try System.removeTree(path(.processing, shareID) + "/" + reason)
                logViolations(try ledger.recordRecovered(shareID: shareID), during: "recover")
                try moveBack(shareID)
                report.returnedToIncoming += 1
            case .published:
                try System.removeTree(path(.processing, shareID) + "/" + reason)
                try moveBack(shareID)
                report.returnedToIncoming += 1
            case .staged, .rejected, nil:
                // Claimed by rename before its publisher recorded it (staged), or a row that disagrees: the share
                // goes back to `incoming`, and the reconciliation below makes the row say so.
                try System.removeTree(path(.processing, shareID) + "/" + reason)
                try moveBack(shareID)
                report.returnedToIncoming += 1
            }
            _ = consume lock
        }
        if report.returnedToIncoming > 0 { try directories.incoming.sync() }

        for shareID in try shareIDs(in: .quarantine) where try ledger.state(ofShare: shareID) == .published {
            try finishRequeue(shareID)
            report.rolledForward += 1
        }
        try reconcile(skipping: liveClaims, report: &report)
        return report
    }

    /// Makes every row in a non-terminal state follow the directory its share is in. A staged share found in
    /// `incoming` is the publisher's crash window and rolls forward as a normal publish; anything else is a
    /// repair, logged as a precondition violation.
    private func reconcile(skipping liveClaims: Set<String>, report: inout RecoveryReport) throws {
        let expected: [(ShareState, Stage)] = [
            (.staged, .staging), (.published, .incoming), (.claimed, .processing), (.quarantined, .quarantine),
        ]
        var published: [String] = []
        for (state, stage) in expected {
            for shareID in try ledger.shareIDs(inState: state) where !liveClaims.contains(shareID) {
                if try directories[stage].statusIfPresent(shareID) != nil { continue }
                let found = try Stage.allCases.first { other in
                    try other != stage && directories[other].statusIfPresent(shareID) != nil
                }
                if state == .staged && found == .incoming {
                    published.append(shareID)
                    continue
                }
                if found == .processing { continue }
                let target: ShareState = switch found {
                case .incoming: .published
                case .quarantine: .quarantined
                case .staging: .staged
                case .processing: .claimed
                case nil: state == .staged ? .rejected : .purged
                }
                logViolations([PreconditionViolation(shareID: shareID, expected: [state], found: target)], during: "reconcile")
                try ledger.repair(shareID: shareID, to: target)
                report.repaired += 1
            }
        }
        if !published.isEmpty { logViolations(try ledger.recordPublished(published, sourcesDone: []), during: "recover") }
    }

    /// Whether a loader of a live process holds the lock on a staging directory.
    private func isLiveStaging(_ name: String) throws -> Bool {
        do {
            let directory = try directories.staging.open(name, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
            return try !directory.lock(exclusive: true, nonBlocking: true)
        } catch let error as ShareError where [ENOENT, ENOTDIR, ELOOP].contains(error.errno) {
            return false
        }
    }

    /// The reason for a quarantine whose `reason.json` was not yet written when the process died.
    private func recoveredReason(_ shareID: String) throws -> QuarantineReason {
        let now = LedgerClock.now()
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
        var wanted = Wanted()
        var publishedCache: [String: Bool] = [:]
        for (shareID, identity) in records {
            let published = try publishedCache[shareID] ?? isPublished(shareID)
            publishedCache[shareID] = published
            guard published else { continue }
            if identity.isFolder {
                wanted.folders.insert(FolderKey(device: identity.device, inode: identity.inode))
            } else {
                wanted.files[InboxKey(identity), default: []].append(identity.sha256)
            }
        }
        var removed: [String] = []
        if !wanted.isEmpty, try System.lstatIfPresent(inbox)?.kind == .directory {
            _ = try removeMatches(in: inbox, relative: "", wanted: wanted, depth: 0, removed: &removed)
        }
        try ledger.markAllSourcesDone()
        return removed
    }

    /// The published sources recovery looks for: files by identity and content, folders by identity.
    private struct Wanted {
        var files: [InboxKey: [String]] = [:]
        var folders: Set<FolderKey> = []

        var isEmpty: Bool { files.isEmpty && folders.isEmpty }
    }

    private struct FolderKey: Hashable {
        var device: UInt64, inode: UInt64
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

    /// The published share an inbox file was already copied into, when its publisher died between publishing and
    /// unlinking it (and another daemon, or this one restarted, now holds its lock): same device, inode, size and
    /// modification time as a source record still staged, same SHA-256, and the share published.
    func publishedShare(of source: InboxSource) throws -> String? {
        let records = try ledger.stagedSources(device: source.status.device, inode: source.status.inode).filter {
            $0.identity.size == source.status.size && $0.identity.modificationTime == source.status.modificationTime
        }
        guard !records.isEmpty else { return nil }
        let digest = try Self.sha256(of: source.descriptor)
        return try records.first { try $0.identity.sha256 == digest && isPublished($0.shareID) }?.shareID
    }

    private func isPublished(_ shareID: String) throws -> Bool {
        if let state = try ledger.state(ofShare: shareID), state != .staged && state != .rejected {
            return true
        }
        return try [Stage.incoming, .processing, .quarantine].contains { stage in
            try System.lstatIfPresent(path(stage, shareID)) != nil
        }
    }

    /// Unlinks matching files under `directory`; returns whether the directory is now empty and was emptied by
    /// this or by the publisher before a crash (a published folder, recorded with its files).
    private func removeMatches(
        in directory: String, relative: String, wanted: Wanted, depth: Int, removed: inout [String],
        identity: FolderKey? = nil
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
                try removeMatches(
                    in: path, relative: relativePath, wanted: wanted, depth: depth + 1, removed: &removed,
                    identity: FolderKey(device: status.device, inode: status.inode))
            {
                try System.removeDirectory(path)
                removedHere += 1
            } else if status.kind == .regular, let hashes = wanted.files[InboxKey(status)],
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
        let published = identity.map { wanted.folders.contains($0) } ?? false
        return depth > 0 && remaining == 0 && (removedHere > 0 || published)
    }

    private static func sha256(ofFile path: String) throws -> String {
        try sha256(of: try FileDescriptor.open(path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK))
    }

    /// SHA-256 of a whole file, read from offset 0 without moving the file position.
    private static func sha256(of file: borrowing FileDescriptor) throws -> String {
        let hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while true {
            let count = try buffer.withUnsafeMutableBytes { (raw) throws in try file.read(into: raw, at: offset) }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            offset += Int64(count)
        }
        return hasher.finalize()
    }
}
