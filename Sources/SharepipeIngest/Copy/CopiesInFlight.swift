import SharepipeSpool
import SharepipeSystem
import Synchronization

/// The copies this process is making right now, for the daemon's status line and metrics.
package final class CopiesInFlight: Sendable {
    /// What is being copied, all copies together.
    struct Summary: Sendable, Equatable {
        var count = 0
        var bytesDone: Int64 = 0
        /// The sizes the sources had when their copies began (or the bytes copied, when a source grew past it).
        var bytesTotal: Int64 = 0
    }

    private struct Copy {
        var done: Int64
        var total: Int64
    }

    private struct State {
        var copies: [Int: Copy] = [:]
        var nextID = 0
    }

    /// Every copy made by a `CopyEngine` of this process.
    static let shared = CopiesInFlight()

    private let state = Mutex(State())

    /// Registers a copy of `total` bytes; returns its id for `update` and `end`.
    func begin(total: Int64) -> Int {
        state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.copies[id] = Copy(done: 0, total: max(0, total))
            return id
        }
    }

    func update(_ id: Int, done: Int64) {
        state.withLock { state in
            guard var copy = state.copies[id] else { return }
            copy.done = done
            copy.total = max(copy.total, done)
            state.copies[id] = copy
        }
    }

    func end(_ id: Int) {
        _ = state.withLock { $0.copies.removeValue(forKey: id) }
    }

    var summary: Summary {
        state.withLock { state in
            state.copies.values.reduce(into: Summary()) { summary, copy in
                summary.count += 1
                summary.bytesDone += copy.done
                summary.bytesTotal += copy.total
            }
        }
    }
}

/// A copy being written into `staging` by a live loader (this process or another: a daemon, a `share`).
package struct CopyInFlight: Sendable, Equatable {
    /// The share the copy belongs to.
    package var shareId: String
    /// Bytes written so far.
    package var bytesDone: Int64
    /// The size the source had when the copy began. Only copies of at least `CopyEngine.announcedSize` bytes
    /// announce it while they run; for a smaller or finished copy this is the bytes written.
    package var bytesTotal: Int64
}

extension Spool {
    /// The copies in `staging` whose loader is still running, read from the disk: a live loader holds the lock on
    /// its staging directory (a crashed one's leftovers are unlocked), each copy's size is the bytes written so
    /// far, and a large copy carries its expected size in an extended attribute until it is complete.
    package func copiesInFlight() throws -> [CopyInFlight] {
        var copies: [CopyInFlight] = []
        for shareID in try shareIDs(in: .staging) {
            let directory: FileDescriptor
            do {
                directory = try FileDescriptor.openDirectory(path(.staging, shareID))
            } catch let error as ShareError where error.errno == Errno.noEntry {
                continue
            }
            // A shared lock granted means no loader holds the exclusive one; it is let go at once.
            guard try !directory.lock(exclusive: false, nonBlocking: true) else { continue }
            let names = (try? System.listDirectory(".", relativeTo: directory.rawValue)) ?? []
            for name in names where name != "manifest.json" && !name.hasPrefix(".") {
                guard let file = try? FileDescriptor.openForReading(name, relativeTo: directory.rawValue),
                    let status = try? file.status(), status.kind == .regular
                else { continue }
                let total = try? file.numericAttribute(CopyEngine.expectedSizeAttribute)
                copies.append(CopyInFlight(shareId: shareID, bytesDone: status.size, bytesTotal: total ?? status.size))
            }
        }
        return copies
    }
}
