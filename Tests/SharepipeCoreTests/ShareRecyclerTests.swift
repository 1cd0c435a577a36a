import Foundation
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// Processed shares' directories emptied and kept for the next shares (`ShareRecycler`): what a user finds in the
/// state directory after each step, and that nothing of a processed share's content survives or leaks into the
/// next one.
@Suite(.timeLimit(.minutes(5))) struct ShareRecyclerTests {
    /// Loads one share of text files with these contents and returns its id.
    func share(_ spool: Spool, _ dir: String, _ texts: [String]) async throws -> String {
        let providers = try texts.enumerated().map { index, text in
            let path = try writeFile(dir + "/source-\(UUID().uuidString)-\(index).txt", text)
            return FileItemProvider(path: path, types: ["public.plain-text"])
        }
        let receipt = await ShareLoader(spool: spool).load(providers)
        #expect(receipt.status == .complete)
        return receipt.shareId
    }

    /// Claims and completes a share now.
    func process(_ spool: Spool, _ shareID: String) throws {
        let claim = try #require(try spool.claim(shareID))
        try spool.complete(claim, durationMilliseconds: 1, stoppingAfter: nil)
    }

    /// Whether a file holds no byte but zeros (an emptied spare: truncated, or overwritten with zeros).
    func holdsNothing(_ path: String) throws -> Bool {
        try System.readFile(path).allSatisfy { $0 == 0 }
    }

    /// Every entry below `path`, relative to it, with its size.
    func tree(_ path: String) -> [String: Int] {
        var found: [String: Int] = [:]
        let enumerator = FileManager.default.enumerator(atPath: path)
        while let name = enumerator?.nextObject() as? String {
            let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + name)
            found[name] = (attributes?[.size] as? Int) ?? -1
        }
        return found
    }

    func inode(_ path: String) throws -> UInt64 { try System.lstat(path).inode }

    @Test func aProcessedShareIsEmptiedKeptAndTakenByTheNextShare() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            try #require(spool.recycler.isEnabled, "the temporary directory is not on a local block-device file system")
            let first = try await share(spool, dir, ["the first share's words, longer than the second's\n"])
            let firstManifest = try spool.manifest(.incoming, first)
            let firstFile = try #require(firstManifest.attachments[0].file)
            let copyInode = try inode(spool.path(.incoming, first) + "/" + firstFile)
            try process(spool, first)

            // Processed: no directory or name of the share is left, only emptied spares without content.
            #expect(try spool.shareIDs(in: .processing).isEmpty)
            let kept = tree(dir + "/state/recycled")
            #expect(kept.count == 3, "\(kept)")
            let spares = kept.keys.filter { $0.hasSuffix("/spare-0") || $0.hasSuffix("/manifest.json") }
            #expect(spares.count == 2, "\(kept)")
            for spare in spares {
                #expect(try holdsNothing(dir + "/state/recycled/" + spare), "\(spare) kept content")
            }
            #expect(!kept.keys.contains { $0.contains(first) || $0.contains(firstFile) })
            #expect(try entries(spool, .staging).isEmpty)

            // The next share takes the directory and its inodes; its bytes and manifest are its own.
            let second = try await share(spool, dir, ["the second share, shorter\n"])
            #expect(tree(dir + "/state/recycled").isEmpty)
            let manifest = try spool.manifest(.incoming, second)
            let file = try #require(manifest.attachments[0].file)
            #expect(Set(tree(spool.path(.incoming, second)).keys) == ["manifest.json", file])
            let copy = spool.path(.incoming, second) + "/" + file
            // Shorter than the first: the spare's zeros past its end are cut off, in the copy and the manifest.
            #expect(String(decoding: try System.readFile(copy), as: UTF8.self) == "the second share, shorter\n")
            #expect(manifest.attachments[0].bytes == 26)
            #expect(manifest.shareId == second)
            // One of the two spares became the copy, the other the manifest: no new inode.
            let reused = [try inode(copy), try inode(spool.path(.incoming, second) + "/manifest.json")]
            #expect(reused.contains(copyInode))
        }
    }

    @Test func aLargeCopyIsTruncatedAndTheNextShareGetsExactlyItsOwnBytes() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            try #require(spool.recycler.isEnabled)
            let large = String(repeating: "a line of a large text file\n", count: 4_000)
            #expect(large.utf8.count > ShareRecycler.overwriteLimit)
            try process(spool, try await share(spool, dir, [large, "small\n"]))
            // Over the limit: truncated to nothing; under it: zeros of its length.
            let kept = tree(dir + "/state/recycled")
            #expect(kept.values.contains(0), "\(kept)")
            for spare in kept.keys where spare.contains("/") {
                #expect(try holdsNothing(dir + "/state/recycled/" + spare), "\(spare) kept content")
            }
            let second = try await share(spool, dir, ["x\n", String(repeating: "y", count: 70_000)])
            let manifest = try spool.manifest(.incoming, second)
            let files = manifest.attachments.compactMap(\.file)
            #expect(files.count == 2)
            for (file, text) in zip(files, ["x\n", String(repeating: "y", count: 70_000)]) {
                let bytes = try System.readFile(spool.path(.incoming, second) + "/" + file)
                #expect(bytes == Array(text.utf8), "\(file): \(bytes.count) bytes")
            }
            #expect(manifest.attachments.map(\.bytes) == [2, 70_000])
        }
    }

    @Test func aShareWithFewerFilesThanTheSparesPublishesOnlyItsOwn() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            try #require(spool.recycler.isEnabled)
            try process(spool, try await share(spool, dir, ["one\n", "two\n", "three\n"]))
            #expect(tree(dir + "/state/recycled").count == 5)
            let second = try await share(spool, dir, ["alone\n"])
            let file = try #require(try spool.manifest(.incoming, second).attachments[0].file)
            #expect(Set(tree(spool.path(.incoming, second)).keys) == ["manifest.json", file])
            // And a share with more files than spares creates the rest.
            try process(spool, second)
            let third = try await share(spool, dir, ["a\n", "b\n", "c\n", "d\n"])
            let files = try spool.manifest(.incoming, third).attachments.compactMap(\.file)
            #expect(files.count == 4)
            #expect(Set(tree(spool.path(.incoming, third)).keys) == Set(files + ["manifest.json"]))
            for (file, text) in zip(files, ["a\n", "b\n", "c\n", "d\n"]) {
                #expect(String(decoding: try System.readFile(spool.path(.incoming, third) + "/" + file), as: UTF8.self)
                    == text)
            }
        }
    }

    @Test func aCopyWithASecondLinkKeepsItsContentAndASymlinkIsNotFollowed() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            try #require(spool.recycler.isEnabled)
            let shareID = try await share(spool, dir, ["linked out by a processor\n"])
            let file = try #require(try spool.manifest(.incoming, shareID).attachments[0].file)
            let claim = try #require(try spool.claim(shareID))
            // What the store processor does (a second name in its output), and a hostile processor's symlink.
            #expect(try System.linkNoReplace(spool.path(.processing, shareID) + "/" + file, to: dir + "/output.txt"))
            try writeFile(dir + "/outside.txt", "not the spool's\n")
            try FileManager.default.createSymbolicLink(
                atPath: spool.path(.processing, shareID) + "/link", withDestinationPath: dir + "/outside.txt")
            try spool.complete(claim, durationMilliseconds: 1, stoppingAfter: nil)

            let output = String(decoding: try System.readFile(dir + "/output.txt"), as: UTF8.self)
            #expect(output == "linked out by a processor\n")
            #expect(try System.lstat(dir + "/output.txt").linkCount == 1)
            #expect(String(decoding: try System.readFile(dir + "/outside.txt"), as: UTF8.self) == "not the spool's\n")
            // Only the manifest was kept (emptied); the link and the symlink are gone.
            let kept = tree(dir + "/state/recycled")
            #expect(kept.count == 2, "\(kept)")
            for spare in kept.keys where spare.contains("/") {
                #expect(try holdsNothing(dir + "/state/recycled/" + spare), "\(spare) kept content")
            }
        }
    }

    @Test func recoveryRemovesWhatAProcessThatIsGoneKeptAndLeavesALiveOnesAlone() async throws {
        try await withTemporaryDirectory { dir in
            let spool = try Spool(root: dir + "/state")
            try #require(spool.recycler.isEnabled)
            try process(spool, try await share(spool, dir, ["kept by this process\n"]))
            // What a process that died kept: an unlocked directory with a spare, and a stray file.
            let dead = dir + "/state/recycled/" + UUID().uuidString
            try System.makeDirectory(dead)
            try writeFile(dead + "/spare-0", "")
            try writeFile(dir + "/state/recycled/stray", "")
            #expect(tree(dir + "/state/recycled").count == 6)

            _ = try spool.recover()
            let left = tree(dir + "/state/recycled")
            #expect(left.count == 3, "\(left)")
            #expect(!left.keys.contains { $0.hasPrefix(URL(fileURLWithPath: dead).lastPathComponent) || $0 == "stray" })
            // The live one is still taken by the next share.
            _ = try await share(spool, dir, ["next\n"])
            #expect(tree(dir + "/state/recycled").isEmpty)
        }
    }
    @Test func aProcessThatLoadsNothingKeepsNothing() async throws {
        try await withTemporaryDirectory { dir in
            let loading = try Spool(root: dir + "/state")
            try #require(loading.recycler.isEnabled)
            let shareID = try await share(loading, dir, ["processed by a consumer alone\n"])
            // `sharepipe consume`: its own spool, which never loads a share.
            let consuming = try Spool(root: dir + "/state")
            try process(consuming, shareID)
            #expect(try consuming.shareIDs(in: .processing).isEmpty)
            #expect(tree(dir + "/state/recycled").isEmpty)
        }
    }
}
