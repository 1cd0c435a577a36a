import Foundation
import SharepipeSystem
import Synchronization

/// What the file system at one location (the state directory, the inbox, the output) honours, probed once and kept
/// as a value the moves and the barrier branch on (STYLE 13: probe, do not assume; SPEC "File systems").
///
/// - `renameNoReplace`: `renameat2(RENAME_NOREPLACE)` tried on a scratch file in a private directory. Linux's NFS
///   client and FUSE file systems built the usual way answer EINVAL; then moves stay exclusive by `link(2)` (see
///   `ExclusiveMove`).
/// - `syncfsIsBarrier`: decided by the type, never probed (a probe cannot tell a flush from a promise): only a
///   local block-device file system (ext2/3/4, xfs, btrfs, f2fs, jfs, reiserfs, nilfs2, bcachefs, zfs) commits
///   every dirty file of the file system to its disk on `syncfs(2)`. FUSE does not tell its server to sync, NFS
///   sends no COMMIT, and CIFS, Ceph, 9p and unknown types are treated alike. Two local cases are decided on
///   purpose: overlayfs (containers) syncs its upper layer, but that layer may itself be anything, so it counts
///   as "not a barrier"; tmpfs and ramfs have no disk, so no barrier makes anything on them survive a power cut,
///   and the per-file syncs they get instead cost nothing there.
/// - `capacityKnown`: `statfs` reports a total (`f_blocks` > 0). Many FUSE and some network file systems report
///   0; their free space is unknown, not zero, so `--min-free` cannot apply there.
package struct FileSystemCapabilities: Sendable, Equatable {
    /// How a batch is made durable.
    enum Barrier: String, Sendable {
        /// One `syncfs(2)` of the file system.
        case syncfs
        /// `fdatasync` of each file and `fsync` of each directory written.
        case fsync
    }

    /// How a move is kept from replacing what is at its destination.
    enum ClaimMethod: String, Sendable {
        /// `renameat2(RENAME_NOREPLACE)`.
        case renameat2
        /// `link(2)`, which never replaces (see `ExclusiveMove`).
        case link
    }

    /// The `statfs` type magic.
    var magic: UInt64
    /// Whether `renameat2(RENAME_NOREPLACE)` works there.
    package var renameNoReplace: Bool
    /// Whether `syncfs(2)` is a durability barrier there.
    var syncfsIsBarrier: Bool
    /// Whether `statfs` reports a total size.
    package var capacityKnown: Bool
    /// The total size in bytes, 0 when unknown.
    var totalBytes: UInt64

    var barrier: Barrier { syncfsIsBarrier ? .syncfs : .fsync }
    var claimMethod: ClaimMethod { renameNoReplace ? .renameat2 : .link }

    /// The type's name, as `/proc/filesystems` spells it (`fuse` for every FUSE file system), or its magic in hex.
    var typeName: String {
        Self.names[magic]?.name ?? "0x" + String(magic, radix: 16)
    }

    /// Local block-device file systems (syncfs is a barrier) and the others worth naming, by `statfs` magic.
    private static let names: [UInt64: (name: String, barrier: Bool)] = [
        0xEF53: ("ext4", true), 0x5846_5342: ("xfs", true), 0x9123_683E: ("btrfs", true),
        0xF2F5_2010: ("f2fs", true), 0x3153_464A: ("jfs", true), 0x5265_4973: ("reiserfs", true),
        0x3434: ("nilfs2", true), 0xCA45_1A4E: ("bcachefs", true), 0x2FC1_2FC1: ("zfs", true),
        0x6573_5546: ("fuse", false), 0x6969: ("nfs", false), 0xFF53_4D42: ("cifs", false),
        0xFE53_4D42: ("smb2", false), 0x00C3_6400: ("ceph", false), 0x794C_7630: ("overlay", false),
        0x0102_1994: ("tmpfs", false), 0x8584_58F6: ("ramfs", false), 0x0102_1997: ("9p", false),
        0x0BD0_0BD0: ("lustre", false), 0x4750_4653: ("gpfs", false), 0x1983_0326: ("beegfs", false),
        0x6B41_4653: ("afs", false),
    ]

    /// Probes the directory at `path` (it must exist and be writable: the rename probe makes and removes a
    /// scratch directory in it). `SHAREPIPE_FS_FALLBACKS` (`fsync`, `link`, `capacity`, comma-separated) makes the
    /// probe report a primitive as missing even where it works — the tests and benchmarks use it to run the
    /// fallbacks on ext4; it can only take a primitive away, never grant one.
    package static func probe(_ path: String,
    environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> FileSystemCapabilities
    {
        let (magic, total) = try System.fileSystemType(path)
        System.removeStaleProbes(in: path)
        let fallbacks = Set((environment["SHAREPIPE_FS_FALLBACKS"] ?? "").split(separator: ",").map(String.init))
        let renameNoReplace = try !fallbacks.contains("link") && System.probeRenameNoReplace(in: path)
        return FileSystemCapabilities(
            magic: magic,
            renameNoReplace: renameNoReplace,
            syncfsIsBarrier: !fallbacks.contains("fsync") && names[magic]?.barrier == true,
            capacityKnown: !fallbacks.contains("capacity") && total > 0,
            totalBytes: fallbacks.contains("capacity") ? 0 : total)
    }

    /// `probe`, once per directory for the life of the process (the output is probed on the first store into it).
    package static func probeOnce(_ path: String) throws -> FileSystemCapabilities {
        if let known = cache.withLock({ $0[path] }) { return known }
        let probed = try probe(path)
        cache.withLock { $0[path] = probed }
        return probed
    }

    private static let cache = Mutex<[String: FileSystemCapabilities]>([:])

    /// What a local block-device file system honours: every primitive (for values built without a probe).
    static let local = FileSystemCapabilities(
        magic: 0xEF53, renameNoReplace: true, syncfsIsBarrier: true, capacityKnown: true, totalBytes: 0)

    /// `type ext4, barrier syncfs, claim renameat2, capacity 250.0 GiB` — `doctor`'s line for a location.
    package var summary: String {
        let capacity = capacityKnown ? System.describeBytes(Int64(clamping: totalBytes)) : "unknown"
        return "type \(typeName), barrier \(barrier.rawValue), claim \(claimMethod.rawValue), capacity \(capacity)"
    }

    /// The fields of the `filesystem.capabilities` log line.
    package func logFields(location: String) -> [(String, Logger.Value)] {
        [
            ("location", .string(location)), ("type", .string(typeName)), ("barrier", .string(barrier.rawValue)),
            ("claim", .string(claimMethod.rawValue)),
            ("capacity", capacityKnown ? .int(Int64(clamping: totalBytes)) : .string("unknown")),
        ]
    }
}
