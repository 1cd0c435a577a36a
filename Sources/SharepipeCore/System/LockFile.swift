import Glibc

/// An exclusive `flock` on a lock file, held for as long as this value lives; the kernel drops it when the
/// descriptor closes, including when the process dies.
struct LockFile: ~Copyable {
    private let descriptor: FileDescriptor

    private init(descriptor: consuming FileDescriptor) {
        self.descriptor = descriptor
    }

    /// Opens (creating it when missing) the lock file at `path` and takes an exclusive lock without waiting.
    /// Returns nil when another holder has the lock, when the file's directory is gone, or when the file at
    /// `path` is no longer the one locked (it was moved or replaced between the open and the lock).
    static func acquire(_ path: String) throws -> LockFile? {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600)
        } catch let error as ShareError where error.errno == ENOENT || error.errno == ENOTDIR {
            return nil
        }
        guard try file.lock(exclusive: true, nonBlocking: true) else { return nil }
        let lock = LockFile(descriptor: file)
        guard try lock.isLinked(at: path) else { return nil }
        return lock
    }

    /// Whether `path` still names the locked file.
    func isLinked(at path: String) throws -> Bool {
        guard let linked = try System.lstatIfPresent(path) else { return false }
        let held = try descriptor.status()
        return linked.device == held.device && linked.inode == held.inode
    }
}
