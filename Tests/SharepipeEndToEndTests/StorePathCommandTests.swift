import Foundation
import Testing

/// `--store-path` through the built binary: a template that could leave `--output` is a usage error before
/// anything is created; a valid one decides where `consume` stores each copy.
@Suite(.timeLimit(.minutes(5))) struct StorePathCommandTests {
    @Test(arguments: [
        ("../out/{name}", #"error: --store-path: "../out/{name}" has a .. segment: it would leave --output"#),
        ("/tmp/{name}", #"error: --store-path: "/tmp/{name}" is absolute; it must be relative to --output"#),
        ("{group}", #"error: --store-path: the last segment of "{group}" must contain {name}"#),
    ])
    func aTemplateThatCouldEscapeIsRefusedBeforeAnythingIsCreated(template: String, message: String) async throws {
        try await withTemporaryDirectory { dir in
            for command in [["daemon", "--oneshot", "--inbox", dir + "/inbox"], ["consume"]] {
                let result = try await runSharepipe(
                    command + ["--state", dir + "/state", "--output", dir + "/out", "--store-path", template])
                #expect(result.status == 2, "\(command)")
                #expect(result.stderr.hasPrefix(message + "\n"), "\(command): \(result.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "\(command)")
            }
        }
    }

    @Test func consumeStoresEachShareInADirectoryOfItsOwn() async throws {
        try await withTemporaryDirectory { dir in
            let state = dir + "/state"
            let shared = try await runSharepipe([
                "share", "--state", state, "--json", fixturePath("files/photo.jpg"), fixturePath("files/notes.txt"),
            ])
            let shareID = try #require(try shared.jsonObject["shareId"] as? String)
            let consumed = try await runSharepipe([
                "consume", "--state", state, "--output", dir + "/out", "--store-path", "{date}/{share}/{name}",
            ])
            #expect(consumed.status == 0, "\(consumed.stderr)")
            let days = try FileManager.default.contentsOfDirectory(atPath: dir + "/out")
            #expect(days.count == 1 && days[0].wholeMatch(of: /\d{4}-\d{2}-\d{2}/) != nil)
            let stored = try FileManager.default.contentsOfDirectory(atPath: "\(dir)/out/\(days[0])/\(shareID)")
            #expect(stored.sorted() == ["notes.txt", "photo.jpg"])
        }
    }
}
