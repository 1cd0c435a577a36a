import Foundation
import Glibc
import Testing

@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// `sharepipe share`, through the built binary: receipts, exit statuses, the files in the spool, and the sources
/// left exactly as they were.
@Suite(.timeLimit(.minutes(5)))
struct ShareCommandTests {
    @Test func happyPathCopiesEveryAttachmentIntoIncoming() async throws {
        try await withTemporaryDirectory { dir in
            let sources = [
                fixturePath("files/photo.jpg"), fixturePath("files/image.png"), fixturePath("files/document.pdf"),
                fixturePath("files/notes.txt"), fixturePath("files/clip.mp4"), fixturePath("hostile/my photo.jpg"),
            ]
            let before = try sources.map(ShareFiles.sha256(ofFile:))
            let result = try await runSharepipe(["share", "--state", dir + "/state", "--json"] + sources)
            #expect(result.status == 0)
            #expect(result.stderr.isEmpty)
            let receipt = try result.jsonObject
            #expect(Set(receipt.keys) == ["shareId", "status", "attachments"])
            #expect(receipt["status"] as? String == "complete")
            let shareID = try #require(receipt["shareId"] as? String)
            let attachments = try #require(receipt["attachments"] as? [[String: Any]])
            #expect(attachments.count == sources.count)
            let share = dir + "/state/incoming/" + shareID
            for (index, attachment) in attachments.enumerated() {
                #expect(attachment["index"] as? Int == index)
                #expect(attachment["status"] as? String == "copied")
                #expect(attachment["error"] == nil)
                let file = try #require(attachment["file"] as? String)
                let fileID = try #require(attachment["fileId"] as? String)
                #expect(file.hasPrefix(fileID + "."))
                #expect(try ShareFiles.sha256(ofFile: share + "/" + file) == before[index])
                #expect(attachment["sha256"] as? String == before[index])
                #expect(attachment["suggestedName"] as? String == (sources[index] as NSString).lastPathComponent)
            }
            #expect(attachments.map { $0["typeIdentifier"] as? String } == [
                "public.jpeg", "public.png", "com.adobe.pdf", "public.plain-text", "public.mpeg-4", "public.jpeg",
            ])
            // The receipt's attachments are the manifest's, key for key.
            let manifest = try ShareFiles.jsonObject(atPath: share + "/manifest.json")
            #expect(NSArray(array: manifest["attachments"] as? [Any] ?? []) == NSArray(array: attachments))
            #expect(try sources.map(ShareFiles.sha256(ofFile:)) == before)
            #expect(try ShareFiles.entries(dir + "/state/staging").isEmpty)
        }
    }

    @Test func humanReceiptIsATableOnStdout() async throws {
        try await withTemporaryDirectory { dir in
            let result = try await runSharepipe([
                "share", "--state", dir + "/state", fixturePath("files/photo.jpg"), fixturePath("hostile/lying.jpg"),
            ])
            #expect(result.status == 3)
            #expect(result.stderr.isEmpty)
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("share ") == true)
            #expect(lines.first?.contains("partial, 1 of 2 copied into") == true)
            #expect(lines.contains { $0.hasPrefix("#") && $0.contains("name") && $0.contains("result") })
            #expect(lines.contains { $0.hasPrefix("0 ") && $0.contains("photo.jpg") && $0.contains("copied") })
            #expect(lines.contains {
                $0.hasPrefix("1 ") && $0.contains("lying.jpg") && $0.hasSuffix("ERR_TYPE_MISMATCH")
            })
            #expect(lines.contains { $0.hasPrefix("1: ERR_TYPE_MISMATCH: ") })
            // Not a terminal: no colour.
            #expect(!result.stdout.contains("\u{1B}["))
        }
    }

    @Test func declaredTypesPickTheFirstAcceptedOne() async throws {
        try await withTemporaryDirectory { dir in
            let odd = try writeFile(dir + "/a=b.txt", "a path with an equals sign\n")
            let result = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", "--accept", "public.image,public.text",
                fixturePath("files/photo.jpg") + "=com.example.raw-photo,public.jpeg", odd,
            ])
            #expect(result.status == 0)
            let attachments = try #require(try result.jsonObject["attachments"] as? [[String: Any]])
            #expect(attachments[0]["declaredTypes"] as? [String] == ["com.example.raw-photo", "public.jpeg"])
            #expect(attachments[0]["typeIdentifier"] as? String == "public.jpeg")
            #expect(attachments[1]["suggestedName"] as? String == "a=b.txt")
            #expect(attachments[1]["typeIdentifier"] as? String == "public.plain-text")
        }
    }

    @Test func partialShareExitsThreeWithTheCodes() async throws {
        try await withTemporaryDirectory { dir in
            let result = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", fixturePath("files/photo.jpg"),
                fixturePath("hostile/lying.jpg"), dir + "/missing.png",
            ])
            #expect(result.status == 3)
            let receipt = try result.jsonObject
            #expect(receipt["status"] as? String == "partial")
            let attachments = try #require(receipt["attachments"] as? [[String: Any]])
            #expect(attachments.map { $0["status"] as? String } == ["copied", "failed", "failed"])
            #expect(attachments.map(ShareFiles.code) == [nil, "ERR_TYPE_MISMATCH", "ERR_MISSING_FILE"])
            #expect(attachments[1]["typeIdentifier"] as? String == "public.jpeg")
            #expect(attachments[1]["sniffedMimeType"] as? String == "text/plain")
            let shareID = try #require(receipt["shareId"] as? String)
            let files = try ShareFiles.entries(dir + "/state/incoming/" + shareID)
            #expect(files == ["manifest.json", try #require(attachments[0]["file"] as? String)].sorted())
        }
    }

    @Test func shareWithNothingAcceptedIsRejected() async throws {
        try await withTemporaryDirectory { dir in
            let result = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", "--accept", "public.image",
                fixturePath("files/notes.txt"), fixturePath("files/data.json"),
            ])
            #expect(result.status == 4)
            let receipt = try result.jsonObject
            #expect(receipt["status"] as? String == "rejected")
            let attachments = try #require(receipt["attachments"] as? [[String: Any]])
            #expect(attachments.map(ShareFiles.code) == ["ERR_UNSUPPORTED_TYPE", "ERR_UNSUPPORTED_TYPE"])
            #expect(try ShareFiles.entries(dir + "/state/incoming").isEmpty)
            #expect(try ShareFiles.entries(dir + "/state/staging").isEmpty)
        }
    }

    @Test func lyingJPEGIsATypeMismatch() async throws {
        try await withTemporaryDirectory { dir in
            let result = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", fixturePath("hostile/lying.jpg"),
            ])
            #expect(result.status == 4)
            let attachments = try #require(try result.jsonObject["attachments"] as? [[String: Any]])
            #expect(attachments.map(ShareFiles.code) == ["ERR_TYPE_MISMATCH"])
            #expect(try ShareFiles.entries(dir + "/state/incoming").isEmpty)
        }
    }

    @Test func allOrNothingRollsBackEveryCopy() async throws {
        try await withTemporaryDirectory { dir in
            let result = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", "--policy", "all-or-nothing",
                fixturePath("files/photo.jpg"), fixturePath("files/image.png"), fixturePath("hostile/lying.jpg"),
            ])
            #expect(result.status == 4)
            let receipt = try result.jsonObject
            #expect(receipt["status"] as? String == "rejected")
            let attachments = try #require(receipt["attachments"] as? [[String: Any]])
            #expect(attachments.map { $0["status"] as? String } == ["rolled-back", "rolled-back", "failed"])
            #expect(attachments.map(ShareFiles.code) == [nil, nil, "ERR_TYPE_MISMATCH"])
            #expect(try ShareFiles.entries(dir + "/state/incoming").isEmpty)
            #expect(try ShareFiles.entries(dir + "/state/staging").isEmpty)
            #expect(FileManager.default.fileExists(atPath: fixturePath("files/photo.jpg")))
        }
    }

    @Test func limitsApplyPerFileAndPerShare() async throws {
        try await withTemporaryDirectory { dir in
            let tooLarge = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", "--max-file-size", "1K",
                fixturePath("files/photo.jpg"), fixturePath("files/image.png"),
            ])
            #expect(tooLarge.status == 3)
            let attachments = try #require(try tooLarge.jsonObject["attachments"] as? [[String: Any]])
            #expect(attachments.map(ShareFiles.code) == ["ERR_TOO_LARGE", nil])

            let tooMany = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", "--max-attachments", "1",
                fixturePath("files/photo.jpg"), fixturePath("files/image.png"),
            ])
            #expect(tooMany.status == 4)
            let receipt = try tooMany.jsonObject
            #expect((receipt["error"] as? [String: Any])?["code"] as? String == "ERR_TOO_MANY_ATTACHMENTS")
        }
    }

    @Test func scenarioSourceDeletedAfterTheCallbackLeavesAnIntactCopy() async throws {
        try await withTemporaryDirectory { dir in
            let heic = try writeFile(dir + "/in/a.heic", Array(try Data(contentsOf: fixtureURL("files/photo.heic"))))
            let jpeg = try writeFile(dir + "/in/a.jpg", Array(try Data(contentsOf: fixtureURL("files/photo.jpg"))))
            let scenario = try writeFile(dir + "/in/share.json", """
                { "sourceApp": "com.apple.mobileslideshow",
                  "attachments": [
                    { "suggestedName": "IMG_0001.HEIC",
                      "representations": [
                        { "type": "public.heic", "kind": "file", "path": "a.heic", "delayMs": 20,
                          "afterCallback": "delete" },
                        { "type": "public.jpeg", "kind": "data", "path": "a.jpg" } ] },
                    { "representations": [
                        { "type": "public.jpeg", "kind": "file", "path": "a.jpg", "afterCallback": "move",
                          "thread": "caller", "callsTwice": true } ] } ] }
                """)
            let hashes = try [heic, jpeg].map(ShareFiles.sha256(ofFile:))
            let result = try await runSharepipe(["share", "--state", dir + "/state", "--json", "--scenario", scenario])
            #expect(result.status == 0)
            let receipt = try result.jsonObject
            let shareID = try #require(receipt["shareId"] as? String)
            let attachments = try #require(receipt["attachments"] as? [[String: Any]])
            #expect(attachments.map { $0["typeIdentifier"] as? String } == ["public.heic", "public.jpeg"])
            for (attachment, hash) in zip(attachments, hashes) {
                let file = try #require(attachment["file"] as? String)
                #expect(try ShareFiles.sha256(ofFile: dir + "/state/incoming/\(shareID)/" + file) == hash)
            }
            // afterCallback acts on the provider's temporary copy, never on the scenario's files.
            #expect(try [heic, jpeg].map(ShareFiles.sha256(ofFile:)) == hashes)
            let manifest = try ShareFiles.jsonObject(atPath: dir + "/state/incoming/\(shareID)/manifest.json")
            #expect(manifest["sourceApp"] as? String == "com.apple.mobileslideshow")
        }
    }

    @Test func sourceAppFlagOverridesTheScenario() async throws {
        try await withTemporaryDirectory { dir in
            try writeFile(dir + "/a.png", pngBytes)
            let scenario = try writeFile(dir + "/s.json", """
                {"sourceApp": "com.example.one",
                 "attachments": [{"representations": [{"type": "public.png", "kind": "data", "path": "a.png"}]}]}
                """)
            let result = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", "--scenario", scenario, "--source-app", "com.example.two",
            ])
            #expect(result.status == 0)
            let shareID = try #require(try result.jsonObject["shareId"] as? String)
            let manifest = try ShareFiles.jsonObject(atPath: dir + "/state/incoming/\(shareID)/manifest.json")
            #expect(manifest["sourceApp"] as? String == "com.example.two")
        }
    }

    @Test(arguments: [
        (#"{"attachments": [{"representations": [{"type": "public.png", "path": "a.png"}]},"#
            + #"{"representations": [{"type": "public.png", "kindd": "file"}]}]}"#,
         #"--scenario: attachments[1].representations[0]: unknown key "kindd""#),
        (#"{"attachments": [{"representations": [{"kind": "file", "path": "a.png"}]}]}"#,
         #"--scenario: attachments[0].representations[0]: missing "type""#),
        (#"{"attachments": [{"representations": [{"type": "public.png", "path": "a.png", "delayMs": "5"}]}]}"#,
         #"--scenario: attachments[0].representations[0]: "delayMs" must be a whole number"#),
        (#"{"attachments": [{"representations": [{"type": "public.png", "path": "a.png", "noFile": 1}]}]}"#,
         #"--scenario: attachments[0].representations[0]: "noFile" must be true or false, got 1"#),
        (#"{"attachments": [{"representations": [{"type": "public.png", "path": "a.png", "afterCallback": "drop"}]}]}"#,
         #"--scenario: attachments[0].representations[0]: "afterCallback" must be one of keep, delete, move"#),
        (#"{"attachments": [{"representations": [{"type": "public.png", "error": "ERR_OOPS"}]}]}"#,
         #"--scenario: attachments[0].representations[0]: "error": unknown error code "ERR_OOPS""#),
        (#"{"attachments": [{}, {"representations": [{"type": "public.png", "path": "gone.png"}]}]}"#,
         #"--scenario: attachments[0]: missing "representations""#),
        (#"{"attachments": [{"representations": [{"type": "public.png", "path": "gone.png"}]}]}"#,
         #"--scenario: attachments[0].representations[0]: "path": no file at "gone.png""#),
        (#"{"attachments": [{"representations": [{"type": "public.png", "kind": "folder", "path": "a.png"}]}]}"#,
         #"--scenario: attachments[0].representations[0]: "kind" must be one of file, data, got "folder""#),
        (#"{"attachments": [{"suggestedName": 7, "representations": []}]}"#,
         #"--scenario: attachments[0]: "suggestedName" must be a string, got 7"#),
        (#"{"sourceApp": "x", "attachment": []}"#, #"--scenario: unknown key "attachment""#),
        (#"{"attachments": [}"#, #"is not valid JSON"#),
    ])
    func malformedScenarioIsAUsageErrorNamingTheKey(scenario: String, message: String) async throws {
        try await withTemporaryDirectory { dir in
            try writeFile(dir + "/a.png", pngBytes)
            let path = try writeFile(dir + "/s.json", scenario)
            let result = try await runSharepipe(["share", "--state", dir + "/state", "--json", "--scenario", path])
            #expect(result.status == 2)
            let error = try #require(try result.jsonObject["error"] as? [String: String])
            #expect(error["code"] == "ERR_USAGE")
            #expect(error["message"]?.contains(message) == true)
            let lines = result.stderr.split(separator: "\n").map(String.init)
            #expect(lines.count == 2)
            #expect(lines.first?.hasPrefix("error: ") == true)
            #expect(lines.first?.contains(message) == true, "\(result.stderr)")
            #expect(lines.last?.hasPrefix("usage: sharepipe share") == true)
            #expect(!FileManager.default.fileExists(atPath: dir + "/state"))
        }
    }

    @Test func scenarioAndAttachmentsTogetherIsAUsageError() async throws {
        try await withTemporaryDirectory { dir in
            try writeFile(dir + "/a.png", pngBytes)
            let scenario = try writeFile(dir + "/s.json", """
                {"attachments": [{"representations": [{"type": "public.png", "path": "a.png"}]}]}
                """)
            let result = try await runSharepipe(["share", "--scenario", scenario, dir + "/a.png"])
            #expect(result.status == 2)
            #expect(result.stderr.hasPrefix("error: --scenario: cannot be combined with ATTACHMENT arguments\n"))
        }
    }

    @Test(arguments: [
        (["--policy", "sometimes", "x"], "error: --policy: expected one of keep-successful, all-or-nothing"),
        (["--max-file-size", "-5", "x"], "error: --max-file-size: expected a size"),
        (["--max-share-size", "lots", "x"], "error: --max-share-size: expected a size"),
        (["--max-attachments", "0", "x"], "error: --max-attachments: expected a positive integer"),
        (["--load-timeout", "soon", "x"], "error: --load-timeout: expected milliseconds"),
        (["--polcy", "all-or-nothing", "x"], "error: unknown option --polcy (did you mean --policy?)"),
        ([], "error: missing ATTACHMENT (or --scenario FILE)"),
        (["photo.jpg="], "error: ATTACHMENT \"photo.jpg=\""),
        (["--activation-rule", "/nonexistent/rule.json", "x"], "error: --activation-rule: "),
    ])
    func badCommandLinesExitTwo(arguments: [String], message: String) async throws {
        let result = try await runSharepipe(["share"] + arguments)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix(message), "\(result.stderr)")
        #expect(result.stderr.contains("\nusage: sharepipe share "))
    }

    @Test func helpShowsEveryDefault() async throws {
        let result = try await runSharepipe(["share", "--help"])
        #expect(result.status == 0)
        for text in [
            "default: 4G", "default: 16G", "default: 100", "default: 30000", "default: public.item",
            "default: keep-successful", "$STATE_DIRECTORY", "./.sharepipe", "--scenario FILE", "--activation-rule FILE",
            "--types FILE", "--json", "PATH=TYPE1,TYPE2",
        ] {
            #expect(result.stdout.contains(text), "missing \(text)")
        }
    }

    @Test func unusableContainerFailsWithEveryAttachmentMarked() async throws {
        try await withTemporaryDirectory { dir in
            let blocker = try writeFile(dir + "/plain-file", "not a directory")
            let result = try await runSharepipe([
                "share", "--state", blocker + "/state", "--json", fixturePath("files/photo.jpg"),
                fixturePath("files/notes.txt"),
            ])
            #expect(result.status == 1)
            let receipt = try result.jsonObject
            #expect(Set(receipt.keys) == ["shareId", "status", "attachments", "error"])
            #expect(receipt["status"] as? String == "failed")
            #expect((receipt["error"] as? [String: Any])?["code"] as? String == "ERR_CONTAINER_UNAVAILABLE")
            let attachments = try #require(receipt["attachments"] as? [[String: Any]])
            #expect(attachments.map(ShareFiles.code) == ["ERR_CONTAINER_UNAVAILABLE", "ERR_CONTAINER_UNAVAILABLE"])
            #expect(attachments.map { $0["status"] as? String } == ["failed", "failed"])

            let human = try await runSharepipe(["share", "--state", blocker + "/state", fixturePath("files/photo.jpg")])
            #expect(human.status == 1)
            #expect(human.stdout.contains("failed"))
            #expect(human.stderr.hasPrefix("error: ERR_CONTAINER_UNAVAILABLE: "))
        }
    }

    @Test func stateDefaultsToStateDirectoryThenDotSharepipe() async throws {
        try await withTemporaryDirectory { dir in
            let fromEnvironment = try await runSharepipe(
                ["share", "--json", fixturePath("files/photo.jpg")], environment: ["STATE_DIRECTORY": dir + "/unit"])
            #expect(fromEnvironment.status == 0)
            let first = try #require(try fromEnvironment.jsonObject["shareId"] as? String)
            #expect(FileManager.default.fileExists(atPath: dir + "/unit/incoming/" + first + "/manifest.json"))

            let fromDirectory = try await runSharepipe(
                ["share", "--json", fixturePath("files/photo.jpg")], environment: ["STATE_DIRECTORY": ""],
                currentDirectory: dir)
            #expect(fromDirectory.status == 0)
            let second = try #require(try fromDirectory.jsonObject["shareId"] as? String)
            #expect(FileManager.default.fileExists(atPath: dir + "/.sharepipe/incoming/" + second + "/manifest.json"))
        }
    }

    @Test func fifoIsNotARegularFileAndDoesNotBlock() async throws {
        try await withTemporaryDirectory { dir in
            let fifo = dir + "/pipe.jpg"
            #expect(mkfifo(fifo, 0o600) == 0)
            // A share that opened the FIFO for reading would wait for a writer forever: the run is killed at the
            // timeout and throws.
            let result = try await runSharepipe(
                ["share", "--state", dir + "/state", "--json", fifo, fixturePath("files/photo.jpg")],
                timeout: .seconds(20))
            #expect(result.elapsed < .seconds(10))
            #expect(result.status == 3)
            let attachments = try #require(try result.jsonObject["attachments"] as? [[String: Any]])
            #expect(attachments.map(ShareFiles.code) == ["ERR_NOT_REGULAR_FILE", nil])
        }
    }

    @Test func activationRuleRejectsTheShareBeforeAnythingIsLoaded() async throws {
        try await withTemporaryDirectory { dir in
            let rule = fixturePath("scenarios/rules/images-only.json")
            let refused = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", "--activation-rule", rule,
                fixturePath("files/photo.jpg"), fixturePath("files/notes.txt"),
            ])
            #expect(refused.status == 4)
            let receipt = try refused.jsonObject
            #expect(receipt["status"] as? String == "rejected")
            let error = try #require(receipt["error"] as? [String: Any])
            #expect(error["code"] as? String == "ERR_NOT_ACTIVATED")
            let message = try #require(error["message"] as? String)
            #expect(message.contains("attachment 1 [public.plain-text] is text, and no key allows it"))
            let attachments = try #require(receipt["attachments"] as? [[String: Any]])
            #expect(attachments.map(ShareFiles.code) == ["ERR_NOT_ACTIVATED", "ERR_NOT_ACTIVATED"])
            #expect(attachments.map { $0["fileId"] == nil } == [true, true])
            for stage in ["staging", "incoming"] {
                #expect(try ShareFiles.entries(dir + "/state/" + stage).isEmpty)
            }

            let inline = try await runSharepipe([
                "share", "--state", dir + "/state", "--json", "--activation-rule",
                #"SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, ANY $a.registeredTypeIdentifiers "#
                    + #"UTI-CONFORMS-TO "public.image").@count >= 1).@count >= 1"#,
                fixturePath("files/photo.jpg"), fixturePath("files/notes.txt"),
            ])
            #expect(inline.status == 0)
            #expect(try inline.jsonObject["status"] as? String == "complete")
        }
    }

    @Test func malformedActivationRuleIsAUsageError() async throws {
        let result = try await runSharepipe([
            "share", "--activation-rule", "SUBQUERY(extensionItems, $e, ", fixturePath("files/photo.jpg"),
        ])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("error: --activation-rule: position "))
    }
}

/// File helpers for the share tests.
enum ShareFiles {
    /// SHA-256 of a file's bytes, lowercase hex.
    static func sha256(ofFile path: String) throws -> String {
        SHA256.hash(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// The names in a directory, sorted; empty when the directory does not exist.
    static func entries(_ path: String) throws -> [String] {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    /// A JSON object read from a file.
    static func jsonObject(atPath path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw SupportError("\(path) is not a JSON object")
        }
        return object
    }

    /// The error code of one receipt attachment, nil when it has none.
    static func code(_ attachment: [String: Any]) -> String? {
        (attachment["error"] as? [String: Any])?["code"] as? String
    }
}

/// The URL of a file under `Fixtures/`.
private func fixtureURL(_ name: String) -> URL {
    URL(fileURLWithPath: fixturePath(name))
}
