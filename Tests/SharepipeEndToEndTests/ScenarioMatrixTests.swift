import Foundation
import Testing

/// The share-scenario matrix: every `Fixtures/scenarios/<name>.json` runs through `sharepipe matrix` and must give
/// the receipt in `<name>.expected.json` — the overall status and, per attachment, the outcome, the chosen type and
/// the error code. The same file says which of the rules in
/// `Fixtures/scenarios/rules/` activate the share, checked both with `sharepipe activation check` and with
/// `share --activation-rule`.
@Suite(.timeLimit(.minutes(5)))
struct ScenarioMatrixTests {
    /// What `<name>.expected.json` holds.
    struct Expectation: Decodable {
        struct Attachment: Decodable, Equatable, CustomStringConvertible {
            var status: String
            var typeIdentifier: String?
            var code: String?

            var description: String { "\(status) \(typeIdentifier ?? "-") \(code ?? "-")" }
        }

        var args: [String]
        var status: String
        var attachments: [Attachment]
        var activation: [String: Bool]
    }

    static let directory = fixturePath("scenarios")

    /// Every scenario's name: the `.json` files beside an `.expected.json`.
    static let names: [String] = {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasSuffix(".json") && !$0.hasSuffix(".expected.json") }
            .map { String($0.dropLast(".json".count)) }.sorted()
    }()

    /// The rules' names (file names without the extension) and paths.
    static let rules: [(name: String, path: String)] = {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/rules")) ?? []
        return files.sorted().map { (($0 as NSString).deletingPathExtension, directory + "/rules/" + $0) }
    }()

    static func expectation(_ name: String) throws -> Expectation {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name + ".expected.json"))
        return try JSONDecoder().decode(Expectation.self, from: data)
    }

    @Test func matrixCoversTheSharesRealAppsSend() throws {
        let required = [
            "photo-heic-plus-jpeg", "screenshot-png-data", "web-page-url-plus-text", "pdf-from-files",
            "photos-same-name", "image-plus-url", "first-type-unsupported", "load-error-among-good", "never-calls-back",
            "safari-page-with-title-and-text",
        ]
        for name in required {
            #expect(Self.names.contains(name), "missing scenario \(name)")
        }
        #expect(Self.rules.map(\.name) == ["images-only", "images-or-movies", "one-web-url", "text-or-one-url"])
        for name in Self.names {
            let expectation = try Self.expectation(name)
            #expect(Set(expectation.activation.keys) == Set(Self.rules.map(\.name)), "\(name)")
        }
    }

    /// `sharepipe matrix` runs every scenario against its receipt: status and, per attachment, outcome, chosen type
    /// and code; each copy's bytes, distinct file ids, an empty staging, the scenario's own files untouched; and
    /// the activation map. The JUnit file lists each scenario as a passing case.
    @Test func everyScenarioGivesItsExpectedReceipt() async throws {
        try await withTemporaryDirectory { dir in
            let junit = dir + "/matrix.xml"
            let result = try await runSharepipe(["matrix", Self.directory, "--json", "--junit", junit])
            #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
            let report = try result.jsonObject
            let scenarios = try #require(report["scenarios"] as? [[String: Any]])
            #expect(scenarios.compactMap { $0["name"] as? String } == Self.names)
            for scenario in scenarios {
                let name = scenario["name"] as? String ?? "?"
                #expect(scenario["passed"] as? Bool == true, "\(name): \(scenario["failures"] ?? "")")
            }
            let xml = try String(contentsOfFile: junit, encoding: .utf8)
            for name in Self.names { #expect(xml.contains("name=\"\(name)\""), "\(name) missing from the JUnit file") }
            #expect(!xml.contains("<failure"))
        }
    }

    @Test(arguments: ScenarioMatrixTests.names)
    func activationCheckAgreesWithTheMatrix(name: String) async throws {
        let expected = try Self.expectation(name)
        let scenario = Self.directory + "/" + name + ".json"
        for rule in Self.rules {
            let result = try await runSharepipe(
                ["activation", "check", "--rule", rule.path, "--scenario", scenario, "--json"])
            let activated = try #require(expected.activation[rule.name] as Bool?)
            #expect(result.status == (activated ? 0 : 1), "\(name) with \(rule.name): \(result.stdout)")
            #expect(try result.jsonObject["activated"] as? Bool == activated, "\(name) with \(rule.name)")
        }
    }

    @Test(arguments: ScenarioMatrixTests.names)
    func shareHonoursTheActivationRules(name: String) async throws {
        let expected = try Self.expectation(name)
        let scenario = Self.directory + "/" + name + ".json"
        for rule in Self.rules {
            let activated = try #require(expected.activation[rule.name] as Bool?)
            try await withTemporaryDirectory { dir in
                let result = try await runSharepipe(
                    ["share", "--state", dir + "/state", "--json", "--scenario", scenario,
                     "--activation-rule", rule.path] + expected.args)
                let receipt = try result.jsonObject
                let error = receipt["error"] as? [String: Any]
                if activated {
                    #expect(receipt["status"] as? String == expected.status, "\(name) with \(rule.name)")
                    #expect(error?["code"] as? String != "ERR_NOT_ACTIVATED", "\(name) with \(rule.name)")
                } else {
                    #expect(result.status == 4, "\(name) with \(rule.name)")
                    #expect(error?["code"] as? String == "ERR_NOT_ACTIVATED", "\(name) with \(rule.name)")
                    let attachments = try #require(receipt["attachments"] as? [[String: Any]])
                    #expect(attachments.count == expected.attachments.count)
                    #expect(attachments.allSatisfy { ShareFiles.code($0) == "ERR_NOT_ACTIVATED" })
                    #expect(try ShareFiles.entries(dir + "/state/incoming").isEmpty)
                    #expect(try ShareFiles.entries(dir + "/state/staging").isEmpty)
                }
            }
        }
    }
}
