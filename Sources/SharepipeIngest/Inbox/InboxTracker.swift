import SharepipeSystem

/// The inotify side of the inbox watcher: turns events and scans into ready candidates.
///
/// Owned by one thread; time comes in as `now` (monotonic nanoseconds) so that the rules can be tested without
/// sleeping. An entry is *pending* from its first event until it is judged: ready, vanished, or (for a symlink,
/// FIFO, socket or device) reported at once. Each (name, identity) is reported once; the record is forgotten when
/// the name disappears, and an entry of another identity under the name is a new entry.
struct InboxTracker: ~Copyable {
    /// Events that a watched directory reports, the inbox's own deletion or move included. `IN_OPEN` and the two
    /// closes tell whether anyone holds a file open: an entry that appeared without being opened (a hard link, a
    /// rename) is complete as it is.
    static let treeEvents: InotifyMask = [
        .open, .closeWrite, .closeNoWrite, .movedTo, .movedFrom, .create, .delete, .modify, .attributes, .deleteSelf,
        .moveSelf, .onlyDirectory,
    ]

    let inotify: Inotify
    private let inbox: String
    private let settle: UInt64
    private let patience: UInt64
    private let ignore: IgnoreRules
    private let inboxWatch: Int32
    /// Each watched directory's path relative to the inbox ("" for the inbox itself).
    private var directories: [Int32: String] = [:]
    private var pending: [String: Pending] = [:]
    /// Per top-level name, the files inside it (or "" for the entry itself) held open, with how many opens are
    /// not yet closed.
    private var opens: [String: [String: Int]] = [:]
    private var reported: [String: EntryIdentity] = [:]

    private struct Pending {
        var identity: EntryIdentity
        var lastEvent: UInt64
        var deadline: UInt64
        var snapshot: EntrySnapshot
    }

    /// Starts watching `inbox` (an absolute path without symlinks). `settle` is the quiet window; `patience` is
    /// how long an entry that a writer still holds open may stay quiet before it is judged anyway.
    init(inbox: String, settle: UInt64, patience: UInt64, ignore: IgnoreRules) throws {
        let inotify = try Inotify()
        inboxWatch = try inotify.addWatch(inbox, mask: Self.treeEvents)
        self.inotify = inotify
        self.inbox = inbox
        self.settle = settle
        self.patience = max(patience, settle)
        self.ignore = ignore
        directories[inboxWatch] = ""
    }

    /// The earliest moment a pending entry must be judged; nil when nothing is pending (the watcher may sleep).
    var nextDeadline: UInt64? {
        pending.values.lazy.map(\.deadline).min()
    }

    /// Lists the inbox and starts the settle clock for every entry not yet pending or reported.
    /// After an overflow every entry starts over, since its events may have been lost.
    mutating func rescan(now: UInt64, overflow: Bool) throws -> [InboxCandidate] {
        let present = Set(try InboxWatcher.listInbox(inbox).filter { !ignore.ignores($0) })
        reported = reported.filter { present.contains($0.key) }
        pending = pending.filter { present.contains($0.key) }
        opens = overflow ? [:] : opens.filter { present.contains($0.key) }
        var ready: [InboxCandidate] = []
        for name in present.sorted() where overflow || pending[name] == nil {
            if let candidate = touch(name, now: now) { ready.append(candidate) }
        }
        return ready
    }

    /// Applies a batch of events; symlinks, FIFOs, sockets and devices come back at once.
    /// Throws when the inbox itself was deleted, moved or unmounted.
    mutating func handle(_ events: [InotifyEvent], now: UInt64) throws -> [InboxCandidate] {
        var touched: [String] = []
        var seen: Set<String> = []
        var overflow = false
        for event in events {
            if event.has(.queueOverflow) {
                overflow = true
                continue
            }
            if event.watch == inboxWatch && event.has([.deleteSelf, .moveSelf, .unmount, .ignored]) {
                throw InboxWatcher.inboxGone
            }
            if event.has(.ignored) {
                directories[event.watch] = nil
                continue
            }
            // A directory's own deletion or move is handled through its parent's event.
            guard let base = directories[event.watch], !event.has([.deleteSelf, .moveSelf]) else { continue }
            guard let top = apply(event, base: base) else { continue }
            if seen.insert(top).inserted { touched.append(top) }
        }
        // Events were lost: every entry starts over, the touched ones included.
        if overflow { return try rescan(now: now, overflow: true) }
        return touched.compactMap { touch($0, now: now) }
    }

    /// Judges every pending entry whose deadline has passed.
    mutating func judgeDue(now: UInt64) -> [InboxCandidate] {
        let due = pending.filter { $0.value.deadline <= now }.sorted { $0.value.deadline < $1.value.deadline }
        return due.compactMap { judge($0.key, now: now) }
    }

    /// Updates watches and write tracking for one event; returns the top-level name it touches, if any.
    private mutating func apply(_ event: InotifyEvent, base: String) -> String? {
        let relative: String
        if let name = event.name {
            relative = base.isEmpty ? name : base + "/" + name
        } else {
            relative = base
        }
        guard !relative.isEmpty else { return nil }
        let parts = relative.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let top = String(parts[0])
        let inner = parts.count > 1 ? String(parts[1]) : ""
        guard !ignore.ignores(top) else { return nil }
        let isDirectory = event.has(.isDirectory)

        if inner.isEmpty && event.name != nil {
            if event.has([.delete, .movedFrom]) {
                forget(top)
                if isDirectory { removeWatches(under: top) }
                return nil
            }
            // A new entry under a name is told from the old one by its identity (`touch`), not by the event: an
            // `IN_CREATE` read late, after a rescan already found and reported the entry, must not report it again.
        } else if isDirectory && event.name != nil {
            if event.has([.movedFrom, .delete]) { removeWatches(under: relative) }
            if event.has([.create, .movedTo]) && reported[top] == nil { watchTree(relative) }
        }

        // Opening and closing a directory (every listing does, this tracker's own included) changes nothing.
        if isDirectory || event.name == nil { return event.has([.open, .closeNoWrite]) ? nil : top }
        if event.has(.open) {
            opens[top, default: [:]][inner, default: 0] += 1
            return nil
        }
        if event.has(.modify) {
            // Written through a descriptor opened before the watch began: held open until its close.
            opens[top, default: [:]][inner] = max(opens[top]?[inner] ?? 0, 1)
        } else if event.has([.closeWrite, .closeNoWrite]) {
            let remaining = (opens[top]?[inner] ?? 0) - 1
            opens[top]?[inner] = remaining > 0 ? remaining : nil
        } else if event.has([.movedTo, .delete, .movedFrom]) {
            opens[top]?[inner] = nil
        }
        return top
    }

    /// Something happened to a top-level entry: report it at once if it is not a file or folder, else (re)start
    /// its settle clock.
    private mutating func touch(_ name: String, now: UInt64) -> InboxCandidate? {
        guard let status = status(of: name) else {
            forget(name)
            return nil
        }
        let identity = EntryIdentity(status)
        if reported[name] == identity {
            pending[name] = nil
            opens[name] = nil
            return nil
        }
        reported[name] = nil
        guard status.kind == .regular || status.kind == .directory else { return report(name, status) }
        if var entry = pending[name], entry.identity == identity {
            entry.lastEvent = now
            entry.deadline = now + settle
            if status.kind == .regular { entry.snapshot = EntrySnapshot(status) }
            pending[name] = entry
        } else {
            pending[name] = Pending(
                identity: identity, lastEvent: now, deadline: now + settle, snapshot: snapshot(name, status))
        }
        return nil
    }

    /// The settle window has passed: ready if nobody holds a file open (or patience ran out) and a fresh snapshot
    /// equals the last one; otherwise wait another window.
    private mutating func judge(_ name: String, now: UInt64) -> InboxCandidate? {
        guard var entry = pending[name] else { return nil }
        if let open = opens[name], !open.isEmpty {
            // Only regular files count: a FIFO inside a folder may be held open for ever.
            let stillOpen = open.filter { inner, _ in
                status(of: inner.isEmpty ? name : name + "/" + inner)?.kind == .regular
            }
            opens[name] = stillOpen
            if !stillOpen.isEmpty && now < entry.lastEvent + patience {
                entry.deadline = entry.lastEvent + patience
                pending[name] = entry
                return nil
            }
        }
        guard let status = status(of: name) else {
            forget(name)
            return nil
        }
        guard status.kind == .regular || status.kind == .directory else { return report(name, status) }
        let fresh = snapshot(name, status)
        if fresh == entry.snapshot && EntryIdentity(status) == entry.identity { return report(name, status) }
        entry.identity = EntryIdentity(status)
        entry.snapshot = fresh
        entry.deadline = now + settle
        pending[name] = entry
        return nil
    }

    private mutating func report(_ name: String, _ status: FileStatus) -> InboxCandidate {
        pending[name] = nil
        opens[name] = nil
        reported[name] = EntryIdentity(status)
        return InboxCandidate(name: name, status: status)
    }

    private mutating func forget(_ name: String) {
        pending[name] = nil
        opens[name] = nil
        reported[name] = nil
    }

    /// A fresh `lstat` of a top-level entry; nil when it is gone or cannot be read (a later rescan retries).
    private func status(of name: String) -> FileStatus? {
        (try? System.lstatIfPresent(inbox + "/" + name)) ?? nil
    }

    /// Snapshots a top-level entry; walking a folder also (re)watches each of its directories.
    private mutating func snapshot(_ name: String, _ status: FileStatus) -> EntrySnapshot {
        guard status.kind == .directory else { return EntrySnapshot(status) }
        return EntrySnapshot(walking: inbox + "/" + name, status: status) { relative in
            watch(relative.isEmpty ? name : name + "/" + relative)
        }
    }

    /// Watches a directory that appeared inside a folder, and everything below it.
    private mutating func watchTree(_ relative: String) {
        guard let status = status(of: relative), status.kind == .directory else { return }
        _ = EntrySnapshot(walking: inbox + "/" + relative, status: status) { inner in
            watch(inner.isEmpty ? relative : relative + "/" + inner)
        }
    }

    /// Watches one directory inside the inbox. Without a watch (the user's watch limit reached, or the directory
    /// already gone) the folder is still judged by its snapshots, one settle window apart.
    private mutating func watch(_ relative: String) {
        guard let watch = try? inotify.addWatch(inbox + "/" + relative, mask: Self.treeEvents.union(.dontFollow))
        else { return }
        directories[watch] = relative
    }

    private mutating func removeWatches(under relative: String) {
        let prefix = relative + "/"
        for (watch, path) in directories where path == relative || path.hasPrefix(prefix) {
            inotify.removeWatch(watch)
            directories[watch] = nil
        }
    }
}
