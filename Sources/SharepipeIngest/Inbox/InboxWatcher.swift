import SharepipeSystem

/// Watches the inbox and tells the ingester which top-level entries are ready, and when.
///
/// - A file is ready once nobody holds it open (its writer closed it, or it appeared without being opened: moved
///   in, hard-linked, found by a scan) and it has been quiet for `settle` with size and mtime unchanged on a fresh
///   `lstat`. A writer that appends in bursts within the settle window yields one candidate, after the last burst.
///   A file still held open is judged anyway after `rescanInterval` of quiet (a writer that went idle).
/// - A folder is ready once nothing in its whole tree has changed for `settle` and a fresh recursive snapshot
///   equals the previous one; its sub-folders are watched as they appear.
/// - Symlinks, FIFOs, sockets and devices are reported at once as `.other`, never opened or followed.
/// - Ignored names are never reported and never touched; a name that vanishes before it is ready is dropped.
/// - Everything present at start is a candidate after the same checks; a safety rescan every `rescanInterval`
///   and after an inotify queue overflow makes sure nothing is stranded.
/// - With `poll`, no inotify at all: the inbox is scanned every `poll`, and an entry is ready after two equal
///   consecutive scans.
///
/// Each entry is reported once per (name, identity): the watcher expects the consumer to move or delete every
/// candidate, and forgets it when the name disappears or a new entry is created under it. An entry left in place
/// unchanged is not reported again. The inbox deleted or moved ends the stream with `ERR_IO`.
///
/// The watching runs on a dedicated thread (its waits are blocking `poll(2)` calls); it sleeps when nothing is
/// pending except for the safety rescan, and stops when the stream's consumer stops (cancelled or gone). It takes
/// events and judges entries at most once per `coalescing` interval: a burst of drops is handled in batches (one
/// wake-up, one listing of what is due and one hand-over to the ingester for many entries) rather than one wake-up
/// per event and per deadline; a lone drop is judged exactly when its settle window ends.
package struct InboxWatcher: Sendable {
    /// The inbox directory (a symlink to a directory is resolved once, at start).
    var inbox: String
    /// The quiet window after the last event before an entry is judged.
    var settle: Duration
    /// The scan interval in polling mode; nil to use inotify.
    var poll: Duration?
    /// How often, with inotify, the whole inbox is listed again in case an event was missed.
    var rescanInterval: Duration
    /// The names to leave alone.
    var ignore: IgnoreRules
    /// The time that settle windows, scan intervals and rescans are measured in.
    var clock: any SharepipeClock

    /// The shortest time between two rounds of the watching loop (reading events, judging what is due): entries are
    /// judged at most this long after their settle window ends, and only when another round came just before.
    static let coalescing: UInt64 = 2_000_000

    /// The error that ends the stream when the inbox itself goes away.
    package static let inboxGone = ShareError(.io, "inbox was deleted or moved")

    package init(
        inbox: String, settle: Duration = .milliseconds(250), poll: Duration? = nil,
        rescanInterval: Duration = .seconds(60), ignore: IgnoreRules = .default,
        clock: any SharepipeClock = SystemClock()
    ) {
        self.inbox = inbox
        self.settle = settle
        self.poll = poll
        self.rescanInterval = rescanInterval
        self.ignore = ignore
        self.clock = clock
    }

    /// Starts watching and returns the ready entries as they come. The stream's buffer is unbounded, so a consumer
    /// that falls behind loses nothing. It finishes with an error when the inbox cannot be watched or goes away;
    /// stopping its consumer stops the watching.
    /// `scanned` runs once, on the watching thread, when the first full listing of the inbox is done and its
    /// candidates are in the stream (the daemon reports READY then).
    package func candidates(scanned: @escaping @Sendable () -> Void = {}) -> AsyncThrowingStream<InboxCandidate,
    Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: InboxCandidate.self, throwing: Error.self, bufferingPolicy: .unbounded)
        do {
            let wake = try WakeSignal()
            continuation.onTermination = { _ in wake.signal() }
            let watcher = self
            Lane.detached("sp-inotify") {
                do {
                    try watcher.watch(until: wake, scanned: scanned) { ready in
                        for candidate in ready { continuation.yield(candidate) }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
        } catch {
            continuation.finish(throwing: error)
        }
        return stream
    }

    /// The watching loop; returns when `wake` is signalled.
    private func watch(until wake: WakeSignal, scanned: () -> Void, yield: ([InboxCandidate]) -> Void) throws {
        let inbox = try System.resolvedPath(self.inbox)
        if let poll {
            var poller = InboxPoller(inbox: inbox, ignore: ignore)
            yield(try poller.scan())
            scanned()
            while try !clock.waitReadable(
                [wake.pollDescriptor], until: clock.monotonicNanoseconds() + poll.nanoseconds)[0]
            {
                yield(try poller.scan())
            }
            return
        }

        let rescanInterval = self.rescanInterval.nanoseconds
        var tracker = try InboxTracker(
            inbox: inbox, settle: settle.nanoseconds, patience: rescanInterval, ignore: ignore)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var now = clock.monotonicNanoseconds()
        yield(try tracker.rescan(now: now, overflow: false))
        scanned()
        var nextRescan = now + rescanInterval
        var lastRound: UInt64 = 0
        while true {
            // A round came a moment ago: the next one waits, so that what arrives meanwhile is taken with it. Real
            // time, not `clock`'s: this batches work, it decides nothing.
            let sinceLastRound = System.monotonicNanoseconds() - lastRound
            if sinceLastRound < Self.coalescing,
                try System.waitReadable([wake.pollDescriptor], timeout: Self.coalescing - sinceLastRound)[0]
            {
                return
            }
            let deadline = min(tracker.nextDeadline ?? nextRescan, nextRescan)
            let ready = try clock.waitReadable(
                [wake.pollDescriptor, tracker.inotify.pollDescriptor], until: deadline)
            lastRound = System.monotonicNanoseconds()
            if ready[0] { return }
            if ready[1] {
                let events = try tracker.inotify.readAvailable(into: &buffer)
                yield(try tracker.handle(events, now: clock.monotonicNanoseconds()))
            }
            now = clock.monotonicNanoseconds()
            if now >= nextRescan {
                yield(try tracker.rescan(now: now, overflow: false))
                nextRescan = now + rescanInterval
            }
            yield(tracker.judgeDue(now: now))
        }
    }

    /// The names in the inbox; the inbox gone is `inboxGone`.
    static func listInbox(_ inbox: String) throws -> [String] {
        do {
            return try System.listDirectory(inbox, repairingNames: true)
        } catch let error as ShareError where error.errno == Errno.noEntry || error.errno == Errno.notDirectory {
            throw inboxGone
        }
    }
}

private extension Duration {
    /// The duration in whole nanoseconds: 0 for a negative one, saturating for an enormous one.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? UInt64.max / 2 : whole + UInt64(max(attoseconds, 0) / 1_000_000_000)
    }
}
