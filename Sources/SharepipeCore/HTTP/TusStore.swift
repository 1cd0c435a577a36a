import Foundation
import Glibc

/// Where resumable uploads live: `STATE/uploads/<id>/` with `data` (the bytes, appended as they arrive) and
/// `info.json` (the record, replaced atomically, and only after the bytes it counts are fsynced). The directory is
/// outside `staging/`, so a restart keeps it: a client resumes at the recorded offset.
struct TusStore: Sendable {
    let root: String

    init(stateDirectory: String) throws {
        root = stateDirectory + "/uploads"
        try System.makeDirectories(root, mode: 0o700)
    }

    private func directory(_ id: String) -> String { root + "/" + id }
    func dataPath(_ id: String) -> String { directory(id) + "/data" }

    /// A valid upload id (a UUID, so a path can never be smuggled in).
    static func isValidID(_ id: String) -> Bool { UUID(uuidString: id) != nil }

    /// Creates the upload's directory, its empty data file and its record.
    func create(_ upload: TusUpload) throws {
        try System.makeDirectory(directory(upload.id))
        _ = try FileDescriptor.open(dataPath(upload.id), flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW)
        try record(upload)
        try System.syncDirectory(root)
    }

    /// Replaces the record atomically.
    func record(_ upload: TusUpload) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try System.writeAtomically(Array(try encoder.encode(upload)), to: directory(upload.id), name: "info.json")
    }

    /// The record, or nil when there is no such upload.
    func load(_ id: String) throws -> TusUpload? {
        guard Self.isValidID(id) else { return nil }
        do {
            return try JSONDecoder().decode(TusUpload.self, from: Data(System.readFile(directory(id) + "/info.json")))
        } catch let error as ShareError where error.errno == ENOENT || error.errno == ENOTDIR {
            return nil
        }
    }

    /// Opens the data file for appending at `offset`: bytes past it were never acknowledged and are cut off.
    func openForAppend(_ id: String, at offset: Int64) throws -> FileDescriptor {
        let file = try FileDescriptor.open(dataPath(id), flags: O_WRONLY | O_NOFOLLOW)
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
    }

    /// Every upload id present.
    func ids() throws -> [String] {
        try System.listDirectory(root).filter(Self.isValidID)
    }
}

/// Uploads in flight as `sharepipe status` sees them from outside the daemon.
public enum HTTPUploadsInFlight {
    /// Bodies being received now (files in `staging/http-*/`) and resumable uploads not finished yet (`uploads/*`).
    public static func count(in spool: Spool) -> (bodies: Int, resumable: Int) {
        let bodies = ReceiveDirectory.bodiesInFlight(in: spool)
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
        guard try System.lstatIfPresent(root)?.kind == .directory else {
            throw ShareError(.notFound, "no uploads directory", errno: ENOENT)
        }
    }
}
