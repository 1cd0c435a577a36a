import Glibc

/// The errno values the rest of the package branches on or reports (`ShareError.errno`), by name, so that no file
/// outside `System` needs Glibc for them (swift-system's `Errno`, with shorter names).
package enum Errno {
    /// `ENOENT`
    package static let noEntry = ENOENT
    /// `ENOTDIR`
    package static let notDirectory = ENOTDIR
    /// `ELOOP`: among others, what an `O_NOFOLLOW` open of a symlink fails with.
    package static let symlinkLoop = ELOOP
    /// `EISDIR`
    package static let isDirectory = EISDIR
    /// `EXDEV`: a rename or link across file systems.
    package static let crossDevice = EXDEV
    /// `EEXIST`
    package static let exists = EEXIST
    /// `ENXIO`: among others, what an open of a socket fails with.
    package static let noDevice = ENXIO
    /// `EAGAIN`
    package static let tryAgain = EAGAIN
    /// `EIO`
    package static let io = EIO
    /// `EACCES`
    package static let accessDenied = EACCES
    /// `EPERM`: among others, what `link(2)` fails with where the file system refuses hard links.
    package static let notPermitted = EPERM
    /// `EINVAL`
    package static let invalidArgument = EINVAL
    /// `ENOTEMPTY`: among others, what a `rename(2)` onto a directory that has entries fails with.
    package static let notEmpty = ENOTEMPTY
    /// `ENOTSUP`
    package static let notSupported = ENOTSUP
    /// `EMLINK`: a file with as many links as its file system allows.
    package static let tooManyLinks = EMLINK
    /// `ENOSPC`
    package static let noSpace = ENOSPC
    /// `EDQUOT`
    package static let quotaExceeded = EDQUOT
}
