import SharepipeSystem

/// A top-level inbox entry that is ready for the ingester.
package struct InboxCandidate: Sendable, Equatable {
    /// What the entry is, as `lstat` saw it when it was judged ready.
    enum Kind: Sendable, Equatable {
        /// A regular file, complete: quiet for the settle window with size and mtime unchanged.
        case file
        /// A folder whose whole tree has been quiet for the settle window.
        case folder
        /// A symlink, FIFO, socket or device: reported at once, never opened or followed, so it can be rejected.
        case other(FileKind)
    }

    /// The entry's name inside the inbox (one path component).
    package var name: String
    /// What the entry is.
    var kind: Kind
    /// The entry's own `lstat` when it was judged ready.
    var status: FileStatus
}

/// Who an inbox entry is: the same name with another identity is a new entry.
struct EntryIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    /// The mtime of a non-directory, so that a recycled inode number still reads as a new file;
    /// 0 for a directory, whose mtime changes whenever its contents do.
    var modificationTime: Int64

    init(_ status: FileStatus) {
        device = status.device
        inode = status.inode
        modificationTime = status.kind == .directory ? 0 : status.modificationTime
    }
}

extension InboxCandidate {
    /// The candidate for an entry judged ready with this status.
    package init(name: String, status: FileStatus) {
        let kind: Kind
        switch status.kind {
        case .regular: kind = .file
        case .directory: kind = .folder
        default: kind = .other(status.kind)
        }
        self.init(name: name, kind: kind, status: status)
    }
}
