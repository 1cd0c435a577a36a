import Foundation
import Glibc
import Synchronization

/// The state directory: `staging`, `incoming`, `processing`, `quarantine` and `ledger.sqlite`.
///
/// Publish protocol (kill -9 safe at every step):
/// 1. copies written and fsynced in `staging/S/` — crash: recovery deletes `staging/S`, sources untouched;
/// 2. `manifest.json` written and fsynced inside `staging/S`, `staging/S` fsynced;
/// 3. ledger: share and source identities recorded as staged — crash: `staging/S` deleted at recovery and the
///    sources ingested again (nothing was published);
/// 4. `rename(staging/S, incoming/S)`, `incoming` fsynced — S is visible to consumers;
/// 5. sources unlinked, ledger marks them done — crash between 4 and 5: recovery finds the staged identity of a
///    published S and unlinks the source instead of ingesting it again.
public final class Spool: Sendable {
    /// The state directory.
    public let root: String
    /// The ledger inside the state directory.
    let ledger: Ledger
    /// The last count of pending shares and bytes, and when it was taken (monotonic ns): back-pressure reads it
    /// instead of counting the ledger for every share.
    let pendingGauge = Mutex<(takenAt: UInt64, shares: Int, bytes: Int64)?>(nil)

    /// Stage directories.
    public enum Stage: String, Sendable, CaseIterable {
        case staging, incoming, processing, quarantine
    }

    /// Opens the spool at `root`, creating its layout and ledger when missing;
    /// a directory that cannot be used is ERR_CONTAINER_UNAVAILABLE.
    public init(root: String) throws {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
        try Self.prepare(root: self.root)
        do {
            ledger = try Ledger(path: self.root + "/ledger.sqlite")
        } catch let error as ShareError {
            throw ShareError(.containerUnavailable, error.message)
        }
    }

    /// The default state directory: `$STATE_DIRECTORY` (first entry) under systemd, else `./.sharepipe`.
    public static func defaultRoot(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let state = environment["STATE_DIRECTORY"], let first = state.split(separator: ":").first {
            return String(first)
        }
        return ".sharepipe"
    }

    /// The directory of a stage.
    public func path(_ stage: Stage) -> String { Self.path(root, stage) }

    /// The directory of a share in a stage.
    public func path(_ stage: Stage, _ shareID: String) -> String { path(stage) + "/" + shareID }

    private static func path(_ root: String, _ stage: Stage) -> String { root + "/" + stage.rawValue }

    /// Creates the layout when missing and checks it is usable; otherwise ERR_CONTAINER_UNAVAILABLE.
    private static func prepare(root: String) throws {
        func path(_ stage: Stage) -> String { Self.path(root, stage) }
        do {
            try System.makeDirectories(root)
            for stage in Stage.allCases { try System.makeDirectory(path(stage)) }
            for stage in Stage.allCases {
                guard try System.lstat(path(stage)).kind == .directory else {
                    throw ShareError(.containerUnavailable, "\(stage.rawValue) in the state directory is not a directory")
                }
            }
        } catch let error as ShareError where error.code != .containerUnavailable {
            throw ShareError(.containerUnavailable, "state directory cannot be used: \(error.message)", errno: error.errno)
        }
        guard System.isWritableDirectory(root), Stage.allCases.allSatisfy({ System.isWritableDirectory(path($0)) }) else {
            throw ShareError(.containerUnavailable, "state directory is not writable", errno: EACCES)
        }
    }

    /// Share ids in a stage, oldest first (by directory modification time, then id).
    public func shareIDs(in stage: Stage) throws -> [String] {
        let names = try System.listDirectory(path(stage)).filter { UUID(uuidString: $0) != nil }
        let dated = names.compactMap { name -> (String, Int64)? in
            guard let status = try? System.lstat(path(stage, name)), status.kind == .directory else { return nil }
            return (name, status.modificationTime)
        }
        return dated.sorted { $0.1 == $1.1 ? $0.0 < $1.0 : $0.1 < $1.1 }.map(\.0)
    }

    /// Reads a share's manifest.
    public func manifest(_ stage: Stage, _ shareID: String) throws -> Manifest {
        try Manifest.decode(try System.readFile(path(stage, shareID) + "/manifest.json"))
    }

    /// Publish step 2: writes and fsyncs the manifest in `staging/S`, then fsyncs `staging/S`. No temporary name is
    /// needed: nothing reads `staging`, and the whole directory becomes visible at once by the rename of step 4.
    func writeManifest(_ manifest: Manifest) throws {
        let directory = path(.staging, manifest.shareId)
        let file = try FileDescriptor.open(
            directory + "/manifest.json", flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
        try file.writeAll(try manifest.encoded())
        try file.sync()
        try System.syncDirectory(directory)
    }

    /// Publish step 4: one rename from `staging/S` to `incoming/S`, then `incoming` fsynced.
    func publish(_ shareID: String) throws {
        try System.rename(path(.staging, shareID), to: path(.incoming, shareID))
        try System.syncDirectory(path(.incoming))
    }

    /// Removes a share directory from a stage and makes the removal durable.
    func remove(_ stage: Stage, _ shareID: String) throws {
        try System.removeTree(path(stage, shareID))
        try System.syncDirectory(path(stage))
    }
}
