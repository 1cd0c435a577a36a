import Glibc

/// An exclusive `flock` on a directory, held for as long as this value lives. The lock belongs to the directory's
/// inode, so it moves with the directory when it is renamed; the kernel drops it when the descriptor closes,
/// including when the process dies.
struct DirectoryLock: ~Copyable, Sendable {
    private let directory: OpenDirectory

    private init(directory: OpenDirectory) {
        self.directory = directory
    }

    /// Opens the directory at `path` and locks it without waiting. Returns nil when another holder has the lock,
    /// when nothing is at `path`, or when the directory at `path` is no longer the one locked (it was moved away
    /// between the open and the lock).
    /// With `waiting`, waits for a holder to let go instead of returning nil: a claimer does, because the loader
    /// that published the share holds its lock until it has recorded the publish, a few milliseconds.
    static func acquire(_ path: String, waiting: Bool = false) throws -> DirectoryLock? {
        let directory: OpenDirectory
        do {
            directory = try OpenDirectory(path: path)
        } catch let error as ShareError where error.errno == ENOENT || error.errno == ENOTDIR {
            return nil
        }
        guard try directory.lock(nonBlocking: !waiting) else { return nil }
        let lock = DirectoryLock(directory: directory)
        guard try lock.isLinked(at: path) else { return nil }
        return lock
    }

    /// Removes every entry of the locked directory (a subdirectory as a whole tree), through the lock's descriptor.
    func removeContents() throws {
        try directory.removeEntries()
    }

    /// Whether `path` still names the locked directory.
    func isLinked(at path: String) throws -> Bool {
        guard let linked = try System.lstatIfPresent(path) else { return false }
        let held = try directory.status()
        return linked.device == held.device && linked.inode == held.inode
    }
}
