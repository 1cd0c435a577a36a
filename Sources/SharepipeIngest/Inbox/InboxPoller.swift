import SharepipeSystem

/// The polling side of the inbox watcher, for file systems without inotify (NFS, SMB, FUSE): an entry is ready
/// once two consecutive scans saw the same snapshot of it. Reports each (name, identity) once, like the tracker.
struct InboxPoller {
    private let inbox: String
    private let ignore: IgnoreRules
    private var previous: [String: EntrySnapshot] = [:]
    private var reported: [String: EntryIdentity] = [:]

    init(inbox: String, ignore: IgnoreRules) {
        self.inbox = inbox
        self.ignore = ignore
    }

    /// One scan: lists the inbox, snapshots every entry not yet reported, and returns those that are ready.
    mutating func scan() throws -> [InboxCandidate] {
        let present = Set(try InboxWatcher.listInbox(inbox).filter { !ignore.ignores($0) })
        reported = reported.filter { present.contains($0.key) }
        previous = previous.filter { present.contains($0.key) }
        var ready: [InboxCandidate] = []
        for name in present.sorted() {
            let path = inbox + "/" + name
            // Gone or unreadable: forget it; it starts over if it is still there next time.
            guard let status = (try? System.lstatIfPresent(path)) ?? nil else {
                previous[name] = nil
                continue
            }
            let identity = EntryIdentity(status)
            if reported[name] == identity { continue }
            reported[name] = nil
            let snapshot: EntrySnapshot
            switch status.kind {
            case .regular: snapshot = EntrySnapshot(status)
            case .directory: snapshot = EntrySnapshot(walking: path, status: status) { _ in }
            default:
                ready.append(InboxCandidate(name: name, status: status))
                reported[name] = identity
                continue
            }
            if previous[name] == snapshot {
                previous[name] = nil
                reported[name] = identity
                ready.append(InboxCandidate(name: name, status: status))
            } else {
                previous[name] = snapshot
            }
        }
        return ready
    }
}
