import Foundation
import Glibc
import Synchronization
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// Serialized (nested suites included): the flood tests must not share the machine with the others.
///
/// The watchers run on a manual clock: a settle window passes when the test moves the clock on (`step`), and
/// "nothing more is reported" is shown by a barrier (a symlink, reported at once, after which every earlier event is handled and
/// every earlier candidate delivered), never by sleeping.
@Suite(.serialized) struct InboxWatcherTests {
    @Test(.timeLimit(.minutes(5))) func droppedFileIsReportedOnceAfterTheSettleWindow() async throws {
        try await withInbox { inbox in
            let clock = ManualClock()
            try await watching(InboxWatcher(inbox: inbox, settle: .milliseconds(100), clock: clock)) { log in
                try await log.waitUntilStarted(inbox)
                try writeFile(inbox + "/photo.jpg", jpegBytes)
                try await log.barrier(inbox)
                try await step(clock, by: .milliseconds(99))
                try await log.barrier(inbox)
                #expect(log.names.isEmpty)
                try await step(clock, by: .milliseconds(1))
                #expect(await log.wait { $0.contains { $0.candidate.name == "photo.jpg" } })
                try await step(clock, by: .seconds(1))
                try await log.barrier(inbox)
                let arrivals = log.arrivals.filter { $0.candidate.name == "photo.jpg" }
                #expect(arrivals.count == 1)
                let arrival = try #require(arrivals.first)
                #expect(arrival.candidate.kind == .file)
                #expect(arrival.candidate.status.size == Int64(jpegBytes.count))
            }
        }
    }

    @Test(.timeLimit(.minutes(5))) func burstyAppendingWriterIsReportedOnceWhole() async throws {
        try await withInbox { inbox in
            let clock = ManualClock()
            try await watching(InboxWatcher(inbox: inbox, settle: .milliseconds(150), clock: clock)) { log in
                try await log.waitUntilStarted(inbox)
                let burst = [UInt8](repeating: 0x61, count: 4096)
                for index in 0..<3 {
                    // Each pause is shorter than the settle window: the window starts over after every burst.
                    if index > 0 { try await step(clock, by: .milliseconds(100)) }
                    let file = try FileDescriptor.open(
                        inbox + "/upload.bin", flags: O_WRONLY | O_CREAT | O_APPEND, mode: 0o644)
                    try file.writeAll(burst)
                    _ = consume file
                    try await log.barrier(inbox)
                }
                try await step(clock, by: .milliseconds(149))
                try await log.barrier(inbox)
                #expect(log.names.isEmpty)
                try await step(clock, by: .milliseconds(1))
                #expect(await log.wait { $0.contains { $0.candidate.name == "upload.bin" } })
                try await step(clock, by: .seconds(1))
                try await log.barrier(inbox)
                let arrivals = log.arrivals.filter { $0.candidate.name == "upload.bin" }
                #expect(arrivals.count == 1)
                let arrival = try #require(arrivals.first)
                #expect(arrival.candidate.status.size == 3 * 4096)
            }
        }
    }

    @Test(.timeLimit(.minutes(5))) func folderFilledInPlaceIsOneCandidateOnceItsTreeIsQuiet() async throws {
        try await withInbox { inbox in
            let clock = ManualClock()
            try await watching(InboxWatcher(inbox: inbox, settle: .milliseconds(300), clock: clock)) { log in
                try await log.waitUntilStarted(inbox)
                let album = inbox + "/Album"
                let steps: [(String, Bool)] = [
                    ("", true), ("cover.jpg", false), ("2024", true), ("2024/a.jpg", false),
                    ("2024/summer", true), ("2024/summer/b.jpg", false), ("2024/summer/deep", true),
                    ("2024/summer/deep/c.png", false),
                ]
                for (index, (path, isDirectory)) in steps.enumerated() {
                    if index > 0 { try await step(clock, by: .milliseconds(40)) }
                    let full = path.isEmpty ? album : album + "/" + path
                    if isDirectory {
                        try makeDirectory(full)
                    } else {
                        try writeFile(full, path.hasSuffix(".png") ? pngBytes : jpegBytes)
                    }
                    try await log.barrier(inbox)
                }
                try await step(clock, by: .milliseconds(299))
                try await log.barrier(inbox)
                #expect(log.names.isEmpty)
                // The snapshot taken when the folder appeared was of an empty folder: one more window.
                try await step(clock, by: .milliseconds(1))
                try await log.barrier(inbox)
                #expect(log.names.isEmpty)
                try await step(clock, by: .milliseconds(300))
                #expect(await log.wait { $0.contains { $0.candidate.name == "Album" } })
                try await step(clock, by: .seconds(1))
                try await log.barrier(inbox)
                #expect(log.names == ["Album"])
                #expect(log.kinds["Album"] == .folder)
            }
        }
    }

    @Test(.timeLimit(.minutes(5))) func filesAndFoldersMovedInAreReported() async throws {
        try await withTemporaryDirectory { dir in
            let inbox = dir + "/inbox"
            let outside = dir + "/outside"
            try makeDirectory(inbox)
            try makeDirectory(outside + "/Trip/day1")
            try writeFile(outside + "/report.pdf", "%PDF-1.4 report")
            try writeFile(outside + "/Trip/day1/a.jpg", jpegBytes)
            let clock = ManualClock()
            try await watching(InboxWatcher(inbox: inbox, settle: .milliseconds(100), clock: clock)) { log in
                try await log.waitUntilStarted(inbox)
                try System.rename(outside + "/report.pdf", to: inbox + "/report.pdf")
                try System.rename(outside + "/Trip", to: inbox + "/Trip")
                try await log.barrier(inbox)
                try await step(clock, by: .milliseconds(100))
                #expect(await log.wait { Set($0.map(\.candidate.name)).isSuperset(of: ["report.pdf", "Trip"]) })
                let kinds = log.kinds
                #expect(kinds["report.pdf"] == .file)
                #expect(kinds["Trip"] == .folder)
                try await step(clock, by: .seconds(1))
                try await log.barrier(inbox)
                #expect(log.names == ["Trip", "report.pdf"])
            }
        }
    }

    @Test(.timeLimit(.minutes(5))) func ignoredNamesAreNeverReported() async throws {
        try await withInbox { inbox in
            let clock = ManualClock()
            try await watching(InboxWatcher(inbox: inbox, settle: .milliseconds(100), clock: clock)) { log in
                try await log.waitUntilStarted(inbox)
                for name in [".hidden", "movie.part", "notes.tmp", "setup.crdownload", "~$report.docx", "Thumbs.db",
                    "desktop.ini"]
                {
                    try writeFile(inbox + "/" + name, "ignored")
                }
                for folder in ["@eaDir", "__MACOSX", ".rejected"] {
                    try makeDirectory(inbox + "/" + folder)
                    try writeFile(inbox + "/" + folder + "/inside.txt", "ignored")
                }
                try writeFile(inbox + "/keep.txt", "kept")
                try await log.barrier(inbox)
                try await step(clock, by: .milliseconds(100))
                #expect(await log.wait { $0.contains { $0.candidate.name == "keep.txt" } })
                try await step(clock, by: .seconds(1))
                try await log.barrier(inbox)
                #expect(log.names == ["keep.txt"])
                #expect(FileManager.default.fileExists(atPath: inbox + "/movie.part"))
            }
        }
    }

    @Test func ignoreRulesMatchWholeNamesWithShellGlobs() {
        let rules = IgnoreRules.default
        for name in [".DS_Store", ".rejected", "a.part", "b.tmp", "c.crdownload", "~$d.docx", "Thumbs.db",
            "desktop.ini", "@eaDir", "__MACOSX"]
        {
            #expect(rules.ignores(name), "\(name)")
        }
        for name in ["photo.jpg", "part", "tmp.txt", "Thumbs.db.jpg", "my desktop.ini.txt", "a~$b"] {
            #expect(!rules.ignores(name), "\(name)")
        }
        let custom = IgnoreRules(globs: ["*.log", "draft-?"])
        #expect(custom.ignores("server.log"))
        #expect(custom.ignores("draft-1"))
        #expect(!custom.ignores("draft-12"))
        #expect(!custom.ignores(".hidden"))
    }

    @Test(.timeLimit(.minutes(5))) func symlinksAndFifosAreReportedPromptlyAsOther() async throws {
        try await withInbox { inbox in
            // Time stands still: these are reported without any settle window passing.
            let clock = ManualClock()
            try await watching(InboxWatcher(inbox: inbox, settle: .seconds(20), clock: clock)) { log in
                try await log.waitUntilStarted(inbox)
                #expect(symlink("/etc/passwd", inbox + "/secret.jpg") == 0)
                #expect(mkfifo(inbox + "/pipe", 0o600) == 0)
                #expect(await log.wait { $0.count >= 3 })
                let kinds = log.kinds
                #expect(kinds["secret.jpg"] == .other(.symlink))
                #expect(kinds["pipe"] == .other(.fifo))
                #expect(log.names == ["pipe", "secret.jpg"])
            }
        }
    }

    @Test(.timeLimit(.minutes(5))) func pollingModeAloneReportsEverything() async throws {
        try await withInbox { inbox in
            try writeFile(inbox + "/before.txt", "already here")
            let clock = ManualClock()
            let poll = Duration.milliseconds(100)
            let watcher = InboxWatcher(inbox: inbox, settle: .milliseconds(100), poll: poll, clock: clock)
            try await watching(watcher) { log in
                // One scan per poll interval; an entry is ready on the second scan that sees it unchanged.
                func scan() async throws {
                    #expect(try await eventually { clock.blockedThreads > 0 })
                    clock.advance(by: poll)
                }
                try await scan()
                #expect(await log.wait { $0.contains { $0.candidate.name == "before.txt" } })
                try writeFile(inbox + "/after.txt", "dropped")
                try makeDirectory(inbox + "/Scans/2024")
                try writeFile(inbox + "/Scans/2024/page1.png", pngBytes)
                #expect(symlink("/etc/passwd", inbox + "/link") == 0)
                try await scan()
                #expect(await log.wait { $0.contains { $0.candidate.name == "link" } })
                #expect(log.names == ["before.txt", "link"])
                try await scan()
                #expect(await log.wait { $0.count >= 4 })
                // A barrier for polling: a symlink, reported by the next scan.
                #expect(symlink("nowhere", inbox + "/" + barrierPrefix + "poll") == 0)
                try await scan()
                #expect(await log.wait { $0.contains { $0.candidate.name == barrierPrefix + "poll" } })
                #expect(log.names == ["Scans", "after.txt", "before.txt", "link"])
                let kinds = log.kinds
                #expect(kinds["Scans"] == .folder)
                #expect(kinds["link"] == .other(.symlink))
            }
        }
    }

    @Test(.timeLimit(.minutes(5))) func initialScanReportsWhatIsAlreadyThere() async throws {
        try await withInbox { inbox in
            try writeFile(inbox + "/one.jpg", jpegBytes)
            try writeFile(inbox + "/two.png", pngBytes)
            try makeDirectory(inbox + "/Folder/sub")
            try writeFile(inbox + "/Folder/sub/three.txt", "three")
            try writeFile(inbox + "/.hidden", "ignored")
            let clock = ManualClock()
            try await watching(InboxWatcher(inbox: inbox, settle: .milliseconds(100), clock: clock)) { log in
                try await log.waitUntilStarted(inbox)
                #expect(log.names.isEmpty)
                try await step(clock, by: .milliseconds(100))
                #expect(await log.wait { $0.count >= 4 })
                try await step(clock, by: .seconds(1))
                try await log.barrier(inbox)
                #expect(log.names == ["Folder", "one.jpg", "two.png"])
            }
        }
    }

    @Test(.timeLimit(.minutes(5))) func anEntryIsReportedAgainOnlyAfterItWasReplaced() async throws {
        try await withInbox { inbox in
            let clock = ManualClock()
            try await watching(InboxWatcher(inbox: inbox, settle: .milliseconds(100), clock: clock)) { log in
                try await log.waitUntilStarted(inbox)
                try writeFile(inbox + "/doc.txt", "first")
                try await log.barrier(inbox)
                try await step(clock, by: .milliseconds(100))
                #expect(await log.wait { $0.count(where: { $0.candidate.name == "doc.txt" }) == 1 })
                // The consumer takes it away; a new file under the same name is a new candidate.
                try System.unlink(inbox + "/doc.txt")
                try writeFile(inbox + "/doc.txt", "second version")
                try await log.barrier(inbox)
                try await step(clock, by: .milliseconds(100))
                #expect(await log.wait { $0.count(where: { $0.candidate.name == "doc.txt" }) == 2 })
                // Vanishing before it is ready: dropped quietly.
                try writeFile(inbox + "/brief.txt", "gone soon")
                try System.unlink(inbox + "/brief.txt")
                try await log.barrier(inbox)
                try await step(clock, by: .seconds(1))
                try await log.barrier(inbox)
                let doc = log.arrivals.filter { $0.candidate.name == "doc.txt" }
                #expect(doc.map(\.candidate.status.size) == [5, 14])
                #expect(!log.names.contains("brief.txt"))
            }
        }
    }

    @Test(.timeLimit(.minutes(5)), arguments: [false, true])
    func deletingTheInboxEndsTheStreamWithAnError(polling: Bool) async throws {
        try await withInbox { inbox in
            let watcher = InboxWatcher(
                inbox: inbox, settle: .milliseconds(100), poll: polling ? .milliseconds(100) : nil)
            try await watching(watcher) { log in
                try await log.waitUntilStarted(inbox)
                try FileManager.default.removeItem(atPath: inbox)
                #expect(await log.wait { _ in log.ending != nil })
                let error = try #require(log.ending?.failure as? ShareError)
                #expect(error.code == .io)
                #expect(error.message == "inbox was deleted or moved")
            }
        }
    }

    @Test(.timeLimit(.minutes(5))) func movingTheInboxAwayEndsTheStreamWithAnError() async throws {
        try await withInbox { inbox in
            try await watching(InboxWatcher(inbox: inbox, settle: .milliseconds(100))) { log in
                try await log.waitUntilStarted(inbox)
                try System.rename(inbox, to: inbox + "-moved")
                defer { try? FileManager.default.removeItem(atPath: inbox + "-moved") }
                #expect(await log.wait { _ in log.ending != nil })
                #expect((log.ending?.failure as? ShareError)?.message == "inbox was deleted or moved")
            }
        }
    }

    @Test(.timeLimit(.minutes(5))) func stoppingTheConsumerStopsTheWatching() async throws {
        try await withInbox { inbox in
            let inode = try System.lstat(inbox).inode
            try await watching(InboxWatcher(inbox: inbox, settle: .milliseconds(100))) { log in
                try await log.waitUntilStarted(inbox)
                #expect(try inotifyWatches(onInode: inode) == 1)
            }
            // The consumer is gone: the thread wakes, returns and closes its inotify descriptor.
            #expect(try await inotifyWatchesDrop(onInode: inode))
            // Same when the stream is dropped without being read to the end.
            do {
                let stream = InboxWatcher(inbox: inbox, settle: .milliseconds(100)).candidates()
                var iterator = stream.makeAsyncIterator()
                // The start marker, found by the initial scan, proves the watching has begun.
                #expect(try await iterator.next()?.name == startedMarker)
                #expect(try inotifyWatches(onInode: inode) == 1)
            }
            #expect(try await inotifyWatchesDrop(onInode: inode))
        }
    }

    @Test(.timeLimit(.minutes(5))) func floodLargerThanTheInotifyQueueLosesNothing() async throws {
        let count = max(20_000, try inotifyQueueLimit() + 2_000)
        try await withInbox { inbox in
            let stream = InboxWatcher(inbox: inbox, settle: .milliseconds(100)).candidates()
            var iterator = stream.makeAsyncIterator()
            try writeFile(inbox + "/marker", "")
            #expect(try await iterator.next()?.name == "marker")
            // Nobody reads the stream while the files are created.
            for index in 0..<count {
                try createEmptyFile(inbox + "/file-\(index)")
            }
            var seen: [String: Int] = [:]
            while seen.count < count, let candidate = try await iterator.next() {
                seen[candidate.name, default: 0] += 1
            }
            // A late duplicate would come before a file dropped after everything else.
            try writeFile(inbox + "/zz-last", "")
            while let candidate = try await iterator.next(), candidate.name != "zz-last" {
                seen[candidate.name, default: 0] += 1
            }
            #expect(seen.count == count)
            #expect(seen.values.allSatisfy { $0 == 1 })
        }
    }
}

extension InboxWatcherTests {
    /// The inotify rules driven by hand: time is passed in, events are read when the test says so.
    @Suite struct Tracker {
        let settle: UInt64 = 100_000_000
        let patience: UInt64 = 60_000_000_000

        @Test(.timeLimit(.minutes(5))) func kernelQueueOverflowRescansAndLosesNothing() throws {
            let count = max(20_000, try inotifyQueueLimit() + 2_000)
            try withInboxSync { inbox in
                var tracker = try InboxTracker(inbox: inbox, settle: settle, patience: patience, ignore: .default)
                #expect(try tracker.rescan(now: 0, overflow: false).isEmpty)
                // Nobody reads the inotify descriptor while the files are created, so the kernel queue overflows.
                for index in 0..<count {
                    try createEmptyFile(inbox + "/file-\(index)")
                }
                var buffer = [UInt8](repeating: 0, count: 64 << 10)
                var events: [InotifyEvent] = []
                while case let batch = try tracker.inotify.readAvailable(into: &buffer), !batch.isEmpty {
                    events += batch
                }
                #expect(events.contains { $0.has(.queueOverflow) })
                #expect(try tracker.handle(events, now: 1).isEmpty)
                #expect(tracker.judgeDue(now: settle).isEmpty)
                let ready = tracker.judgeDue(now: 1 + settle)
                #expect(ready.count == count)
                #expect(Set(ready.map(\.name)) == Set((0..<count).map { "file-\($0)" }))
                #expect(tracker.nextDeadline == nil)
            }
        }

        @Test func fileHeldOpenForWritingWaitsForCloseOrPatience() throws {
            try withInboxSync { inbox in
                var tracker = try InboxTracker(inbox: inbox, settle: settle, patience: patience, ignore: .default)
                _ = try tracker.rescan(now: 0, overflow: false)
                var buffer = [UInt8](repeating: 0, count: 64 << 10)
                let file = try FileDescriptor.open(inbox + "/slow.bin", flags: O_WRONLY | O_CREAT, mode: 0o644)
                try file.writeAll([1, 2, 3])
                #expect(try tracker.handle(tracker.inotify.readAvailable(into: &buffer), now: 0).isEmpty)
                // Quiet for the settle window, but the writer still has it open.
                #expect(tracker.judgeDue(now: settle).isEmpty)
                #expect(tracker.nextDeadline == patience)
                let ready = tracker.judgeDue(now: patience)
                #expect(ready.map(\.name) == ["slow.bin"])
                #expect(ready.first?.status.size == 3)
                #expect(tracker.nextDeadline == nil)
            }
        }

        @Test func folderIsJudgedOnTwoEqualSnapshotsAndASymlinkInsideDoesNotHoldItBack() throws {
            try withInboxSync { inbox in
                var tracker = try InboxTracker(inbox: inbox, settle: settle, patience: patience, ignore: .default)
                _ = try tracker.rescan(now: 0, overflow: false)
                var buffer = [UInt8](repeating: 0, count: 64 << 10)
                try makeDirectory(inbox + "/Album")
                #expect(try tracker.handle(tracker.inotify.readAvailable(into: &buffer), now: 0).isEmpty)
                try writeFile(inbox + "/Album/a.jpg", jpegBytes)
                #expect(symlink("/etc/passwd", inbox + "/Album/link") == 0)
                let events = try readUntilClosed("a.jpg", tracker.inotify, &buffer)
                #expect(events.contains { $0.name == "link" })
                #expect(try tracker.handle(events, now: 10).isEmpty)
                // The snapshot taken when the folder appeared was of an empty folder: one more window.
                #expect(tracker.judgeDue(now: 10 + settle).isEmpty)
                #expect(tracker.nextDeadline == 10 + 2 * settle)
                let ready = tracker.judgeDue(now: 10 + 2 * settle)
                #expect(ready.map(\.name) == ["Album"])
                #expect(ready.first?.kind == .folder)
            }
        }

        @Test func closingTheFileEndsTheWait() throws {
            try withInboxSync { inbox in
                var tracker = try InboxTracker(inbox: inbox, settle: settle, patience: patience, ignore: .default)
                _ = try tracker.rescan(now: 0, overflow: false)
                var buffer = [UInt8](repeating: 0, count: 64 << 10)
                do {
                    let file = try FileDescriptor.open(inbox + "/done.bin", flags: O_WRONLY | O_CREAT, mode: 0o644)
                    try file.writeAll([1, 2, 3, 4])
                }
                #expect(try tracker.handle(readUntilClosed("done.bin", tracker.inotify, &buffer), now: 0).isEmpty)
                #expect(tracker.judgeDue(now: settle - 1).isEmpty)
                #expect(tracker.judgeDue(now: settle).map(\.name) == ["done.bin"])
            }
        }
    }
}

/// Every event queued, read until the one that reports `name`'s last close (within 30 s). A test that forks a
/// process elsewhere in this process while the file is open lends the child the descriptor: the kernel reports
/// the close only once the child lets it go (at its exec), which may be after the writer's own `close` returned.
private func readUntilClosed(_ name: String, _ inotify: borrowing Inotify, _ buffer: inout [UInt8]) throws -> [InotifyEvent] {
    let deadline = ContinuousClock.now + .seconds(30)
    var events = try inotify.readAvailable(into: &buffer)
    while !events.contains(where: { $0.name == name && $0.has(.closeWrite) }) && ContinuousClock.now < deadline {
        Thread.sleep(forTimeInterval: 0.005)
        events += try inotify.readAvailable(into: &buffer)
    }
    return events
}

/// Moves the clock on and waits until the watcher's thread has acted on the new time and waits again.
private func step(_ clock: ManualClock, by duration: Duration) async throws {
    clock.advance(by: duration)
    #expect(try await eventually { clock.blockedThreads > 0 })
}

/// Creates a directory and its missing parents.
private func makeDirectory(_ path: String) throws {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
}

/// Creates an empty file the fastest way: open, close.
private func createEmptyFile(_ path: String) throws {
    _ = try FileDescriptor.open(path, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
}

/// How many inotify watches this process holds on the inode, from /proc/self/fdinfo.
private func inotifyWatches(onInode inode: UInt64) throws -> Int {
    let target = "ino:" + String(inode, radix: 16) + " "
    var count = 0
    for descriptor in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
        let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + descriptor)
        guard link == "anon_inode:inotify",
            let info = try? String(contentsOfFile: "/proc/self/fdinfo/" + descriptor, encoding: .utf8)
        else { continue }
        count += info.split(separator: "\n").count { $0.hasPrefix("inotify ") && $0.contains(target) }
    }
    return count
}

/// Waits for this process to hold no inotify watch on the inode.
private func inotifyWatchesDrop(onInode inode: UInt64) async throws -> Bool {
    try await eventually { try inotifyWatches(onInode: inode) == 0 }
}

/// The kernel's inotify queue length (`fs.inotify.max_queued_events`).
private func inotifyQueueLimit() throws -> Int {
    let text = try String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8)
    return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 16_384
}

/// A fresh, empty inbox directory for one test.
private func withInbox(_ body: (String) async throws -> Void) async throws {
    try await withTemporaryDirectory { dir in
        let inbox = dir + "/inbox"
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: false)
        try await body(inbox)
    }
}

/// `withInbox` for tests that never wait.
private func withInboxSync(_ body: (String) throws -> Void) throws {
    let dir = FileManager.default.temporaryDirectory.path + "/sharepipe-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try body(dir)
}

/// Runs `body` while a background task consumes the watcher's candidates into a log; stops the watcher after.
private func watching(_ watcher: InboxWatcher, _ body: (CandidateLog) async throws -> Void) async throws {
    let log = CandidateLog()
    let stream = watcher.candidates()
    let consumer = Task { await log.consume(stream) }
    do {
        try await body(log)
    } catch {
        consumer.cancel()
        await consumer.value
        throw error
    }
    consumer.cancel()
    await consumer.value
}

/// What a watcher's stream delivered.
private final class CandidateLog: Sendable {
    struct Arrival: Sendable {
        var candidate: InboxCandidate
    }

    private struct State {
        var arrivals: [Arrival] = []
        var ending: Result<Void, any Error>?
        var barriers = 0
    }

    private let state = Mutex(State())

    var arrivals: [Arrival] { state.withLock { $0.arrivals } }
    /// The kind of each reported name (the first report when there were several).
    var kinds: [String: InboxCandidate.Kind] {
        Dictionary(arrivals.map { ($0.candidate.name, $0.candidate.kind) }) { first, _ in first }
    }
    /// The reported names, sorted, without the start marker and the barriers.
    var names: [String] {
        arrivals.map(\.candidate.name).filter { $0 != startedMarker && !$0.hasPrefix(barrierPrefix) }.sorted()
    }
    /// How the stream ended, once it has.
    var ending: Result<Void, any Error>? { state.withLock { $0.ending } }

    func consume(_ stream: AsyncThrowingStream<InboxCandidate, Error>) async {
        do {
            for try await candidate in stream {
                let arrival = Arrival(candidate: candidate)
                state.withLock { $0.arrivals.append(arrival) }
            }
            state.withLock { $0.ending = .success(()) }
        } catch {
            state.withLock { $0.ending = .failure(error) }
        }
    }

    /// Waits until `condition` holds for the arrivals so far, or `timeout` passes; returns whether it holds.
    func wait(for timeout: Duration = .seconds(120), until condition: ([Arrival]) -> Bool) async -> Bool {
        (try? await eventually(timeout) { condition(arrivals) }) ?? false
    }

    /// Drops a dangling symlink (reported at once, whatever the settle window) and waits for it, so that the
    /// watcher is surely running.
    func waitUntilStarted(_ inbox: String) async throws {
        try FileManager.default.createSymbolicLink(atPath: inbox + "/" + startedMarker, withDestinationPath: "nowhere")
        #expect(await wait { $0.contains { $0.candidate.name == startedMarker } })
    }

    /// Drops a dangling symlink (reported as soon as its event is read, whatever the clock) and waits for it: every
    /// event before it has been handled, and every candidate reported before it is in the log.
    func barrier(_ inbox: String) async throws {
        let number = state.withLock { state in
            state.barriers += 1
            return state.barriers
        }
        let name = barrierPrefix + String(number)
        try FileManager.default.createSymbolicLink(atPath: inbox + "/" + name, withDestinationPath: "nowhere")
        #expect(await wait { $0.contains { $0.candidate.name == name } })
    }
}

/// The name of the start marker that `waitUntilStarted` drops.
private let startedMarker = "started"

/// How the names of the barriers that `barrier` drops begin.
private let barrierPrefix = "barrier-"

extension Result {
    /// The error of a failure, nil for a success.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
