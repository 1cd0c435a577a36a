import Foundation
import Glibc
import Testing
@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

@Suite(.timeLimit(.minutes(5))) struct StorePathTests {
    @Test(arguments: [
        ("/srv/{name}", "absolute"), ("../{name}", "would leave --output"), ("a/../{name}", "would leave --output"),
        ("./{name}", "would leave --output"), ("a//{name}", "empty segment"), ("{group}/", "empty segment"),
        ("{group}", "must contain {name}"), ("{name}/{group}", "must contain {name}"), ("{nope}/{name}", "{nope}"),
        ("{name", "without its }"), ("a}/{name}", "without its {"), ("", "expected a path template"),
    ])
    func refusesTemplatesThatEscapeOrCannotName(template: String, complaint: String) {
        #expect {
            try StorePath(template)
        } throws: { error in
            (error as? StorePath.Invalid)?.message.contains(complaint) == true
        }
    }

    @Test func fieldValuesAreSingleSegmentsAndEmptyDirectoriesDropOut() throws {
        let path = try StorePath("{date}/{folder}/{share}-{name}")
        let values: [StorePath.Field: String] = [.date: "2026-11-30", .folder: "", .share: "S", .name: "a.jpg"]
        #expect(path.components(values) == ["2026-11-30", "S-a.jpg"])
        #expect(try StorePath("x{folder}/{name}").components([.folder: "", .name: "n"]) == ["x", "n"])
        #expect(try StorePath("{folder}/{name}").components([.folder: "..", .name: "n"]) == ["_", "n"])
        #expect(StorePath.default.components([.group: "image", .name: "a.jpg"]) == ["image", "a.jpg"])
    }

    /// Publishes a share of a JPEG and a note and hands it to the processor as if it was dropped as `folder`.
    func storeFolderShare(_ dir: String, folder: String?, template: String) async throws -> ClaimedShare {
        let spool = try Spool(root: dir + "/state")
        let receipt = await ShareLoader(spool: spool).load([
            DataItemProvider(data: Data(jpegBytes), types: ["public.jpeg"], suggestedName: "IMG_0001.jpg"),
            DataItemProvider(data: Data("day one\n".utf8), types: ["public.plain-text"], suggestedName: "notes.txt"),
        ])
        try #require(receipt.status == .complete)
        var manifest = try spool.manifest(.incoming, receipt.shareId)
        manifest.folder = folder
        let share = try ClaimedShare(
            manifest: manifest, directory: spool.path(.incoming, receipt.shareId), attempt: 1)
        try await StoreProcessor(output: dir + "/out", path: try StorePath(template)).process(share)
        return share
    }

    @Test func folderTemplateKeepsADroppedFolderTogether() async throws {
        try await withTemporaryDirectory { dir in
            _ = try await storeFolderShare(dir, folder: "Holiday 2026", template: "{folder}/{name}")
            #expect(try System.listDirectory(dir + "/out") == ["Holiday 2026"])
            #expect(try System.listDirectory(dir + "/out/Holiday 2026").sorted() == ["IMG_0001.jpg", "notes.txt"])
            #expect(try System.readFile(dir + "/out/Holiday 2026/notes.txt") == Array("day one\n".utf8))

            // The same album again: a second share lands beside the first without replacing anything.
            _ = try await storeFolderShare(dir, folder: "Holiday 2026", template: "{folder}/{name}")
            #expect(try System.listDirectory(dir + "/out/Holiday 2026").sorted() == [
                "IMG_0001 (1).jpg", "IMG_0001.jpg", "notes (1).txt", "notes.txt",
            ])
        }
    }

    @Test func shareAndDateTemplateAndAFileDropWithoutFolder() async throws {
        try await withTemporaryDirectory { dir in
            let share = try await storeFolderShare(dir, folder: nil, template: "{date}/{share}/{folder}/{name}")
            let day = String(share.manifest.createdAt.prefix(10))
            #expect(try System.listDirectory(dir + "/out") == [day])
            let stored = try System.listDirectory(dir + "/out/\(day)/\(share.shareId)").sorted()
            #expect(stored == ["IMG_0001.jpg", "notes.txt"])
        }
    }

    @Test func hostileFolderNamesStayInsideTheOutput() async throws {
        try await withTemporaryDirectory { dir in
            _ = try await storeFolderShare(dir, folder: "../../escape", template: "{folder}/{name}")
            let inside = try System.listDirectory(dir + "/out")
            #expect(inside.count == 1 && !inside[0].contains("/") && !inside[0].hasPrefix("."))
            #expect(try System.listDirectory(dir).sorted() == ["out", "state"])
        }
    }

    @Test func aSymlinkPlantedInTheOutputIsNeverFollowed() async throws {
        try await withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/elsewhere", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: dir + "/out/album", withDestinationPath: dir + "/elsewhere")
            await #expect(throws: ShareError.self) {
                _ = try await storeFolderShare(dir, folder: "album", template: "{folder}/{name}")
            }
            #expect(try System.listDirectory(dir + "/elsewhere").isEmpty)
        }
    }
}
