import Foundation
import Testing

/// `sharepipe matrix`: how a team's CI job goes green, red (exit 1, the JUnit file naming the failed case) and
/// refuses malformed input (exit 2, naming the file, the key and the index).
@Suite(.timeLimit(.minutes(5)))
struct MatrixCommandTests {
    /// A copy of the committed scenarios and the files they name, so that a test can edit one.
    func copyOfTheFixtures(in dir: String) throws -> String {
        for folder in ["scenarios", "files", "hostile"] {
            try FileManager.default.copyItem(atPath: fixturePath(folder), toPath: dir + "/" + folder)
        }
        return dir + "/scenarios"
    }

    /// The names of the JUnit test cases that hold a `<failure>`.
    func failedCases(_ xml: String) -> [String] {
        xml.components(separatedBy: "<testcase ").dropFirst().compactMap { element in
            guard element.contains("<failure") else { return nil }
            return element.components(separatedBy: " name=\"").dropFirst().first?.components(separatedBy: "\"").first
        }
    }

    @Test func defaultsToTheFixturesOfTheCurrentDirectory() async throws {
        let result = try await runSharepipe(["matrix"], currentDirectory: packageRoot)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("16 scenarios: 16 passed, 0 failed"))
        #expect(result.stdout.contains("photo-heic-plus-jpeg"))
        #expect(result.stdout.contains("com.apple.mobileslideshow"))
    }

    @Test func oneWrongReceiptFailsExactlyThatCase() async throws {
        try await withTemporaryDirectory { dir in
            let scenarios = try copyOfTheFixtures(in: dir)
            let receipt = scenarios + "/pdf-from-files.expected.json"
            let text = try String(contentsOfFile: receipt, encoding: .utf8)
            try text.replacingOccurrences(of: "com.adobe.pdf", with: "public.jpeg")
                .write(toFile: receipt, atomically: true, encoding: .utf8)
            let junit = dir + "/junit.xml"
            let result = try await runSharepipe(["matrix", scenarios, "--junit", junit])
            #expect(result.status == 1)
            #expect(result.stdout.contains("16 scenarios: 15 passed, 1 failed"))
            #expect(result.stdout.contains(
                "FAIL pdf-from-files: attachment 0: expected copied public.jpeg -, got copied com.adobe.pdf -"))
            let xml = try String(contentsOfFile: junit, encoding: .utf8)
            #expect(failedCases(xml) == ["pdf-from-files"])
            #expect(xml.contains("tests=\"16\" failures=\"1\""))

            let json = try await runSharepipe(["matrix", scenarios, "--json"])
            #expect(json.status == 1)
            let report = try json.jsonObject
            #expect(report["failed"] as? Int == 1)
            let failed = (report["scenarios"] as? [[String: Any]] ?? []).filter { $0["passed"] as? Bool == false }
            #expect(failed.compactMap { $0["name"] as? String } == ["pdf-from-files"])
        }
    }

    @Test func aWrongTitleOrTagFailsTheSafariCase() async throws {
        try await withTemporaryDirectory { dir in
            let scenarios = try copyOfTheFixtures(in: dir)
            let receipt = scenarios + "/safari-page-with-title-and-text.expected.json"
            let text = try String(contentsOfFile: receipt, encoding: .utf8)
            try text.replacingOccurrences(of: "what a host app hands over", with: "something else")
                .replacingOccurrences(of: #"["reading"]"#, with: #"["reading", "later"]"#)
                .write(toFile: receipt, atomically: true, encoding: .utf8)
            let result = try await runSharepipe(["matrix", receipt.replacingOccurrences(of: ".expected.json", with: ".json")])
            #expect(result.status == 1)
            #expect(result.stdout.contains("FAIL safari-page-with-title-and-text: title: not the expected one"))
            #expect(result.stdout.contains("tags: expected reading,later, got reading"))
        }
    }

    @Test func aWrongActivationExpectationFails() async throws {
        try await withTemporaryDirectory { dir in
            let scenarios = try copyOfTheFixtures(in: dir)
            let receipt = scenarios + "/pdf-from-files.expected.json"
            let text = try String(contentsOfFile: receipt, encoding: .utf8)
            try text.replacingOccurrences(of: "\"images-only\": false", with: "\"images-only\": true")
                .write(toFile: receipt, atomically: true, encoding: .utf8)
            let result = try await runSharepipe(["matrix", scenarios + "/pdf-from-files.json"])
            #expect(result.status == 1)
            #expect(result.stdout.contains(
                "FAIL pdf-from-files: rule images-only: expected activated, got not activated"))
        }
    }

    @Test func malformedScenarioExitsTwoNamingFileKeyAndIndex() async throws {
        try await withTemporaryDirectory { dir in
            let scenarios = try copyOfTheFixtures(in: dir)
            let scenario = scenarios + "/pdf-from-files.json"
            let text = try String(contentsOfFile: scenario, encoding: .utf8)
            try text.replacingOccurrences(of: "\"kind\"", with: "\"kindd\"")
                .write(toFile: scenario, atomically: true, encoding: .utf8)
            let junit = dir + "/junit.xml"
            let result = try await runSharepipe(["matrix", scenarios, "--junit", junit])
            #expect(result.status == 2)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains(
                "error: \(scenario): attachments[0].representations[0]: unknown key \"kindd\""), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: junit))
        }
    }

    @Test func malformedReceiptExitsTwoNamingFileKeyAndIndex() async throws {
        try await withTemporaryDirectory { dir in
            let scenarios = try copyOfTheFixtures(in: dir)
            let receipt = scenarios + "/load-error-among-good.expected.json"
            let text = try String(contentsOfFile: receipt, encoding: .utf8)
            try text.replacingOccurrences(of: "\"status\": \"failed\"", with: "\"status\": \"lost\"")
                .write(toFile: receipt, atomically: true, encoding: .utf8)
            let result = try await runSharepipe(["matrix", scenarios])
            #expect(result.status == 2)
            #expect(result.stderr.contains("error: \(receipt): attachments[1]: \"status\" must be one of"))

            try text.replacingOccurrences(of: "\"args\": []", with: "\"args\": [\"--acept\", \"public.image\"]")
                .write(toFile: receipt, atomically: true, encoding: .utf8)
            let badArgs = try await runSharepipe(["matrix", scenarios])
            #expect(badArgs.status == 2)
            #expect(badArgs.stderr.contains("error: \(receipt): \"args\": unknown option --acept"))
        }
    }

    @Test func nothingToRunIsAUsageError() async throws {
        try await withTemporaryDirectory { dir in
            let empty = try await runSharepipe(["matrix", dir])
            #expect(empty.status == 2)
            #expect(empty.stderr.contains("no scenario"))

            try writeFile(dir + "/lonely.expected.json", #"{"status": "complete", "attachments": []}"#)
            let lonely = try await runSharepipe(["matrix", dir])
            #expect(lonely.status == 2)
            #expect(lonely.stderr.contains("lonely.expected.json: no scenario \"lonely.json\" beside it"))

            let missing = try await runSharepipe(["matrix", dir + "/nowhere"])
            #expect(missing.status == 2)
        }
    }
}
