import Glibc

extension System {
    /// Makes a second name for a file without ever replacing one; returns false when the new name exists.
    package static func linkNoReplace(
        _ from: String, to: String, fromDirectory: Int32 = AT_FDCWD, toDirectory: Int32 = AT_FDCWD
    ) throws -> Bool {
        do {
            _ = try call("link") { linkat(fromDirectory, from, toDirectory, to, 0) }
            return true
        } catch let error as ShareError where error.errno == EEXIST {
            return false
        }
    }

    /// The number of names a file has, without following a symlink; nil when nothing is at the path.
    package static func linkCount(_ path: String, relativeTo directory: Int32) throws -> UInt64? {
        var raw = stat()
        do {
            _ = try call("lstat") { fstatat(directory, path, &raw, AT_SYMLINK_NOFOLLOW) }
        } catch let error as ShareError where error.errno == ENOENT {
            return nil
        }
        return (raw.st_mode & S_IFMT) == S_IFREG ? UInt64(raw.st_nlink) : 0
    }

    /// Copies everything from `input`'s offset to `output`'s: in the kernel when it can, else through a buffer.
    package static func copyContents(from input: borrowing FileDescriptor, to output: borrowing FileDescriptor) throws {
        let chunk = 1 << 20
        while let count = try input.copyRange(to: output, length: chunk) {
            if count == 0 { return }
        }
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let count = try buffer.withUnsafeMutableBytes { (raw) throws in try input.read(into: raw) }
            if count == 0 { return }
            try buffer.withUnsafeBytes { (raw) throws in
                try output.writeAll(UnsafeRawBufferPointer(rebasing: raw[..<count]))
            }
        }
    }
}
