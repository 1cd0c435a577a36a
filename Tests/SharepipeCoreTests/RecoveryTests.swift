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

/// Each interruption point of publish, claim, complete, retry, quarantine and requeue, left on disk as kill -9
/// would leave it, then recovered with nothing lost.
@Suite(.timeLimit(.minutes(5))) struct RecoveryTests {
    /// A dropped inbox file and the identity the daemon records for it.
    func dropped(_ path: String, _ text: String) throws -> SourceIdentity {
        try writeFile(path, text)
        let status = try System.lstat(path)
        return SourceIdentity(
            device: status.device, inode: status.inode, size: status.size, modificationTime: status.modificationTime,
            sha256: SHA256.hash(Array(text.utf8)))
    }

    /// Publishes the files as one share and records their identities as the daemon does, leaving the files where
    /// they are: the state a crash between publishing and unlinking the sources leaves.
    func publish(_ spool: Spool, _ paths: [String], sources: [SourceIdentity]) async throws -> String {
        let receipt = await ShareLoader(spool: spool).load(
            paths.map { FileItemProvider(path: $0, types: ["public.plain-text"]) })
        try #require(receipt.status == .complete)
        _ = try spool.store.driver.execute(
            sources.map { source in
                SQLStatement(
                    "INSERT INTO sources (share_id, device, inode, size, mtime, sha256, state) VALUES (?,?,?,?,?,?,?)",
                    [.text(receipt.shareId), .integer(Int64(bitPattern: source.device)),
                     .integer(Int64(bitPattern: source.inode)), .integer(source.size),
                     .integer(source.modificationTime), .text(source.sha256), "staged"])
            },
            durable: true)
        return receipt.shareId
    }

    @Test func publishInterruptedBeforeTheRenameIsRolledBackAndTheSourceKept() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            try System.makeDirectories(dir + "/inbox")
            let source = try dropped(dir + "/inbox/a.txt", "not yet published\n")
            // Crash after publish step 3: copies, manifest and ledger row exist, the rename did not happen.
            let shareID = UUID().uuidString
            try System.makeDirectory(spool.path(.staging, shareID))
            try writeFile(spool.path(.staging, shareID) + "/copy.txt", "not yet published\n")
            let manifest = Manifest(
                shareId: shareID, sourceApp: nil, createdAt: Date().rfc3339, policy: .keepSuccessful,
                attachments: [AttachmentRecord(
                    index: 0, status: .copied, fileId: UUID().uuidString, file: "copy.txt",
                    typeIdentifier: "public.plain-text", declaredTypes: ["public.plain-text"], bytes: 18)])
            try spool.writeManifest(manifest)
            try spool.ledger.recordStaged([StagedRecord(manifest: manifest, sources: [source])])
            // Crash during publish step 1 of another share: a directory without manifest or ledger row.
            try System.makeDirectory(spool.path(.staging, UUID().uuidString))

            let report = try spool.recover(retryingLockedFor: .seconds(1))
            #expect(report.stagingRemoved == 2)
            #expect(try entries(spool, .staging).isEmpty)
            #expect(try entries(spool, .incoming).isEmpty)
            #expect(try spool.ledger.state(ofShare: shareID) == .rejected)
            #expect(try InboxRecovery(spool: spool).recover(dir + "/inbox").isEmpty)
            #expect(FileManager.default.fileExists(atPath: dir + "/inbox/a.txt"))
        }
    }

    @Test func aStagingDirectoryLockedByALiveLoaderIsLeftAlone() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = UUID().uuidString
            try System.makeDirectory(spool.path(.staging, shareID))
            let loader = try FileDescriptor.openDirectory(spool.path(.staging, shareID))
            #expect(try loader.lock(exclusive: true, nonBlocking: true))
            let report = try spool.recover()
            #expect(report.liveClaims == 1)
            #expect(report.stagingRemoved == 0)
            #expect(try entries(spool, .staging) == [shareID])
            loader.close()
            #expect(try spool.recover(retryingLockedFor: .seconds(1)).stagingRemoved == 1)
            #expect(try entries(spool, .staging).isEmpty)
        }
    }

    @Test func sourceOfAPublishedShareIsUnlinkedNotIngestedAgain() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let inbox = dir + "/inbox"
            try System.makeDirectories(inbox + "/album")
            let single = try dropped(inbox + "/single.txt", "published once\n")
            let first = try dropped(inbox + "/album/1.txt", "first of the album\n")
            let second = try dropped(inbox + "/album/2.txt", "second of the album\n")
            let changed = try dropped(inbox + "/changed.txt", "original content\n")
            try writeFile(inbox + "/unrelated.txt", "never shared\n")
            // Publish step 4 done for every share, step 5 (unlink the sources, mark them done) never ran.
            _ = try await publish(spool, [inbox + "/single.txt"], sources: [single])
            _ = try await publish(spool, [inbox + "/album/1.txt", inbox + "/album/2.txt"], sources: [first, second])
            let changedShare = try await publish(spool, [inbox + "/changed.txt"], sources: [changed])
            // Same device, inode, size and mtime as recorded, other content: not the file that was published.
            let handle = try #require(FileHandle(forWritingAtPath: inbox + "/changed.txt"))
            handle.write(Data("ORIGINAL CONTENT\n".utf8))
            try handle.close()
            let recorded = timespec(
                tv_sec: Int(changed.modificationTime / 1_000_000_000),
                tv_nsec: Int(changed.modificationTime % 1_000_000_000))
            var times = [recorded, recorded]
            #expect(utimensat(AT_FDCWD, inbox + "/changed.txt", &times, 0) == 0)
            // The consumer already processed one of them: still recognised as published.
            try spool.ledger.repair(shareID: changedShare, to: .processed)

            _ = try spool.recover(retryingLockedFor: .seconds(1))
            let removed = try InboxRecovery(spool: spool).recover(inbox)
            #expect(removed.sorted() == ["album/1.txt", "album/2.txt", "single.txt"])
            #expect(try System.listDirectory(inbox).sorted() == ["changed.txt", "unrelated.txt"])
            #expect(try spool.ledger.stagedSources().isEmpty)
            #expect(try entries(spool, .incoming).count == 3)
        }
    }

    @Test func claimInterruptedAtEachStepGoesBackToIncoming() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ids = try await publishTextShares(spool, ["renamed only\n", "locked\n"])
            // Crash right after the claim rename: no lock file yet.
            try System.rename(spool.path(.incoming, ids[0]), to: spool.path(.processing, ids[0]))
            // Crash while processing (claim and run start recorded): the lock file exists, the dead process's lock is
            // gone.
            do { #expect(try isStarted(spool.start(mustClaim(spool, ids[1]), maxAttempts: 3))) }

            let report = try spool.recover(retryingLockedFor: .seconds(1))
            #expect(report.returnedToIncoming == 2)
            #expect(try entries(spool, .incoming) == ids.sorted())
            #expect(try entries(spool, .processing).isEmpty)
            // The processor runs only once its start is recorded: only the second share is charged, with a death
            // (not an attempt).
            #expect(try spool.ledger.attempts(ofShare: ids[0]) == 0)
            #expect(try spool.ledger.attempts(ofShare: ids[1]) == 0)
            #expect(try spool.ledger.state(ofShare: ids[0]) == .published)
            #expect(try spool.ledger.state(ofShare: ids[1]) == .published)
            #expect(try spool.store.events(.crashed, shareID: ids[1]).count == 1)
            #expect(try spool.store.events(.recovered, shareID: ids[1]).isEmpty)
            let log = CallLog()
            let summary = try await Consumer(
                spool: spool, processor: ClosureProcessor { log.record($0.shareId) }, configuration: fastConfiguration()
            ).drain()
            #expect(summary.processed == 2)
            #expect(log.counts == [ids[0]: 1, ids[1]: 1])
        }
    }

    @Test func aLiveClaimIsNeverStolen() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try #require(try await publishTextShares(spool, ["busy\n"]).first)
            let claim = try mustClaim(spool, shareID)
            // Another process starting up: its own spool and ledger connection.
            let other = try Spool(root: dir + "/state")
            let report = try other.recover()
            #expect(report.liveClaims == 1)
            #expect(try entries(spool, .processing) == [shareID])
            spool.complete(claim, durationMilliseconds: 1)
            try await spool.executor.waitUntilIdle()
            #expect(try entries(spool, .processing).isEmpty)
            #expect(try entries(spool, .incoming).isEmpty)
        }
    }

    /// The periodic sweep of another daemon runs while claims are made: it must never find a claim between its
    /// move into `processing` and its lock (the claim locks in `incoming`, before the move).
    @Test func aSweepRacingClaimersNeverReturnsALiveClaim() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ids = try await publishTextShares(spool, (0..<300).map { "share \($0)\n" })
            let other = try Spool(root: dir + "/state")
            let stop = Atomic<Bool>(false)
            let returned = Atomic<Int>(0)
            let sweeping = Thread {
                while !stop.load(ordering: .relaxed) {
                    if let report = try? other.recover() {
                        returned.add(report.returnedToIncoming, ordering: .relaxed)
                    }
                }
            }
            sweeping.start()
            var claims: [ShareClaim] = []
            for shareID in ids {
                if let claim = try spool.claim(shareID) { claims.append(claim) }
            }
            stop.store(true, ordering: .relaxed)
            #expect(try await eventually { sweeping.isFinished })
            #expect(returned.load(ordering: .relaxed) == 0, "live claims returned to incoming")
            #expect(claims.count == ids.count)
            #expect(try entries(spool, .processing) == ids.sorted())
            #expect(try entries(spool, .incoming).isEmpty)
        }
    }

    @Test func completeInterruptedAfterTheRecordIsFinished() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ids = try await publishTextShares(spool, ["recorded\n", "half removed\n"])
            for shareID in ids {
                let claim = try mustClaim(spool, shareID)
                _ = try spool.ledger.recordProcessed([(claim.shareID, 1)])
            }
            // The second crashed half-way through the removal.
            try System.unlink(spool.path(.processing, ids[1]) + "/manifest.json")

            let report = try spool.recover(retryingLockedFor: .seconds(1))
            #expect(report.completed == 2)
            #expect(try entries(spool, .processing).isEmpty)
            #expect(try entries(spool, .incoming).isEmpty)
            #expect(try spool.ledger.state(ofShare: ids[0]) == .processed)
            #expect(try spool.ledger.attempts(ofShare: ids[0]) == 1)
        }
    }

    @Test func retryInterruptedAfterTheRecordGoesBackWithoutCountingTwice() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try #require(try await publishTextShares(spool, ["retry\n"]).first)
            do {
                let claim = try mustClaim(spool, shareID)
                _ = try spool.ledger.recordRetry(
                    shareID: claim.shareID, code: .processorFailed, durationMilliseconds: 1, notBefore: 0)
            }
            let report = try spool.recover(retryingLockedFor: .seconds(1))
            #expect(report.returnedToIncoming == 1)
            #expect(try entries(spool, .incoming) == [shareID])
            #expect(try spool.ledger.attempts(ofShare: shareID) == 1)
        }
    }

    @Test func quarantineInterruptedAtEachStepIsRecovered() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ids = try await publishTextShares(spool, ["reason written\n", "recorded\n"])
            let reason = QuarantineReason(
                code: .processorFailed, message: "ERR_PROCESSOR_FAILED: boom", attempts: 1,
                firstAttemptAt: Date().rfc3339, lastAttemptAt: Date().rfc3339)
            do {
                // Crash after quarantine step 1.
                let claim = try mustClaim(spool, ids[0])
                #expect(try isStarted(spool.start(claim, maxAttempts: 3)))
                try spool.writeReason(reason, shareID: claim.shareID)
            }
            do {
                // Crash after quarantine step 2.
                let claim = try mustClaim(spool, ids[1])
                try spool.writeReason(reason, shareID: claim.shareID)
                _ = try spool.ledger.recordQuarantined(
                    shareID: claim.shareID, code: .processorFailed, durationMilliseconds: 1)
            }
            let report = try spool.recover(retryingLockedFor: .seconds(1))
            #expect(report.returnedToIncoming == 1)
            #expect(report.rolledForward == 1)
            #expect(try entries(spool, .incoming) == [ids[0]])
            #expect(try !System.listDirectory(spool.path(.incoming, ids[0])).contains("reason.json"))
            // Its failure was never recorded: the death is charged, not an attempt.
            #expect(try spool.ledger.attempts(ofShare: ids[0]) == 0)
            #expect(try spool.store.events(.crashed, shareID: ids[0]).count == 1)
            #expect(try entries(spool, .quarantine) == [ids[1]])
            #expect(try System.listDirectory(spool.path(.quarantine, ids[1])).sorted().count == 3)
            #expect(try spool.quarantineReason(ids[1]) == reason)
        }
    }

    @Test func aShareRunningAtEveryDeathIsQuarantinedWithoutRunningAgain() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try #require(try await publishTextShares(spool, ["takes its daemon down\n"]).first)
            for _ in 0..<3 {
                #expect(try isStarted(spool.start(mustClaim(spool, shareID), maxAttempts: 3)))
                _ = try spool.recover(retryingLockedFor: .seconds(1))
            }
            #expect(try spool.ledger.attempts(ofShare: shareID) == 0)
            let log = CallLog()
            let summary = try await Consumer(
                spool: spool, processor: ClosureProcessor { log.record($0.shareId) }, configuration: fastConfiguration()
            ).drain()
            #expect(summary.quarantined == 1)
            #expect(log.counts.isEmpty)
            let reason = try spool.quarantineReason(shareID)
            #expect(reason.attempts == 3 && reason.code == .processorFailed)
            #expect(reason.message.hasSuffix("3 consecutive deaths of its daemon: the share takes its daemon down"))
            #expect(try spool.store.events(.crashed, shareID: shareID).count == 3)
        }
    }

    /// Deaths of its daemon while a share was only claimed (queued behind the running ones) are never charged, and a
    /// run that ends breaks a run of deaths: neither share here is quarantined.
    @Test func deathsWhileClaimedButNotRunningOrNotInARowAreForgiven() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let ids = try await publishTextShares(spool, ["only ever claimed\n", "once failed between deaths\n"])
            for _ in 0..<5 {
                _ = try mustClaim(spool, ids[0])
                _ = try spool.recover(retryingLockedFor: .seconds(1))
            }
            #expect(try spool.ledger.attempts(ofShare: ids[0]) == 0)
            let policy = ShareLifecycle.RetryPolicy(maxAttempts: 3, retryDelayMilliseconds: 0)
            for round in 0..<5 {
                do {
                    // The claim (its lock) dies at the end of this block, as with its process.
                    let claim = try mustClaim(spool, ids[1])
                    #expect(try isStarted(spool.start(claim, maxAttempts: 3)))
                    if round == 2 {
                        try spool.fail(claim, error: ShareError(.processorFailed, "exit 1"), durationMilliseconds: 1,
                            policy: policy)
                    }
                }
                _ = try spool.recover(retryingLockedFor: .seconds(1))
            }
            #expect(try spool.store.events(.crashed, shareID: ids[1]).count == 4)
            let log = CallLog()
            let summary = try await Consumer(
                spool: spool, processor: ClosureProcessor { log.record($0.shareId) }, configuration: fastConfiguration()
            ).drain()
            #expect(summary.processed == 2 && summary.quarantined == 0)
            #expect(log.counts == [ids[0]: 1, ids[1]: 1])
        }
    }

    @Test func requeueInterruptedAfterTheRecordIsFinished() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try #require(try await publishTextShares(spool, ["requeue me\n"]).first)
            let failing = ClosureProcessor { _ in throw ShareError(.processorFailed, "no") }
            _ = try await Consumer(
                spool: spool, processor: failing, configuration: fastConfiguration { $0.maxAttempts = 1 }
            ).drain()
            _ = try spool.ledger.recordRequeued(shareID: shareID)
            let report = try spool.recover(retryingLockedFor: .seconds(1))
            #expect(report.rolledForward == 1)
            #expect(try entries(spool, .incoming) == [shareID])
            #expect(try entries(spool, .quarantine).isEmpty)
        }
    }

    @Test func aShareRenamedIntoIncomingButNotRecordedPublishedIsRepaired() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try #require(try await publishTextShares(spool, ["published\n"]).first)
            try spool.store.driver.run("UPDATE shares SET state = 'staged' WHERE id = ?", [.text(shareID)])
            _ = try spool.recover(retryingLockedFor: .seconds(1))
            #expect(try spool.ledger.state(ofShare: shareID) == .published)
            #expect(try entries(spool, .incoming) == [shareID])
        }
    }
    /// Two state directories on one ledger (two hosts, or two daemons with their own states): each one's recovery
    /// reconciles only its own shares' rows. Before rows carried their state directory, the second daemon's start
    /// recorded the first one's shares in flight rejected (staged, no directory here) or purged (published), and two
    /// `--duplicates reject` daemons then both published the same contents.
    @Test func recoveryOfOneStateDirectoryLeavesAnotherOnesRowsAlone() async throws {
        try await withTemporaryDirectory { dir in
            func ledger() throws -> LedgerStore { try LedgerStore(driver: SQLiteDriver(path: dir + "/ledger.sqlite")) }
            let first = try Spool(root: dir + "/a", ledger: try ledger(), logger: nil)
            let second = try Spool(root: dir + "/b", ledger: try ledger(), logger: nil)
            #expect(first.id != second.id)
            #expect(try Spool(root: dir + "/a", ledger: try ledger(), logger: nil).id == first.id)

            let source = try writeFile(dir + "/note.txt", "published in a\n")
            let published = await ShareLoader(spool: first).load([FileItemProvider(path: source)]).shareId
            // A share of `a` between its staged record and its rename, as the publisher has it.
            let staged = StagedRecord(manifest: Manifest(
                shareId: UUID().uuidString, sourceApp: nil, createdAt: Date().rfc3339, policy: .keepSuccessful,
                attachments: []), sources: [])
            try first.ledger.recordStaged([staged], spool: first.id)

            _ = try second.recover(retryingLockedFor: .seconds(1))
            #expect(try second.ledger.state(ofShare: published) == .published)
            #expect(try second.ledger.state(ofShare: staged.manifest.shareId) == .staged)

            // Its own recovery still repairs a row its directories contradict.
            _ = try first.recover(retryingLockedFor: .seconds(1))
            #expect(try first.ledger.state(ofShare: published) == .published)
            #expect(try first.ledger.state(ofShare: staged.manifest.shareId) == .rejected)
        }
    }
}

/// Whether the start of a claim's run was recorded (the share was not quarantined instead).
func isStarted(_ start: RunStart) -> Bool {
    if case .started = start { return true }
    return false
}
