import Foundation
import Glibc
import Testing

/// Power cuts, on powercutfs (`Tests/PowerCutFS/powercutfs.c`): a FUSE file system that keeps written data in
/// memory until the file is fsynced and forgets it when its server dies. kill -9 alone leaves the page cache
/// intact, so only a test like this one tells a durable spool from one that is not.
///
/// Each layout puts the inbox, the state directory, the output, or all three on it. Each round drops 300 files
/// (written, fsynced, renamed into the inbox); the daemon is killed — at a random moment while the drops arrive,
/// or by `SHAREPIPE_CRASH_AFTER` right after each step of the batched publish and completion —, the power is cut
/// (the server killed, unsynced data gone), the file system served again from what reached its disk, and the
/// daemon restarted until the inbox is drained. Then every dropped file is in the output exactly once, byte for
/// byte (SHA-256), nothing in the output is empty or a store temporary, and the inbox and every stage are empty.
/// The file system comes back on another device number, as after a reboot or a remount: a device number is no
/// file's identity (it lost a drop's published source and ingested it twice when it was one). Each layout runs two
/// random-moment rounds and one round per crash point (13 × 300 drops, about 45 s on 2 cores: the size `.ci/run`
/// runs); `SHAREPIPE_TEST_POWERCUT_ROUNDS=10` runs ten random-moment rounds per layout instead
/// (the issue's acceptance run); `SHAREPIPE_TEST_POWERCUT_LAYOUTS=all,state` runs only those layouts.
@Suite(
    .serialized, .enabled(if: FuseEnvironment.enabled(FuseEnvironment.powerCutTools), "FUSE or gcc is missing"),
    .timeLimit(.minutes(15)))
struct PowerCutTests {
    /// Which locations sit on the power-cut file system.
    enum Layout: String, CaseIterable, Sendable {
        case inbox, state, output, all
    }

    /// How the daemon dies before the power cut.
    enum Kill: Sendable {
        /// SIGKILL while the drops arrive, after a random one of them.
        case randomMoment
        /// `SHAREPIPE_CRASH_AFTER=<step>`: right after that step of the first batch.
        case after(String)
    }

    static let dropsPerRound = 300
    /// The lifecycle's crash points (`ShareLifecycle.crashPoints`) of the publish, the claim, a run's start (a
    /// commit without an fsync: a cut after it finds the claim never started) and the completion.
    static let steps = [
        "publish.barrier", "publish.record-staged", "publish.move-incoming", "publish.sync-incoming",
        "publish.remove-sources", "publish.record-published", "claim.move-processing", "claim.lock",
        "claim.record-claimed", "start.record-started", "complete.record-processed", "complete.remove-processing",
    ]
    static let randomRounds = Int(ProcessInfo.processInfo.environment["SHAREPIPE_TEST_POWERCUT_ROUNDS"] ?? "") ?? 2
    static let layouts = ProcessInfo.processInfo.environment["SHAREPIPE_TEST_POWERCUT_LAYOUTS"].map { list in
        list.split(separator: ",").compactMap { Layout(rawValue: String($0)) }
    } ?? Layout.allCases

    @Test(arguments: layouts)
    func aPowerCutLosesNoDropStoresNoneTwiceAndTearsNone(layout: Layout) async throws {
        try await withPowerCutFileSystem { dir, fileSystem in
            func place(_ name: String, onIt: Bool) -> String { (onIt ? dir + "/mnt/" : dir + "/local/") + name }
            let inboxOnIt = layout == .inbox || layout == .all
            let inbox = place("inbox", onIt: inboxOnIt)
            let scratch = place("scratch", onIt: inboxOnIt)
            let state = place("state", onIt: layout == .state || layout == .all)
            let output = place("output", onIt: layout == .output || layout == .all)
            let daemon = ["daemon", "--inbox", inbox, "--state", state, "--processor", "store", "--output", output]

            var drops = DropSet()
            let kills = Array(repeating: Kill.randomMoment, count: Self.randomRounds) + Self.steps.map(Kill.after)
            for (round, kill) in kills.enumerated() {
                let names = try drops.prepare(Self.dropsPerRound, in: scratch, tag: "r\(round)")
                switch kill {
                case .randomMoment:
                    let running = try SharepipeProcess(daemon + ["--settle", "20"])
                    #expect(try await eventually(.seconds(30)) { running.stderrSoFar.contains("event=daemon.ready") })
                    let moment = Int.random(in: 20..<Self.dropsPerRound)
                    try drops.release(names, from: scratch, into: inbox) { index in
                        if index == moment {
                            usleep(UInt32.random(in: 0..<50_000))
                            running.signal(SIGKILL)
                        }
                    }
                    _ = try await running.waitForExit(timeout: .seconds(30))
                case .after(let step):
                    try drops.release(names, from: scratch, into: inbox)
                    let killed = try await runSharepipe(
                        daemon + ["--oneshot"], environment: ["SHAREPIPE_CRASH_AFTER": step])
                    #expect(killed.status == 128 + SIGKILL, "the crash hook for \(step) did not fire: \(killed.stderr)")
                }
                try powerCut(fileSystem, dir: dir)
                let restarted = try await runSharepipe(daemon + ["--oneshot"])
                #expect(restarted.status == 0, "\(restarted.stderr)")
                let label = "layout \(layout.rawValue), round \(round) (\(kill))"
                try check(output: output, expected: drops.digests, label: label)
                #expect(
                    entryNames(inbox).isEmpty,
                    "\(label): left in the inbox: \(entryNames(inbox).prefix(5)) \(rejections(in: inbox).prefix(3))")
                for stage in ["staging", "incoming", "processing", "quarantine"] {
                    #expect(entryNames(state + "/" + stage).isEmpty, "\(label): left in \(stage)")
                }
            }
        }
    }

    /// Issue 33: with the state directory on powercutfs and a webhook receiver, power cuts lose no event and
    /// produce none twice: after the rounds, each share's published and processed events reached the receiver,
    /// each under one id (a repeat only with the same id), in order.
    @Test func aPowerCutLosesNoNotificationAndProducesNoneTwice() async throws {
        try await withPowerCutFileSystem { dir, fileSystem in
            let receiver = try WebhookReceiver(directory: dir + "/local/receiver")
            try await receiver.start()
            let secret = try receiver.writeSecretFile()
            let inbox = dir + "/local/inbox", scratch = dir + "/local/scratch", state = dir + "/mnt/state"
            let daemon = [
                "daemon", "--inbox", inbox, "--state", state, "--processor", "store", "--output", dir + "/local/output",
                "--notify", receiver.url, "--notify-secret", secret, "--notify-backoff", "100",
            ]
            var drops = DropSet()
            let rounds = 2, perRound = 150
            for round in 0..<rounds {
                let names = try drops.prepare(perRound, in: scratch, tag: "n\(round)")
                let running = try SharepipeProcess(daemon + ["--settle", "20"])
                #expect(try await eventually(.seconds(30)) { running.stderrSoFar.contains("event=daemon.ready") })
                let moment = Int.random(in: 20..<perRound)
                try drops.release(names, from: scratch, into: inbox) { index in
                    if index == moment {
                        usleep(UInt32.random(in: 0..<50_000))
                        running.signal(SIGKILL)
                    }
                }
                _ = try await running.waitForExit(timeout: .seconds(30))
                try powerCut(fileSystem, dir: dir)
                let restarted = try await runSharepipe(daemon + ["--oneshot"])
                #expect(restarted.status == 0, "\(restarted.stderr)")
            }
            // Each drop is published and processed once. A share the cut caught staged, whose row outlived its
            // directory, is rolled back by recovery (`share.rejected`) and its source taken again as a new share.
            let lifecycle: Set<String> = ["share.published", "share.processed"]
            let expected = 2 * rounds * perRound
            let all = try await eventually(.seconds(60), every: .milliseconds(100)) {
                Set(receiver.acknowledged.filter { lifecycle.contains($0.type) }.map { $0.shareID + " " + $0.type })
                    .count >= expected
            }
            let deliveries = receiver.deliveries
            let events = Set(deliveries.filter { lifecycle.contains($0.type) }.map { $0.shareID + " " + $0.type })
            #expect(
                all && events.count == expected,
                "\(events.count) of \(expected) events reached the receiver; rejected: \(rejections(in: inbox))")
            let rolledBack = Set(deliveries.filter { $0.type == "share.rejected" }.map(\.shareID))
            #expect(Set(deliveries.map(\.type)).isSubset(of: lifecycle.union(["share.rejected"])))
            #expect(rolledBack.isDisjoint(with: deliveries.filter { lifecycle.contains($0.type) }.map(\.shareID)))
            #expect(rejections(in: inbox).isEmpty)
            NotificationTests.expectOneIDPerEventInOrder(deliveries)
        }
    }

    /// powercutfs itself: data written to a file after its last name is gone (SQLite writes its `-shm` back from
    /// its mapping after unlinking it) still reads back through the open descriptor, but must not outlive the
    /// file. ext4 gives a freed inode number to the next file created, and that file must come back from a power
    /// cut exactly as it was written and synced — it came back with the dead file's 32 KiB behind its own bytes, and
    /// the daemon rejected it as ERR_TYPE_MISMATCH.
    @Test func unsyncedDataDiesWithItsFileAndNeverReachesTheNextFileOnItsInode() async throws {
        try await withPowerCutFileSystem { dir, fileSystem in
            func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int) -> Bool {
                bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) } == bytes.count
            }
            var kept: [String: [UInt8]] = [:]
            for index in 0..<40 {
                let doomed = dir + "/mnt/doomed-\(index)"
                let fd = open(doomed, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                try #require(fd >= 0)
                #expect(write(fd, [UInt8](repeating: 0xAB, count: 32 << 10), at: 0))
                #expect(unlink(doomed) == 0)
                #expect(write(fd, [UInt8](repeating: 0xCD, count: 32 << 10), at: 0), "a write to an unlinked file")
                // The nameless file still reads back what was written to it.
                var back = [UInt8](repeating: 0, count: 32 << 10)
                let count = back.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
                #expect(count == back.count && back.allSatisfy { $0 == 0xCD }, "read back \(count) bytes")
                close(fd)
                let name = dir + "/mnt/kept-\(index)"
                let bytes = Array("kept \(index)\n".utf8)
                let keptFD = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                try #require(keptFD >= 0)
                #expect(write(keptFD, bytes, at: 0) && fsync(keptFD) == 0)
                close(keptFD)
                kept[name] = bytes
            }
            try fileSystem.powerCut()
            try fileSystem.mount()
            for (name, bytes) in kept.sorted(by: { $0.key < $1.key }) {
                let read = try Data(contentsOf: URL(fileURLWithPath: name))
                let intact = Array(read) == bytes
                #expect(intact, "\(name): \(read.count) bytes after the power cut, \(bytes.count) written")
            }
        }
    }

    /// The power cut, and the file system served again on another device number than before, as a reboot or a
    /// remount may do: the kernel hands out the lowest free anonymous device, so mounts of our own take the free
    /// numbers below the old one and then the old one itself (a detached mount releases it a moment later: a
    /// placeholder that lands above it is unmounted and tried again), and are unmounted once the file system is
    /// back.
    func powerCut(_ fileSystem: FuseMount, dir: String) throws {
        let before = try deviceNumber(of: fileSystem.mountpoint)
        try fileSystem.powerCut()
        var placeholders: [FuseMount] = []
        defer { placeholders.forEach { $0.unmount() } }
        let deadline = ContinuousClock.now + .seconds(10)
        var index = 0
        while ContinuousClock.now < deadline {
            index += 1
            let backing = dir + "/placeholder-backing-\(index)"
            try FileManager.default.createDirectory(atPath: backing, withIntermediateDirectories: true)
            let placeholder = try FuseMount.powerCut(backing: backing, at: dir + "/placeholder-\(index)")
            try placeholder.mount()
            let device = try deviceNumber(of: placeholder.mountpoint)
            if device <= before { placeholders.append(placeholder) }
            if device == before { break }
            if device > before {
                placeholder.unmount()
                usleep(20_000)
            }
        }
        try fileSystem.mount()
        let after = try deviceNumber(of: fileSystem.mountpoint)
        #expect(after != before, "the file system came back on its old device number \(before)")
    }

    func deviceNumber(of path: String) throws -> dev_t {
        var status = stat()
        guard lstat(path, &status) == 0 else { throw SupportError("cannot stat \(path): errno \(errno)") }
        return status.st_dev
    }

    /// Runs `body` with a temporary directory `dir` and powercutfs mounted at `dir/mnt` over `dir/backing`,
    /// unmounted when `body` returns.
    func withPowerCutFileSystem(_ body: (String, FuseMount) async throws -> Void) async throws {
        try await withTemporaryDirectory { dir in
            let backing = dir + "/backing"
            try FileManager.default.createDirectory(atPath: backing, withIntermediateDirectories: true)
            let fileSystem = try FuseMount.powerCut(backing: backing, at: dir + "/mnt")
            try fileSystem.mount()
            defer { fileSystem.unmount() }
            try await body(dir, fileSystem)
        }
    }

    /// The code, message and size of each file in the inbox's `.rejected/`, for a failure's message.
    func rejections(in inbox: String) -> [String] {
        let directory = inbox + "/.rejected"
        return entryNames(directory).filter { !$0.hasSuffix(".reason.json") }.map { name in
            let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name))?[.size] as? Int
            let reason = (try? Data(contentsOf: URL(fileURLWithPath: directory + "/" + name + ".reason.json")))
                .flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
            return "\(reason?["code"] ?? "no reason"): \(reason?["message"] ?? "") (\(size ?? -1) bytes)"
        }
    }

    /// Every expected digest once in the output, nothing else, nothing empty, no store temporary.
    func check(output: String, expected: [String], label: String) throws {
        let files = regularFiles(under: output)
        let empty = files.filter { ((try? FileManager.default.attributesOfItem(atPath: $0))?[.size] as? Int) == 0 }
        let temporaries = files.filter { ($0 as NSString).lastPathComponent.hasPrefix(".sharepipe-") }
        let stored = sha256Digests(of: files)
        #expect(stored.count == files.count, "\(label): sha256sum failed")
        var wanted = Dictionary(expected.map { ($0, 1) }, uniquingKeysWith: +)
        var foreign = 0
        var twice = 0
        for digest in stored {
            switch wanted[digest] {
            case let count? where count > 0: wanted[digest] = count - 1
            case .some: twice += 1
            case nil: foreign += 1
            }
        }
        let lost = wanted.values.reduce(0, +)
        #expect(
            lost == 0 && twice == 0 && foreign == 0 && empty.isEmpty && temporaries.isEmpty,
            """
            \(label): of \(expected.count) drops \(lost) lost, \(twice) stored twice; \(foreign) torn or foreign \
            files, \(empty.count) empty, \(temporaries.count) store temporaries in the output
            """)
    }
}
