import Foundation
import SharepipeSystem

/// What the operator commands (`status`, `ls`, `requeue`, `purge`) need beyond the consumer's view.
extension Spool {
    /// Opens a state directory that must already exist; unlike `init(root:)` it never creates the directory, so
    /// looking at a mistyped `--state` leaves nothing behind. Missing, or not a directory:
    /// ERR_CONTAINER_UNAVAILABLE.
    package static func openExisting(
        root: String, ledger: LedgerLocation = .sqlite, faults: LifecycleFaults? = nil
    ) throws -> Spool {
        let status: FileStatus?
        do {
            status = try System.lstatIfPresent(root)
        } catch let error as ShareError {
            throw ShareError(.containerUnavailable, "state directory \(root) cannot be used: \(error.message)",
                errno: error.errno)
        }
        guard let status else {
            throw ShareError(.containerUnavailable, "state directory \(root) does not exist", errno: Errno.noEntry)
        }
        guard status.kind == .directory else {
            throw ShareError(
                .containerUnavailable, "state directory \(root) is not a directory", errno: Errno.notDirectory)
        }
        return try Spool(root: root, ledger: ledger, faults: faults)
    }

    /// The stage a share's directory is in, or nil when no stage holds it.
    package func stage(ofShare shareID: String) -> Stage? {
        Stage.allCases.first { stage in
            (try? System.lstatIfPresent(path(stage, shareID)))?.kind == .directory
        }
    }

    /// Why a quarantined share failed for good: the last attempt's error, code first. Nil when its `reason.json`
    /// is missing or unreadable.
    package func quarantineMessage(_ shareID: String) -> String? {
        try? quarantineReason(shareID).message
    }
}
