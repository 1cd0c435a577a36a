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

/// The spool engine's orderings, one injected failure or race at a time: what a user finds afterwards in the inbox,
/// the spool and the ledger.
@Suite(.timeLimit(.minutes(5))) struct SpoolEngineTests {
    /// An ingester over `dir/inbox` publishing into `spool`, logging into `lines`.
    func ingester(_ dir: String, _ spool: Spool, lines: LogLines = LogLines()) throws -> InboxIngester {
        try System.makeDirectories(dir + "/inbox")
        return InboxIngester(
            inbox: dir + "/inbox", loader: ShareLoader(spool: spool), ignore: .default, logger: lines.logger,
            metrics: Metrics(), activation: nil)
    }

    func candidate(_ dir: String, _ name: String) throws -> InboxCandidate {
        InboxCandidate(name: name, status: try System.lstat(dir + "/inbox/" + name))
    }

    /// Ingests `name` again right after an earlier attempt on it, as the daemon does: `.busy` (the file's lock still
    /// held a moment, by a process another test is spawning: a fork copies the descriptor until its exec) is tried
    /// again, for up to 5 s.
    func ingestAgain(_ ingester: InboxIngester, _ dir: String, _ name: String) async throws -> InboxIngester.Outcome {
        var outcome = await ingester.ingest(try candidate(dir, name))
        var tries = 1
        while case .busy = outcome, tries < 50 {
            try await Task.sleep(for: .milliseconds(100))
            outcome = await ingester.ingest(try candidate(dir, name))
            tries += 1
        }
        return outcome
    }

    func copies(_ spool: Spool) throws -> [String] {
        try spool.shareIDs(in: .incoming).map { shareID in
            let manifest = try spool.manifest(.incoming, shareID)
            let file = try #require(manifest.attachments.first?.file)
            return String(decoding: try System.readFile(spool.path(.incoming, shareID) + "/" + file), as: UTF8.self)
        }
    }

    @Test(arguments: ["publish.barrier", "publish.record-staged", "publish.move-incoming"])
    func aPublishThatFailsAtAStepRollsBackAndKeepsTheSource(step: String) async throws {
        try await withTemporaryDirectory { dir in
            let faults = LifecycleFaults()
            let spool = try Spool(root: dir + "/state", faults: faults)
            let ingester = try ingester(dir, spool)
            try writeFile(dir + "/inbox/note.txt", "kept when publishing fails\n")
            faults.failure.withLock { $0 = step }

            let outcome = await ingester.ingest(try candidate(dir, "note.txt"))
            guard case .deferred(.io, let reason) = outcome else {
                Issue.record("outcome \(outcome)")
                return
            }
            #expect(reason.contains("injected"), "\(reason)")
            #expect(try String(contentsOfFile: dir + "/inbox/note.txt", encoding: .utf8) == "kept when publishing fails\n")
            #expect(try entries(spool, .staging).isEmpty)
            #expect(try entries(spool, .incoming).isEmpty)
            #expect(try spool.ledger.pending().shares == 0)

            faults.failure.withLock { $0 = nil }
            let retried = try await ingestAgain(ingester, dir, "note.txt")
            guard case .published = retried else {
                Issue.record("the source was not published on the next try: \(retried)")
                return
            }
            #expect(try copies(spool) == ["kept when publishing fails\n"])
            #expect(!FileManager.default.fileExists(atPath: dir + "/inbox/note.txt"))
        }
    }

    @Test func aSourceThatFailsToUnlinkKeepsItsRecordForRecovery() async throws {
        try await withTemporaryDirectory { dir in
            let faults = LifecycleFaults()
            let spool = try Spool(root: dir + "/state", faults: faults)
            let ingester = try ingester(dir, spool)
            try writeFile(dir + "/inbox/note.txt", "published, unlink failed\n")
            faults.failure.withLock { $0 = "publish.remove-sources" }
            guard case .published = await ingester.ingest(try candidate(dir, "note.txt")) else {
                Issue.record("not published")
                return
            }
            #expect(FileManager.default.fileExists(atPath: dir + "/inbox/note.txt"))
            // A restart: the source's identity is still recorded staged for a published share, so it goes.
            let restarted = try Spool(root: dir + "/state")
            _ = try restarted.recover(retryingLockedFor: .seconds(1))
            #expect(try InboxRecovery(spool: restarted).recover(dir + "/inbox") == ["note.txt"])
            #expect(try copies(restarted) == ["published, unlink failed\n"])
        }
    }

    @Test func aSourcePublishedByADaemonThatDiedBeforeUnlinkingIsNotIngestedAgain() async throws {
        try await withTemporaryDirectory { dir in
            let faults = LifecycleFaults()
            let spool = try Spool(root: dir + "/state", faults: faults)
            let first = try ingester(dir, spool)
            try writeFile(dir + "/inbox/note.txt", "published once\n")
            // The first daemon publishes and dies before the unlink: its lock is gone, its record still staged.
            faults.failure.withLock { $0 = "publish.remove-sources" }
            guard case .published = await first.ingest(try candidate(dir, "note.txt")) else {
                Issue.record("not published")
                return
            }
            faults.failure.withLock { $0 = nil }
            // A second daemon on the same ledger takes the file: it recognises it and unlinks it.
            let other = try Spool(root: dir + "/state")
            let second = try ingester(dir, other)
            #expect(try await ingestAgain(second, dir, "note.txt") == .vanished)
            #expect(!FileManager.default.fileExists(atPath: dir + "/inbox/note.txt"))
            #expect(try copies(other) == ["published once\n"])
            #expect(try other.ledger.stagedSources().isEmpty)

            // The same bytes dropped again under the same name are a new drop.
            try writeFile(dir + "/inbox/note.txt", "published once\n")
            guard case .published = try await ingestAgain(second, dir, "note.txt") else {
                Issue.record("a new drop with the same content was not ingested")
                return
            }
            #expect(try copies(other) == ["published once\n", "published once\n"])
        }
    }

    @Test func aSourceReplacedByRenameIsNotUnlinkedAndIsIngestedAsItsOwnShare() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ingester = try ingester(dir, spool)
            try writeFile(dir + "/inbox/report.txt", "the file that was judged\n")
            guard case .file(let source) = InboxIngester.open("report.txt", in: try InboxDirectory.open(dir + "/inbox"))
            else {
                Issue.record("the source did not open")
                return
            }
            // Between judgement and copy, a writer renames a new file over the name.
            try writeFile(dir + "/replacement", "the replacement\n")
            #expect(rename(dir + "/replacement", dir + "/inbox/report.txt") == 0)
            let receipt = await ShareLoader(spool: spool).load(
                [InboxFileProvider(source: source, registry: .standard)], sourceApp: nil, origin: nil)
            #expect(receipt.status == .complete)
            #expect(try copies(spool) == ["the file that was judged\n"])
            #expect(try String(contentsOfFile: dir + "/inbox/report.txt", encoding: .utf8) == "the replacement\n")

            guard case .published = await ingester.ingest(try candidate(dir, "report.txt")) else {
                Issue.record("the replacement was not ingested")
                return
            }
            #expect(try copies(spool).sorted() == ["the file that was judged\n", "the replacement\n"])
            #expect(try System.listDirectory(dir + "/inbox").isEmpty)
        }
    }

    @Test func aSourceAppendedToAfterItWasJudgedIsDeferredAndTakenWholeLater() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ingester = try ingester(dir, spool)
            try writeFile(dir + "/inbox/log.txt", "first line\n")
            guard case .file(let source) = InboxIngester.open("log.txt", in: try InboxDirectory.open(dir + "/inbox"))
            else {
                Issue.record("the source did not open")
                return
            }
            let handle = try #require(FileHandle(forWritingAtPath: dir + "/inbox/log.txt"))
            handle.seekToEndOfFile()
            handle.write(Data("second line\n".utf8))
            try handle.close()
            let receipt = await ShareLoader(spool: spool).load(
                [InboxFileProvider(source: source, registry: .standard)], sourceApp: nil, origin: nil)
            #expect(receipt.status == .rejected)
            #expect(receipt.attachments.first?.error?.message == "the file changed while it was copied")
            #expect(try entries(spool, .incoming).isEmpty)
            _ = consume source

            guard case .published = await ingester.ingest(try candidate(dir, "log.txt")) else {
                Issue.record("the whole file was not ingested")
                return
            }
            #expect(try copies(spool) == ["first line\nsecond line\n"])
        }
    }

    @Test func aFileHardLinkedTwiceIsTakenOnceUnderEachNameNeverAtOnce() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ingester = try ingester(dir, spool)
            try writeFile(dir + "/inbox/a.txt", "one inode, two names\n")
            #expect(link(dir + "/inbox/a.txt", dir + "/inbox/b.txt") == 0)
            // While another daemon holds the file's lock, the other name is someone else's work.
            let inbox = try InboxDirectory.open(dir + "/inbox")
            guard case .file(let held) = InboxIngester.open("a.txt", in: inbox) else {
                Issue.record("the source did not open")
                return
            }
            #expect(await ingester.ingest(try candidate(dir, "b.txt")) == .busy)
            #expect(held.status.linkCount == 2)
            _ = consume held

            // Right after the lock was let go, as the daemon would try again (a fork elsewhere may still hold it).
            for name in ["a.txt", "b.txt"] {
                guard case .published = try await ingestAgain(ingester, dir, name) else {
                    Issue.record("\(name) was not ingested")
                    return
                }
            }
            #expect(try copies(spool) == ["one inode, two names\n", "one inode, two names\n"])
            #expect(try System.listDirectory(dir + "/inbox").isEmpty)
        }
    }

    @Test func sharesStagedTogetherArePublishedInOneBatch() async throws {
        try await withTemporaryDirectory { dir in
            let faults = LifecycleFaults()
            let spool = try Spool(root: dir + "/state", faults: faults)
            let loader = ShareLoader(spool: spool)
            // Held, as a batch in progress holds the publisher, while forty shares are staged.
            faults.hold(true)
            let receipts = await withTaskGroup(of: ShareReceipt.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let text = Data("share \(index)\n".utf8)
                        return await loader.load([DataItemProvider(data: text, types: ["public.plain-text"])])
                    }
                }
                #expect((try? await eventually(.seconds(240)) { spool.executor.queuedPublishes == 40 }) == true)
                #expect((try? entries(spool, .incoming))?.isEmpty == true)
                faults.hold(false)
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(receipts.allSatisfy { $0.status == .complete })
            #expect(try entries(spool, .incoming).count == 40)
            #expect(faults.batchesPublished.load(ordering: .relaxed) == 1)
        }
    }

    @Test func transitionsAreGuardedAndViolationsRepairedByRecovery() async throws {
        try await withTemporaryDirectory { dir in
            let lines = LogLines()
            let spool = try Spool(root: dir + "/state", logger: lines.logger)
            let ids = try await publishTextShares(spool, ["one\n", "two\n", "three\n"])
            // A completion for a share nobody claimed changes nothing and says so.
            let refused = try spool.ledger.recordProcessed([(ids[0], 1)])
            #expect(refused == [PreconditionViolation(shareID: ids[0], expected: [.claimed], found: .published)])
            #expect(try spool.ledger.state(ofShare: ids[0]) == .published)

            // Rows that disagree with their directories, as a lost write or a bug would leave them.
            try spool.ledger.repair(shareID: ids[0], to: .claimed)
            try spool.ledger.repair(shareID: ids[1], to: .quarantined)
            try System.removeTree(spool.path(.incoming, ids[2]))
            let report = try spool.recover(retryingLockedFor: .seconds(1))
            #expect(report.repaired == 3)
            #expect(try spool.ledger.state(ofShare: ids[0]) == .published)
            #expect(try spool.ledger.state(ofShare: ids[1]) == .published)
            #expect(try spool.ledger.state(ofShare: ids[2]) == .purged)
            let logged = lines.all.filter { $0.contains("event=ledger.precondition_violated") }
            #expect(logged.count == 3)
            #expect(logged.allSatisfy { $0.contains("code=ERR_IO") && $0.contains("transition=recover.reconcile") })
            // Recovery is idempotent: nothing left to repair.
            #expect(try spool.recover(retryingLockedFor: .seconds(1)).repaired == 0)
        }
    }

    @Test func aRepairThatDidNotApplyIsNotCountedRepaired() async throws {
        try await withTemporaryDirectory { dir in
            let faults = LifecycleFaults()
            let spool = try Spool(root: dir + "/state", faults: faults)
            let ids = try await publishTextShares(spool, ["one\n"])
            try spool.ledger.repair(shareID: ids[0], to: .claimed)
            // The repair's commit fails (as a ledger that is full or gone would): the row stays as it was.
            faults.failure.withLock { $0 = "recover.record-repaired" }
            #expect(try spool.recover(retryingLockedFor: .seconds(1)).repaired == 0)
            #expect(try spool.ledger.state(ofShare: ids[0]) == .claimed)
            faults.failure.withLock { $0 = nil }
            #expect(try spool.recover(retryingLockedFor: .seconds(1)).repaired == 1)
            #expect(try spool.ledger.state(ofShare: ids[0]) == .published)
        }
    }
}

/// Log lines captured from a `Logger`.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])

    var logger: Logger { Logger(level: .debug, sink: { line in self.lines.withLock { $0.append(line) } }) }
    var all: [String] { lines.withLock { $0 } }
}
