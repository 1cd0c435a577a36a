import Glibc

/// The errno values the rest of the package branches on or reports (`ShareError.errno`), by name, so that no file
/// outside `System` needs Glibc for them (swift-system's `Errno`, with shorter names).
enum Errno {
    /// `ENOENT`
    static let noEntry = ENOENT
    /// `ENOTDIR`
    static let notDirectory = ENOTDIR
    /// `ELOOP`: among others, what an `O_NOFOLLOW` open of a symlink fails with.
    static let symlinkLoop = ELOOP
    /// `EXDEV`: a rename or link across file systems.
    static let crossDevice = EXDEV
    /// `EEXIST`
    static let exists = EEXIST
    /// `ENXIO`: among others, what an open of a socket fails with.
    static let noDevice = ENXIO
    /// `EAGAIN`
    static let tryAgain = EAGAIN
    /// `EIO`
    static let io = EIO
    /// `EACCES`
    static let accessDenied = EACCES
}
