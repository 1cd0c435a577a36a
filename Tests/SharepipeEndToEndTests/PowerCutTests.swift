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
/// `SHAREPIPE_TEST_POWERCUT_ROUNDS=10` runs ten random-moment rounds per layout instead of one;
/// `SHAREPIPE_TEST_POWERCUT_LAYOUTS=all,state` runs only those layouts.
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
    static let steps = [
        "barrier", "record-staged", "renamed", "sources-unlinked", "record-published", "record-processed", "removed",
    ]
    static let randomRounds = Int(ProcessInfo.processInfo.environment["SHAREPIPE_TEST_POWERCUT_ROUNDS"] ?? "") ?? 1
    static let layouts = ProcessInfo.processInfo.environment["SHAREPIPE_TEST_POWERCUT_LAYOUTS"].map { list in
        list.split(separator: ",").compactMap { Layout(rawValue: String($0)) }
    } ?? Layout.allCases

    @Test(arguments: layouts)
    func aPowerCutLosesNoDropStoresNoneTwiceAndTearsNone(layout: Layout) async throws {
        try await withTemporaryDirectory { dir in
            let backing = dir + "/backing"
            try FileManager.default.createDirectory(atPath: backing, withIntermediateDirectories: true)
            let fileSystem = try FuseMount.powerCut(backing: backing, at: dir + "/mnt")
            try fileSystem.mount()
            defer { fileSystem.unmount() }
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
                    _ = try await running.exit(timeout: .seconds(30))
                case .after(let step):
                    try drops.release(names, from: scratch, into: inbox)
                    let killed = try await runSharepipeAsync(
                        daemon + ["--oneshot"], environment: ["SHAREPIPE_CRASH_AFTER": step])
                    #expect(killed.status == 128 + SIGKILL, "the crash hook for \(step) did not fire: \(killed.stderr)")
                }
                try fileSystem.powerCut()
                try fileSystem.mount()
                let restarted = try await runSharepipeAsync(daemon + ["--oneshot"])
                #expect(restarted.status == 0, "\(restarted.stderr)")
                let label = "layout \(layout.rawValue), round \(round) (\(kill))"
                try check(output: output, expected: drops.digests, label: label)
                #expect(entryNames(inbox).isEmpty, "\(label): left in the inbox: \(entryNames(inbox).prefix(5))")
                for stage in ["staging", "incoming", "processing", "quarantine"] {
                    #expect(entryNames(state + "/" + stage).isEmpty, "\(label): left in \(stage)")
                }
            }
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
