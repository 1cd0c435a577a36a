import Foundation
import Glibc
import Testing

/// sharepipe on real FUSE file systems from Debian — bindfs (a passthrough) and sshfs over an sshd of the test's
/// own on 127.0.0.1 (a network file system) — and on powercutfs (no power cut here): the state directory, then the
/// inbox, then the output on the mount, the rest on the local disk. With default flags the daemon ingests,
/// processes and stores every drop, whatever the mount refuses (all three: rename flags; powercutfs: a
/// capacity); two daemons on one spool on the mount take each drop exactly once; `doctor` names what it found.
@Suite(.serialized, .timeLimit(.minutes(10)), .enabled(if: FuseEnvironment.requested, "set SHAREPIPE_TEST_FUSE=1"))
struct FuseTests {
    /// Which FUSE file system serves the mount.
    enum Kind: String, CaseIterable, Sendable {
        case bindfs, sshfs, powercutfs

        var tools: [String] {
            switch self {
            case .bindfs: FuseEnvironment.bindfsTools
            case .sshfs: FuseEnvironment.sshfsTools
            case .powercutfs: FuseEnvironment.powerCutTools
            }
        }
    }

    /// Which location sits on the mount.
    enum Location: String, CaseIterable, Sendable {
        case state, inbox, output
    }

    /// A mount of `kind` over a fresh backing directory in `dir`, for the length of `body`.
    func withMount<T>(_ kind: Kind, in dir: String, _ body: (String) async throws -> T) async throws -> T {
        let backing = dir + "/backing"
        let mountpoint = dir + "/mnt"
        try FileManager.default.createDirectory(atPath: backing, withIntermediateDirectories: true)
        var server: LocalSSHServer?
        let mount: FuseMount
        switch kind {
        case .bindfs: mount = .bindfs(backing: backing, at: mountpoint)
        case .powercutfs: mount = try .powerCut(backing: backing, at: mountpoint)
        case .sshfs:
            let ssh = try LocalSSHServer(directory: dir + "/ssh")
            server = ssh
            mount = ssh.sshfs(backing, at: mountpoint)
        }
        try mount.mount()
        defer {
            mount.unmount()
            _ = server
        }
        return try await body(mountpoint)
    }

    static let cases: [(Kind, Location)] = Kind.allCases.flatMap { kind in Location.allCases.map { (kind, $0) } }

    @Test(arguments: cases)
    func everyDropIsStoredOnceWithTheLocationOnAFuseMount(kind: Kind, location: Location) async throws {
        try #require(FuseEnvironment.enabled(kind.tools) || !FuseEnvironment.required, "tools missing in CI")
        guard FuseEnvironment.missing(kind.tools).isEmpty else { return }
        try await withTemporaryDirectory { dir in
            try await withMount(kind, in: dir) { mountpoint in
                func place(_ name: String, _ here: Location) -> String {
                    (location == here ? mountpoint + "/" : dir + "/local/") + name
                }
                let (inbox, state, output) = (place("inbox", .inbox), place("state", .state), place("output", .output))
                let scratch = place("scratch", .inbox)
                var drops = DropSet()
                let names = try drops.prepare(60, in: scratch, tag: "\(kind.rawValue)-\(location.rawValue)")
                try drops.release(names, from: scratch, into: inbox)

                let doctor = try await runSharepipe([
                    "doctor", "--state", state, "--inbox", inbox, "--output", output, "--json",
                ])
                let checks = try #require(try doctor.json as? [[String: Any]])
                let line = checks.first { $0["check"] as? String == "filesystem-\(location.rawValue)" }
                let detail = try #require(line?["detail"] as? String, "\(doctor.stdout)")
                // Debian's bindfs and sshfs refuse rename flags as powercutfs does; only powercutfs hides its capacity.
                #expect(detail.hasPrefix("type fuse, barrier fsync, claim link, capacity "), "\(detail)")
                #expect(detail.contains("capacity unknown") == (kind == .powercutfs), "\(detail)")

                let run = try await runSharepipe([
                    "daemon", "--oneshot", "--inbox", inbox, "--state", state, "--processor", "store", "--output",
                    output,
                ])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stderr.contains("event=filesystem.capabilities location=\(location.rawValue) type=fuse"))
                let stored = sha256Digests(of: regularFiles(under: output))
                #expect(stored.sorted() == drops.digests.sorted(), "\(stored.count) stored of \(drops.digests.count)")
                #expect(entryNames(inbox).isEmpty, "\(entryNames(inbox).prefix(5))")
                for stage in ["staging", "incoming", "processing", "quarantine"] {
                    #expect(entryNames(state + "/" + stage).isEmpty, "left in \(stage)")
                }
            }
        }
    }

    /// Two daemons started together on one inbox and one state directory, both on the mount: 300 drops, each stored
    /// exactly once, and both daemons did part of the work.
    @Test(arguments: Kind.allCases)
    func twoDaemonsOnOneSpoolOnAFuseMountTakeEachDropOnce(kind: Kind) async throws {
        try #require(FuseEnvironment.enabled(kind.tools) || !FuseEnvironment.required, "tools missing in CI")
        guard FuseEnvironment.missing(kind.tools).isEmpty else { return }
        try await withTemporaryDirectory { dir in
            try await withMount(kind, in: dir) { mountpoint in
                let (inbox, state, output) = (mountpoint + "/inbox", mountpoint + "/state", dir + "/output")
                var drops = DropSet()
                let names = try drops.prepare(300, in: mountpoint + "/scratch", tag: "race")
                let arguments = [
                    "daemon", "--inbox", inbox, "--state", state, "--processor", "store", "--output", output,
                    "--settle", "20",
                ]
                // Started at the same moment: both open, migrate and recover one fresh ledger on the mount at once
                // (one of them used to exit with "database is locked").
                let daemons = try (0..<2).map { _ in try SharepipeProcess(arguments) }
                for daemon in daemons {
                    #expect(try await eventually(.seconds(30)) { daemon.stderrSoFar.contains("event=daemon.ready") },
                            "\(daemon.stderrSoFar)")
                }
                try drops.release(names, from: mountpoint + "/scratch", into: inbox)
                #expect(try await eventually(.seconds(180)) { regularFiles(under: output).count >= names.count })
                // Anything stored twice would show up in this grace period.
                try await Task.sleep(for: .milliseconds(500))
                for daemon in daemons { daemon.signal(SIGTERM) }
                var results: [ProcessResult] = []
                for daemon in daemons { results.append(try await daemon.waitForExit(timeout: .seconds(30))) }
                #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
                let stored = sha256Digests(of: regularFiles(under: output))
                #expect(stored.sorted() == drops.digests.sorted(), "\(stored.count) stored of \(drops.digests.count)")
                for result in results {
                    let published = result.stderr.components(separatedBy: "event=inbox.published").count - 1
                    let processed = result.stderr.components(separatedBy: "event=share.processed").count - 1
                    #expect(published + processed > 0, "a daemon did none of the work")
                }
            }
        }
    }
}
