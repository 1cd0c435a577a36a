import Foundation
import Testing

/// Fault tests through the built binary: `kill -9` while the daemon ingests, a state directory on a tmpfs that
/// fills up, an `exec` processor that hangs, and a second consumer started beside a live claim. Each one is bounded
/// to seconds; together they stay well under the CI budget of a debug build.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct FaultTests {
    /// Whether this machine lets the tests mount a tmpfs (root, or CAP_SYS_ADMIN); the full-disk tests need one
    /// because the spool's free-space floor (64 MiB) has no flag and only a real small file system fills up.
    static let canMountTmpfs: Bool = {
        let path = NSTemporaryDirectory() + "sharepipe-tmpfs-probe-" + UUID().uuidString
        guard (try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)) != nil
        else { return false }
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard let mounted = try? runTool(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", path]),
            mounted.status == 0
        else { return false }
        _ = try? runTool(["umount", "-l", path])
        return true
    }()

    // MARK: kill -9

    @Test func killNineWhileIngestingLosesNothingAndRepeatsAtMostOncePerKill() async throws {
        try await withTemporaryDirectory { dir in
            let inbox = dir + "/inbox"
            let state = dir + "/state"
            let reference = dir + "/reference"
            let log = dir + "/processed.log"
            let checker = try writeFile(dir + "/check.sh", checkerScript(log: log))
            try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
            let workers = 2
            let arguments = [
                "daemon", "--inbox", inbox, "--state", state, "--processor", "exec", "--exec", "sh '\(checker)'",
                "--settle", "20", "--workers", String(workers), "--max-attempts", "50", "--retry-delay", "10",
            ]
            let rounds = 5
            var contents: [String: [UInt8]] = [:]
            var delays: [Int] = []
            for round in 0..<rounds {
                let daemon = try SharepipeProcess(arguments)
                for entry in Self.killBatch(round) {
                    if entry.files.count == 1, entry.name == entry.files[0].name {
                        try drop(entry.files[0].bytes, as: entry.name, into: inbox)
                    } else {
                        try dropFolder(entry.name, entry.files, into: inbox)
                    }
                    for file in entry.files {
                        contents[file.name] = file.bytes
                        try writeFile(reference + "/" + file.name, file.bytes)
                    }
                }
                let delay = Int.random(in: 50...400)
                delays.append(delay)
                // The scenario: the kill comes at a random moment of the run.
                try await Task.sleep(for: .milliseconds(delay))
                daemon.signal(SIGKILL)
                let killed = try await daemon.waitForExit(timeout: .seconds(10))
                #expect(killed.status == 128 + SIGKILL, "round \(round): \(killed.stderr)")
            }

            let final = try await runSharepipe(arguments + ["--oneshot"])
            #expect(final.status == 0, "kills after \(delays) ms; \(final.stderr)")
            // Checker runs started by a killed daemon keep going in their own process group; let them end.
            #expect(try await eventually(.seconds(10)) { processes(mentioning: checker).isEmpty })

            let expected = try sha256Sums(of: reference)
            #expect(expected.count == contents.count)
            let runs = try processedRuns(log)
            var runsByName: [String: [ProcessedRun]] = [:]
            for run in runs { runsByName[run.name, default: []].append(run) }
            let lost = expected.keys.filter { runsByName[$0] == nil }.sorted()
            #expect(lost.isEmpty, "never processed (kills after \(delays) ms): \(lost)")
            for run in runs {
                #expect(expected[run.name] == run.sha256, "the processor saw a partial or foreign copy: \(run)")
            }
            for (name, runs) in runsByName {
                #expect(runs.count <= 1 + rounds, "\(name) processed \(runs.count) times with \(rounds) kills")
                let identities = Set(runs.map { $0.shareID + " " + $0.fileID })
                #expect(identities.count == 1, "\(name) was ingested more than once: \(identities.sorted())")
            }
            // A kill interrupts at most one share per worker, and a share here has at most two attachments.
            let repeats = runs.count - runsByName.count
            #expect(repeats <= rounds * workers * 2, "\(repeats) repeated runs after \(rounds) kills")

            #expect(stagesAreEmpty(state), "\(stageListing(state))")
            let leftovers = listing(inbox).filter { $0 != ".rejected" }
            let emptyFolders = leftovers.filter { isEmptyDirectory(inbox + "/" + $0) }
            #expect(leftovers.filter { !emptyFolders.contains($0) }.isEmpty, "left in the inbox: \(leftovers)")
            #expect(listing(inbox + "/.rejected").isEmpty, "rejected: \(listing(inbox + "/.rejected"))")
            #expect(emptyFolders.isEmpty, "empty folders left in the inbox (kills after \(delays) ms)")
        }
    }

    /// One inbox entry: a file (whose only file has the entry's name) or a folder of files.
    private struct Entry {
        var name: String
        var files: [(name: String, bytes: [UInt8])]
    }

    /// Sixty contents per round: fifty single files and five folders of two. Every file's content is its own
    /// (globally unique) name repeated, at sizes from a line to about 60 KB.
    private static func killBatch(_ round: Int) -> [Entry] {
        func content(_ name: String, _ index: Int) -> [UInt8] {
            let lines = index % 20 == 0 ? 4000 : 1 + (index * 37) % 400
            return Array(String(repeating: name + "\n", count: lines).utf8)
        }
        var entries: [Entry] = []
        for item in 0..<50 {
            let index = round * 100 + item
            let name = "r\(round)-f\(item).txt"
            entries.append(Entry(name: name, files: [(name, content(name, index))]))
        }
        for folder in 0..<5 {
            let files = (0..<2).map { part -> (name: String, bytes: [UInt8]) in
                let name = "r\(round)-d\(folder)-g\(part).txt"
                return (name, content(name, round * 100 + 50 + folder * 2 + part))
            }
            entries.append(Entry(name: "r\(round)-d\(folder)", files: files))
        }
        return entries
    }

    /// The `--exec` script: hashes the copy it is given and appends `share-id file-id suggested-name sha256` to
    /// `log` (one short `write` with O_APPEND, so concurrent runs never interleave). A copy that vanished under a
    /// run orphaned by a kill is not logged.
    private func checkerScript(log: String) -> String {
        """
        sum=$(sha256sum "$SHAREPIPE_FILE") || exit 1
        printf '%s %s %s %s\\n' "$SHAREPIPE_SHARE_ID" "${SHAREPIPE_FILE##*/}" "$SHAREPIPE_SUGGESTED_NAME" \
            "${sum%% *}" >> '\(log)'

        """
    }

    /// One line of the checker's log.
    private struct ProcessedRun: CustomStringConvertible {
        var shareID: String
        var fileID: String
        var name: String
        var sha256: String

        var description: String { "\(name) share \(shareID) file \(fileID) sha256 \(sha256)" }
    }

    private func processedRuns(_ log: String) throws -> [ProcessedRun] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count == 4 else { throw SupportError("malformed checker line: \(line)") }
            return ProcessedRun(shareID: fields[0], fileID: fields[1], name: fields[2], sha256: fields[3])
        }
    }

    // MARK: full disk

    @Test(.enabled(if: FaultTests.canMountTmpfs, "mounting a tmpfs needs root or CAP_SYS_ADMIN"))
    func fullStateDirectoryDefersDropsKeepsSourcesAndCatchesUp() async throws {
        try await withTemporaryDirectory { dir in
            let inbox = dir + "/inbox"
            let state = dir + "/state"
            let log = dir + "/processed.log"
            try await withTmpfs(at: state, megabytes: 80) {
                let daemon = try SharepipeProcess(namesLoggingDaemon(inbox: inbox, state: state, log: log))
                #expect(try await eventually(.seconds(10)) { daemon.stderrSoFar.contains("event=daemon.ready") })
                try fillFileSystem(state + "/filler")
                #expect(freeBytes(state) < 64 << 10)

                var drops: [String: [UInt8]] = [:]
                for item in 0..<12 {
                    drops["note\(item).txt"] = Array("note \(item)\n".utf8)
                    try drop(drops["note\(item).txt"]!, as: "note\(item).txt", into: inbox)
                }
                let album: [(name: String, bytes: [UInt8])] = [("cover.jpg", jpegBytes), ("back.png", pngBytes)]
                try dropFolder("album", album, into: inbox)
                #expect(try await eventually(.seconds(10)) { deferredCount(daemon.stderrSoFar) >= 13 })
                // Deferred drops are due again 5 s later and the retry loop wakes every 5 s, so a retry comes within
                // 10 s; it must find the disk still full and defer them again.
                #expect(try await eventually(.seconds(12)) { deferredCount(daemon.stderrSoFar) >= 26 })
                let stderr = daemon.stderrSoFar
                #expect(isAlive(daemon.pid), "the daemon died on a full disk: \(stderr)")
                #expect(!stderr.contains("event=inbox.rejected"), "\(stderr)")
                #expect(!stderr.contains("level=error"), "\(stderr)")
                for (name, bytes) in drops {
                    #expect(FileManager.default.contents(atPath: inbox + "/" + name).map(Array.init) == bytes)
                }
                for file in album {
                    let path = inbox + "/album/" + file.name
                    #expect(FileManager.default.contents(atPath: path).map(Array.init) == file.bytes)
                }
                #expect(listing(state + "/incoming").isEmpty)
                #expect(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").isEmpty)

                try FileManager.default.removeItem(atPath: state + "/filler")
                let all = Set(drops.keys).union(album.map(\.name))
                #expect(try await eventually(.seconds(20)) { Set(loggedNames(log)).isSuperset(of: all) })
                #expect(Set(loggedNames(log)) == all)
                #expect(try await eventually(.seconds(5)) { listing(inbox).filter { $0 != ".rejected" }.isEmpty })
                #expect(listing(inbox + "/.rejected").isEmpty)
                #expect(try await eventually(.seconds(5)) { stagesAreEmpty(state) }, "\(stageListing(state))")
                daemon.signal(SIGTERM)
                let stopped = try await daemon.waitForExit(timeout: .seconds(30))
                #expect(stopped.status == 0, "\(stopped.stderr)")
            }
        }
    }

    @Test(.enabled(if: FaultTests.canMountTmpfs, "mounting a tmpfs needs root or CAP_SYS_ADMIN"))
    func copyThatRunsOutOfSpaceKeepsItsSourceAndIsRetried() async throws {
        try await withTemporaryDirectory { dir in
            let inbox = dir + "/inbox"
            let state = dir + "/state"
            let log = dir + "/processed.log"
            try await withTmpfs(at: state, megabytes: 100) {
                let daemon = try SharepipeProcess(namesLoggingDaemon(inbox: inbox, state: state, log: log))
                #expect(try await eventually(.seconds(10)) { daemon.stderrSoFar.contains("event=daemon.ready") })
                // About 66 MiB free: above the 64 MiB floor, so the copy starts, and too little for 70 MiB.
                try writeFile(state + "/filler", [UInt8](repeating: 0, count: 34 << 20))
                #expect(freeBytes(state) > 64 << 20)
                let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 ^ ($0 >> 9)) })
                var big = Data()
                for _ in 0..<70 { big.append(block) }
                try drop(big, as: "big.bin", into: inbox)
                #expect(try await eventually(.seconds(20)) {
                    let stderr = daemon.stderrSoFar
                    return stderr.contains("event=inbox.deferred") || stderr.contains("event=inbox.rejected")
                })
                let stderr = daemon.stderrSoFar
                #expect(stderr.contains("code=ERR_IO") || stderr.contains("code=ERR_SPOOL_FULL"), "\(stderr)")
                #expect(isAlive(daemon.pid), "\(stderr)")
                #expect(listing(state + "/staging").isEmpty, "a partial copy was left in staging")
                // ENOSPC while copying is ERR_IO for a share that could not be attempted: the source stays and is
                // tried again once space returns.
                #expect(FileManager.default.fileExists(atPath: inbox + "/big.bin"), "\(listing(inbox + "/.rejected"))")
                #expect(listing(inbox + "/.rejected").isEmpty)
                try FileManager.default.removeItem(atPath: state + "/filler")
                #expect(try await eventually(.seconds(20)) { loggedNames(log) == ["big.bin"] })
                #expect(try await eventually(.seconds(5)) { listing(inbox).isEmpty })
                daemon.signal(SIGTERM)
                let stopped = try await daemon.waitForExit(timeout: .seconds(30))
                #expect(stopped.status == 0, "\(stopped.stderr)")
            }
        }
    }

    @Test(.enabled(if: FaultTests.canMountTmpfs, "mounting a tmpfs needs root or CAP_SYS_ADMIN"))
    func daemonOutlivesALedgerWriteOnAFullDiskAndCatchesUp() async throws {
        try await withTemporaryDirectory { dir in
            let inbox = dir + "/inbox"
            let state = dir + "/state"
            let log = dir + "/processed.log"
            try await withTmpfs(at: state, megabytes: 80) {
                let arguments = namesLoggingDaemon(inbox: inbox, state: state, log: log, pause: "0.3") + [
                    "--workers", "1",
                ]
                let daemon = try SharepipeProcess(arguments)
                #expect(try await eventually(.seconds(10)) { daemon.stderrSoFar.contains("event=daemon.ready") })
                let early = (0..<6).map { "early\($0).txt" }
                for name in early { try drop(Array("\(name)\n".utf8), as: name, into: inbox) }
                #expect(try await eventually(.seconds(10)) {
                    daemon.stderrSoFar.components(separatedBy: "event=inbox.published").count > early.count
                })
                // Shares wait in incoming while the one-worker consumer is busy; now the disk fills under it.
                try fillFileSystem(state + "/filler")
                let late = ["late0.txt", "late1.txt"]
                for name in late { try drop(Array("\(name)\n".utf8), as: name, into: inbox) }
                // Ledger writes fail with SQLITE_FULL and the late drops cannot be staged (each is deferred); the
                // daemon keeps running.
                #expect(try await eventually(.seconds(20)) { deferredCount(daemon.stderrSoFar) >= late.count },
                    "\(daemon.stderrSoFar)")
                #expect(isAlive(daemon.pid), "\(daemon.stderrSoFar)")
                for name in late {
                    #expect(FileManager.default.fileExists(atPath: inbox + "/" + name), "\(name) left the inbox")
                }

                try FileManager.default.removeItem(atPath: state + "/filler")
                let all = Set(early + late)
                #expect(try await eventually(.seconds(30)) { Set(loggedNames(log)).isSuperset(of: all) })
                let names = loggedNames(log)
                #expect(Set(names) == all)
                // The share in flight when the ledger failed may run once more; nothing else repeats.
                #expect(names.count <= all.count + 1, "\(names)")
                #expect(try await eventually(.seconds(5)) { listing(inbox).isEmpty }, "\(listing(inbox))")
                // A share whose completion the full disk failed stays claimed in `processing` until the daemon's
                // periodic sweep (every 30 s) hands it on; its name is logged already, so this may wait for the sweep.
                #expect(try await eventually(.seconds(45)) { stagesAreEmpty(state) }, "\(stageListing(state))")
                daemon.signal(SIGTERM)
                let stopped = try await daemon.waitForExit(timeout: .seconds(30))
                #expect(stopped.status == 0, "\(stopped.stderr)")
            }
        }
    }

    /// A daemon whose `exec` processor appends each copy's suggested name to `log`, after `pause` seconds.
    private func namesLoggingDaemon(inbox: String, state: String, log: String, pause: String = "0") -> [String] {
        [
            "daemon", "--inbox", inbox, "--state", state, "--processor", "exec", "--settle", "20",
            "--exec", "sleep \(pause); printf '%s\\n' \"$SHAREPIPE_SUGGESTED_NAME\" >> '\(log)'",
        ]
    }

    // MARK: hanging processor

    @Test(arguments: [false, true])
    func hangingProcessorIsKilledRetriedAndQuarantined(ignoringSIGTERM: Bool) async throws {
        try await withTemporaryDirectory { dir in
            let inbox = dir + "/inbox"
            let state = dir + "/state"
            // A sleep length no other process uses, so its command line finds exactly the processor's children.
            let marker = "60.\(Int.random(in: 100_000...999_999))"
            let command = (ignoringSIGTERM ? "trap '' TERM; " : "") + "sleep \(marker)"
            let files: [(name: String, bytes: [UInt8])] = [
                ("stuck.txt", Array(String(repeating: "stuck\n", count: 500).utf8)), ("photo.jpg", jpegBytes),
            ]
            try dropFolder("stuck", files, into: inbox)
            let started = ContinuousClock.now
            let daemon = try SharepipeProcess([
                "daemon", "--inbox", inbox, "--state", state, "--oneshot", "--processor", "exec", "--exec", command,
                "--exec-timeout", "200", "--max-attempts", "2", "--retry-delay", "50",
            ])
            let result = try await daemon.waitForExit(timeout: .seconds(30))
            let elapsed = ContinuousClock.now - started
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains("quarantined=1"), "\(result.stderr)")
            // Two attempts of 200 ms, plus the 2 s grace before SIGKILL when SIGTERM is ignored.
            #expect(elapsed < .seconds(ignoringSIGTERM ? 15 : 10), "took \(elapsed)")
            #expect(try await eventually(.seconds(2)) { processes(mentioning: marker).isEmpty },
                "left behind: \(processes(mentioning: marker))")

            let quarantined = listing(state + "/quarantine")
            try #require(quarantined.count == 1, "quarantine holds \(quarantined)")
            let share = state + "/quarantine/" + quarantined[0]
            let reasonData = try #require(FileManager.default.contents(atPath: share + "/reason.json"))
            let reason = try #require(try JSONSerialization.jsonObject(with: reasonData) as? [String: Any])
            #expect(reason["code"] as? String == "ERR_PROCESSOR_FAILED")
            // The command ran and was killed at its timeout (a poll for its 200 ms-lived process missed it under load).
            #expect((reason["message"] as? String)?.contains("ran longer than") == true, "\(reason)")
            #expect(reason["attempts"] as? Int == 2)
            let manifestData = try #require(FileManager.default.contents(atPath: share + "/manifest.json"))
            let manifest = try #require(try JSONSerialization.jsonObject(with: manifestData) as? [String: Any])
            let attachments = try #require(manifest["attachments"] as? [[String: Any]])
            #expect(attachments.count == files.count)
            for attachment in attachments {
                let name = try #require(attachment["suggestedName"] as? String)
                let file = try #require(attachment["file"] as? String)
                let copy = FileManager.default.contents(atPath: share + "/" + file).map(Array.init)
                #expect(copy == files.first { $0.name == name }?.bytes, "the copy of \(name) is not intact")
            }
            #expect(listing(state + "/incoming").isEmpty)
            #expect(listing(state + "/processing").isEmpty)
            #expect(listing(inbox).isEmpty, "\(listing(inbox))")
        }
    }

    // MARK: live claims

    @Test func secondConsumerLeavesALiveClaimAlone() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let log = dir + "/runs.log"
            var shareIDs: [String] = []
            for name in ["first.txt", "second.txt"] {
                let source = try writeFile(dir + "/" + name, "\(name)\n")
                let published = try await runSharepipe(["share", "--state", state, "--json", source])
                #expect(published.status == 0, "\(published.stderr)")
                shareIDs.append(try #require(try published.jsonObject["shareId"] as? String))
            }
            let consume = [
                "consume", "--state", state, "--processor", "exec", "--workers", "1", "--json", "--exec",
                "echo \"start $SHAREPIPE_SHARE_ID\" >> '\(log)'; sleep 2; "
                    + "echo \"done $SHAREPIPE_SHARE_ID\" >> '\(log)'",
            ]
            let holder = try SharepipeProcess(consume)
            #expect(try await eventually(.seconds(10)) { loggedNames(log).contains { $0.hasPrefix("start ") } })
            let held = try #require(loggedNames(log).first?.dropFirst("start ".count)).description
            #expect(listing(state + "/processing") == [held])

            let second = try await runSharepipe(consume)
            #expect(second.status == 0, "\(second.stderr)")
            let report = try second.jsonObject
            let recovery = try #require(report["recovery"] as? [String: Any])
            #expect(recovery["liveClaims"] as? Int == 1)
            #expect(recovery["returnedToIncoming"] as? Int == 0)
            #expect(report["processed"] as? Int == 1)

            let first = try await holder.waitForExit(timeout: .seconds(30))
            #expect(first.status == 0, "\(first.stderr)")
            #expect(try first.jsonObject["processed"] as? Int == 1)
            let other = try #require(shareIDs.first { $0 != held })
            let runs = loggedNames(log)
            #expect(runs.sorted() == ["done " + held, "done " + other, "start " + held, "start " + other].sorted(),
                "\(runs)")
            #expect(stagesAreEmpty(state), "\(stageListing(state))")
        }
    }
}

// MARK: - Helpers

/// Runs a tool found on `PATH` (through `/usr/bin/env`); returns its exit status and stdout.
private func runTool(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try launchSerially(process)
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}

/// Mounts a tmpfs of `megabytes` at `path` for the duration of `body`; lazily unmounted afterwards, so a process
/// still holding it open cannot make the unmount fail.
private func withTmpfs<T>(at path: String, megabytes: Int, _ body: () async throws -> T) async throws -> T {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    let mounted = try runTool(["mount", "-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path])
    guard mounted.status == 0 else { throw SupportError("cannot mount a tmpfs at \(path)") }
    defer { _ = try? runTool(["umount", "-l", path]) }
    return try await body()
}

/// Writes zeros to `path` until its file system has no space left.
private func fillFileSystem(_ path: String) throws {
    guard FileManager.default.createFile(atPath: path, contents: nil),
        let handle = FileHandle(forWritingAtPath: path)
    else { throw SupportError("cannot create \(path)") }
    defer { try? handle.close() }
    let chunk = Data(count: 1 << 20)
    while (try? handle.write(contentsOf: chunk)) != nil {}
}

/// Bytes free for an unprivileged writer on the file system holding `path`.
private func freeBytes(_ path: String) -> Int64 {
    let attributes = try? FileManager.default.attributesOfFileSystem(forPath: path)
    return (attributes?[.systemFreeSize] as? NSNumber)?.int64Value ?? -1
}

/// Drops a file the way a careful writer does: written under a hidden (ignored) name, then renamed into place.
private func drop(_ bytes: [UInt8], as name: String, into inbox: String) throws {
    try drop(Data(bytes), as: name, into: inbox)
}

/// `drop` for content already in a `Data`.
private func drop(_ data: Data, as name: String, into inbox: String) throws {
    let hidden = inbox + "/.dropping-" + name
    try FileManager.default.createDirectory(atPath: inbox, withIntermediateDirectories: true)
    try data.write(to: URL(fileURLWithPath: hidden))
    try FileManager.default.moveItem(atPath: hidden, toPath: inbox + "/" + name)
}

/// Drops a folder of files: built under a hidden name, then renamed into place in one step.
private func dropFolder(_ name: String, _ files: [(name: String, bytes: [UInt8])], into inbox: String) throws {
    let hidden = inbox + "/.dropping-" + name
    for file in files { try writeFile(hidden + "/" + file.name, file.bytes) }
    try FileManager.default.moveItem(atPath: hidden, toPath: inbox + "/" + name)
}

/// The names in a directory, sorted; none when it is missing.
private func listing(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
}

/// Whether `staging`, `incoming`, `processing` and `quarantine` of a state directory are all empty.
private func stagesAreEmpty(_ state: String) -> Bool {
    stageListing(state).values.allSatisfy(\.isEmpty)
}

/// What each stage directory of a state directory holds.
private func stageListing(_ state: String) -> [String: [String]] {
    Dictionary(uniqueKeysWithValues: ["staging", "incoming", "processing", "quarantine"].map {
        ($0, listing(state + "/" + $0))
    })
}

/// Whether `path` is a directory with nothing in it.
private func isEmptyDirectory(_ path: String) -> Bool {
    var isDirectory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
        && listing(path).isEmpty
}

/// The lines of a log file; none when it is missing.
private func loggedNames(_ log: String) -> [String] {
    ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
}

/// How many drops the daemon's log reports as deferred.
private func deferredCount(_ stderr: String) -> Int {
    stderr.components(separatedBy: "event=inbox.deferred").count - 1
}

/// `sha256sum` over every file in `directory`: file name to hex digest.
private func sha256Sums(of directory: String) throws -> [String: String] {
    let paths = listing(directory).map { directory + "/" + $0 }
    let result = try runTool(["sha256sum", "--"] + paths)
    guard result.status == 0 else { throw SupportError("sha256sum failed") }
    var sums: [String: String] = [:]
    for line in result.output.split(separator: "\n") {
        guard let space = line.firstIndex(of: " ") else { continue }
        let path = line[space...].drop { $0 == " " || $0 == "*" }
        sums[(String(path) as NSString).lastPathComponent] = String(line[..<space])
    }
    return sums
}


/// Whether `pid` is a running (not zombie) process.
private func isAlive(_ pid: Int32) -> Bool {
    guard let stat = readProcFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
    let state = stat[stat.index(after: close)...].first { $0 != " " }
    return state != nil && state != "Z" && state != "X"
}

/// The pids whose command line contains `marker`.
private func processes(mentioning marker: String) -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { Int32($0) }.filter { pid in
        readProcFile("/proc/\(pid)/cmdline")?.contains(marker) ?? false
    }
}
