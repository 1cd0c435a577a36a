import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// `Diagnostics`, the checks behind `sharepipe doctor`, in the situations an end-to-end run cannot set up.
@Suite(.timeLimit(.minutes(5)))
struct DiagnosticsTests {
    @Test func libmagicWithoutADatabaseFailsWithAHint() {
        let check = Diagnostics.libmagic(Magic(databasePath: "/nonexistent/magic.mgc"))
        #expect(check.status == .failure)
        #expect(check.detail.contains("did not load"))
        #expect(check.hint?.contains("libmagic") == true)
        #expect(Diagnostics.libmagic().status == .ok)
    }

    @Test func hiddenInotifyLimitsAreUnknownNotAFailure() async throws {
        try await withTemporaryDirectory { dir in
            // A /proc without sys/fs/inotify, as systemd's ProcSubset=pid leaves it.
            try FileManager.default.createDirectory(atPath: dir + "/proc/self", withIntermediateDirectories: true)
            let check = Diagnostics.inotify(proc: dir + "/proc")
            #expect(check.status == .ok)
            #expect(check.detail.contains("limits unknown"))
            #expect(check.detail.contains("0 instances open"))

            try FileManager.default.createDirectory(
                atPath: dir + "/proc/sys/fs/inotify", withIntermediateDirectories: true)
            try writeFile(dir + "/proc/sys/fs/inotify/max_user_watches", "8192\n")
            try writeFile(dir + "/proc/sys/fs/inotify/max_user_instances", "128\n")
            let visible = Diagnostics.inotify(proc: dir + "/proc")
            #expect(visible.detail.hasPrefix("max_user_watches 8192, max_user_instances 128;"))
        }
    }

    @Test func stateDirectoryChecksExistingMissingAndImpossiblePaths() async throws {
        try await withTemporaryDirectory { dir in
            let missing = Diagnostics.stateDirectory(dir + "/a/b/state")
            #expect(missing.status == .ok)
            #expect(missing.detail.hasSuffix("can be created in \(dir)"))
            #expect(!FileManager.default.fileExists(atPath: dir + "/a"))

            _ = try Spool(root: dir + "/state")
            let existing = Diagnostics.stateDirectory(dir + "/state")
            #expect(existing.status == .ok)
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/state").allSatisfy {
                !$0.hasPrefix(".sharepipe-probe")
            })

            try FileManager.default.removeItem(atPath: dir + "/state/incoming")
            try writeFile(dir + "/state/incoming", "a file where a stage directory belongs")
            let broken = Diagnostics.stateDirectory(dir + "/state")
            #expect(broken.status == .failure)
            #expect(broken.detail.contains("incoming is a regular file"))

            try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: dir + "/state")
            let symlink = Diagnostics.stateDirectory(dir + "/link")
            #expect(symlink.status == .failure)
            #expect(symlink.hint?.contains("symlink points to") == true)
        }
    }

    @Test func freeSpaceWarnsAndFailsAtItsThresholds() async throws {
        try await withTemporaryDirectory { dir in
            #expect(Diagnostics.freeSpace(dir, minimum: 0, threshold: 0).status == .ok)
            #expect(Diagnostics.freeSpace(dir, minimum: 0, threshold: .max).status == .warning)
            let failed = Diagnostics.freeSpace(dir + "/not/yet", minimum: .max, threshold: .max)
            #expect(failed.status == .failure)
            #expect(failed.detail.contains("ERR_SPOOL_FULL"))
        }
    }

    @Test func pathsAndSizesAreDescribedForPeople() {
        #expect(Diagnostics.parentPath("a/b") == "a")
        #expect(Diagnostics.parentPath("b") == ".")
        #expect(Diagnostics.parentPath("/b") == "/")
        #expect(Diagnostics.parentPath("/a/b/") == "/a")
        #expect(System.describeBytes(512) == "512 B")
        #expect(System.describeBytes(100 << 20) == "100.0 MiB")
        #expect(System.describeBytes(3 << 29) == "1.5 GiB")
    }
}
