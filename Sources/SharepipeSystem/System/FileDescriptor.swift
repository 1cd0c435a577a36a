import Glibc
import CSharepipeShims

/// The kind of a file as `lstat`/`fstat` report it.
package enum FileKind: Sendable, Equatable {
    case regular, directory, symlink, fifo, socket, characterDevice, blockDevice, unknown

    init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFLNK: self = .symlink
        case S_IFIFO: self = .fifo
        case S_IFSOCK: self = .socket
        case S_IFCHR: self = .characterDevice
        case S_IFBLK: self = .blockDevice
        default: self = .unknown
        }
    }
}

/// What `stat` says about a file, reduced to what sharepipe uses.
package struct FileStatus: Sendable, Equatable {
    package var kind: FileKind
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    /// Modification time in nanoseconds since the epoch.
    package var modificationTime: Int64
    package var permissions: UInt32
    /// Hard links to the file; 0 once the last name is gone.
    package var linkCount: UInt64

    init(_ raw: stat) {
        kind = FileKind(mode: raw.st_mode)
        device = UInt64(raw.st_dev)
        inode = UInt64(raw.st_ino)
        size = Int64(raw.st_size)
        modificationTime = Int64(raw.st_mtim.tv_sec) * 1_000_000_000 + Int64(raw.st_mtim.tv_nsec)
        permissions = UInt32(raw.st_mode & 0o7777)
        linkCount = UInt64(raw.st_nlink)
    }

    /// Whether both name the same file (device and inode).
    package func isSameFile(as other: FileStatus) -> Bool { device == other.device && inode == other.inode }
}

/// An open file descriptor with exactly one owner; it is closed when the owner lets go of it.
package struct FileDescriptor: ~Copyable, Sendable {
    package let rawValue: Int32

    init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    deinit {
        // close is never retried: on Linux the descriptor is gone even when close reports EINTR.
        _ = Glibc.close(rawValue)
    }

    /// Closes the descriptor now rather than at the end of the owner's scope.
    consuming func close() {}

    /// Opens `path`, relative to `directory` (a raw directory descriptor, or `AT_FDCWD`).
    static func open(
        _ path: String, relativeTo directory: Int32 = AT_FDCWD, flags: Int32, mode: mode_t = 0o600
    ) throws -> FileDescriptor {
        let fd = try System.call("open") { Glibc.openat(directory, path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(rawValue: fd)
    }

    /// Opens a directory for use as the base of relative operations and for fsync. A symlink is refused (ELOOP)
    /// unless `followingSymlink`, which only a configured directory (never a user's entry) may ask for.
    package static func openDirectory(
        _ path: String, relativeTo directory: Int32 = AT_FDCWD, followingSymlink: Bool = false
    ) throws -> FileDescriptor {
        try open(path, relativeTo: directory, flags: O_RDONLY | O_DIRECTORY | (followingSymlink ? 0 : O_NOFOLLOW))
    }

    /// Opens an existing entry for reading: never through a symlink (ELOOP), never blocking on a FIFO, never making
    /// a terminal the controlling one.
    package static func openForReading(_ path: String,
    relativeTo directory: Int32 = AT_FDCWD) throws -> FileDescriptor {
        try open(path, relativeTo: directory, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
    }

    /// Creates a new file for writing; fails with EEXIST when the name is taken, even by a symlink. With
    /// `readable`, the file is open for reading too (`O_RDWR`), for a writer that reads its own bytes back.
    package static func create(
        _ path: String, relativeTo directory: Int32 = AT_FDCWD, mode: mode_t = 0o600, readable: Bool = false
    ) throws -> FileDescriptor {
        let access = readable ? O_RDWR : O_WRONLY
        return try open(path, relativeTo: directory, flags: access | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
    }

    /// Opens an existing file for reading and writing, never through a symlink or blocking on a FIFO; nothing is
    /// created or cut off.
    package static func openExisting(_ path: String, relativeTo directory: Int32 = AT_FDCWD) throws -> FileDescriptor {
        try open(path, relativeTo: directory, flags: O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
    }

    /// Opens an existing file for writing at its start, never through a symlink; nothing is created or cut off.
    package static func openForWriting(_ path: String,
    relativeTo directory: Int32 = AT_FDCWD) throws -> FileDescriptor {
        try open(path, relativeTo: directory, flags: O_WRONLY | O_NOFOLLOW)
    }

    package func status() throws -> FileStatus {
        var raw = stat()
        _ = try System.call("fstat") { Glibc.fstat(rawValue, &raw) }
        return FileStatus(raw)
    }

    /// Reads up to `buffer.count` bytes; 0 means end of file.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try System.call("read") { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Reads at an offset without moving the file position.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try System.call("pread") { Glibc.pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Writes the whole buffer, looping over short writes.
    package func writeAll(_ buffer: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < buffer.count {
            let remaining = UnsafeRawBufferPointer(rebasing: buffer[done...])
            done += try System.call("write") { Glibc.write(rawValue, remaining.baseAddress, remaining.count) }
        }
    }

    package func writeAll(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (raw) throws in try writeAll(raw) }
    }

    /// Cuts (or extends) the file to `length` bytes.
    package func truncate(to length: Int64) throws {
        try System.truncate(descriptor: rawValue, length: length)
    }

    package func sync() throws {
        _ = try System.call("fsync") { Glibc.fsync(rawValue) }
    }

    /// Moves the file position back to the start.
    package func rewind() throws {
        _ = try System.call("lseek") { Glibc.lseek(rawValue, 0, SEEK_SET) }
    }

    /// Commits every dirty file and directory of the file system holding this descriptor, in one journal commit.
    func syncFileSystem() throws {
        _ = try System.call("syncfs") { sharepipe_syncfs(rawValue) }
    }

    /// Moves up to `length` bytes in the kernel from this descriptor's offset to `destination`'s.
    /// Returns the count, 0 at end of file, or nil when the file systems cannot do it.
    package func copyRange(to destination: borrowing FileDescriptor, length: Int) throws -> Int? {
        while true {
            let result = sharepipe_copy_file_range(rawValue, destination.rawValue, length)
            if result >= 0 { return result }
            let code = Glibc.errno
            switch code {
            case EINTR: continue
            case EXDEV, ENOSYS, EINVAL, EOPNOTSUPP, EBADF: return nil
            default: throw System.error("copy_file_range", errno: code)
            }
        }
    }

    /// Takes an advisory `flock`; returns false when `nonBlocking` and another holder has it.
    package func lock(exclusive: Bool = true, nonBlocking: Bool) throws -> Bool {
        let operation = (exclusive ? LOCK_EX : LOCK_SH) | (nonBlocking ? LOCK_NB : 0)
        while true {
            if sharepipe_flock(rawValue, operation) == 0 { return true }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EWOULDBLOCK && nonBlocking { return false }
            throw System.error("flock", errno: code)
        }
    }
}
