import Foundation
import Glibc
import Testing

/// `kill -9` right after every action of the retry, quarantine, requeue, purge and recovery transitions
/// (`SHAREPIPE_CRASH_AFTER=<transition>.<action>`), then a restart: nothing lost, nothing ingested or stored twice,
/// nothing left in `staging/` or `processing/`, and the ledger agrees with the directories. The publish, claim and
/// complete points are in `SpoolEngineEndToEndTests`.
@Suite(.serialized, .timeLimit(.minutes(10))) struct LifecycleCrashTests {
    let engine = SpoolEngineEndToEndTests()

    /// An exec processor that fails each share's first attempt and then stores its copy under the share's id.
    static func failingOnce(_ output: String) -> String {
        "m=\"\(output)/.seen-$SHAREPIPE_SHARE_ID\"; if [ -e \"$m\" ]; then cp \"$SHAREPIPE_FILE\" "
            + "\"\(output)/$SHAREPIPE_SHARE_ID.txt\"; else : > \"$m\"; exit 1; fi"
    }

    func expectKilled(_ result: ProcessResult, _ point: String) {
        #expect(result.status == 128 + SIGKILL, "the crash hook for \(point) did not fire: \(result.stderr)")
    }

    func expectEmpty(_ state: String, _ stages: [String], after point: String) {
        for stage in stages {
            #expect(engine.names(state + "/" + stage).isEmpty, "\(stage) after \(point)")
        }
    }

    /// Unfinished shares the ledger lists (`ls --json`), by stage.
    func listed(_ state: String) async throws -> [String] {
        let listing = try await runSharepipe(["ls", "--state", state, "--json"])
        let shares = (try listing.jsonObject["shares"]) as? [[String: Any]] ?? []
        return shares.compactMap { $0["stage"] as? String }
    }

    @Test(arguments: ["retry.record-retry", "retry.move-incoming"])
    func aKillDuringARetryLosesNothing(point: String) async throws {
        try await withTemporaryDirectory { dir in
            let (inbox, state, output) = (dir + "/inbox", dir + "/state", dir + "/processed")
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            let expected = try engine.drop(20, into: inbox)
            let daemon = [
                "daemon", "--oneshot", "--inbox", inbox, "--state", state, "--processor", "exec",
                "--exec", Self.failingOnce(output), "--max-attempts", "5", "--retry-delay", "10",
            ]
            expectKilled(try await runSharepipe(daemon, environment: ["SHAREPIPE_CRASH_AFTER": point]), point)
            let restarted = try await runSharepipe(daemon)
            #expect(restarted.status == 0, "\(restarted.stderr)")
            let stored = engine.names(output).filter { !$0.hasPrefix(".") }
            #expect(stored.count == expected.count, "after \(point): \(stored.count) stored")
            #expect(engine.storedContents(output).filter { !$0.isEmpty }.sorted() == expected.sorted())
            expectEmpty(state, ["staging", "incoming", "processing", "quarantine"], after: point)
            #expect(try await listed(state).isEmpty)
        }
    }

    @Test(arguments: [
        "quarantine.write-reason", "quarantine.record-quarantined", "quarantine.move-quarantine",
        "quarantine.sync-quarantine",
    ])
    func aKillDuringAQuarantineEndsInQuarantine(point: String) async throws {
        try await withTemporaryDirectory { dir in
            let (inbox, state) = (dir + "/inbox", dir + "/state")
            let expected = try engine.drop(10, into: inbox)
            let daemon = [
                "daemon", "--oneshot", "--inbox", inbox, "--state", state, "--processor", "exec", "--exec", "exit 1",
                "--max-attempts", "1",
            ]
            expectKilled(try await runSharepipe(daemon, environment: ["SHAREPIPE_CRASH_AFTER": point]), point)
            let restarted = try await runSharepipe(daemon)
            #expect([0, 1].contains(restarted.status), "\(restarted.stderr)")
            let quarantined = engine.names(state + "/quarantine")
            #expect(quarantined.count == expected.count, "after \(point): \(quarantined)")
            for shareID in quarantined {
                #expect(FileManager.default.fileExists(atPath: state + "/quarantine/\(shareID)/reason.json"))
            }
            expectEmpty(state, ["staging", "incoming", "processing"], after: point)
            #expect(try await listed(state) == Array(repeating: "quarantine", count: expected.count))
        }
    }

    @Test(arguments: [
        "requeue.record-requeued", "requeue.remove-reason", "requeue.move-incoming", "requeue.sync-incoming",
        "purge.record-purged", "purge.remove-quarantine", "purge.sync-quarantine",
    ])
    func aKillDuringARequeueOrPurgeIsFinishedByTheNextRun(point: String) async throws {
        try await withTemporaryDirectory { dir in
            let (inbox, state, output) = (dir + "/inbox", dir + "/state", dir + "/processed")
            let expected = try engine.drop(3, into: inbox)
            let failing = [
                "daemon", "--oneshot", "--inbox", inbox, "--state", state, "--processor", "exec", "--exec", "exit 1",
                "--max-attempts", "1",
            ]
            _ = try await runSharepipe(failing)
            let quarantined = engine.names(state + "/quarantine")
            try #require(quarantined.count == expected.count)
            let command = point.hasPrefix("requeue")
                ? ["requeue", quarantined[0], "--state", state] : ["purge", "--quarantine", "--state", state]
            expectKilled(try await runSharepipe(command, environment: ["SHAREPIPE_CRASH_AFTER": point]), point)
            let consume = ["consume", "--state", state, "--processor", "store", "--output", output]
            let finished = try await runSharepipe(point.hasPrefix("requeue") ? consume : command)
            #expect(finished.status == 0, "\(finished.stderr)")
            if point.hasPrefix("requeue") {
                // The interrupted requeue was finished by recovery and the share stored once.
                #expect(engine.storedContents(output).count == 1, "after \(point)")
                #expect(engine.names(state + "/quarantine").count == expected.count - 1)
            } else {
                #expect(engine.names(state + "/quarantine").isEmpty, "after \(point)")
                #expect(try await listed(state).isEmpty)
            }
            expectEmpty(state, ["staging", "incoming", "processing"], after: point)
        }
    }

    /// A first run killed at `setup` leaves work for recovery; the second is killed at the recovery action; the
    /// third finishes. Every drop is stored exactly once.
    @Test(arguments: [
        ("publish.record-staged", "recover.remove-staging"), ("publish.record-staged", "recover.record-unpublished"),
        ("claim.record-claimed", "recover.record-recovered"), ("claim.record-claimed", "recover.move-incoming"),
        ("start.record-started", "recover.record-crashed"), ("succeed.record-succeeded", "recover.record-finished"),
        ("complete.record-processed", "recover.remove-processing"),
        ("complete.record-processed", "recover.sync-processing"),
        ("publish.move-incoming", "recover.record-published"),
        ("publish.move-incoming", "recover.record-all-sources-done"),
    ])
    func aKillDuringRecoveryIsRecoveredByTheNextRun(setup: String, point: String) async throws {
        try await withTemporaryDirectory { dir in
            let (inbox, state, output) = (dir + "/inbox", dir + "/state", dir + "/processed")
            let expected = try engine.drop(20, into: inbox)
            let daemon = [
                "daemon", "--oneshot", "--inbox", inbox, "--state", state, "--processor", "store", "--output", output,
            ]
            expectKilled(try await runSharepipe(daemon, environment: ["SHAREPIPE_CRASH_AFTER": setup]), setup)
            expectKilled(try await runSharepipe(daemon, environment: ["SHAREPIPE_CRASH_AFTER": point]), point)
            let restarted = try await runSharepipe(daemon)
            #expect(restarted.status == 0, "\(restarted.stderr)")
            #expect(engine.storedContents(output).sorted() == expected.sorted(), "lost or stored twice: \(point)")
            #expect(engine.names(inbox).isEmpty)
            expectEmpty(state, ["staging", "incoming", "processing", "quarantine"], after: point)
            #expect(try await listed(state).isEmpty)
        }
    }
}
