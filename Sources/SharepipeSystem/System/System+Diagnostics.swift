import Glibc

/// The calls `sharepipe doctor` needs beyond the spool's own: symlink targets in `/proc` and access checks.
extension System {
    /// The target of a symbolic link, as stored (not resolved).
    package static func readLink(_ path: String) throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        let count = try buffer.withUnsafeMutableBufferPointer { raw in
            try call("readlink") { Glibc.readlink(path, raw.baseAddress!, raw.count) }
        }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether the calling process may read, write and search the directory (`access(R_OK | W_OK | X_OK)`).
    package static func isReadableWritableDirectory(_ path: String) -> Bool {
        access(path, R_OK | W_OK | X_OK) == 0
    }

    /// Proves a directory takes new files by creating an empty, hidden file with a random name and removing it.
    /// Unlike `access`, this also catches a full inode table and file systems that refuse new files.
    package static func probeWritable(_ directory: String) throws {
        let path = directory + "/.sharepipe-probe-\(UInt32.random(in: 0...UInt32.max)).tmp"
        let file = try FileDescriptor.create(path)
        _ = consume file
        try unlink(path)
    }

    /// `512 B`, `80.0 MiB`, `12.3 GiB`.
    package static func describeBytes(_ bytes: Int64) -> String {
        let units: [(Int64, String)] = [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        guard let (size, unit) = units.first(where: { bytes >= $0.0 }) else { return "\(bytes) B" }
        let tenths = bytes / (size / 10)
        return "\(tenths / 10).\(tenths % 10) \(unit)"
    }
}
