import Foundation
import SharepipeLedger
import SharepipeSystem
import Synchronization

/// The state directory: `staging`, `incoming`, `processing`, `quarantine` and `ledger.sqlite`.
///
/// The spool owns the directories (opened once, kept open for fsync and relative operations), the ledger, and the
/// one executor of the share lifecycle (`LifecycleExecutor`, performing `ShareLifecycle`'s actions). Nothing else
/// renames a share or records its state.
public final class Spool: Sendable {
    /// The state directory.
    public let root: String
    /// The state directory's identity in a ledger other state directories may share (`DIR/spool-id`, made once):
    /// its shares' rows carry it, and its recovery reconciles only those.
    let id: String
    /// The ledger of this spool.
    package let ledger: LedgerStore
    /// Where precondition violations and engine failures are logged (nil: nowhere).
    let logger: Logger?
    /// The state directory and its stages, open for the spool's lifetime.
    package let directories: Directories
    /// The last count of pending shares and bytes and the shares admitted since: back-pressure reads it instead of
    /// counting the ledger for every share.
    package let pendingGauge = Mutex(PendingGauge())
    /// The last free-space reading (`checkCapacity`).
    package let freeGauge = Mutex<(takenAt: UInt64, free: Int64)?>(nil)
    /// Performs every transition of the lifecycle; publishes and completions in batches.
    package let executor: LifecycleExecutor
    /// What the state directory's file system honours, probed when the spool opens.
    package let capabilities: FileSystemCapabilities
    /// How a publish batch is made durable there.
    let barrier: DurabilityBarrier
    /// Processed shares' directories, emptied and kept for the next shares' staging (where `syncfs` is the barrier).
    package let recycler: ShareRecycler
    /// Told after each publish batch of this process that published a share, whoever loaded it (inbox, HTTP, tus).
    private let publishObservers = Mutex<[@Sendable () -> Void]>([])

    /// Stage directories.
    package typealias Stage = SpoolStage

    /// The open directories.
    package final class Directories: Sendable {
        let root: OpenDirectory
        package let staging: OpenDirectory
        let incoming: OpenDirectory
        let processing: OpenDirectory
        let quarantine: OpenDirectory

        init(root path: String) throws {
            root = try OpenDirectory(path: path)
            staging = try root.openDirectory(Stage.staging.rawValue)
            incoming = try root.openDirectory(Stage.incoming.rawValue)
            processing = try root.openDirectory(Stage.processing.rawValue)
            quarantine = try root.openDirectory(Stage.quarantine.rawValue)
        }

        subscript(stage: Stage) -> OpenDirectory {
            switch stage {
            case .staging: staging
            case .incoming: incoming
            case .processing: processing
            case .quarantine: quarantine
            }
        }
    }

    /// Opens the spool at `root` with its ledger (the embedded SQLite one unless told otherwise), creating its
    /// layout and ledger when missing; a directory or ledger that cannot be used is ERR_CONTAINER_UNAVAILABLE.
    public convenience init(root: String, ledger: LedgerLocation = .sqlite, logger: Logger? = nil) throws {
        try self.init(root: root, ledger: ledger, logger: logger, faults: nil)
    }

    /// Opens the spool with faults injected into its executor (the crash and failure-path tests).
    package convenience init(
        root: String, ledger: LedgerLocation = .sqlite, logger: Logger? = nil, faults: LifecycleFaults?
    ) throws {
        let trimmed = Self.trimmed(root)
        try Self.prepare(root: trimmed)
        try self.init(root: trimmed, ledger: try ledger.open(root: trimmed), logger: logger, faults: faults)
    }

    /// Opens the spool at `root` with the given ledger.
    init(root: String, ledger: LedgerStore, logger: Logger?, faults: LifecycleFaults? = nil) throws {
        self.root = Self.trimmed(root)
        try Self.prepare(root: self.root)
        id = try Self.identity(root: self.root)
        self.ledger = ledger
        self.logger = logger
        do {
            directories = try Directories(root: self.root)
            capabilities = try FileSystemCapabilities.probeOnce(self.root)
        } catch let error as ShareError {
            throw ShareError(.containerUnavailable, "state directory cannot be used: \(error.message)", errno: error.errno)
        }
        barrier = DurabilityBarrier(capabilities, staging: directories.staging, ledger: ledger)
        recycler = ShareRecycler(
            root: directories.root, rootPath: self.root, enabled: capabilities.syncfsIsBarrier)
        executor = LifecycleExecutor(faults: faults)
    }

    private static func trimmed(_ root: String) -> String {
        root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
    }

    /// The default state directory: `$STATE_DIRECTORY` (first entry) under systemd, else `./.sharepipe`.
    package static func defaultRoot(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let state = environment["STATE_DIRECTORY"], let first = state.split(separator: ":").first {
            return String(first)
        }
        return ".sharepipe"
    }

    /// The directory of a stage.
    package func path(_ stage: Stage) -> String { Self.path(root, stage) }

    /// The directory of a share in a stage.
    package func path(_ stage: Stage, _ shareID: String) -> String { path(stage) + "/" + shareID }

    private static func path(_ root: String, _ stage: Stage) -> String { root + "/" + stage.rawValue }

    /// Reads `DIR/spool-id`, making it first when missing (written under a temporary name, fsynced, linked into
    /// place without replacing: of two processes starting at once, both read the first one's).
    private static func identity(root: String) throws -> String {
        let path = root + "/spool-id"
        func read() throws -> String? {
            guard let bytes = try? System.readFile(path, limit: 64) else { return nil }
            let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let id = UUID(uuidString: text) else {
                throw ShareError(.containerUnavailable, "\(path) does not hold a UUID")
            }
            return id.uuidString
        }
        if let id = try read() { return id }
        let id = UUID.random().uuidString
        let temporary = path + ".tmp-" + id
        defer { try? System.unlink(temporary) }
        do {
            let file = try FileDescriptor.create(temporary)
            try file.writeAll(Array((id + "\n").utf8))
            try file.sync()
            let linked: Bool
            do {
                linked = try System.linkNoReplace(temporary, to: path)
            } catch let error as ShareError where [Errno.notPermitted, Errno.notSupported].contains(error.errno) {
                // A file system without hard links: a rename, after looking once more (a rare race left to it).
                if try read() == nil { try System.rename(temporary, to: path) }
                linked = false
            }
            if linked {
                try OpenDirectory(path: root).sync()
                return id
            }
        } catch let error as ShareError {
            throw ShareError(
                .containerUnavailable, "state directory cannot be used: \(error.message)", errno: error.errno)
        }
        guard let existing = try read() else { throw ShareError(.containerUnavailable, "\(path) cannot be read") }
        return existing
    }

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
        guard System.isWritableDirectory(root),
        Stage.allCases.allSatisfy({ System.isWritableDirectory(path($0)) }) else {
            throw ShareError(.containerUnavailable, "state directory is not writable", errno: Errno.accessDenied)
        }
    }

    /// Share ids in a stage, oldest first (by directory modification time, then id).
    package func shareIDs(in stage: Stage) throws -> [String] {
        let names = try System.listDirectory(path(stage)).filter { UUID(uuidString: $0) != nil }
        let dated = names.compactMap { name -> (String, Int64)? in
            guard let status = try? System.lstat(path(stage, name)), status.kind == .directory else { return nil }
            return (name, status.modificationTime)
        }
        return dated.sorted { $0.1 == $1.1 ? $0.0 < $1.0 : $0.1 < $1.1 }.map(\.0)
    }

    /// Reads a share's manifest.
    package func manifest(_ stage: Stage, _ shareID: String) throws -> Manifest {
        try Manifest.decode(try System.readFile(path(stage, shareID) + "/manifest.json"))
    }

    /// Calls `observer` after each publish batch of this process that published a share (the daemon wakes its
    /// consumer: a share is processed as soon as it is published, whichever producer loaded it).
    package func onPublish(_ observer: @escaping @Sendable () -> Void) {
        publishObservers.withLock { $0.append(observer) }
    }

    /// Whether this process is loading a share (admitted past the pending limits, not yet published or given up), or
    /// has a publish, completion or reservation queued or being performed. In memory only: work that waits for a
    /// quiet spool (the notifier's hold) reads it every few milliseconds.
    package var isWorking: Bool {
        pendingGauge.withLock { $0.admitted > 0 } || !executor.isIdle
    }

    /// Tells the observers that shares were just published.
    func notifyPublished() {
        for observer in publishObservers.withLock({ $0 }) { observer() }
    }

    /// Writes `staging/S/manifest.json`, into an empty spare renamed to that name when the share has one. Not fsynced
    /// and no temporary name: nothing reads `staging`, the publisher's barrier makes it durable, and the whole
    /// directory becomes visible at once by the rename into `incoming`.
    package func writeManifest(_ manifest: Manifest, spares: StagingSpares? = nil) throws {
        let name = manifest.shareId + "/manifest.json"
        let bytes = try manifest.encoded()
        if let spareLength = spares?.use(as: "manifest.json") {
            let file = try directories.staging.openExisting(name)
            try file.writeAll(bytes)
            try StagingSpares.cut(file, to: Int64(bytes.count), spareLength: spareLength)
        } else {
            try directories.staging.create(name).writeAll(bytes)
        }
    }

    /// Logs ledger transitions whose precondition did not hold; recovery repairs them.
    func logViolations(_ violations: [PreconditionViolation], during transition: String) {
        for violation in violations {
            logger?.error("ledger.precondition_violated", [
                ("code", .string(ShareError.Code.io.rawValue)), ("share", .string(violation.shareID)),
                ("transition", .string(transition)),
                ("expected", .string(violation.expected.map(\.rawValue).joined(separator: "|"))),
                ("found", .string(violation.found?.rawValue ?? "none")),
            ])
        }
    }
}
