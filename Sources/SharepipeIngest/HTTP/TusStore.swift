import Foundation
import SharepipeSpool
import SharepipeSystem

/// Where resumable uploads live: `STATE/uploads/<id>/` with `data` (the bytes, appended as they arrive) and
/// `info.json` (the record, replaced atomically, and only after the bytes it counts are fsynced). The directory is
/// outside `staging/`, so a restart keeps it: a client resumes at the recorded offset. Each change of a record is
/// followed by its row in the ledger (`UploadRecords`), which only mirrors these files: a row that could not be
/// written is repaired by `reconcile()`.
struct TusStore: Sendable {
    let root: String
    /// The ledger's rows of the records, when the ledger keeps them.
    let ledger: (any UploadRecords)?
    /// Whose files the rows follow: this host and state directory.
    let holder: String

    init(stateDirectory: String, ledger: (any UploadRecords)? = nil) throws {
        root = stateDirectory + "/uploads"
        self.ledger = ledger
        holder = System.hostName() + ":" + stateDirectory
        try System.makeDirectories(root, mode: 0o700)
    }

    private func directory(_ id: String) -> String { root + "/" + id }
    func dataPath(_ id: String) -> String { directory(id) + "/data" }

    /// A valid upload id (a UUID, so a path can never be smuggled in).
    static func isValidID(_ id: String) -> Bool { UUID(uuidString: id) != nil }

    /// Creates the upload's directory, its empty data file and its record.
    func create(_ upload: TusUpload) throws {
        try System.makeDirectory(directory(upload.id))
        _ = try FileDescriptor.create(dataPath(upload.id))
        try record(upload)
        try System.syncDirectory(root)
    }

    /// Replaces the record atomically, then its row in the ledger.
    func record(_ upload: TusUpload) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try System.writeAtomically(Array(try encoder.encode(upload)), to: directory(upload.id), name: "info.json")
        // The file is the record; a row that cannot be written now is repaired by the next `reconcile()`.
        try? ledger?.recordUploads([upload], holder: holder)
    }

    /// The record, or nil when there is no such upload.
    func load(_ id: String) throws -> TusUpload? {
        guard Self.isValidID(id) else { return nil }
        do {
            return try JSONDecoder().decode(TusUpload.self, from: Data(System.readFile(directory(id) + "/info.json")))
        } catch let error as ShareError where error.errno == Errno.noEntry || error.errno == Errno.notDirectory {
            return nil
        }
    }

    /// Opens the data file for appending at `offset`: bytes past it were never acknowledged and are cut off.
    func openForAppend(_ id: String, at offset: Int64) throws -> FileDescriptor {
        let file = try FileDescriptor.openForWriting(dataPath(id))
        try System.truncate(descriptor: file.rawValue, length: offset)
        try System.seekToEnd(descriptor: file.rawValue)
        return file
    }

    func removeData(_ id: String) throws {
        try System.unlink(dataPath(id))
    }

    func remove(_ id: String) throws {
        try System.removeTree(directory(id))
        try System.syncDirectory(root)
        try? ledger?.forgetUpload(id)
    }

    /// Makes the ledger's rows of this state directory's uploads those of the files: every record written again,
    /// rows of uploads whose files are gone removed.
    func reconcile() throws {
        guard let ledger else { return }
        let ids = try ids()
        try ledger.recordUploads(ids.compactMap { try? load($0) }, holder: holder)
        try ledger.forgetUploads(holder: holder, except: ids)
    }

    /// Every upload id present.
    func ids() throws -> [String] {
        try System.listDirectory(root).filter(Self.isValidID)
    }
}

/// Uploads in flight as `sharepipe status` sees them from outside the daemon.
package enum HTTPUploadsInFlight {
    /// Bodies being received now (files in `staging/http-*/`) and resumable uploads not finished yet: those of every
    /// daemon on the ledger, or those of `uploads/*` when the ledger cannot tell.
    package static func count(in spool: Spool) -> (bodies: Int, resumable: Int) {
        let bodies = ReceiveDirectory.bodiesInFlight(in: spool)
        let now = System.wallClockNanoseconds() / 1_000_000
        if let count = try? spool.ledger.uploadsInFlight(now: now) {
            return (bodies, count)
        }
        guard let store = try? TusStore(existingIn: spool.root) else { return (bodies, 0) }
        let open = ((try? store.ids()) ?? []).filter { id in
            guard let upload = try? store.load(id) else { return false }
            return upload.shareId == nil
        }
        return (bodies, open.count)
    }
}

extension TusStore {
    /// The store of a state directory, without creating it.
    init(existingIn stateDirectory: String) throws {
        root = stateDirectory + "/uploads"
        ledger = nil
        holder = System.hostName() + ":" + stateDirectory
        guard try System.lstatIfPresent(root)?.kind == .directory else {
            throw ShareError(.notFound, "no uploads directory", errno: Errno.noEntry)
        }
    }
}
