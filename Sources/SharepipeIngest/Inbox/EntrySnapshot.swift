import SharepipeSystem

/// What a recursive `lstat` of one inbox entry saw: kind, inode, size and mtime of everything in its tree.
/// Two equal snapshots taken a settle window apart mean nobody wrote in between.
struct EntrySnapshot: Equatable, Sendable {
    /// One entry of the tree.
    struct Record: Equatable, Sendable {
        /// The path relative to the top-level entry; "" for the entry itself.
        var path: String
        var kind: FileKind
        var inode: UInt64
        var size: Int64
        var modificationTime: Int64
        /// The errno of a listing or `lstat` that failed at this path, 0 when it worked.
        var failure: Int32
    }

    /// Every record, sorted by path.
    private(set) var records: [Record]

    /// A snapshot of an entry that is not walked into: a file, or anything but a directory.
    init(_ status: FileStatus) {
        records = [Record(path: "", status: status)]
    }

    /// Walks the entry at `path` (whose own `lstat` is `status`) without following symlinks.
    /// `visitDirectory` sees each directory's relative path just before it is listed.
    init(walking path: String, status: FileStatus, visitDirectory: (String) -> Void) {
        records = [Record(path: "", status: status)]
        guard status.kind == .directory else { return }
        var stack = [""]
        while let relative = stack.popLast() {
            visitDirectory(relative)
            let directory = relative.isEmpty ? path : path + "/" + relative
            let names: [String]
            do {
                names = try System.listDirectory(directory, repairingNames: true)
            } catch {
                records.append(Record(failedAt: relative, error))
                continue
            }
            for name in names {
                let child = relative.isEmpty ? name : relative + "/" + name
                do {
                    // A child that vanished mid-walk is simply not recorded: the tree is still changing.
                    guard let childStatus = try System.lstatIfPresent(directory + "/" + name) else { continue }
                    records.append(Record(path: child, status: childStatus))
                    if childStatus.kind == .directory { stack.append(child) }
                } catch {
                    records.append(Record(failedAt: child, error))
                }
            }
        }
        records.sort { ($0.path, $0.failure) < ($1.path, $1.failure) }
    }
}

extension EntrySnapshot.Record {
    init(path: String, status: FileStatus) {
        self.init(
            path: path, kind: status.kind, inode: status.inode, size: status.size,
            modificationTime: status.modificationTime, failure: 0)
    }

    init(failedAt path: String, _ error: any Error) {
        let code = (error as? ShareError)?.errno ?? -1
        self.init(path: path, kind: .unknown, inode: 0, size: 0, modificationTime: 0, failure: code == 0 ? -1 : code)
    }
}
