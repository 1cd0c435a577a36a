import Foundation
import SharepipeCore
import Testing

/// `sharepipe consume`, `status`, `ls`, `requeue`, `purge` and `doctor`, through the built binary, against shares
/// published with the library.
@Suite(.timeLimit(.minutes(5)))
struct OperatorCommandTests {
    private static let noteBytes = Array("hello, operator\n".utf8)

    // MARK: consume

    @Test func consumeStoresCopiesByGroupAndEmptiesIncoming() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let shareID = try await publish(state, [photo, notes])
            let result = try await runSharepipe(["consume", "--state", state, "--output", dir + "/out", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let summary = try result.jsonObject
            #expect(summary["processed"] as? Int == 1)
            #expect(summary["retried"] as? Int == 0)
            #expect(summary["quarantined"] as? Int == 0)
            #expect(summary["released"] as? Int == 0)
            #expect(summary["recovery"] is [String: Any])
            #expect(contents(dir + "/out/image/photo.jpg") == jpegBytes)
            #expect(contents(dir + "/out/text/notes.txt") == Self.noteBytes)
            #expect(names(state + "/incoming").isEmpty)
            #expect(names(state + "/processing").isEmpty)
            #expect(!FileManager.default.fileExists(atPath: state + "/incoming/" + shareID))

            let again = try await runSharepipe(["consume", "--state", state, "--output", dir + "/out"])
            #expect(again.status == 0)
            #expect(again.stdout == "consumed: 0 processed, 0 retried, 0 quarantined, 0 released\n")
            #expect(again.stderr.isEmpty)
        }
    }

    @Test func consumeQuarantinesAFailingExecAfterMaxAttempts() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let shareID = try await publish(state, [photo])
            let log = dir + "/runs.log"
            let result = try await runSharepipe([
                "consume", "--state", state, "--processor", "exec",
                "--exec", "echo \"$SHAREPIPE_SUGGESTED_NAME\" >> '\(log)'; exit 7",
                "--max-attempts", "3", "--retry-delay", "10", "--json",
            ])
            #expect(result.status == 1)
            let summary = try result.jsonObject
            #expect(summary["processed"] as? Int == 0)
            #expect(summary["retried"] as? Int == 2)
            #expect(summary["quarantined"] as? Int == 1)
            let runs = String(decoding: contents(log) ?? [], as: UTF8.self)
            #expect(runs == "photo.jpg\nphoto.jpg\nphoto.jpg\n")
            #expect(names(state + "/incoming").isEmpty)
            let quarantined = state + "/quarantine/" + shareID
            #expect(names(quarantined).contains("reason.json"))
            #expect(names(quarantined).contains { $0.hasSuffix(".jpeg") || $0.hasSuffix(".jpg") })
            let reason = String(decoding: contents(quarantined + "/reason.json") ?? [], as: UTF8.self)
            #expect(reason.contains("ERR_PROCESSOR_FAILED"))
        }
    }

    @Test func execProcessorWithoutCommandIsAUsageError() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let result = try await runSharepipe(["consume", "--state", state, "--processor", "exec"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("--exec"))
            #expect(!FileManager.default.fileExists(atPath: state))
        }
    }

    // MARK: status and ls

    @Test func statusCountsStagesBytesAndRecentFailures() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let spool = try await mixedSpool(state)
            let result = try await runSharepipe(["status", "--state", state, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let status = try result.jsonObject
            #expect(Set(status.keys) == [
                "state", "stages", "inFlight", "pendingBytes", "oldestPendingAgeSeconds", "recentFailures", "processed",
                "rejected", "uploads", "duplicatesPerDay", "notifications",
            ])
            #expect(status["notifications"] as? [String: Int] == ["pending": 0, "failed": 0])
            #expect(status["inFlight"] as? [String: Int] == ["copies": 0, "bytesDone": 0, "bytesTotal": 0])
            #expect(status["uploads"] as? [String: Int] == ["receiving": 0, "resumable": 0])
            let stages = try #require(status["stages"] as? [String: Int])
            #expect(stages == ["staging": 0, "incoming": 2, "processing": 0, "quarantine": 1])
            #expect(status["pendingBytes"] as? Int == Int(spool.pendingBytes))
            #expect(status["oldestPendingAgeSeconds"] is Int)
            #expect(status["recentFailures"] as? [String: Int] == ["ERR_PROCESSOR_FAILED": 1])
            #expect(status["state"] as? String == state)

            let human = try await runSharepipe(["status", "--state", state])
            #expect(human.status == 0)
            let lines = human.stdout.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("incoming") && $0.hasSuffix(" 2") })
            #expect(lines.contains { $0.hasPrefix("quarantine") && $0.hasSuffix(" 1") })
            #expect(lines.contains { $0.hasPrefix("failures (24 h)") && $0.hasSuffix("ERR_PROCESSOR_FAILED 1") })
        }
    }

    @Test func lsShowsEachShareWithNamesAttemptsAndReason() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let spool = try await mixedSpool(state)
            let result = try await runSharepipe(["ls", "--state", state, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let shares = try #require(try result.jsonObject["shares"] as? [[String: Any]])
            #expect(shares.count == 3)
            for share in shares {
                #expect(Set(share.keys) == [
                    "shareId", "stage", "attachments", "bytes", "createdAt", "ageSeconds", "attempts", "lastCode",
                    "retryInSeconds", "sourceApp", "title", "tags", "suggestedNames", "failed", "reason", "claimedBy",
                    "duplicates",
                ])
            }
            let byID = Dictionary(uniqueKeysWithValues: shares.map { ($0["shareId"] as? String ?? "", $0) })
            let quarantined = try #require(byID[spool.quarantined])
            #expect(quarantined["stage"] as? String == "quarantine")
            #expect(quarantined["attempts"] as? Int == 1)
            #expect(quarantined["lastCode"] as? String == "ERR_PROCESSOR_FAILED")
            #expect((quarantined["reason"] as? String)?.hasPrefix("ERR_PROCESSOR_FAILED") == true)
            let pair = try #require(byID[spool.pending[0]])
            #expect(pair["stage"] as? String == "incoming")
            #expect(pair["attachments"] as? Int == 2)
            #expect(pair["bytes"] as? Int == jpegBytes.count + Self.noteBytes.count)
            #expect(pair["suggestedNames"] as? [String] == ["photo.jpg", "notes.txt"])
            #expect(pair["sourceApp"] as? String == "com.example.operator-tests")
            #expect(pair["attempts"] as? Int == 0)
            #expect(pair["reason"] is NSNull)
            #expect((pair["createdAt"] as? String)?.hasSuffix("Z") == true)
            #expect(pair["ageSeconds"] is Int)
            // Stage by stage: incoming before quarantine.
            #expect(shares.map { $0["stage"] as? String } == ["incoming", "incoming", "quarantine"])

            let human = try await runSharepipe(["ls", "--state", state])
            #expect(human.status == 0)
            #expect(human.stdout.contains(spool.pending[0]))
            #expect(human.stdout.contains("photo.jpg, notes.txt"))
            #expect(human.stdout.contains("quarantined because:"))
        }
    }

    @Test func operatorCommandsNeverCreateAMissingStateDirectory() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/missing"
            let commands = [
                ["status"], ["ls"], ["requeue", UUID().uuidString], ["purge", "--quarantine"], ["status", "--json"],
            ]
            for command in commands {
                let result = try await runSharepipe(command + ["--state", state])
                #expect(result.status == 1, "\(command)")
                #expect(result.stderr.contains("ERR_CONTAINER_UNAVAILABLE"), "\(command)")
                if command.contains("--json") {
                    let error = try #require(try result.jsonObject["error"] as? [String: String], "\(command)")
                    #expect(error["code"] == "ERR_CONTAINER_UNAVAILABLE", "\(command)")
                } else {
                    #expect(result.stdout.isEmpty, "\(command)")
                }
                #expect(!FileManager.default.fileExists(atPath: state), "\(command)")
            }
        }
    }

    // MARK: requeue and purge

    @Test func requeueMovesAQuarantinedShareBackToIncoming() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let shareID = try await publish(state, [photo])
            try await quarantineAll(state)
            #expect(names(state + "/quarantine") == [shareID])

            // Share ids are accepted in any case.
            let result = try await runSharepipe(["requeue", shareID.lowercased(), "--state", state])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "requeued \(shareID): back in incoming\n")
            #expect(names(state + "/quarantine").isEmpty)
            #expect(names(state + "/incoming") == [shareID])
            #expect(!names(state + "/incoming/" + shareID).contains("reason.json"))
            #expect(names(state + "/incoming/" + shareID).contains("manifest.json"))

            let twice = try await runSharepipe(["requeue", shareID, "--state", state])
            #expect(twice.status == 1)
            #expect(twice.stderr.contains("ERR_NOT_FOUND: share \(shareID) is in incoming, not in quarantine"))
            let unknownID = UUID().uuidString
            let unknown = try await runSharepipe(["requeue", unknownID, "--state", state])
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("error: ERR_NOT_FOUND: no share \(unknownID)"))
            #expect(unknown.stdout.isEmpty)
            let malformed = try await runSharepipe(["requeue", "not-a-share", "--state", state])
            #expect(malformed.status == 2)
            #expect(malformed.stderr.contains("SHARE-ID"))

            // Its attempts start again: one more run of a working processor finishes it.
            let consumed = try await runSharepipe(["consume", "--state", state, "--processor", "discard", "--json"])
            #expect(consumed.status == 0)
            #expect(try consumed.jsonObject["processed"] as? Int == 1)
            #expect(names(state + "/incoming").isEmpty)
        }
    }

    @Test func purgeEmptiesTheQuarantine() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let first = try await publish(state, [photo])
            let second = try await publish(state, [notes])
            try await quarantineAll(state)
            #expect(Set(names(state + "/quarantine")) == [first, second])

            let unflagged = try await runSharepipe(["purge", "--state", state])
            #expect(unflagged.status == 2)
            #expect(unflagged.stderr.contains("--quarantine"))

            let recent = try await runSharepipe(["purge", "--quarantine", "--older-than", "1h", "--state", state, "--json"])
            #expect(recent.status == 0)
            #expect(try recent.jsonObject["purged"] as? [String] == [])
            #expect(names(state + "/quarantine").count == 2)

            let all = try await runSharepipe(["purge", "--quarantine", "--state", state, "--json"])
            #expect(all.status == 0)
            #expect(Set(try all.jsonObject["purged"] as? [String] ?? []) == [first, second])
            #expect(names(state + "/quarantine").isEmpty)
            let status = try await runSharepipe(["status", "--state", state, "--json"]).jsonObject
            #expect((status["stages"] as? [String: Int])?["quarantine"] == 0)
        }
    }

    // MARK: doctor

    @Test func doctorPassesOnAFreshStateDirectoryAndCreatesNothing() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let inbox = dir + "/inbox"
            let fresh = try await runSharepipe(["doctor", "--state", state, "--inbox", inbox, "--json"])
            #expect(fresh.status == 0, "\(fresh.stdout)")
            let checks = try #require(try fresh.json as? [[String: Any]])
            #expect(checks.map { $0["check"] as? String } == [
                "libmagic", "state-directory", "same-filesystem", "inbox", "inotify", "free-space", "spool-limits",
                "filesystem-state", "filesystem-inbox", "filesystem-output",
            ])
            for check in checks {
                #expect(Set(check.keys) == ["check", "ok", "status", "detail", "hint"])
                #expect(check["ok"] as? Bool == true, "\(check)")
            }
            #expect(checks[0]["detail"] as? String == "database loads; a JPEG header sniffs as image/jpeg")
            #expect(!FileManager.default.fileExists(atPath: state))
            #expect(!FileManager.default.fileExists(atPath: inbox))

            try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
            _ = try await publish(state, [photo])
            let used = try await runSharepipe(["doctor", "--state", state, "--inbox", inbox])
            #expect(used.status == 0, "\(used.stdout)")
            #expect(used.stdout.contains("one file system"))
            #expect(used.stdout.contains("doctor: all 10 checks passed"))
            #expect(names(state).allSatisfy { !$0.hasPrefix(".sharepipe-probe") })
        }
    }

    @Test func doctorFailsOnAnUnusableStateDirectoryAndNamesTheCheck() async throws {
        try await withTemporaryDirectory { dir in
            // Permissions do not bind root, so the state directory is made impossible instead: its parent is a file.
            let file = try writeFile(dir + "/plain-file", "not a directory")
            let result = try await runSharepipe(["doctor", "--state", file + "/state", "--inbox", dir + "/inbox", "--json"])
            #expect(result.status == 1)
            let checks = try #require(try result.json as? [[String: Any]])
            let state = try #require(checks.first { $0["check"] as? String == "state-directory" })
            #expect(state["ok"] as? Bool == false)
            #expect(state["status"] as? String == "fail")
            #expect((state["detail"] as? String)?.contains("ERR_CONTAINER_UNAVAILABLE") == true)
            #expect(state["hint"] is String)
            // The state directory fails, and so does probing its file system; nothing else does.
            let failed = Set(checks.filter { $0["ok"] as? Bool == false }.compactMap { $0["check"] as? String })
            #expect(failed.contains("state-directory"))
            #expect(failed.isSubset(of: ["state-directory", "filesystem-state", "free-space", "same-filesystem"]))

            let human = try await runSharepipe(["doctor", "--state", file + "/state", "--inbox", dir + "/inbox"])
            #expect(human.status == 1)
            let line = human.stdout.split(separator: "\n").first { $0.contains("state-directory") }
            #expect(line?.hasPrefix("FAIL") == true)
            #expect(human.stdout.contains("of 10 checks failed"))
        }
    }

    @Test func doctorChecksTheConfigFileAndUsesItsDirectories() async throws {
        try await withTemporaryDirectory { dir in
            let good = try writeFile(dir + "/good.json", """
                {"state": "\(dir)/configured-state", "inbox": "\(dir)/configured-inbox", "workers": 4,
                 "accept": ["public.image", "public.pdf"], "processor": "store"}
                """)
            let result = try await runSharepipe(["doctor", "--config", good, "--json"])
            #expect(result.status == 0, "\(result.stdout)")
            let checks = try #require(try result.json as? [[String: Any]])
            let config = try #require(checks.first { $0["check"] as? String == "config" })
            #expect(config["ok"] as? Bool == true)
            let state = try #require(checks.first { $0["check"] as? String == "state-directory" })
            #expect((state["detail"] as? String)?.contains("configured-state") == true)

            let broken: [(text: String, named: String?)] = [
                ("{\"max-files\": 3}", "max-files"), ("{\"workers\": 0}", "workers"), ("[1, 2]", nil),
            ]
            for (text, named) in broken {
                let bad = try writeFile(dir + "/bad.json", text)
                let failed = try await runSharepipe(["doctor", "--config", bad, "--state", dir + "/s", "--json"])
                #expect(failed.status == 1, "\(text)")
                let entries = try #require(try failed.json as? [[String: Any]])
                let entry = try #require(entries.first { $0["check"] as? String == "config" })
                #expect(entry["ok"] as? Bool == false)
                if let named { #expect((entry["detail"] as? String)?.contains(named) == true, "\(entry)") }
            }
        }
    }

    // MARK: Helpers

    private typealias Attachment = (bytes: [UInt8], type: String, name: String)

    private var photo: Attachment { (jpegBytes, "public.jpeg", "photo.jpg") }
    private var notes: Attachment { (Self.noteBytes, "public.plain-text", "notes.txt") }

    /// Publishes one complete share into the spool at `state` with the library, as `sharepipe share` would.
    private func publish(_ state: String, _ attachments: [Attachment]) async throws -> String {
        let spool = try Spool(root: state)
        let providers: [any ItemProvider] = attachments.map {
            DataItemProvider(data: Data($0.bytes), types: [$0.type], suggestedName: $0.name)
        }
        let receipt = await ShareLoader(spool: spool).load(providers, sourceApp: "com.example.operator-tests")
        guard receipt.status == .complete else { throw SupportError("share not published: \(receipt)") }
        return receipt.shareId
    }

    /// Quarantines everything in `incoming` with a processor that always fails, once.
    private func quarantineAll(_ state: String) async throws {
        let result = try await runSharepipe([
            "consume", "--state", state, "--processor", "exec", "--exec", "exit 1", "--max-attempts", "1",
        ])
        guard result.status == 1 else { throw SupportError("consume did not quarantine: \(result.stderr)") }
    }

    /// One quarantined share, then two pending ones: a photo with notes, and notes alone.
    private func mixedSpool(_ state: String) async throws
        -> (quarantined: String, pending: [String], pendingBytes: Int64)
    {
        let quarantined = try await publish(state, [photo])
        try await quarantineAll(state)
        let pair = try await publish(state, [photo, notes])
        let single = try await publish(state, [notes])
        return (quarantined, [pair, single], Int64(jpegBytes.count + 2 * Self.noteBytes.count))
    }

    private func names(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    private func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map(Array.init)
    }
}
