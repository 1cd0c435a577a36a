import Foundation
import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// The probed capabilities and the fallbacks they select, on the local disk with the primitives taken away as a
/// FUSE or NFS mount would (the FUSE mounts themselves are in the end-to-end suite).
@Suite struct FileSystemCapabilityTests {
    /// What a mount that refuses rename flags, is no syncfs barrier and reports no capacity looks like.
    static let refusing = FileSystemCapabilities(
        magic: 0x6573_5546, renameNoReplace: false, syncfsIsBarrier: false, capacityKnown: false, totalBytes: 0)

    @Test func theLocalDiskHonoursEveryPrimitiveAndTheFallbacksVariableTakesThemAway() async throws {
        try await withTemporaryDirectory { dir in
            let probed = try FileSystemCapabilities.probe(dir, environment: [:])
            let type = try System.fileSystemType(dir).magic
            if [0xEF53, 0x5846_5342, 0x9123_683E].contains(type) {
                #expect(probed.renameNoReplace && probed.syncfsIsBarrier && probed.capacityKnown)
                #expect(probed.summary.contains("barrier syncfs, claim renameat2"), "\(probed.summary)")
            }
            let reduced = try FileSystemCapabilities.probe(
                dir, environment: ["SHAREPIPE_FS_FALLBACKS": "fsync,link,capacity"])
            #expect(!reduced.renameNoReplace && !reduced.syncfsIsBarrier && !reduced.capacityKnown)
            #expect(reduced.summary.hasSuffix("barrier fsync, claim link, capacity unknown"), "\(reduced.summary)")
            // The probe cleans up after itself.
            #expect(try System.listDirectory(dir).isEmpty)
        }
    }

    @Test func eightRacingClaimersByLinkEachWinADifferentShareAndLeaveNoClaimFile() async throws {
        try await withTemporaryDirectory { dir in
            let incoming = dir + "/incoming"
            let processing = dir + "/processing"
            for path in [incoming, processing] { try System.makeDirectory(path) }
            let shares = (0..<200).map { _ in UUID().uuidString }
            for share in shares { try put(incoming + "/" + share + "/manifest.json", "{}") }
            let from = try OpenDirectory(path: incoming)
            let to = try OpenDirectory(path: processing)
            let won = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try shares.shuffled().filter {
                            try ExclusiveMove.claim($0, from: from, to: to, capabilities: Self.refusing)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(won.sorted() == shares.sorted())
            #expect(try System.listDirectory(incoming).isEmpty)
            for share in shares {
                #expect(try System.listDirectory(processing + "/" + share) == ["manifest.json"])
            }
        }
    }

    @Test func aClaimWhoseOwnerDiedIsRemovedByTheNextClaimerOneHeldIsNot() async throws {
        try await withTemporaryDirectory { dir in
            let incoming = try OpenDirectory(path: dir)
            try System.makeDirectory(dir + "/p")
            let processing = try OpenDirectory(path: dir + "/p")
            let (dead, live) = (UUID().uuidString, UUID().uuidString)
            for share in [dead, live] {
                try put(dir + "/" + share + "/manifest.json", "{}")
                try put(dir + "/" + share + "/.claim.owner", "")
                #expect(try incoming.link(share + "/.claim.owner", to: share + "/.claim"))
            }
            // The live owner holds its claim file's lock.
            let held = try FileDescriptor.open(dir + "/" + live + "/.claim.owner", flags: O_RDONLY)
            #expect(try held.lock(exclusive: true, nonBlocking: true))
            #expect(try ExclusiveMove.claim(dead, from: incoming, to: processing, capabilities: Self.refusing))
            #expect(try !ExclusiveMove.claim(live, from: incoming, to: processing, capabilities: Self.refusing))
            #expect(try System.listDirectory(dir + "/p/" + dead) == ["manifest.json"])
            #expect(try System.lstatIfPresent(dir + "/" + live + "/.claim") != nil)
            _ = consume held
        }
    }

    @Test func movesUnderTheLockAndInboxMovesNeverReplace() async throws {
        try await withTemporaryDirectory { dir in
            for stage in ["a", "b"] { try System.makeDirectory(dir + "/" + stage) }
            let share = UUID().uuidString
            try put(dir + "/a/\(share)/manifest.json", "first")
            try put(dir + "/b/\(share)/manifest.json", "second")
            let (a, b) = (try OpenDirectory(path: dir + "/a"), try OpenDirectory(path: dir + "/b"))
            #expect(try !ExclusiveMove.share(share, from: a, to: b, capabilities: Self.refusing))
            #expect(try String(contentsOfFile: dir + "/b/\(share)/manifest.json", encoding: .utf8) == "second")
            try System.removeTree(dir + "/b/" + share)
            #expect(try ExclusiveMove.share(share, from: a, to: b, capabilities: Self.refusing))

            try put(dir + "/file", "dropped")
            try put(dir + "/taken", "already there")
            #expect(try !ExclusiveMove.inboxEntry(dir + "/file", to: dir + "/taken", capabilities: Self.refusing))
            #expect(try ExclusiveMove.inboxEntry(dir + "/file", to: dir + "/free", capabilities: Self.refusing))
            #expect(try String(contentsOfFile: dir + "/free", encoding: .utf8) == "dropped")
            #expect(try System.lstatIfPresent(dir + "/file") == nil)
            try put(dir + "/folder/x", "x")
            try System.makeDirectory(dir + "/reserved")
            try put(dir + "/reserved/y", "y")
            #expect(try !ExclusiveMove.inboxEntry(dir + "/folder", to: dir + "/reserved", capabilities: Self.refusing))
            #expect(try ExclusiveMove.inboxEntry(dir + "/folder", to: dir + "/moved", capabilities: Self.refusing))
            #expect(try System.listDirectory(dir + "/moved") == ["x"])
        }
    }

    @Test func thePerFileBarrierSyncsEveryShareOfABatch() async throws {
        try await withTemporaryDirectory { dir in
            let staging = try OpenDirectory(path: dir)
            let shares = (0..<20).map { _ in UUID().uuidString }
            for share in shares {
                try put(dir + "/\(share)/manifest.json", "{}")
                try put(dir + "/\(share)/copy.txt", "copy")
            }
            let ledger = try LedgerStore(driver: SQLiteDriver(path: dir + "/ledger.sqlite"))
            let refusing = DurabilityBarrier(Self.refusing, staging: staging, ledger: ledger)
            try refusing.makeDurable(shares, in: staging)
            #expect(refusing.method == .fsync && !refusing.commitsLedger)
            let local = DurabilityBarrier(.local, staging: staging, ledger: ledger)
            #expect(local.method == .syncfs && local.commitsLedger)
            // A ledger on another file system (tmpfs) has its own flushes whatever the barrier.
            let elsewhere = "/dev/shm/sharepipe-ledger-\(UUID().uuidString).sqlite"
            defer { for suffix in ["", "-wal", "-shm"] { try? System.unlink(elsewhere + suffix) } }
            let apart = DurabilityBarrier(.local, staging: staging, ledger: try LedgerStore(driver: SQLiteDriver(path: elsewhere)))
            let sameDevice = try System.lstatIfPresent("/dev/shm")?.device == staging.status().device
            #expect(apart.method == .syncfs && apart.commitsLedger == sameDevice)
            // A share gone before its barrier is a failure of the batch, not a silent success.
            #expect(throws: ShareError.self) {
                try refusing.makeDurable([UUID().uuidString], in: staging)
            }
        }
    }

    @Test func theStoreSweepRemovesOnlyItsOwnSingleLinkTemporaries() async throws {
        try await withTemporaryDirectory { dir in
            let output = dir + "/out"
            let orphan = ".sharepipe-\(UUID().uuidString).tmp"
            let linked = ".sharepipe-\(UUID().uuidString).tmp"
            try put(output + "/text/" + orphan, "half a copy")
            try put(output + "/text/" + linked, "a whole copy")
            #expect(link(output + "/text/" + linked, output + "/text/note.txt") == 0)
            try put(output + "/text/.sharepipe-notes.tmp", "the user's")
            try put(output + "/" + orphan, "at the top")
            let removed = StoreProcessor(output: output).removeLeftTemporaries()
            #expect(removed == 2)
            let left = try System.listDirectory(output + "/text").sorted()
            #expect(left == [".sharepipe-notes.tmp", linked, "note.txt"].sorted(), "\(left)")
        }
    }
}

/// Writes a small file, creating its missing parent directories.
private func put(_ path: String, _ text: String) throws {
    try FileManager.default.createDirectory(
        atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}
