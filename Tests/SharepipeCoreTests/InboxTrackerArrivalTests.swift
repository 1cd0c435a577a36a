import Foundation
import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// Every way a file arrives is seen promptly: an entry that appeared without being opened (a hard link, `cp -l`, a
/// download tool linking a finished file into a watched folder) is ready after the settle window, while a file
/// someone holds open waits for its close. Time is passed in by hand; events are read when the test says so.
@Suite struct InboxTrackerArrivalTests {
    let settle: UInt64 = 100_000_000
    let patience: UInt64 = 60_000_000_000

    /// A directory holding `inbox/` and room beside it on the same file system (hard links cannot cross one).
    func withDirectory(_ body: (_ directory: String, _ inbox: String) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.path + "/sharepipe-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/inbox", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try body(directory, directory + "/inbox")
    }

    /// Reads and applies every queued event; returns what came out at once.
    func drain(_ tracker: inout InboxTracker, now: UInt64) throws -> [InboxCandidate] {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var ready: [InboxCandidate] = []
        while case let events = try tracker.inotify.readAvailable(into: &buffer), !events.isEmpty {
            ready += try tracker.handle(events, now: now)
        }
        return ready
    }

    @Test func aHardLinkIsReadyAfterTheSettleWindow() throws {
        try withDirectory { directory, inbox in
            var tracker = try InboxTracker(inbox: inbox, settle: settle, patience: patience, ignore: .default)
            _ = try tracker.rescan(now: 0, overflow: false)
            try writeFile(directory + "/finished.jpg", jpegBytes)
            #expect(link(directory + "/finished.jpg", inbox + "/finished.jpg") == 0)
            #expect(try drain(&tracker, now: 0).isEmpty)
            #expect(tracker.judgeDue(now: settle - 1).isEmpty)
            let ready = tracker.judgeDue(now: settle)
            #expect(ready.map(\.name) == ["finished.jpg"])
            #expect(ready.first?.kind == .file)
            #expect(tracker.nextDeadline == nil)
        }
    }

    @Test func aReaderHoldingTheFileOpenDelaysItUntilItsClose() throws {
        try withDirectory { directory, inbox in
            var tracker = try InboxTracker(inbox: inbox, settle: settle, patience: patience, ignore: .default)
            _ = try tracker.rescan(now: 0, overflow: false)
            try writeFile(directory + "/held.jpg", jpegBytes)
            #expect(link(directory + "/held.jpg", inbox + "/held.jpg") == 0)
            do {
                let reader = try FileDescriptor.open(inbox + "/held.jpg", flags: O_RDONLY)
                #expect(try drain(&tracker, now: 0).isEmpty)
                #expect(tracker.judgeDue(now: settle).isEmpty)
                #expect(tracker.nextDeadline == patience)
                _ = consume reader
            }
            #expect(try drain(&tracker, now: 2 * settle).isEmpty)
            #expect(tracker.judgeDue(now: 3 * settle - 1).isEmpty)
            #expect(tracker.judgeDue(now: 3 * settle).map(\.name) == ["held.jpg"])
        }
    }

    @Test func aWriterStillWritingWaitsForItsClose() throws {
        try withDirectory { _, inbox in
            var tracker = try InboxTracker(inbox: inbox, settle: settle, patience: patience, ignore: .default)
            _ = try tracker.rescan(now: 0, overflow: false)
            let writer = try FileDescriptor.open(inbox + "/slow.bin", flags: O_WRONLY | O_CREAT, mode: 0o644)
            try writer.writeAll([1, 2, 3])
            #expect(try drain(&tracker, now: 0).isEmpty)
            #expect(tracker.judgeDue(now: settle).isEmpty)
            _ = consume writer
            #expect(try drain(&tracker, now: settle + 1).isEmpty)
            #expect(tracker.judgeDue(now: 2 * settle + 1).map(\.name) == ["slow.bin"])
        }
    }

    @Test func browsingAFolderDoesNotRestartItsClock() throws {
        try withDirectory { directory, inbox in
            var tracker = try InboxTracker(inbox: inbox, settle: settle, patience: patience, ignore: .default)
            _ = try tracker.rescan(now: 0, overflow: false)
            try FileManager.default.createDirectory(
                atPath: directory + "/Album/inner", withIntermediateDirectories: true)
            try writeFile(directory + "/Album/inner/a.jpg", jpegBytes)
            #expect(rename(directory + "/Album", inbox + "/Album") == 0)
            #expect(try drain(&tracker, now: 0).isEmpty)
            // A file manager lists the folder and its sub-folder half-way through the window: opening a directory
            // changes nothing in it, so the folder is still ready one settle window after it arrived.
            _ = try System.listDirectory(inbox + "/Album")
            _ = try System.listDirectory(inbox + "/Album/inner")
            #expect(try drain(&tracker, now: settle / 2).isEmpty)
            #expect(tracker.judgeDue(now: settle - 1).isEmpty)
            #expect(tracker.judgeDue(now: settle).map(\.name) == ["Album"])
        }
    }

    @Test func aLateCreateEventDoesNotReportAnEntryTwice() throws {
        try withDirectory { _, inbox in
            var tracker = try InboxTracker(inbox: inbox, settle: settle, patience: patience, ignore: .default)
            _ = try tracker.rescan(now: 0, overflow: false)
            try writeFile(inbox + "/photo.jpg", jpegBytes)
            // The queue overflowed: a rescan finds the file and reports it before its own events are read.
            #expect(try tracker.rescan(now: 0, overflow: true).isEmpty)
            #expect(tracker.judgeDue(now: settle).map(\.name) == ["photo.jpg"])
            #expect(try drain(&tracker, now: settle + 1).isEmpty)
            #expect(tracker.judgeDue(now: 3 * settle).isEmpty)
            #expect(tracker.nextDeadline == nil)
        }
    }
}
