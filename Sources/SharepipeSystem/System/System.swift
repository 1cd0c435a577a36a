import CSharepipeShims
import Glibc

/// The one place that calls Glibc for file work: every call captures errno at once and retries EINTR.
package enum System {
    /// Runs a call that returns -1 and sets errno on failure; retries EINTR.
    static func call<T: BinaryInteger>(_ operation: String, _ body: () -> T) throws -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = Glibc.errno
            if code == EINTR { continue }
            throw error(operation, errno: code)
        }
    }

    /// The error for a failing system call: ERR_IO with the operation and errno, never a file name.
    static func error(_ operation: String, errno code: Int32) -> ShareError {
        ShareError(.io, "\(operation) failed: \(String(cString: strerror(code))) (errno \(code))", errno: code)
    }

    package static func lstat(_ path: String, relativeTo directory: Int32 = AT_FDCWD) throws -> FileStatus {
        var raw = stat()
        _ = try call("lstat") { fstatat(directory, path, &raw, AT_SYMLINK_NOFOLLOW) }
        return FileStatus(raw)
    }

    /// `lstat`, or nil when nothing is at the path.
    package static func lstatIfPresent(_ path: String, relativeTo directory: Int32 = AT_FDCWD) throws -> FileStatus? {
        do {
            return try lstat(path, relativeTo: directory)
        } catch let error as ShareError where error.errno == ENOENT || error.errno == ENOTDIR {
            return nil
        }
    }

    package static func rename(_ from: String, to: String, fromDirectory: Int32 = AT_FDCWD,
    toDirectory: Int32 = AT_FDCWD)
        throws
    {
        _ = try call("rename") { renameat(fromDirectory, from, toDirectory, to) }
    }

    /// Renames without ever replacing; returns false when the destination exists.
    package static func renameNoReplace(
        _ from: String, to: String, fromDirectory: Int32 = AT_FDCWD, toDirectory: Int32 = AT_FDCWD
    ) throws -> Bool {
        do {
            _ = try call("renameat2") { sharepipe_renameat_noreplace(fromDirectory, from, toDirectory, to) }
            return true
        } catch let error as ShareError where error.errno == EEXIST {
            return false
        }
    }

    package static func unlink(_ path: String, relativeTo directory: Int32 = AT_FDCWD) throws {
        _ = try call("unlink") { unlinkat(directory, path, 0) }
    }

    package static func removeDirectory(_ path: String, relativeTo directory: Int32 = AT_FDCWD) throws {
        _ = try call("rmdir") { unlinkat(directory, path, AT_REMOVEDIR) }
    }

    /// Creates a directory; returns false when something already exists there.
    @discardableResult
    package static func makeDirectory(_ path: String, relativeTo directory: Int32 = AT_FDCWD, mode: mode_t = 0o700)
        throws -> Bool
    {
        do {
            _ = try call("mkdir") { mkdirat(directory, path, mode) }
            return true
        } catch let error as ShareError where error.errno == EEXIST {
            return false
        }
    }

    /// Creates a directory and its missing parents.
    /// Errors name `path`: it is only ever a configured directory (inbox, state, output), never a user's file name.
    package static func makeDirectories(_ path: String, mode: mode_t = 0o700) throws {
        // Nearly always there already: one lstat instead of a mkdir per component.
        if (try? lstat(path).kind) == .directory { return }
        var prefix = path.hasPrefix("/") ? "" : "."
        do {
            for component in path.split(separator: "/") {
                prefix += "/" + component
                try makeDirectory(prefix, mode: mode)
            }
            guard try lstat(path).kind == .directory else {
                throw ShareError(.io, "mkdir failed: not a directory", errno: ENOTDIR)
            }
        } catch let error as ShareError {
            throw ShareError(error.code, "cannot create directory \(path): \(error.message)", errno: error.errno)
        }
    }

    /// Names in a directory, without `.` and `..`, in no particular order.
    ///
    /// A name that is not valid UTF-8 cannot be held in a Swift `String` and so could never be opened again. With
    /// `repairingNames`, such an entry is renamed (never replacing anything) to its repaired form — each invalid
    /// byte becomes U+FFFD — so the file can be handled at all; without it, such entries are skipped.
    package static func listDirectory(_ path: String, relativeTo directory: Int32 = AT_FDCWD,
    repairingNames: Bool = false)
        throws -> [String]
    {
        let fd = try call("open") { openat(directory, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        return try listDirectory(adopting: fd, repairingNames: repairingNames)
    }

    /// Names in an open directory, read through a duplicate of its descriptor (the caller keeps its own).
    static func listDirectory(descriptor: Int32, repairingNames: Bool = false) throws -> [String] {
        let fd = try call("fcntl") { fcntl(descriptor, F_DUPFD_CLOEXEC, 0) }
        // The duplicate shares the directory's read position: start from the beginning.
        _ = lseek(fd, 0, SEEK_SET)
        return try listDirectory(adopting: fd, repairingNames: repairingNames)
    }

    private static func listDirectory(adopting fd: Int32, repairingNames: Bool) throws -> [String] {
        guard let stream = fdopendir(fd) else {
            let code = Glibc.errno
            Glibc.close(fd)
            throw error("fdopendir", errno: code)
        }
        defer { closedir(stream) }
        var names: [String] = []
        var invalid: [[UInt8]] = []
        while true {
            Glibc.errno = 0
            guard let entry = readdir(stream) else {
                if Glibc.errno != 0 { throw error("readdir", errno: Glibc.errno) }
                break
            }
            // The name up to its NUL only: a record is `d_reclen` bytes, often less than `struct dirent`, so copying
            // the whole `d_name` array could read past the end of readdir's buffer (a crash when that ends a page).
            let namePointer = UnsafeRawPointer(entry).advanced(by: MemoryLayout<dirent>.offset(of: \dirent.d_name)!)
                .assumingMemoryBound(to: CChar.self)
            let raw = Array(UnsafeRawBufferPointer(start: namePointer, count: strlen(namePointer)))
            guard let name = String(validating: raw, as: UTF8.self) else {
                invalid.append(raw)
                continue
            }
            if name != "." && name != ".." { names.append(name) }
        }
        if repairingNames {
            for raw in invalid {
                if let repaired = try? repairName(raw, in: dirfd(stream)) { names.append(repaired) }
            }
        }
        return names
    }

    /// Renames an entry whose name is not valid UTF-8 to `<repaired>`, `<repaired> (1)` …; returns the new name.
    private static func repairName(_ raw: [UInt8], in directory: Int32) throws -> String {
        let repaired = String(decoding: raw, as: UTF8.self)
        let oldName = (raw + [0]).map { CChar(bitPattern: $0) }
        for attempt in 0..<1000 {
            let candidate = attempt == 0 ? repaired : "\(repaired) (\(attempt))"
            do {
                _ = try call("renameat2") { sharepipe_renameat_noreplace(directory, oldName, directory, candidate) }
                return candidate
            } catch let error as ShareError where error.errno == EEXIST {
                continue
            }
        }
        throw ShareError(.io, "no free name to repair an entry whose name is not UTF-8", errno: EEXIST)
    }

    /// Removes a file or a whole tree; never follows a symlink; absent is fine.
    package static func removeTree(_ path: String, relativeTo directory: Int32 = AT_FDCWD) throws {
        guard let status = try lstatIfPresent(path, relativeTo: directory) else { return }
        if status.kind == .directory {
            for name in try listDirectory(path, relativeTo: directory) {
                try removeTree(path + "/" + name, relativeTo: directory)
            }
            do { try removeDirectory(path,
            relativeTo: directory) } catch let error as ShareError where error.errno == ENOENT {}
        } else {
            do { try unlink(path, relativeTo: directory) } catch let error as ShareError where error.errno == ENOENT {}
        }
    }

    /// fsyncs a directory so that renames and unlinks inside it are durable.
    package static func syncDirectory(_ path: String) throws {
        let directory = try FileDescriptor.openDirectory(path)
        try directory.sync()
    }

    /// Writes a small file atomically: temporary name, fsync, rename over, fsync the directory.
    package static func writeAtomically(_ bytes: [UInt8], to directory: String, name: String, mode: mode_t = 0o600)
        throws
    {
        let temporary = ".\(name).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let temporaryPath = directory + "/" + temporary
        do {
            let file = try FileDescriptor.create(temporaryPath, mode: mode)
            try file.writeAll(bytes)
            try file.sync()
            try rename(temporaryPath, to: directory + "/" + name)
        } catch {
            try? unlink(temporaryPath)
            throw error
        }
        try syncDirectory(directory)
    }

    /// Reads a credentials file (`--tokens`, `--notify-secret`): a regular file, not a symlink, that group and others
    /// cannot access. `what` names the file in the errors ("the tokens file").
    package static func readPrivateFile(_ path: String, naming what: String, limit: Int) throws -> String {
        let status = try lstat(path)
        guard status.kind == .regular else {
            throw ShareError(.io, "\(what) is not a regular file", errno: Errno.invalidArgument)
        }
        guard status.permissions & 0o077 == 0 else {
            let mode = String(status.permissions, radix: 8)
            throw ShareError(
                .io, "\(what) has mode \(mode): it must not be accessible to group or others (chmod 600)",
                errno: Errno.accessDenied)
        }
        return String(decoding: try readFile(path, limit: limit), as: UTF8.self)
    }

    /// Reads a whole small file; refuses anything but a regular file.
    package static func readFile(_ path: String, limit: Int = 16 << 20) throws -> [UInt8] {
        let file = try FileDescriptor.openForReading(path)
        let status = try file.status()
        guard status.kind == .regular else { throw ShareError(.notRegularFile, "not a regular file") }
        guard status.size <= limit else { throw ShareError(.tooLarge, "file larger than \(limit) bytes") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = try chunk.withUnsafeMutableBytes { (raw) throws in try file.read(into: raw) }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
            if bytes.count > limit { throw ShareError(.tooLarge, "file larger than \(limit) bytes") }
        }
    }

    /// Raises the soft limit on open descriptors to the hard limit (systemd and most shells start processes at a
    /// soft 1,024): the spool keeps a descriptor per claimed share and per inbox file in flight.
    package static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// fsyncs an open file or directory given by its raw descriptor (the caller keeps ownership).
    package static func sync(descriptor: Int32) throws {
        _ = try call("fsync") { Glibc.fsync(descriptor) }
    }

    /// Reads at an offset from a raw descriptor the caller owns, without moving its file position.
    package static func read(descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer,
    at offset: Int64) throws -> Int {
        try call("pread") { Glibc.pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Writes the whole buffer at an offset of a raw descriptor the caller owns (looping over short writes), without
    /// moving its file position.
    package static func write(descriptor: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < buffer.count {
            let remaining = UnsafeRawBufferPointer(rebasing: buffer[done...])
            done += try call("pwrite") {
                Glibc.pwrite(descriptor, remaining.baseAddress, remaining.count, off_t(offset + Int64(done)))
            }
        }
    }

    /// What direct I/O (`O_DIRECT`) asks of writes to the file open as a raw descriptor the caller owns: the
    /// alignment of memory buffers and of file offsets and lengths, probed with `statx(STATX_DIOALIGN)`; nil where
    /// the file system offers no direct I/O (tmpfs, FUSE, NFS, ext4 with `data=journal`) or the kernel cannot tell.
    package static func directIOAlignment(descriptor: Int32) -> (memory: Int, offset: Int)? {
        var memory: UInt32 = 0
        var offset: UInt32 = 0
        guard sharepipe_direct_io_alignment(descriptor, &memory, &offset) == 0, memory > 0, offset > 0 else {
            return nil
        }
        return (Int(memory), Int(offset))
    }

    /// Whether a raw descriptor the caller owns has `O_DIRECT` set.
    package static func isDirectIO(descriptor: Int32) -> Bool {
        sharepipe_direct_io(descriptor) == 1
    }

    /// Sets or clears `O_DIRECT` on a raw descriptor the caller owns; false when the file system refuses it.
    @discardableResult
    package static func setDirectIO(descriptor: Int32, _ on: Bool) -> Bool {
        sharepipe_set_direct_io(descriptor, on ? 1 : 0) == 0
    }

    /// `FileDescriptor.startWriteback` for a raw descriptor the caller owns.
    package static func startWriteback(descriptor: Int32, offset: Int64, length: Int) {
        _ = sharepipe_start_writeback(descriptor, offset, Int64(length))
    }

    /// Ends the process at once with SIGKILL, as a crash would (the crash tests' hooks).
    package static func killSelf() {
        _ = Glibc.kill(getpid(), SIGKILL)
    }

    /// Blocks the calling thread (a dedicated one, never the cooperative pool) for `microseconds`.
    package static func pause(microseconds: UInt32) {
        _ = Glibc.usleep(microseconds)
    }

    /// The soft limit on open descriptors.
    package static func descriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(clamping: limit.rlim_cur)
    }

    /// Free bytes available to unprivileged users on the file system holding `path`.
    package static func freeBytes(_ path: String) throws -> Int64 {
        var bytes: UInt64 = 0
        _ = try call("statvfs") { sharepipe_available_bytes(path, &bytes) }
        return Int64(clamping: bytes)
    }

    /// Whether the calling process may write and search the directory.
    package static func isWritableDirectory(_ path: String) -> Bool {
        access(path, W_OK | X_OK) == 0
    }

    /// Monotonic clock in nanoseconds.
    package static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Wall clock in nanoseconds since the epoch.
    package static func wallClockNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    package static var processID: Int32 { getpid() }

    /// The UTC calendar fields (month 1–12, day 1–31) of a time in whole seconds since the epoch (`gmtime_r`, which
    /// cannot be interrupted and fails only past the year 2^31, where every field stays 0).
    static func utcCalendar(secondsSinceEpoch seconds: Int64)
        -> (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int)
    {
        var time = time_t(seconds)
        var parts = tm()
        _ = gmtime_r(&time, &parts)
        return (
            Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec)
        )
    }
}

extension System {
    /// The raw descriptor of standard error, for a child to inherit.
    package static let standardError = STDERR_FILENO

    /// Writes one line to standard error with a single write(2), so concurrent lines never interleave.
    static func writeStandardError(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(0x0a)
        bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let result = Glibc.write(STDERR_FILENO, raw.baseAddress! + done, raw.count - done)
                if result < 0 && Glibc.errno == EINTR { continue }
                if result <= 0 { return }
                done += result
            }
        }
    }

    /// Sends one datagram to systemd's notify socket.
    package static func notify(socket: String, message: String) throws {
        let bytes = Array(message.utf8)
        _ = try call("sendto") { sharepipe_notify_send(socket, bytes, bytes.count) }
    }
}
