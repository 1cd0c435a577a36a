/// The identity of an inbox source file, recorded with its share so a crash between publishing the share and
/// deleting the source cannot ingest the same file twice.
package struct SourceIdentity: Sendable, Equatable, Hashable {
    /// Device number.
    package var device: UInt64
    /// Inode number.
    package var inode: UInt64
    /// Size in bytes.
    package var size: Int64
    /// Modification time, nanoseconds since the epoch.
    package var modificationTime: Int64
    /// SHA-256 of the content, lowercase hex; the loader fills it in from the copy.
    package var sha256: String

    /// Creates an identity.
    package init(device: UInt64, inode: UInt64, size: Int64, modificationTime: Int64, sha256: String = "") {
        self.device = device
        self.inode = inode
        self.size = size
        self.modificationTime = modificationTime
        self.sha256 = sha256
    }

    package init(_ status: FileStatus) {
        self.init(
            device: status.device, inode: status.inode, size: status.size, modificationTime: status.modificationTime)
    }

    /// A dropped folder, recorded with its files so that recovery can remove it once they are gone: device and
    /// inode only (its size and time change as its entries go), marked by a size of -1.
    package static func folder(device: UInt64, inode: UInt64) -> SourceIdentity {
        SourceIdentity(device: device, inode: inode, size: -1, modificationTime: 0)
    }

    package var isFolder: Bool { size < 0 }
}
