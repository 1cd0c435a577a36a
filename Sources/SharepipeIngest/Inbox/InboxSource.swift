import SharepipeSpool
import SharepipeSystem

/// A directory of the inbox, open for relative calls (`openat`, `unlinkat`) so that neither depth nor path length
/// matters; it knows its parent and its name there, so an emptied folder can be removed.
final class InboxDirectory: Sendable {
    let directory: OpenDirectory
    /// The directory holding this one, nil for the inbox itself.
    let parent: InboxDirectory?
    /// This directory's name in `parent`.
    let name: String
    /// Device and inode, so that the directories a batch touched are fsynced once each.
    let identity: DirectoryIdentity

    struct DirectoryIdentity: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    init(directory: OpenDirectory, status: FileStatus, parent: InboxDirectory?, name: String) {
        self.directory = directory
        identity = DirectoryIdentity(device: status.device, inode: status.inode)
        self.parent = parent
        self.name = name
    }

    /// Opens the inbox itself.
    static func open(_ path: String) throws -> InboxDirectory {
        let directory = try OpenDirectory(path: path)
        return InboxDirectory(directory: directory, status: try directory.status(), parent: nil, name: path)
    }
}

/// One inbox file behind an attachment: opened once (`O_NOFOLLOW|O_NONBLOCK`), locked with an exclusive `flock` so
/// that other daemons on the same inbox skip it, identified by `fstat` of that descriptor, sniffed and copied from
/// it, and unlinked only if its name still names the same inode. The lock ends when this object goes away.
final class InboxSource: Sendable {
    let directory: InboxDirectory
    let name: String
    let descriptor: FileDescriptor
    /// Identity from `fstat` of the open descriptor, taken once the lock was held.
    let status: FileStatus

    init(directory: InboxDirectory, name: String, descriptor: consuming FileDescriptor, status: FileStatus) {
        self.directory = directory
        self.name = name
        self.descriptor = descriptor
        self.status = status
    }

    /// Whether the file changed (size or modification time) since it was opened and judged: a writer is still at
    /// it, so the copy is not what the writer will leave.
    func changedSinceOpened() -> Bool {
        guard let now = try? descriptor.status() else { return true }
        return now.size != status.size || now.modificationTime != status.modificationTime
    }

    /// Unlinks the file if its name still names the locked inode; false when something else has the name now (the
    /// file was replaced: the replacement is a drop of its own) or nothing has.
    func unlinkIfSame() throws -> Bool {
        guard let named = try directory.directory.statusIfPresent(name), named.isSameFile(as: status) else {
            return false
        }
        try directory.directory.unlink(name)
        return true
    }
}

/// The sources behind one published inbox share: its files and, for a complete folder share, the folder's
/// directories (deepest first). The inbox removes them once the lifecycle reports the share durable.
struct InboxShareSources: ShareSources {
    let files: [InboxSource]
    let folders: [InboxDirectory]

    func removeAfterPublish(shareID: String, logger: Logger?) -> (complete: Bool, touched: [any SyncableDirectory]) {
        var complete = true
        var touched: [any SyncableDirectory] = []
        for source in files {
            do {
                if try source.unlinkIfSame() { touched.append(source.directory) }
            } catch {
                complete = false
                logger?.error("inbox.unlink_failed", [
                    ("code", .string(ShareError.Code.io.rawValue)), ("share", .string(shareID)),
                    ("errno", .int(Int64((error as? ShareError)?.errno ?? 0))),
                ])
            }
        }
        for folder in folders {
            guard let parent = folder.parent else { continue }
            if (try? parent.directory.removeDirectory(folder.name)) != nil { touched.append(parent) }
        }
        return (complete, touched)
    }
}

extension InboxDirectory: SyncableDirectory {
    var syncIdentity: AnyHashable { AnyHashable(identity) }
    func syncForRemovals() throws { try directory.sync() }
}
