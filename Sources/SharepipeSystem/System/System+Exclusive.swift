import Glibc

/// The primitives `ExclusiveMove` builds its moves from where `renameat2(RENAME_NOREPLACE)` is refused: `link(2)`
/// and `mkdir(2)` never replace an existing name, on every POSIX file system including NFS and FUSE.
extension System {
    /// Moves a regular file to a name that must not exist yet: `link` to the new name (EEXIST → false, nothing
    /// moved), then `unlink` of the old one. A crash between the two leaves the file under both names, never under
    /// none.
    package static func moveFileByLink(
        _ from: String, to: String, fromDirectory: Int32 = AT_FDCWD, toDirectory: Int32 = AT_FDCWD
    ) throws -> Bool {
        guard try linkNoReplace(from, to: to, fromDirectory: fromDirectory, toDirectory: toDirectory) else {
            return false
        }
        try unlink(from, relativeTo: fromDirectory)
        return true
    }

    /// Moves a directory to a name that must not exist yet: `mkdir` reserves the name (EEXIST → false, nothing
    /// moved), then a plain `rename` replaces the empty directory just made — the only thing it can replace, since
    /// nobody else renames onto a name they did not reserve. On a failed rename the reservation is removed again.
    package static func moveDirectoryByReservation(_ from: String, to: String) throws -> Bool {
        guard try makeDirectory(to, mode: 0o700) else { return false }
        do {
            try rename(from, to: to)
        } catch {
            try? removeDirectory(to)
            throw error
        }
        return true
    }
}

extension OpenDirectory {
    /// Makes `to` a second name of the file `from`, both relative to this directory; false when `to` exists.
    package func link(_ from: String, to: String) throws -> Bool {
        try withDescriptor { try System.linkNoReplace(from, to: to, fromDirectory: $0, toDirectory: $0) }
    }

    /// Names in the subdirectory `name` of this directory, without `.` and `..`.
    package func names(in name: String) throws -> [String] {
        try withDescriptor { try System.listDirectory(name, relativeTo: $0) }
    }
}
