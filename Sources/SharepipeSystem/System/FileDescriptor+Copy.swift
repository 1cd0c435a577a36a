import CSharepipeShims
import Glibc

extension FileDescriptor {
    /// Starts writing a range's dirty pages to disk without waiting for it (`sync_file_range`), so a long copy
    /// streams to the disk as it goes and the final `fsync` finds little left to do. Only a hint: a file system
    /// that cannot do it is not an error, since the `fsync` that follows writes the range anyway.
    package func startWriteback(offset: Int64, length: Int) {
        System.startWriteback(descriptor: rawValue, offset: offset, length: length)
    }

    /// Sets an extended attribute holding a number (as decimal text).
    package func setAttribute(_ name: String, _ value: Int64) throws {
        let text = Array(String(value).utf8)
        _ = try System.call("fsetxattr") {
            text.withUnsafeBytes { sharepipe_fsetxattr(rawValue, name, $0.baseAddress, $0.count) }
        }
    }

    /// The number held by an extended attribute, or nil when the file has no such attribute (or it is not a number).
    package func numericAttribute(_ name: String) throws -> Int64? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count: Int
        do {
            count = try System.call("fgetxattr") {
                buffer.withUnsafeMutableBytes { sharepipe_fgetxattr(rawValue, name, $0.baseAddress, $0.count) }
            }
        } catch let error as ShareError where error.errno == ENODATA || error.errno == ENOTSUP {
            return nil
        }
        return Int64(String(decoding: buffer[..<count], as: UTF8.self))
    }

    /// Removes an extended attribute; one that is not there is not an error.
    package func removeAttribute(_ name: String) throws {
        do {
            _ = try System.call("fremovexattr") { sharepipe_fremovexattr(rawValue, name) }
        } catch let error as ShareError where error.errno == ENODATA || error.errno == ENOTSUP {
            return
        }
    }
}
