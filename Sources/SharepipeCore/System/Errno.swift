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
    /// `EISDIR`
    static let isDirectory = EISDIR
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
    /// `EPERM`: among others, what `link(2)` fails with where the file system refuses hard links.
    static let notPermitted = EPERM
    /// `EINVAL`
    static let invalidArgument = EINVAL
    /// `ENOTEMPTY`: among others, what a `rename(2)` onto a directory that has entries fails with.
    static let notEmpty = ENOTEMPTY
    /// `ENOTSUP`
    static let notSupported = ENOTSUP
    /// `EMLINK`: a file with as many links as its file system allows.
    static let tooManyLinks = EMLINK
    /// `ENOSPC`
    static let noSpace = ENOSPC
    /// `EDQUOT`
    static let quotaExceeded = EDQUOT
}
