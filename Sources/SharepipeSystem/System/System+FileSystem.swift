import CSharepipeShims
import Glibc

/// The calls behind the file-system capability probe (`FileSystemCapabilities`) and the per-file barrier
/// (`DurabilityBarrier`).
extension System {
    /// The `statfs` type magic (`f_type`) and total size in bytes (`f_blocks` × fragment size; 0 when the file
    /// system reports no capacity) of the file system holding the directory at `path`.
    package static func fileSystemType(_ path: String) throws -> (magic: UInt64, totalBytes: UInt64) {
        let directory = try FileDescriptor.open(path, flags: O_RDONLY | O_DIRECTORY)
        var magic: UInt64 = 0
        var total: UInt64 = 0
        _ = try call("fstatfs") { sharepipe_filesystem_type(directory.rawValue, &magic, &total) }
        return (magic, total)
    }

    /// Whether `renameat2(RENAME_NOREPLACE)` works in the directory at `path`, tried on a scratch file in a private
    /// directory (`.sharepipe-probe-<random>`, removed again). EINVAL, ENOSYS and EOPNOTSUPP mean refused (NFS
    /// and most FUSE file systems); any other failure is thrown. The scratch name is renamed onto a free name: the
    /// VFS itself answers EEXIST for an existing destination before the file system is asked, so only a rename
    /// to a free name shows whether the file system honours the flag.
    package static func probeRenameNoReplace(in path: String) throws -> Bool {
        let scratch = path + "/.sharepipe-probe-\(UInt64.random(in: 0...UInt64.max))"
        try makeDirectory(scratch)
        defer { try? removeTree(scratch) }
        let file = try FileDescriptor.create(scratch + "/a")
        _ = consume file
        do {
            _ = try call("renameat2") { sharepipe_renameat_noreplace(AT_FDCWD, scratch + "/a", AT_FDCWD, scratch + "/b") }
        } catch let error as ShareError where [EINVAL, ENOSYS, EOPNOTSUPP].contains(error.errno) {
            return false
        }
        // A file system that takes the flag but ignores it would be found out here: "b" must now exist, "a" not.
        return try lstatIfPresent(scratch + "/b") != nil && lstatIfPresent(scratch + "/a") == nil
    }

    /// Removes `.sharepipe-probe-*` directories a probe left behind when its process died mid-probe (only names the
    /// probe makes; only those older than a minute, so a probe running in another process is never disturbed).
    package static func removeStaleProbes(in path: String) {
        guard let names = try? listDirectory(path) else { return }
        let cutoff = wallClockNanoseconds() - 60_000_000_000
        for name in names where name.hasPrefix(".sharepipe-probe-") {
            let entry = path + "/" + name
            guard let status = try? lstatIfPresent(entry), status.kind == .directory, status.modificationTime < cutoff
            else { continue }
            try? removeTree(entry)
        }
    }
}

extension FileDescriptor {
    /// `fdatasync(2)`: the file's data and the metadata needed to read it back (its size) are durable.
    package func dataSync() throws {
        _ = try System.call("fdatasync") { Glibc.fdatasync(rawValue) }
    }
}
