import Foundation
import Glibc
import Testing

/// The spool engine through the built binary: `kill -9` right after every action of the batched publish, the
/// claim, a run's start and success, and the batched completion (`SHAREPIPE_CRASH_AFTER`), and two daemons sharing
/// one inbox. The other transitions' crash points are in `LifecycleCrashTests`.
@Suite(.serialized, .timeLimit(.minutes(5))) struct SpoolEngineEndToEndTests {
    static let steps = [
        "publish.barrier", "publish.record-staged", "publish.move-incoming", "publish.sync-incoming",
        "publish.remove-sources", "publish.record-published", "claim.lock", "claim.move-processing",
        "claim.record-claimed", "start.record-started", "succeed.record-succeeded", "complete.record-processed",
        "complete.remove-processing",
    ]

    /// Drops `count` files with distinct contents; returns the contents.
    func drop(_ count: Int, into inbox: String, prefix: String = "drop") throws -> [String] {
        try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
        return try (0..<count).map { index in
            let text = "\(prefix) \(index) \(UUID().uuidString)\n"
            try writeFile(inbox + "/\(prefix)-\(index).txt", text)
            return text
        }
    }

    /// The contents of every file under `directory`, recursively.
    func storedContents(_ directory: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
        return walker.compactMap { $0 as? String }.compactMap { relative -> String? in
            var isDirectory: ObjCBool = false
            let path = directory + "/" + relative
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue
            else { return nil }
            return try? String(contentsOfFile: path, encoding: .utf8)
        }
    }

    func names(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    @Test(arguments: steps)
    func aKillAfterAnyStepLosesNothingAndIngestsNothingTwice(step: String) async throws {
        try await withTemporaryDirectory { dir in
            let (inbox, state, output) = (dir + "/inbox", dir + "/state", dir + "/processed")
            let expected = try drop(40, into: inbox)
            let daemon = [
                "daemon", "--oneshot", "--inbox", inbox, "--state", state, "--processor", "store", "--output", output,
            ]
            let killed = try await runSharepipe(daemon, environment: ["SHAREPIPE_CRASH_AFTER": step])
            #expect(killed.status == 128 + SIGKILL, "the crash hook for \(step) did not fire: \(killed.stderr)")

            let restarted = try await runSharepipe(daemon)
            #expect(restarted.status == 0, "\(restarted.stderr)")
            #expect(storedContents(output).sorted() == expected.sorted(), "lost or stored twice after \(step)")
            #expect(names(inbox).isEmpty, "\(names(inbox))")
            for stage in ["staging", "incoming", "processing", "quarantine"] {
                #expect(names(state + "/" + stage).isEmpty, "\(stage) after \(step): \(names(state + "/" + stage))")
            }
            // The ledger agrees: nothing recorded as still on its way.
            let listing = try await runSharepipe(["ls", "--state", state, "--json"])
            #expect(listing.status == 0)
            let shares = (try listing.jsonObject["shares"]) as? [Any]
            #expect(shares?.isEmpty == true, "\(listing.stdout)")
        }
    }

    /// A backlog far larger than the descriptor limit: claims must not run ahead of the removals (each claim holds
    /// its directory open), or the consumer dies with "Too many open files".
    @Test func aBacklogDeeperThanTheDescriptorLimitIsProcessedWhole() async throws {
        try await withTemporaryDirectory { dir in
            let (inbox, state) = (dir + "/inbox", dir + "/state")
            _ = try drop(1500, into: inbox)
            let binary = try sharepipeBinaryPath()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = [
                "-c", "ulimit -n 256 && ulimit -Hn 256 && exec \"$0\" daemon --oneshot --processor discard "
                    + "--inbox \"$1\" --state \"$2\" 2>/dev/null",
                binary, inbox, state,
            ]
            try launchSerially(process)
            #expect(try await eventually(.seconds(120)) { !process.isRunning })
            #expect(process.terminationStatus == 0)
            #expect(names(inbox).isEmpty)
            #expect(names(state + "/incoming").isEmpty && names(state + "/processing").isEmpty)
        }
    }

    /// Starts a daemon and waits until it is ready.
    func startDaemon(_ arguments: [String]) async throws -> SharepipeProcess {
        let daemon = try SharepipeProcess(arguments)
        guard try await eventually(.seconds(30), { daemon.stderrSoFar.contains("event=daemon.ready") }) else {
            throw SupportError("not ready: \(daemon.stderrSoFar)")
        }
        return daemon
    }

    /// Two daemons on one inbox (with one state directory or each its own): 1,000 drops, renamed in as most
    /// programs drop files, each stored exactly once, and both daemons took part. Two busy daemons load both cores
    /// for seconds, so, like the several-hosts runs, this runs alone with SHAREPIPE_TEST_CLUSTER=1 (`.ci/run` does).
    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["SHAREPIPE_TEST_CLUSTER"] == "1",
                 "multi-daemon run: set SHAREPIPE_TEST_CLUSTER=1 to run it alone (.ci/run does)"),
        arguments: [false, true])
    func twoDaemonsOnOneInboxTakeEachDropOnceAndShareTheWork(separateStates: Bool) async throws {
        try await withTemporaryDirectory { dir in
            let (inbox, output, outside) = (dir + "/inbox", dir + "/processed", dir + "/outside")
            try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
            let daemons = try await [dir + "/state-a", separateStates ? dir + "/state-b" : dir + "/state-a"].asyncMap {
                try await startDaemon([
                    "daemon", "--inbox", inbox, "--state", $0, "--processor", "store", "--output", output,
                    "--settle", "50",
                ])
            }
            let expected = try drop(1000, into: outside)
            for index in 0..<1000 {
                #expect(rename(outside + "/drop-\(index).txt", inbox + "/drop-\(index).txt") == 0)
            }
            #expect(try await eventually(.seconds(180), every: .milliseconds(200)) {
                storedContents(output).count >= expected.count
            })
            // Anything stored twice would be stored before a last drop is (its settle window ends later) and before
            // both spools are empty again.
            let last = "the last drop\n"
            try writeFile(outside + "/zz-last.txt", last)
            #expect(rename(outside + "/zz-last.txt", inbox + "/zz-last.txt") == 0)
            let states = Set([dir + "/state-a", separateStates ? dir + "/state-b" : dir + "/state-a"])
            #expect(try await eventually(.seconds(60), every: .milliseconds(200)) {
                storedContents(output).contains(last) && states.allSatisfy { state in
                    ["staging", "incoming", "processing"].allSatisfy { names(state + "/" + $0).isEmpty }
                }
            })
            for daemon in daemons { daemon.signal(SIGTERM) }
            let results = try await daemons.asyncMap { try await $0.waitForExit(timeout: .seconds(30)) }
            #expect(results.allSatisfy { $0.status == 0 })
            #expect(storedContents(output).sorted() == (expected + [last]).sorted())
            #expect(names(inbox).isEmpty, "\(names(inbox).prefix(5))")
            for result in results {
                let published = result.stderr.components(separatedBy: "event=inbox.published").count - 1
                let processed = result.stderr.components(separatedBy: "event=share.processed").count - 1
                #expect(published + processed > 0, "a daemon did none of the work")
            }
        }
    }

    /// Processed shares' directories are kept for reuse (`STATE/recycled`): after 300 drops nothing of their
    /// content or names is left there, only emptied spares (zeros at most); copies the store processor linked into
    /// its output keep every byte; a daemon that stops removes what it kept, and a restart what a killed one kept.
    @Test(arguments: ["discard", "store"])
    func processedSharesLeaveOnlyEmptySparesAndARestartRemovesThem(processor: String) async throws {
        try await withTemporaryDirectory { dir in
            let (inbox, state, output) = (dir + "/inbox", dir + "/state", dir + "/processed")
            try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
            let daemon = try await startDaemon(
                ["daemon", "--inbox", inbox, "--state", state, "--processor", processor, "--settle", "50"]
                    + (processor == "store" ? ["--output", output] : []))
            let expected = try drop(300, into: dir + "/outside")
            for index in 0..<300 {
                #expect(rename(dir + "/outside/drop-\(index).txt", inbox + "/drop-\(index).txt") == 0)
            }
            #expect(try await eventually(.seconds(120), every: .milliseconds(100)) {
                daemon.stderrSoFar.components(separatedBy: "event=share.processed").count - 1 == 300
                    && ["staging", "incoming", "processing"].allSatisfy { names(state + "/" + $0).isEmpty }
            })
            if processor == "store" { #expect(storedContents(output).sorted() == expected.sorted()) }

            let kept = names(state + "/recycled")
            #expect(!kept.isEmpty, "nothing was kept for reuse")
            let shareIDs = Set(daemon.stderrSoFar.split(separator: " ").filter { $0.hasPrefix("share=") }
                .map { String($0.dropFirst(6)) })
            for directory in kept {
                #expect(!shareIDs.contains(directory))
                for spare in names(state + "/recycled/" + directory) {
                    #expect(spare.hasPrefix("spare-") || spare == "manifest.json", "\(spare)")
                    let bytes = try #require(
                        FileManager.default.contents(atPath: state + "/recycled/" + directory + "/" + spare))
                    #expect(bytes.allSatisfy { $0 == 0 }, "\(directory)/\(spare) kept content")
                }
            }
            daemon.signal(SIGTERM)
            #expect(try await daemon.waitForExit(timeout: .seconds(30)).status == 0)
            #expect(names(state + "/recycled").isEmpty)

            let killed = try await startDaemon(
                ["daemon", "--inbox", inbox, "--state", state, "--processor", "discard", "--settle", "50"])
            _ = try drop(20, into: inbox, prefix: "again")
            #expect(try await eventually(.seconds(60), every: .milliseconds(100)) {
                killed.stderrSoFar.components(separatedBy: "event=share.processed").count - 1 == 20
            })
            killed.signal(SIGKILL)
            _ = try await killed.waitForExit(timeout: .seconds(30))
            #expect(!names(state + "/recycled").isEmpty)
            let restarted = try await runSharepipe(
                ["daemon", "--oneshot", "--inbox", inbox, "--state", state, "--processor", "discard"])
            #expect(restarted.status == 0, "\(restarted.stderr)")
            #expect(names(state + "/recycled").isEmpty)
        }
    }
}

extension Array {
    /// `map` with an async transform, in order.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
