import Foundation
import SharepipeSpool
import SharepipeSystem
import Synchronization

/// Where one HTTP server receives `POST /v1/shares` bodies: `staging/http-UUID/`, made when the server starts and
/// locked like a share being loaded for as long as the server lives, so that no recovery removes it while bodies are
/// written and any recovery removes it after a crash (with whatever it held: never a receipt's share). A body's
/// files are `REQUEST-N` in it (`REQUEST` a UUID per request, `N` the part).
///
/// One directory for every body rather than one per request: each creation or removal in `staging/` itself takes
/// that directory's lock in the kernel, and with thousands of recently removed inodes (no journal on ext4) a creation
/// scans them all while holding it; a directory per request doubled what the loader's own `staging/S` costs there
/// and made small uploads queue behind one another.
final class ReceiveDirectory: Sendable {
    /// The directory's path.
    let path: String
    private let lock: Mutex<DirectoryLock?>

    /// The prefix of the names that mark a receive directory in `staging/`.
    static let prefix = "http-"

    init(spool: Spool) throws {
        let name = Self.prefix + UUID.random().uuidString
        try spool.directories.staging.makeDirectory(name)
        path = spool.path(.staging) + "/" + name
        guard let lock = try DirectoryLock.acquire(path) else {
            throw ShareError(.io, "the receive directory was removed before it could be locked", errno: Errno.noEntry)
        }
        self.lock = Mutex(Optional(lock))
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
                guard let dash = name.lastIndex(of: "-") else { continue }
                requests.insert(name[..<dash])
            }
        }
        return requests.count
    }
}
