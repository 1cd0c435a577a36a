import Foundation
import Glibc
import Testing

/// `sharepipe show` and `sharepipe events`: a share's history and the live event stream, from the ledger.
@Suite(.timeLimit(.minutes(5)))
struct TimelineCommandTests {
    /// Shares one file into `state` and returns the share id.
    func share(_ file: String, state: String) async throws -> String {
        let result = try await runSharepipe(["share", "--state", state, "--json", file])
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try result.jsonObject["shareId"] as? String)
    }

    @Test func showListsEveryAttemptOfARetriedShareInOrder() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let shareID = try await share(fixturePath("files/photo.jpg"), state: state)
            // Fails twice, then succeeds.
            let counter = dir + "/runs"
            let command = "n=$(cat '\(counter)' 2>/dev/null || echo 0); n=$((n + 1)); echo $n > '\(counter)'; "
                + "[ $n -ge 3 ]"
            let consume = try await runSharepipe([
                "consume", "--state", state, "--processor", "exec", "--exec", command, "--retry-delay", "0",
                "--max-attempts", "3", "--workers", "1",
            ])
            #expect(consume.status == 0, "\(consume.stderr)")

            let result = try await runSharepipe(["show", shareID, "--state", state, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let report = try result.jsonObject
            #expect(report["state"] as? String == "processed")
            #expect(report["attempts"] as? Int == 3)
            let location = try #require(report["location"] as? [String: Any])
            #expect(location["description"] as? String == "deleted after processing")
            let events = try #require(report["events"] as? [[String: Any]])
            let names = events.compactMap { $0["event"] as? String }
            #expect(names == [
                "staged", "published", "claimed", "failed", "retried", "claimed", "failed", "retried", "claimed",
                "processed", "deleted",
            ])
            #expect(events.map { $0["attempt"] as? Int } == [nil, nil, 1, 1, 1, 2, 2, 2, 3, 3, 3])
            let failures = events.filter { $0["event"] as? String == "failed" }
            #expect(failures.allSatisfy { $0["code"] as? String == "ERR_PROCESSOR_FAILED" })
            #expect(failures.allSatisfy { $0["durationMs"] as? Int != nil })
            let sequences = events.compactMap { $0["sequence"] as? Int }
            #expect(sequences == sequences.sorted())
            #expect(events[0]["typeIdentifier"] as? String == "public.jpeg")
            #expect(events[0]["bytes"] as? Int == (try FileManager.default.attributesOfItem(
                atPath: fixturePath("files/photo.jpg"))[.size] as? Int))

            let human = try await runSharepipe(["show", shareID, "--state", state])
            #expect(human.status == 0)
            let rows = human.stdout.split(separator: "\n").filter { $0.contains(" claimed ") }
            #expect(rows.count == 3)
            #expect(human.stdout.contains("deleted after processing"))
        }
    }

    @Test func showSaysWhereTheCopiesAreAndNamesThemOnlyWhenAllowed() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let shareID = try await share(fixturePath("files/photo.jpg"), state: state)
            let quiet = try await runSharepipe(["show", shareID, "--state", state, "--json"])
            #expect(quiet.status == 0)
            let location = try #require(try quiet.jsonObject["location"] as? [String: Any])
            #expect(location["stage"] as? String == "incoming")
            let copies = try #require(location["copies"] as? [[String: Any]])
            #expect(copies.count == 1)
            let file = try #require(copies[0]["file"] as? String)
            #expect(FileManager.default.fileExists(atPath: state + "/incoming/" + shareID + "/" + file))
            #expect(!quiet.stdout.contains("photo.jpg"))
            #expect(!(try await runSharepipe(["show", shareID, "--state", state]).stdout.contains("photo.jpg")))

            let named = try await runSharepipe(["show", shareID, "--state", state, "--json", "--log-names"])
            #expect(named.stdout.contains("\"suggestedName\" : \"photo.jpg\""))
        }
    }

    @Test func unknownShareIsNotFound() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            _ = try await share(fixturePath("files/notes.txt"), state: state)
            let unknown = UUID().uuidString
            let result = try await runSharepipe(["show", unknown, "--state", state, "--json"])
            #expect(result.status == 1)
            let error = try #require(try result.jsonObject["error"] as? [String: Any])
            #expect(error["code"] as? String == "ERR_NOT_FOUND")
            #expect(result.stderr.contains("ERR_NOT_FOUND"))

            let human = try await runSharepipe(["show", unknown, "--state", state])
            #expect(human.status == 1)
            #expect(human.stdout.isEmpty)
            #expect(human.stderr.contains("error: ERR_NOT_FOUND: no share \(unknown)"))

            #expect(try await runSharepipe(["show", "not-a-uuid", "--state", state]).status == 2)
            let missing = try await runSharepipe(["events", "--state", dir + "/nowhere", "--json"])
            #expect(missing.status == 1)
            #expect(missing.stdout.contains("ERR_CONTAINER_UNAVAILABLE"))
            #expect(!FileManager.default.fileExists(atPath: dir + "/nowhere"))
        }
    }

    @Test func eventsPrintsOneLinePerEvent() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let shareID = try await share(fixturePath("files/photo.jpg"), state: state)
            let logfmt = try await runSharepipe(["events", "--state", state])
            #expect(logfmt.status == 0)
            let lines = logfmt.stdout.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines[0].contains("share=\(shareID) event=staged attachment=0 type=public.jpeg"))
            #expect(lines[1].hasSuffix("share=\(shareID) event=published"))

            let json = try await runSharepipe(["events", "--state", state, "--json"])
            let objects = try json.stdout.split(separator: "\n").map { line in
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            #expect(objects.compactMap { $0["event"] as? String } == ["staged", "published"])
            #expect(objects.allSatisfy { $0.keys.contains("attempt") && $0.keys.contains("code") })
        }
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func followPrintsADropWithinASecondAndStopsOnASignal(signal: Int32) async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let first = try await share(fixturePath("files/notes.txt"), state: state)
            let follower = try SharepipeProcess(["events", "--follow", "--state", state])
            try await waitUntil("the recorded events are printed") { follower.stdoutSoFar.contains(first) }

            let second = try await share(fixturePath("files/photo.jpg"), state: state)
            let published = "share=\(second) event=published"
            try await waitUntil("the new share's events are printed") { follower.stdoutSoFar.contains(published) }
            // From the time the ledger recorded the event to the moment its line was there to read: the last write
            // to stdout, as its file recorded it (this test may look later, when its thread gets a core).
            let seen = try follower.stdoutLastWritten()
            let line = try #require(follower.stdoutSoFar.split(separator: "\n").first { $0.contains(published) })
            let time = try #require(line.split(separator: " ").first?.dropFirst("time=".count))
            let recorded = try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(String(time))
            #expect(seen.timeIntervalSince(recorded) < 5, "printed \(seen.timeIntervalSince(recorded)) s after")

            follower.signal(signal)
            let result = try await follower.waitForExit(timeout: .seconds(10))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.split(separator: "\n").count == 4)
        }
    }

    @Test func followShowsADaemonDropAsItHappens() async throws {
        try await withTemporaryDirectory { dir in
            let inbox = dir + "/inbox", state = dir + "/state"
            try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
            let daemon = try SharepipeProcess([
                "daemon", "--inbox", inbox, "--state", state, "--settle", "100", "--processor", "discard",
            ])
            try await waitUntil("the daemon is ready") { daemon.stderrSoFar.contains("event=daemon.ready") }
            let follower = try SharepipeProcess(["events", "--follow", "--state", state])
            try FileManager.default.copyItem(atPath: fixturePath("files/photo.jpg"), toPath: dir + "/photo.jpg")
            try FileManager.default.moveItem(atPath: dir + "/photo.jpg", toPath: inbox + "/photo.jpg")

            try await waitUntil("the drop's deletion is printed") { follower.stdoutSoFar.contains(" event=deleted") }
            let seen = try follower.stdoutLastWritten()
            let lines = follower.stdoutSoFar.split(separator: "\n")
            #expect(lines.map { $0.split(separator: " ")[3] } == [
                "event=staged", "event=published", "event=claimed", "event=processed", "event=deleted",
            ])
            let time = try #require(lines.last?.split(separator: " ").first?.dropFirst("time=".count))
            let recorded = try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(String(time))
            #expect(seen.timeIntervalSince(recorded) < 5, "printed \(seen.timeIntervalSince(recorded)) s after")

            follower.signal(SIGINT)
            #expect(try await follower.waitForExit(timeout: .seconds(10)).status == 0)
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit(timeout: .seconds(30)).status == 0)
        }
    }

    /// Waits up to 60 s until `condition` holds; throws, naming `what`, when it does not.
    func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        guard try await eventually(.seconds(60), every: .milliseconds(10), condition) else {
            throw SupportError("timed out waiting until \(what)")
        }
    }
}
