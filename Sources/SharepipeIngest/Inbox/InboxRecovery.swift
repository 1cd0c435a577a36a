import Foundation
import SharepipeSpool
import SharepipeSystem

/// The inbox's side of exactly-once ingest: a file whose share was published but which a crash left in the inbox
/// is unlinked, not ingested again — at start-up for every such file (`recover`), and by whichever daemon takes such
/// a file later (`publishedShare(of:)`).
package struct InboxRecovery: Sendable {
    let spool: Spool

    /// Exactly-once ingest after a crash between publishing a share and deleting its inbox sources (publish step 5).
    ///
    /// Consults only the source records still staged. A file in `inbox` (walked without following symlinks,
    /// skipping hidden names) is unlinked only when its share was published — it is in `incoming`, `processing` or
    /// `quarantine`, or recorded past publishing — and its inode, size and modification time match the record and
    /// its SHA-256 equals the recorded one. The device number is not compared: it is not a file's identity across
    /// a restart (a FUSE or NFS file system mounted again gets the next free anonymous device, a disk may be
    /// enumerated differently after a reboot) nor across hosts sharing an inbox. Directories emptied this way are
    /// removed. Then every staged record is marked done, so identities are never a permanent "seen" set. Returns
    /// the removed paths, relative to `inbox`. Call after `Spool.recover()` and before the inbox is scanned.
    package func recover(_ inbox: String) throws -> [String] {
        let records = try spool.ledger.stagedSources()
        guard !records.isEmpty else { return [] }
        var wanted = Wanted()
        var publishedCache: [String: Bool] = [:]
        for (shareID, identity) in records {
            let published = try publishedCache[shareID] ?? spool.isPublished(shareID)
            publishedCache[shareID] = published
            guard published else { continue }
            if identity.isFolder {
                wanted.folders.insert(FolderKey(inode: identity.inode))
            } else {
                wanted.files[InboxKey(identity), default: []].append(identity.sha256)
            }
        }
        var removed: [String] = []
        if !wanted.isEmpty, try System.lstatIfPresent(inbox)?.kind == .directory {
            _ = try removeMatches(in: inbox, relative: "", wanted: wanted, depth: 0, removed: &removed)
        }
        try spool.allSourcesRemoved()
        return removed
    }

    /// The published sources recovery looks for: files by identity and content, folders by identity.
    private struct Wanted {
        var files: [InboxKey: [String]] = [:]
        var folders: Set<FolderKey> = []

        var isEmpty: Bool { files.isEmpty && folders.isEmpty }
    }

    private struct FolderKey: Hashable {
        var inode: UInt64
    }

    private struct InboxKey: Hashable {
        var inode: UInt64, size: Int64, modificationTime: Int64

        init(_ identity: SourceIdentity) {
            (inode, size, modificationTime) = (identity.inode, identity.size, identity.modificationTime)
        }

        init(_ status: FileStatus) {
            (inode, size, modificationTime) = (status.inode, status.size, status.modificationTime)
        }
    }

    /// The published share an inbox file was already copied into, when its publisher died between publishing and
    /// unlinking it (and another daemon, or this one restarted, now holds its lock): same inode, size and
    /// modification time as a source record still staged, same SHA-256, and the share published (the device is
    /// not compared, as in `recover`).
    func publishedShare(of source: InboxSource) throws -> String? {
        let records = try spool.ledger.stagedSources(inode: source.status.inode).filter {
            $0.identity.size == source.status.size && $0.identity.modificationTime == source.status.modificationTime
        }
        guard !records.isEmpty else { return nil }
        let digest = try Self.sha256(of: source.descriptor)
        return try records.first { try $0.identity.sha256 == digest && spool.isPublished($0.shareID) }?.shareID
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
                    identity: FolderKey(inode: status.inode))
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
        try sha256(of: try FileDescriptor.openForReading(path))
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

    package init(spool: Spool) {
        self.spool = spool
    }
}
