import Glibc

/// A directory held open for relative calls (`openat`, `renameat2`, `unlinkat`, `fstatat`) and for fsync: paths
/// below it are resolved from the descriptor, so they never follow a symlink above it, and neither depth nor path
/// length matters. Its descriptor stays inside `System`.
package final class OpenDirectory: Sendable {
    private let descriptor: FileDescriptor

    package init(_ descriptor: consuming FileDescriptor) {
        self.descriptor = descriptor
    }

    /// Opens the directory at `path` (never a symlink).
    package convenience init(path: String) throws {
        self.init(try FileDescriptor.openDirectory(path))
    }

    /// Opens the subdirectory `name` (never a symlink).
    package func openDirectory(_ name: String) throws -> OpenDirectory {
        OpenDirectory(try FileDescriptor.openDirectory(name, relativeTo: descriptor.rawValue))
    }

    /// Opens the entry `name` with `flags` (`O_CLOEXEC` is always added).
    func open(_ name: String, flags: Int32, mode: mode_t = 0o600) throws -> FileDescriptor {
        try FileDescriptor.open(name, relativeTo: descriptor.rawValue, flags: flags, mode: mode)
    }

    /// Opens the entry `name` for reading (`FileDescriptor.openForReading`).
    package func openForReading(_ name: String) throws -> FileDescriptor {
        try FileDescriptor.openForReading(name, relativeTo: descriptor.rawValue)
    }

    /// Opens the existing file `name` for reading and writing (`FileDescriptor.openExisting`).
    package func openExisting(_ name: String) throws -> FileDescriptor {
        try FileDescriptor.openExisting(name, relativeTo: descriptor.rawValue)
    }

    /// Creates the new file `name` for writing (`FileDescriptor.create`).
    package func create(_ name: String, mode: mode_t = 0o600) throws -> FileDescriptor {
        try FileDescriptor.create(name, relativeTo: descriptor.rawValue, mode: mode)
    }

    package func status() throws -> FileStatus { try descriptor.status() }

    /// `lstat` of an entry, nil when nothing has that name.
    package func statusIfPresent(_ name: String) throws -> FileStatus? {
        try System.lstatIfPresent(name, relativeTo: descriptor.rawValue)
    }

    package func makeDirectory(_ name: String, mode: mode_t = 0o700) throws {
        try System.makeDirectory(name, relativeTo: descriptor.rawValue, mode: mode)
    }

    package func unlink(_ name: String) throws { try System.unlink(name, relativeTo: descriptor.rawValue) }

    package func removeDirectory(_ name: String) throws { try System.removeDirectory(name,
    relativeTo: descriptor.rawValue) }

    /// Removes an entry, a directory as a whole tree; absent is fine.
    package func removeTree(_ name: String) throws { try System.removeTree(name, relativeTo: descriptor.rawValue) }

    /// Names in this directory, without `.` and `..` (read through a duplicate of the descriptor: no open).
    package func names(repairingNames: Bool = false) throws -> [String] {
        try System.listDirectory(descriptor: descriptor.rawValue, repairingNames: repairingNames)
    }

    /// Removes every entry (a subdirectory as a whole tree) without a stat first.
    func removeEntries() throws {
        for name in try names() {
            do {
                try unlink(name)
            } catch let error as ShareError where error.errno == EISDIR {
                try removeTree(name)
            } catch let error as ShareError where error.errno == ENOENT {}
        }
    }

    /// Takes an advisory `flock` on the directory; false when `nonBlocking` and another holder has it.
    func lock(nonBlocking: Bool) throws -> Bool { try descriptor.lock(exclusive: true, nonBlocking: nonBlocking) }

    /// Renames `name` in this directory to the same name in `target`, replacing what is there.
    package func rename(_ name: String, into target: OpenDirectory) throws {
        try System.rename(name, to: name, fromDirectory: descriptor.rawValue, toDirectory: target.descriptor.rawValue)
    }

    /// Renames `name` in this directory to `newName` in `target` (which may be this directory), replacing what is
    /// there.
    package func rename(_ name: String, to newName: String, in target: OpenDirectory) throws {
        try System.rename(
            name, to: newName, fromDirectory: descriptor.rawValue, toDirectory: target.descriptor.rawValue)
    }

    /// Renames `name` in this directory to the same name in `target` unless that exists (then false).
    package func renameNoReplace(_ name: String, into target: OpenDirectory) throws -> Bool {
        try System.renameNoReplace(
            name, to: name, fromDirectory: descriptor.rawValue, toDirectory: target.descriptor.rawValue)
    }

    /// Makes the entries' creations, renames and removals in this directory durable.
    package func sync() throws { try descriptor.sync() }

    /// Commits every dirty file and directory of the file system holding this directory.
    package func syncFileSystem() throws { try descriptor.syncFileSystem() }

    /// Runs `body` with the raw descriptor, for the other files of `System` (it must not escape `body`).
    func withDescriptor<T>(_ body: (Int32) throws -> T) rethrows -> T { try body(descriptor.rawValue) }
}
