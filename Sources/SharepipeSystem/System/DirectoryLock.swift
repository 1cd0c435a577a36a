import Glibc

/// An exclusive `flock` on a directory, held for as long as this value lives. The lock belongs to the directory's
/// inode, so it moves with the directory when it is renamed; the kernel drops it when the descriptor closes,
/// including when the process dies.
package struct DirectoryLock: ~Copyable, Sendable {
    /// The locked directory; the lock lasts as long as this object does, whoever holds it.
    package let directory: OpenDirectory

    private init(directory: OpenDirectory) {
        self.directory = directory
    }

    /// The lock of a directory this process already holds locked (one `ShareRecycler` kept).
    package init(alreadyLocked directory: OpenDirectory) {
        self.directory = directory
    }

    /// Opens the directory at `path` and locks it without waiting. Returns nil when another holder has the lock,
    /// when nothing is at `path`, or when the directory at `path` is no longer the one locked (it was moved away
    /// between the open and the lock).
    /// With `patience`, a held lock is tried again every millisecond for that long, as long as `path` is still
    /// there: a claimer does, because the loader that published the share holds its lock until it has recorded
    /// the publish, a few milliseconds; another claimer's lock ends the wait as soon as it moves the share away.
    package static func acquire(_ path: String, patience: Duration = .zero) throws -> DirectoryLock? {
        let deadline = System.monotonicNanoseconds() + UInt64(max(0, patience.components.seconds)) * 1_000_000_000
            + UInt64(max(0, patience.components.attoseconds) / 1_000_000_000)
        while true {
            let directory: OpenDirectory
            do {
                directory = try OpenDirectory(path: path)
            } catch let error as ShareError where error.errno == ENOENT || error.errno == ENOTDIR {
                return nil
            }
            if try directory.lock(nonBlocking: true) {
                let lock = DirectoryLock(directory: directory)
                guard try lock.isLinked(at: path) else { return nil }
                return lock
            }
            guard System.monotonicNanoseconds() < deadline else { return nil }
            System.pause(microseconds: 1000)
        }
    }

    /// Removes every entry of the locked directory (a subdirectory as a whole tree), through the lock's descriptor.
    package func removeContents() throws {
        try directory.removeEntries()
    }

    /// Whether `path` still names the locked directory.
    func isLinked(at path: String) throws -> Bool {
        guard let linked = try System.lstatIfPresent(path) else { return false }
        let held = try directory.status()
        return linked.device == held.device && linked.inode == held.inode
    }
}
