import Foundation
import SharepipeSpool
import SharepipeSystem
import Synchronization

/// Where one HTTP server receives `POST /v1/shares` bodies: `staging/http-UUID/`, made when the server starts and
/// locked like a share being loaded for as long as the server lives, so that no recovery removes it while bodies are
/// written and any recovery removes it after a crash (with whatever it held: never a receipt's share). A body's
/// files are `REQUEST-N` in it (`REQUEST` a UUID per request, `N` the part).
///
/// It also keeps emptied files for the next bodies (`spare-N`, zeros only, at most `maxSpares`): the spares that
/// HTTP shares' recycled directories brought and left unused, since their copies are the received files themselves
/// (`SpareSink`). A body's file is then a spare renamed to its name and written over, not a new inode, and the
/// spare is not freed: on ext4 each new inode is found by walking past the recently freed ones, which took a
/// tenth of the daemon's CPU under 4 KiB uploads.
///
/// One directory for every body rather than one per request: each creation or removal in `staging/` itself takes
/// that directory's lock in the kernel, and with thousands of recently removed inodes (no journal on ext4) a creation
/// scans them all while holding it; a directory per request doubled what the loader's own `staging/S` costs there
/// and made small uploads queue behind one another.
final class ReceiveDirectory: SpareSink {
    /// The directory's path.
    let path: String
    private let lock: Mutex<DirectoryLock?>
    /// The directory, for renames in it.
    private let directory: OpenDirectory
    /// The spares kept: names and lengths.
    private let spares = Mutex<[(name: String, length: Int64)]>([])
    /// The next spare's number.
    private let nextSpare = Atomic<Int>(0)

    /// Spares kept at most (one 4 KiB-class file each, and no descriptor).
    static let maxSpares = 256
    /// The prefix of the spares' names.
    static let sparePrefix = "spare-"

    /// The prefix of the names that mark a receive directory in `staging/`.
    static let prefix = "http-"

    init(spool: Spool) throws {
        let name = Self.prefix + UUID.random().uuidString
        try spool.directories.staging.makeDirectory(name)
        path = spool.path(.staging) + "/" + name
        guard let lock = try DirectoryLock.acquire(path) else {
            throw ShareError(.io, "the receive directory was removed before it could be locked", errno: Errno.noEntry)
        }
        directory = try OpenDirectory(path: path)
        self.lock = Mutex(Optional(lock))
    }

    func adopt(_ name: String, length: Int64, from source: OpenDirectory) -> Bool {
        guard spares.withLock({ $0.count }) < Self.maxSpares else { return false }
        let spare = Self.sparePrefix + String(nextSpare.add(1, ordering: .relaxed).newValue)
        do {
            try source.rename(name, to: spare, in: directory)
        } catch {
            return false
        }
        spares.withLock { $0.append((spare, length)) }
        return true
    }

    /// Renames a kept spare to `name` (a body's file, in this directory); returns its length (zeros only: the
    /// writer cuts the file to what it wrote), or nil when none is kept.
    func takeSpare(as name: String) -> Int64? {
        while let spare = spares.withLock({ $0.popLast() }) {
            do {
                try directory.rename(spare.name, to: name, in: directory)
                return spare.length
            } catch {
                try? directory.unlink(spare.name)
            }
        }
        return nil
    }

    deinit {
        remove()
    }

    /// Removes the directory and whatever is left in it (the server has stopped).
    func remove() {
        lock.withLock { lock in
            guard let held = lock.take() else { return }
            try? held.removeContents()
            try? System.removeDirectory(path)
        }
    }

    /// Bodies being received in the receive directories of a state directory (every server's, live or not yet
    /// recovered): the distinct requests their files belong to.
    static func bodiesInFlight(in spool: Spool) -> Int {
        let staging = spool.path(.staging)
        let directories = ((try? System.listDirectory(staging)) ?? []).filter { $0.hasPrefix(prefix) }
        var requests = Set<Substring>()
        for directory in directories {
            for name in (try? System.listDirectory(staging + "/" + directory)) ?? [] {
                guard !name.hasPrefix(sparePrefix), let dash = name.lastIndex(of: "-") else { continue }
                requests.insert(name[..<dash])
            }
        }
        return requests.count
    }
}
