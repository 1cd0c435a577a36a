import Foundation
import SharepipeSystem
import Synchronization

/// Emptied share directories, kept for the next shares' staging instead of being removed and made again.
///
/// On ext4 without a journal every new inode is found by walking past the inodes freed in the last minutes, so a
/// share that creates three (its directory, its copy, its manifest) after others were removed pays a scan that grows
/// with the load (docs/benchmarks.md). A processed share's directory is therefore emptied in place: each copy
/// emptied of its content (as SPEC's "deleted once processed" requires) and renamed
/// `spare-N` (the emptied `manifest.json` keeps its name, which says nothing of the share), the directory moved to
/// `DIR/recycled/<random UUID>` with its lock still held. The next share's loader renames it to `staging/S`, writes
/// its manifest into the emptied one and renames spares to its copies' names; nothing is allocated or freed.
///
/// - A file of at most `overwriteLimit` bytes is emptied by overwriting every byte with zeros, keeping its length
///   and its blocks; a larger one is truncated to zero bytes. On a file system mounted with `discard` every freed
///   block waits for a discard command to the disk, and the next share's copy allocates a block again: the
///   overwrite frees nothing, and the next copy writes over the same blocks (its writer cuts the file to its own
///   length). Either way no byte of the processed share is left in the file.
///
/// - Only where `syncfs` is the barrier (a local block-device file system): one `syncfs` makes the renames and
///   truncations durable with the batch. Elsewhere directories are removed as before.
/// - Crash safety rests on the order the lifecycle already has: a share's `processed` record is durable before its
///   directory is emptied, so whatever a crash leaves of it (in `processing`, `recycled` or a new `staging/S`) is
///   removed by recovery; a kept directory is locked, so no recovery removes it while this process lives.
/// - A file with a second link (the store processor links copies into its output) is never truncated: that name is
///   removed, the other keeps the content. Anything that is not a regular file is removed.
/// - At most `capacity` directories (one descriptor each) are kept; the rest are removed. Only a process that loads
///   shares keeps any (the first `take` starts it): a consumer alone (`sharepipe consume`) and a `--oneshot` daemon
///   once its ingest is over (`stopKeeping`) remove directories as before, since nothing would take them.
package final class ShareRecycler: Sendable {
    /// The directory below the state directory that holds kept directories.
    static let directoryName = "recycled"
    /// Kept directories at most: enough to cover the shares a burst has in flight at once, one descriptor each, and
    /// no more than a sixteenth of the descriptor limit.
    static let capacity = min(256, max(16, System.descriptorLimit() / 16))
    /// Emptied files kept per directory at most (a share has one copy and a manifest, usually).
    static let sparesPerDirectory = 8
    /// The one spare that keeps its name.
    static let manifestName = "manifest.json"

    /// Files of at most this many bytes are overwritten with zeros rather than truncated.
    static let overwriteLimit = 64 << 10

    /// A kept directory: its random name in `recycled`, its locked descriptor, its spare files.
    private struct Kept: Sendable {
        var name: String
        var directory: OpenDirectory
        var spares: [StagingSpares.Spare]
    }

    /// `DIR/recycled`, nil when recycling is off.
    private let directory: OpenDirectory?
    /// Its path.
    private let path: String
    private let kept = Mutex<[Kept]>([])
    /// Whether a loader of this process takes directories (set by `take`, cleared by `stopKeeping`).
    private let keeping = Atomic<Bool>(false)

    /// Recycling in the state directory (open as `root`, at `rootPath`) when `enabled`; a `recycled` directory that
    /// cannot be made turns it off.
    init(root: OpenDirectory, rootPath: String, enabled: Bool) {
        path = rootPath + "/" + Self.directoryName
        guard enabled else {
            directory = nil
            return
        }
        do {
            do {
                try root.makeDirectory(Self.directoryName)
            } catch let error as ShareError where error.errno == Errno.exists {}
            directory = try root.openDirectory(Self.directoryName)
        } catch {
            directory = nil
        }
    }

    var isEnabled: Bool { directory != nil }

    /// Empties the locked share directory `name` of `stage` and keeps it; false when it is not kept (recycling off,
    /// enough kept, or a step failed), and the caller removes it.
    func keep(_ name: String, locked share: OpenDirectory, from stage: OpenDirectory) -> Bool {
        guard let directory, keeping.load(ordering: .relaxed), kept.withLock({ $0.count }) < Self.capacity else {
            return false
        }
        var spares: [StagingSpares.Spare] = []
        var renamed = 0
        do {
            for entry in try share.names() {
                if spares.count < Self.sparesPerDirectory, let length = try Self.empty(entry, in: share) {
                    var spare = entry
                    if entry != Self.manifestName {
                        spare = "spare-\(renamed)"
                        renamed += 1
                        if entry != spare { try share.rename(entry, to: spare, in: share) }
                    }
                    spares.append(StagingSpares.Spare(name: spare, length: length))
                } else {
                    try share.removeTree(entry)
                }
            }
            let keptName = UUID.random().uuidString
            try stage.rename(name, to: keptName, in: directory)
            let stored = kept.withLock { kept in
                guard kept.count < Self.capacity else { return false }
                kept.append(Kept(name: keptName, directory: share, spares: spares))
                return true
            }
            if !stored { try? directory.removeTree(keptName) }
            return true
        } catch {
            return false
        }
    }

    /// Empties `entry` when it is a regular file with no other link: overwritten with zeros up to `overwriteLimit`
    /// bytes, else truncated. Returns its length now; nil (nothing changed) when it is anything else.
    private static func empty(_ entry: String, in share: OpenDirectory) throws -> Int64? {
        let file: FileDescriptor
        do {
            file = try share.openExisting(entry)
        } catch let error as ShareError
            where [Errno.symlinkLoop, Errno.isDirectory, Errno.noDevice].contains(error.errno)
        {
            return nil
        }
        let status = try file.status()
        guard status.kind == .regular, status.linkCount == 1 else { return nil }
        guard status.size > 0 else { return 0 }
        guard status.size <= Int64(overwriteLimit) else {
            try file.truncate(to: 0)
            return 0
        }
        // Just opened: the file position is 0.
        try file.writeAll([UInt8](repeating: 0, count: Int(status.size)))
        return status.size
    }

    /// A kept directory renamed to `staging/shareID`, with its lock (its spare files in `spares`); nil when none is
    /// kept (the caller makes a new one).
    package func take(as shareID: String, into staging: OpenDirectory,
    spares: inout [StagingSpares.Spare]) -> DirectoryLock? {
        guard let directory else { return nil }
        keeping.store(true, ordering: .relaxed)
        while let next = kept.withLock({ $0.popLast() }) {
            do {
                try directory.rename(next.name, to: shareID, in: staging)
                spares = next.spares
                return DirectoryLock(alreadyLocked: next.directory)
            } catch {
                try? directory.removeTree(next.name)
            }
        }
        return nil
    }

    /// Keeps no more directories (no share will be loaded in this process any more) and removes those kept.
    package func stopKeeping() {
        keeping.store(false, ordering: .relaxed)
        removeKept()
    }

    /// Removes every directory this process kept (a daemon that stops leaves none behind).
    package func removeKept() {
        guard let directory else { return }
        for kept in kept.withLock({ kept in
            defer { kept = [] }
            return kept
        }) {
            try? directory.removeTree(kept.name)
        }
    }

    /// Removes what a process that is gone kept (its directories are no longer locked); this process's own stay.
    func removeUnlocked() throws {
        guard let directory else { return }
        // This process's own are locked by it too, so the lock alone tells them apart.
        for name in try directory.names() {
            guard try directory.statusIfPresent(name)?.kind == .directory else {
                try directory.removeTree(name)
                continue
            }
            guard let lock = try DirectoryLock.acquire(path + "/" + name) else { continue }
            // Its entries through the locked descriptor, then the directory: each listed once.
            try lock.removeContents()
            try directory.removeDirectory(name)
        }
    }
}

/// The emptied files a recycled `staging/S` brought (`ShareRecycler`), handed out as the loader names its copies and
/// its manifest, so that they need no new inode.
package final class StagingSpares: Sendable {
    /// An emptied file: its name, and its length (zeros only), which its next writer cuts to its own.
    package struct Spare: Sendable, Equatable {
        var name: String
        var length: Int64
    }

    private let shareID: String
    private let staging: OpenDirectory
    private let spares: Mutex<[Spare]>

    package init(shareID: String, spares: [Spare], staging: OpenDirectory) {
        self.shareID = shareID
        self.staging = staging
        self.spares = Mutex(spares)
    }

    /// Makes `name` in `staging/S` an emptied spare: the spare of that name as it is (the manifest's), else another
    /// renamed to it (the manifest's last). Returns its length (the writer cuts the file to what it wrote when that
    /// is less); nil when none is left (the caller creates the file).
    package func use(as name: String) -> Int64? {
        let taken = spares.withLock { spares -> Spare? in
            if let index = spares.firstIndex(where: { $0.name == name }) { return spares.remove(at: index) }
            let index = spares.lastIndex { $0.name != ShareRecycler.manifestName } ?? spares.indices.last
            return index.map { spares.remove(at: $0) }
        }
        guard let spare = taken else { return nil }
        if spare.name == name { return spare.length }
        do {
            try staging.rename(shareID + "/" + spare.name, to: shareID + "/" + name, in: staging)
            return spare.length
        } catch {
            try? staging.unlink(shareID + "/" + spare.name)
            return nil
        }
    }

    /// Cuts a file written over a spare of `spareLength` bytes to the `written` bytes it now holds: the spare's zeros
    /// past them go. Nothing to do for a new file, or one that filled its spare.
    package static func cut(_ file: borrowing FileDescriptor, to written: Int64, spareLength: Int64) throws {
        if spareLength > written { try file.truncate(to: written) }
    }

    /// Removes the spares no file took, before the share is published: a consumer finds only its copies and
    /// manifest. Those `sink` takes are moved to it instead of being freed.
    package func removeUnused(into sink: (any SpareSink)? = nil) throws {
        let unused = spares.withLock { spares in
            defer { spares = [] }
            return spares
        }
        for spare in unused {
            let name = shareID + "/" + spare.name
            if let sink, sink.adopt(name, length: spare.length, from: staging) { continue }
            try staging.unlink(name)
        }
    }
}

/// Where emptied files go that a share did not use, instead of being removed: an HTTP share's copy is the received
/// file itself, so the spare its recycled directory brought would be freed, while the next body needs a new inode.
/// The HTTP server's receive directory takes them for its next bodies (`ReceiveDirectory`): no inode is allocated
/// or freed per upload.
package protocol SpareSink: Sendable {
    /// Moves the emptied file `name` (zeros only, `length` bytes) out of `directory` into the sink; false when the
    /// sink wants no more or the move failed (the file is then still at `name`).
    func adopt(_ name: String, length: Int64, from directory: OpenDirectory) -> Bool
}
