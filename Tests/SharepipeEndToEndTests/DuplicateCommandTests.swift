import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// Issue 21 as a user meets it: `--duplicates accept|flag|reject` and `--duplicate-window` through `share` and the
/// inbox (`daemon --oneshot`, the command line and `--config`), what `ls`, `show` and `status` say of duplicates,
/// and two daemons on one PostgreSQL ledger dropping the same content at once.
@Suite(.timeLimit(.minutes(5))) struct DuplicateCommandTests {
    /// `share --json` of `paths` into `state`, with `extra` options.
    func share(_ state: String, _ paths: [String], _ extra: [String] = []) async throws -> (Int32, [String: Any]) {
        let result = try await runSharepipe(["share", "--state", state, "--json"] + extra + paths)
        return (result.status, try result.jsonObject)
    }

    static func attachments(_ receipt: [String: Any]) -> [[String: Any]] {
        receipt["attachments"] as? [[String: Any]] ?? []
    }

    static func origin(_ attachment: [String: Any]) -> [String: String]? {
        attachment["duplicateOf"] as? [String: String]
    }

    @Test func flagIngestsTheCopyNamingItsOriginalAndLsShowAndStatusMarkIt() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let a = try writeFile(dir + "/a.txt", "scanned twice\n")
            let b = try writeFile(dir + "/b.txt", "scanned twice\n")
            let (firstStatus, first) = try await share(state, [a], ["--duplicates", "flag"])
            #expect(firstStatus == 0)
            #expect(Self.origin(Self.attachments(first)[0]) == nil)
            let (secondStatus, second) = try await share(state, [b], ["--duplicates", "flag"])
            #expect(secondStatus == 0)
            let firstID = try #require(first["shareId"] as? String)
            let secondID = try #require(second["shareId"] as? String)
            let origin = try #require(Self.origin(Self.attachments(second)[0]))
            #expect(origin["shareId"] == firstID)
            #expect(origin["fileId"] == Self.attachments(first)[0]["fileId"] as? String)
            let manifest = try jsonFile(state + "/incoming/" + firstID + "/manifest.json")
            #expect(origin["createdAt"] == manifest["createdAt"] as? String)

            let listed = try await runSharepipe(["ls", "--state", state, "--json"])
            let shares = try #require(try listed.jsonObject["shares"] as? [[String: Any]])
            let flagged = try #require(shares.first { $0["shareId"] as? String == secondID })
            let marks = try #require(flagged["duplicates"] as? [[String: Any]])
            #expect(marks.count == 1)
            #expect((marks.first?["duplicateOf"] as? [String: String])?["shareId"] == firstID)
            #expect(try await runSharepipe(["ls", "--state", state]).stdout.contains("(1 duplicate of \(firstID))"))

            let shown = try await runSharepipe(["show", secondID, "--state", state, "--json"])
            #expect(shown.status == 0, "\(shown.stderr)")
            let duplicates = try #require(try shown.jsonObject["duplicates"] as? [[String: Any]])
            #expect(duplicates.first?["outcome"] as? String == "flagged")
            #expect((duplicates.first?["duplicateOf"] as? [String: String])?["shareId"] == firstID)
            let human = try await runSharepipe(["show", secondID, "--state", state]).stdout
            #expect(human.contains("flagged") && human.contains(firstID))
            #expect(try await runSharepipe(["show", firstID, "--state", state, "--json"]).jsonObject["duplicates"]
                as? [Any] != nil)

            let status = try await runSharepipe(["status", "--state", state, "--json"]).jsonObject
            let days = try #require(status["duplicatesPerDay"] as? [[String: Any]])
            #expect(days.count == 1)
            #expect(days.first?["flagged"] as? Int == 1)
            #expect(days.first?["rejected"] as? Int == 0)
            #expect(try await runSharepipe(["status", "--state", state]).stdout.contains("1 flagged, 0 rejected"))
        }
    }

    @Test func rejectRefusesTheCopyWithERR_DUPLICATENamingTheOriginal() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let a = try writeFile(dir + "/a.txt", "sent again\n")
            let b = try writeFile(dir + "/b.txt", "sent again\n")
            let c = try writeFile(dir + "/c.txt", "new\n")
            let (_, first) = try await share(state, [a], ["--duplicates", "reject"])
            let firstID = try #require(first["shareId"] as? String)
            let manifest = try jsonFile(state + "/incoming/" + firstID + "/manifest.json")
            let createdAt = try #require(manifest["createdAt"] as? String)

            let refused = try await runSharepipe(["share", "--state", state, "--duplicates", "reject", b])
            #expect(refused.status == 4)
            #expect(refused.stdout.contains("ERR_DUPLICATE"))
            #expect(refused.stdout.contains(firstID) && refused.stdout.contains(createdAt))

            let (status, partial) = try await share(state, [b, c], ["--duplicates", "reject"])
            #expect(status == 3)
            let failed = Self.attachments(partial)[0]
            let error = try #require(failed["error"] as? [String: String])
            #expect(error["code"] == "ERR_DUPLICATE")
            #expect(error["message"]?.contains(firstID) == true)
            #expect(Self.origin(failed)?["shareId"] == firstID)
            #expect(Self.origin(failed)?["createdAt"] == createdAt)
            #expect(failed["status"] as? String == "failed")

            // Two copies in one share: the second duplicates the first.
            let twice = [try writeFile(dir + "/d.txt", "twice\n"), try writeFile(dir + "/e.txt", "twice\n")]
            let (twiceStatus, both) = try await share(state, twice, ["--duplicates", "reject"])
            #expect(twiceStatus == 3)
            #expect(Self.origin(Self.attachments(both)[1])?["shareId"] == both["shareId"] as? String)
            #expect(Self.origin(Self.attachments(both)[1])?["fileId"] == Self.attachments(both)[0]["fileId"] as? String)

            // all-or-nothing: the duplicate rolls the whole share back.
            let (strict, _) = try await share(
                state, [try writeFile(dir + "/f.txt", "fresh\n"), b], ["--duplicates", "reject", "--policy",
                "all-or-nothing"])
            #expect(strict == 4)
        }
    }

    @Test func acceptIsTheDefault() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let a = try writeFile(dir + "/a.txt", "same\n")
            for _ in 0..<2 {
                let (status, receipt) = try await share(state, [a])
                #expect(status == 0)
                #expect(Self.origin(Self.attachments(receipt)[0]) == nil)
            }
        }
    }

    /// `--duplicate-window 4s`: a copy made within four seconds of its original is still a duplicate; a copy made
    /// once the window has passed is an original again.
    @Test func theWindowEndsWhereItSays() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let a = try writeFile(dir + "/a.txt", "window\n")
            let options = ["--duplicates", "reject", "--duplicate-window", "4s"]
            let (status, first) = try await share(state, [a], options)
            #expect(status == 0)
            let firstID = try #require(first["shareId"] as? String)
            let manifest = try jsonFile(state + "/incoming/" + firstID + "/manifest.json")
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let created = try #require(formatter.date(from: manifest["createdAt"] as? String ?? ""))
            let (copy, _) = try await share(state, [a], options)
            // Inside the window, unless the loaded machine took longer than the window to run the copy's command.
            if Date() < created.addingTimeInterval(4) {
                #expect(copy == 4)
            }
            // Waits for time itself to pass the window's end, not for an event.
            while Date() < created.addingTimeInterval(4.05) { try await Task.sleep(for: .milliseconds(50)) }
            let (after, receipt) = try await share(state, [a], options)
            #expect(after == 0, "\(receipt)")
        }
    }

    @Test(arguments: [
        ["--duplicates", "sometimes"], ["--duplicate-window", "31d"], ["--duplicate-window", "0s"],
        ["--duplicate-window", "30"],
    ])
    func unusableValuesAreUsageErrors(_ options: [String]) async throws {
        try await withTemporaryDirectory { dir in
            let a = try writeFile(dir + "/a.txt", "x\n")
            let share = try await runSharepipe(["share", "--state", dir + "/state"] + options + [a])
            #expect(share.status == 2, "\(share.stderr)")
            let daemon = try await runSharepipe(
                ["daemon", "--oneshot", "--inbox", dir + "/inbox", "--state", dir + "/state"] + options)
            #expect(daemon.status == 2, "\(daemon.stderr)")
        }
    }

    /// Through the inbox: flag hands the exec processor `SHAREPIPE_DUPLICATE_OF`; reject (from `--config`) moves
    /// the drop to `.rejected/` once, with the original in its reason, and a later run never retries it.
    @Test func theInboxFlagsAndRejectsDropsAndNeverRetriesARejectedOne() async throws {
        try await withTemporaryDirectory { dir in
            let inbox = dir + "/inbox"
            let state = dir + "/state"
            let record = dir + "/processed.txt"
            let exec = #"printf '%s|%s\n' "$SHAREPIPE_SHARE_ID" "${SHAREPIPE_DUPLICATE_OF-}" >> '"# + record + "'"
            func oneshot(_ extra: [String]) async throws -> ProcessResult {
                try await runSharepipe([
                    "daemon", "--oneshot", "--inbox", inbox, "--state", state, "--processor", "exec", "--exec", exec,
                ] + extra)
            }
            try writeFile(inbox + "/scan.txt", "page one\n")
            #expect(try await oneshot(["--duplicates", "flag"]).status == 0)
            try writeFile(inbox + "/scan again.txt", "page one\n")
            #expect(try await oneshot(["--duplicates", "flag"]).status == 0)
            let lines = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").map {
                $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            }
            #expect(lines.count == 2)
            let originalID = try #require(lines.first?.first)
            #expect(lines.first?.last == "")
            #expect(lines.last?.last == originalID)

            let config = try writeFile(dir + "/sharepipe.json", #"{"duplicates": "reject"}"#)
            try writeFile(inbox + "/scan once more.txt", "page one\n")
            let rejected = try await oneshot(["--config", config])
            #expect(rejected.status == 4, "\(rejected.stderr)")
            let reason = try jsonFile(inbox + "/.rejected/scan once more.txt.reason.json")
            #expect(reason["code"] as? String == "ERR_DUPLICATE")
            #expect((reason["message"] as? String)?.contains(originalID) == true)
            #expect((reason["duplicateOf"] as? [String: String])?["shareId"] == originalID)
            #expect(!FileManager.default.fileExists(atPath: inbox + "/scan once more.txt"))

            // A second run finds nothing to do: the rejected drop is not ingested or rejected again.
            let again = try await oneshot(["--config", config])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(directoryEntries(inbox + "/.rejected").sorted()
                == ["scan once more.txt", "scan once more.txt.reason.json"])
            #expect(try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").count == 2)

            // A folder holding one content twice: the second file is the duplicate, the first is published.
            try writeFile(inbox + "/album/1.txt", "same page\n")
            try writeFile(inbox + "/album/2.txt", "same page\n")
            let folder = try await oneshot(["--config", config])
            #expect(folder.stderr.contains("status=partial"), "\(folder.stderr)")
            #expect(try jsonFile(inbox + "/.rejected/album.reason.json")["code"] as? String == "ERR_DUPLICATE")
            #expect(directoryEntries(inbox + "/.rejected/album") == ["2.txt"])
        }
    }

    static let postgres = ProcessInfo.processInfo.environment["SHAREPIPE_TEST_PG"].flatMap { $0.isEmpty ? nil : $0 }
    static let postgresRequired = ProcessInfo.processInfo.environment["CI"] == "true"

    /// Two daemons (two state directories and inboxes, as on two hosts) on one PostgreSQL ledger, each given the
    /// same 40 contents at the same moment under `reject`: every content has exactly one original, and each
    /// rejected copy names an original the ledger records as processed.
    @Test(.enabled(if: postgres != nil || postgresRequired, "SHAREPIPE_TEST_PG is unset"))
    func twoDaemonsOnOnePostgresLedgerNeverMakeTwoOriginals() async throws {
        try await withTemporaryDirectory { dir in
            let ledger = try ClusterTests.freshDatabase()
            let count = 40
            for host in ["a", "b"] {
                for index in 0..<count {
                    try writeFile(dir + "/\(host)/inbox/drop-\(index).txt", "content \(index)\n")
                }
            }
            let daemons = try ["a", "b"].map { host in
                try SharepipeProcess([
                    "daemon", "--oneshot", "--inbox", dir + "/\(host)/inbox", "--state", dir + "/\(host)/state",
                    "--ledger", ledger, "--duplicates", "reject", "--processor", "discard",
                ])
            }
            var published = 0
            for daemon in daemons {
                let result = try await daemon.waitForExit(timeout: .seconds(120))
                // Complete when all its drops were originals, 3 when some were duplicates, 4 when all were.
                #expect([0, 3, 4].contains(result.status), "\(result.stderr)")
                published += result.stderr.components(separatedBy: "event=inbox.published").count - 1
            }
            var originals: [Int: Int] = [:]
            var named: Set<String> = []
            for host in ["a", "b"] {
                let rejected = dir + "/\(host)/inbox/.rejected"
                for index in 0..<count {
                    let name = "drop-\(index).txt"
                    if FileManager.default.fileExists(atPath: rejected + "/" + name) {
                        let reason = try jsonFile(rejected + "/" + name + ".reason.json")
                        #expect(reason["code"] as? String == "ERR_DUPLICATE")
                        if let original = (reason["duplicateOf"] as? [String: String])?["shareId"] {
                            named.insert(original)
                        }
                    } else {
                        originals[index, default: 0] += 1
                    }
                }
            }
            #expect(published == count)
            #expect(originals.count == count && originals.values.allSatisfy { $0 == 1 }, "\(originals)")
            #expect(named.count == count)
            for original in named {
                let shown = try await runSharepipe(["show", original, "--state", dir + "/a/state", "--ledger", ledger, "--json"])
                #expect(try shown.jsonObject["state"] as? String == "processed", "\(original)")
            }
        }
    }
}
