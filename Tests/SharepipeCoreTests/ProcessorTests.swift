import Foundation
import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite(.timeLimit(.minutes(5))) struct ProcessorTests {
    /// Publishes one share of text attachments, all named `name`.
    func publishShare(_ spool: Spool, _ texts: [String], name: String = "report.txt") async throws -> String {
        let receipt = await ShareLoader(spool: spool).load(texts.map {
            DataItemProvider(data: Data($0.utf8), types: ["public.plain-text"], suggestedName: name)
        })
        try #require(receipt.status == .complete)
        return receipt.shareId
    }

    /// The processor's view of a claimed share.
    func view(_ spool: Spool, _ shareID: String) throws -> ClaimedShare {
        try ClaimedShare(
            manifest: try spool.manifest(.processing, shareID), directory: spool.path(.processing, shareID), attempt: 1)
    }

    func contents(_ directory: String) throws -> [String: String] {
        var files: [String: String] = [:]
        for name in try System.listDirectory(directory) {
            files[name] = String(decoding: try System.readFile(directory + "/" + name), as: UTF8.self)
        }
        return files
    }

    @Test func storeKeepsTenSameNamedAttachmentsUnderTenNames() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let texts = (0..<10).map { "report number \($0)\n" }
            let receipt = await ShareLoader(spool: spool).load(texts.map {
                DataItemProvider(data: Data($0.utf8), types: ["public.plain-text"], suggestedName: "report.txt")
            })
            #expect(receipt.status == .complete)
            let processor = StoreProcessor(output: dir + "/out")
            let summary = try await Consumer(spool: spool, processor: processor, configuration: fastConfiguration())
                .drain()
            #expect(summary.processed == 1)
            let stored = try contents(dir + "/out/text")
            #expect(Set(stored.keys) == Set(["report.txt"] + (1...9).map { "report (\($0)).txt" }))
            #expect(Set(stored.values) == Set(texts))
            #expect(try entries(spool, .processing).isEmpty)
        }
    }

    @Test func storeGroupsByConformance() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let receipt = await ShareLoader(spool: spool).load([
                DataItemProvider(data: Data(jpegBytes), types: ["public.jpeg"], suggestedName: "photo.jpg"),
                DataItemProvider(data: Data(pngBytes), types: ["public.png"], suggestedName: nil),
                DataItemProvider(data: Data("hello\n".utf8), types: ["public.plain-text"], suggestedName: ".hidden"),
                DataItemProvider(data: Data([0, 1, 2, 3]), types: ["public.data"], suggestedName: "blob.bin"),
            ])
            #expect(receipt.status == .complete)
            _ = try await Consumer(
                spool: spool, processor: StoreProcessor(output: dir + "/out"), configuration: fastConfiguration()
            ).drain()
            #expect(try System.listDirectory(dir + "/out").sorted() == ["image", "other", "text"])
            let images = try System.listDirectory(dir + "/out/image")
            #expect(images.contains("photo.jpg"))
            let png = try #require(receipt.attachments[1].file)
            #expect(images.contains(png))
            #expect(try System.listDirectory(dir + "/out/text") == ["hidden"])
            #expect(try System.readFile(dir + "/out/other/blob.bin") == [0, 1, 2, 3])
            #expect(StoreProcessor(output: "").group(for: "public.mpeg-4") == "video")
            #expect(StoreProcessor(output: "").group(for: "public.mp3") == "audio")
            #expect(StoreProcessor(output: "").group(for: "com.adobe.pdf") == "pdf")
            #expect(StoreProcessor(output: "").group(for: "public.zip-archive") == "archive")
        }
    }

    @Test func storeSanitisesSuggestedNames() {
        func name(_ suggested: String?) -> String { StoreProcessor.sanitizedName(suggested, fallback: "f-id.txt") }
        #expect(name("../../etc/passwd") == "_.._etc_passwd")
        #expect(name("...") == "f-id.txt")
        #expect(name(nil) == "f-id.txt")
        #expect(name("  .profile ") == "profile")
        #expect(name("a\nb\u{7f}.txt") == "a_b_.txt")
        #expect(name("back\\slash.txt") == "back_slash.txt")
        let long = name(String(repeating: "é", count: 300) + ".jpeg")
        #expect(long.utf8.count <= StoreProcessor.maxNameBytes)
        #expect(long.hasSuffix("é.jpeg"))
        #expect(Array(StoreProcessor.candidates("a.tar.gz").prefix(3)) == ["a.tar.gz", "a.tar (1).gz", "a.tar (2).gz"])
        #expect(Array(StoreProcessor.candidates("README").prefix(2)) == ["README", "README (1)"])
    }

    @Test func storeRefusesToFollowASymlinkedGroupDirectory() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try #require(try await publishTextShares(spool, ["must not escape\n"]).first)
            try System.makeDirectories(dir + "/out")
            try System.makeDirectories(dir + "/elsewhere")
            #expect(symlink(dir + "/elsewhere", dir + "/out/text") == 0)
            let summary = try await Consumer(
                spool: spool, processor: StoreProcessor(output: dir + "/out"),
                configuration: fastConfiguration { $0.maxAttempts = 1 }
            ).drain()
            #expect(summary.quarantined == 1)
            #expect(try System.listDirectory(dir + "/elsewhere").isEmpty)
            let manifest = try spool.manifest(.quarantine, shareID)
            let file = try #require(manifest.attachments[0].file)
            let copy = try System.readFile(spool.path(.quarantine, shareID) + "/" + file)
            #expect(copy == Array("must not escape\n".utf8))
        }
    }

    @Test func storeAfterACrashBeforeTheRecordMakesNoSecondCopy() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let processor = StoreProcessor(output: dir + "/out")
            do {
                let shareID = try await publishShare(spool, ["stored once\n", "and this\n"])
                let claim = try mustClaim(spool, shareID)
                let share = try view(spool, shareID)
                try await processor.process(share)
                _ = consume claim  // kill -9 here: stored, not recorded.
            }
            let recovered = try spool.recover(retryingLockedFor: .seconds(1))
            #expect(recovered.returnedToIncoming == 1, "\(recovered)")
            _ = try await Consumer(spool: spool, processor: processor, configuration: fastConfiguration()).drain()
            #expect(try contents(dir + "/out/text") == ["report.txt": "stored once\n", "report (1).txt": "and this\n"])
            #expect(try entries(spool, .incoming).isEmpty)
        }
    }

    @Test func storeAcrossFileSystemsCopiesAndFinishesAnInterruptedCopy() async throws {
        let shm = "/dev/shm/sharepipe-test-" + UUID().uuidString
        guard let shmStatus = try? System.lstat("/dev/shm"), shmStatus.kind == .directory else { return }
        try System.makeDirectories(shm)
        defer { try? FileManager.default.removeItem(atPath: shm) }
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            guard try System.lstat(dir).device != shmStatus.device else { return }
            let processor = StoreProcessor(output: shm)
            let shareID = try await publishShare(spool, ["across\n", "linked before the crash\n"])
            let claim = try mustClaim(spool, shareID)
            let share = try view(spool, shareID)
            // The second copy crashed after its temporary was linked to its final name.
            let second = share.attachments[1]
            try System.makeDirectories(shm + "/text")
            try writeFile(shm + "/text/.sharepipe-\(second.fileId).tmp", "linked before the crash\n")
            #expect(link(shm + "/text/.sharepipe-\(second.fileId).tmp", shm + "/text/report.txt") == 0)
            try await processor.process(share)
            spool.complete(claim, durationMilliseconds: 1)
            try await spool.executor.waitUntilIdle()
            #expect(try contents(shm + "/text") == [
                "report.txt": "linked before the crash\n", "report (1).txt": "across\n",
            ])
            #expect(try entries(spool, .processing).isEmpty)
        }
    }

    @Test func execReceivesExactlyTheDocumentedEnvironment() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try await publishShare(spool, ["first\n", "second\n"], name: "it's a name.txt")
            let claim = try mustClaim(spool, shareID)
            let share = try view(spool, shareID)
            let processor = ExecProcessor(
                command: "env > '\(dir)'/env-$(basename \"$SHAREPIPE_FILE\")", timeout: .seconds(10))
            try await processor.process(share)
            for attachment in share.attachments {
                let copyName = (attachment.path as NSString).lastPathComponent
                let text = String(decoding: try System.readFile(dir + "/env-" + copyName), as: UTF8.self)
                let variables = Dictionary(text.split(separator: "\n").map {
                    let parts = $0.split(separator: "=", maxSplits: 1)
                    return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
                }, uniquingKeysWith: { first, _ in first })
                #expect(variables["SHAREPIPE_SHARE_ID"] == share.shareId)
                #expect(variables["SHAREPIPE_FILE"] == attachment.path)
                #expect(variables["SHAREPIPE_FILE"]?.hasPrefix("/") == true)
                #expect(variables["SHAREPIPE_TYPE"] == "public.plain-text")
                #expect(variables["SHAREPIPE_MIME"] == "text/plain")
                #expect(variables["SHAREPIPE_SUGGESTED_NAME"] == "it's a name.txt")
                #expect(variables["PATH"] != nil)
                #expect(variables["HOME"] == nil)
                let expected: Set = [
                    "SHAREPIPE_SHARE_ID", "SHAREPIPE_FILE", "SHAREPIPE_TYPE", "SHAREPIPE_MIME",
                    "SHAREPIPE_SUGGESTED_NAME", "PATH",
                ]
                // The shell itself may add PWD (and SHLVL, `_`); nothing of the daemon's environment is passed.
                #expect(Set(variables.keys).subtracting(["PWD", "SHLVL", "_", "OLDPWD"]) == expected)
            }
            _ = consume claim
        }
    }

    @Test func execFailsOnANonZeroExitStatus() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try await publishShare(spool, ["x\n"])
            let claim = try mustClaim(spool, shareID)
            let share = try view(spool, shareID)
            await #expect {
                try await ExecProcessor(command: "exit 3").process(share)
            } throws: { error in
                let error = error as? ShareError
                return error?.code == .processorFailed && error?.message.contains("status 3") == true
            }
            _ = consume claim
        }
    }

    @Test func execTimeoutKillsTheCommandAndItsChildren() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            let shareID = try await publishShare(spool, ["hang\n"])
            let claim = try mustClaim(spool, shareID)
            let share = try view(spool, shareID)
            let processor = ExecProcessor(
                command: "sleep 100 & echo $! > '\(dir)/child.pid'; sleep 100; wait", timeout: .milliseconds(300),
                killGrace: .milliseconds(500))
            // Killed by the timeout, not by the test's time limit: the error says so.
            await #expect {
                try await processor.process(share)
            } throws: { error in
                let error = error as? ShareError
                return error?.code == .processorFailed && error?.message.contains("ran longer than") == true
            }
            let pidText = String(decoding: try System.readFile(dir + "/child.pid"), as: UTF8.self)
            let pid = try #require(Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(try await eventually(.seconds(5)) { Self.isGone(pid) })
            _ = consume claim
        }
    }

    /// Whether a process no longer runs: no such pid, or a zombie waiting for its new parent to reap it.
    static func isGone(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        guard let close = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(close, offsetBy: 2)] == "Z"
    }
}
