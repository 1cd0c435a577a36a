import Foundation
import SharepipeCore
import SharepipeScenario

/// `sharepipe matrix`: runs scenario files against their expected receipts, for CI.
struct MatrixCommand: Command {
    static let name = "matrix"
    static let abstract = "Run share scenarios against their *.expected.json receipts; exit 1 when any differs."
    static let junit = Option(
        "junit", .path, help: "Also write the results as JUnit XML to FILE (one test case per scenario).")
    static let options: [any OptionDeclaration] = [junit, CommonOptions.json]
    static let positionals = [
        Positional(
            "PATH", .zeroOrMore,
            help: "A scenario file, or a directory searched recursively (default: ./Fixtures/scenarios).")
    ]
    static let discussion = """
        A scenario is NAME.json (the "share --scenario" format) beside NAME.expected.json: {"args": [share flags], \
        "status", "attachments": [{"status", "typeIdentifier", "code"}], "activation": {RULE: true|false}}, where \
        RULE names a file in the rules/ directory beside the scenario (an NSExtensionActivationRule, without its \
        extension). Each scenario is loaded like "sharepipe share --scenario NAME.json ARGS" into a temporary state \
        directory. It passes when the receipt's status and, per attachment, the outcome, chosen type and code are \
        as expected, each rule activates as expected, every copy holds its source's bytes, file ids are distinct, \
        staging is empty and the scenario's own files are untouched.

        The table (stdout) has one row per scenario and per attachment: source app, declared types, chosen type, \
        expected and got. Exit status: 0 all as expected, 1 any scenario differs, 2 a malformed scenario, \
        expected receipt or rule (the message names the file, the key and the index) or no scenario found.
        """

    let paths: [String]
    let junitPath: String?
    let json: Bool

    init(arguments: ParsedArguments) throws {
        paths = arguments.positionals.isEmpty ? ["Fixtures/scenarios"] : arguments.positionals
        junitPath = arguments[Self.junit]
        json = arguments[CommonOptions.json]
    }

    func run() async throws -> ExitCode {
        let cases = try MatrixCase.discover(paths)
        let started = ContinuousClock.now
        var results: [MatrixResult] = []
        for matrixCase in cases {
            results.append(try await matrixCase.run())
        }
        let elapsed = started.duration(to: .now)
        if let junitPath {
            do {
                try Data(MatrixReport.junit(results, elapsed: elapsed).utf8)
                    .write(to: URL(fileURLWithPath: junitPath), options: .atomic)
            } catch {
                return reportFailure(ShareError(.io, "cannot write --junit \(junitPath): \(error)"), json: json)
            }
        }
        if json {
            try Output.printJSON(MatrixReport.JSONReport(results))
        } else {
            Output.write(MatrixReport.table(results))
        }
        return results.allSatisfy(\.passed) ? .success : .failure
    }
}

/// One scenario to run: the scenario, its expectation and the rules it names, all checked before anything runs.
struct MatrixCase {
    var name: String
    var file: String
    var share: ShareCommand
    var scenario: Scenario
    var expected: ScenarioExpectation
    var rules: [(name: String, rule: ActivationRule)]

    /// Every scenario under `paths`, sorted by path; a malformed file, a lone expected receipt or an empty search
    /// is a usage error naming the file.
    static func discover(_ paths: [String]) throws -> [MatrixCase] {
        var files: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw ValidationError("PATH: no such file or directory \(path.debugDescription)")
            }
            guard isDirectory.boolValue else {
                guard path.hasSuffix(".json"), !path.hasSuffix(".expected.json") else {
                    throw ValidationError("PATH: \(path.debugDescription) is not a scenario (NAME.json)")
                }
                files.append(path)
                continue
            }
            let found = try scenarios(in: path)
            guard !found.isEmpty else {
                throw ValidationError("PATH: no scenario (NAME.json beside NAME.expected.json) under \(path)")
            }
            files += found
        }
        return try files.map(load)
    }

    /// The scenarios in a directory tree (hidden entries skipped); an expected receipt without its scenario is an
    /// error, a JSON file without an expected receipt (a rule, data) is not a scenario.
    private static func scenarios(in directory: String) throws -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory) else {
            throw ValidationError("PATH: cannot read the directory \(directory.debugDescription)")
        }
        var names: Set<String> = []
        while let relative = enumerator.nextObject() as? String {
            guard !relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) else { continue }
            names.insert(relative)
        }
        var scenarios: [String] = []
        for name in names.sorted() where name.hasSuffix(".expected.json") {
            let scenario = String(name.dropLast(".expected.json".count)) + ".json"
            guard names.contains(scenario) else {
                throw ValidationError("\(directory)/\(name): no scenario \(scenario.debugDescription) beside it")
            }
            scenarios.append(directory + "/" + scenario)
        }
        return scenarios
    }

    private static func load(_ file: String) throws -> MatrixCase {
        let base = String(file.dropLast(".json".count))
        let expectedFile = base + ".expected.json"
        guard FileManager.default.fileExists(atPath: expectedFile) else {
            throw ValidationError("\(file): no expected receipt \(expectedFile.debugDescription) beside it")
        }
        let expected: ScenarioExpectation
        do {
            expected = try ScenarioExpectation.load(path: expectedFile)
        } catch let error as ScenarioError {
            throw ValidationError("\(expectedFile): \(error.message)")
        }
        let scenario: Scenario
        do {
            scenario = try Scenario.load(path: file)
        } catch let error as ScenarioError {
            throw ValidationError("\(file): \(error.message)")
        }
        let share: ShareCommand
        do {
            share = try shareCommand(expected.args, file: file, state: ".")
        } catch let error as ValidationError {
            throw ValidationError("\(expectedFile): \"args\": \(error.message)")
        }
        let directory = (file as NSString).deletingLastPathComponent
        return MatrixCase(
            name: ((file as NSString).lastPathComponent as NSString).deletingPathExtension, file: file, share: share,
            scenario: scenario, expected: expected,
            rules: try rules(expected.activation.keys.sorted(), directory: directory, expectedFile: expectedFile))
    }

    /// `sharepipe share --scenario FILE ARGS --state STATE`, parsed; the last `--state` wins.
    static func shareCommand(_ args: [String], file: String, state: String) throws -> ShareCommand {
        let parsed = try ParsedArguments(
            parsing: args + ["--scenario", file, "--state", state], options: ShareCommand.options,
            positionals: ShareCommand.positionals)
        return try ShareCommand(arguments: parsed)
    }

    /// The rules an expectation names, from `rules/` beside the scenario.
    private static func rules(
        _ names: [String], directory: String, expectedFile: String
    ) throws -> [(name: String, rule: ActivationRule)] {
        guard !names.isEmpty else { return [] }
        let rulesDirectory = directory + "/rules"
        let files = (try? FileManager.default.contentsOfDirectory(atPath: rulesDirectory)) ?? []
        return try names.map { name in
            guard let file = files.sorted().first(where: { ($0 as NSString).deletingPathExtension == name }) else {
                throw ValidationError(
                    "\(expectedFile): \"activation\".\(name.debugDescription): no rule \(name) in \(rulesDirectory)")
            }
            do {
                return (name, try ActivationRule.load(from: rulesDirectory + "/" + file))
            } catch let error as ActivationRuleError {
                throw ValidationError("\(rulesDirectory)/\(file): \(error.message)")
            } catch let error as ShareError {
                throw ValidationError("\(rulesDirectory)/\(file): \(error.code.rawValue): \(error.message)")
            }
        }
    }

    /// Loads the scenario into a temporary state directory and compares everything with the expectation.
    func run() async throws -> MatrixResult {
        let root = FileManager.default.temporaryDirectory.path + "/sharepipe-matrix-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: root) }
        let sources = sourceContents()
        let command = try Self.shareCommand(expected.args, file: file, state: root + "/state")
        let started = ContinuousClock.now
        let receipt = try await command.receipt()
        var result = MatrixResult(
            name: name, file: file, sourceApp: share.sourceAppOverride ?? scenario.sourceApp, expected: expected,
            receipt: receipt, declaredTypes: scenario.attachments.map { $0.representations.map(\.type) },
            duration: started.duration(to: .now))
        result.compare()
        checkCopies(receipt, state: root + "/state", into: &result)
        if sourceContents() != sources {
            result.failures.append("the scenario's own files changed while it ran")
        }
        for (ruleName, rule) in rules {
            let activated = rule.evaluate(result.declaredTypes, registry: share.registry).activated
            result.activation.append((ruleName, expected.activation[ruleName] ?? false, activated))
            if activated != expected.activation[ruleName] {
                result.failures.append("rule \(ruleName): expected \(activated ? "not activated" : "activated"), "
                    + "got \(activated ? "activated" : "not activated")")
            }
        }
        return result
    }

    /// Every copy holds its source's bytes, file ids are distinct and nothing is left in staging.
    private func checkCopies(_ receipt: ShareReceipt, state: String, into result: inout MatrixResult) {
        var fileIds: Set<String> = []
        for record in receipt.attachments where record.status == .copied {
            guard let fileId = record.fileId, let file = record.file, fileIds.insert(fileId).inserted else {
                result.failures.append("attachment \(record.index): missing or repeated file id")
                continue
            }
            let copy = FileManager.default.contents(atPath: state + "/incoming/" + receipt.shareId + "/" + file)
            guard let copy, Int64(copy.count) == record.bytes else {
                result.failures.append(
                    "attachment \(record.index): the copy is missing or not \(record.bytes ?? 0) bytes")
                continue
            }
            let representation = scenario.attachments.indices.contains(record.index)
                ? scenario.attachments[record.index].representations.first { $0.type == record.typeIdentifier } : nil
            if case .file(let path)? = representation?.source, FileManager.default.contents(atPath: path) != copy {
                result.failures.append("attachment \(record.index): the copy's bytes differ from its source")
            }
        }
        let staging = (try? FileManager.default.contentsOfDirectory(atPath: state + "/staging")) ?? []
        if !staging.isEmpty { result.failures.append("staging is not empty after the share") }
    }

    /// The bytes of every file the scenario names.
    private func sourceContents() -> [String: Data] {
        var contents: [String: Data] = [:]
        for attachment in scenario.attachments {
            for representation in attachment.representations {
                if case .file(let path) = representation.source {
                    contents[path] = FileManager.default.contents(atPath: path) ?? Data()
                }
            }
        }
        return contents
    }
}

/// What one scenario gave.
struct MatrixResult {
    var name: String
    var file: String
    var sourceApp: String?
    var expected: ScenarioExpectation
    var receipt: ShareReceipt
    var declaredTypes: [[String]]
    var duration: Duration
    /// Rule name, expected, got.
    var activation: [(rule: String, expected: Bool, got: Bool)] = []
    var failures: [String] = []

    var passed: Bool { failures.isEmpty }

    /// What the receipt says about attachment `index`, in the expectation's shape.
    func got(_ index: Int) -> ScenarioExpectation.Attachment? {
        guard receipt.attachments.indices.contains(index) else { return nil }
        let record = receipt.attachments[index]
        return ScenarioExpectation.Attachment(
            status: record.status.rawValue, typeIdentifier: record.typeIdentifier, code: record.error?.code.rawValue)
    }

    mutating func compare() {
        if receipt.status.rawValue != expected.status {
            failures.append("status: expected \(expected.status), got \(receipt.status.rawValue)")
        }
        if receipt.attachments.count != expected.attachments.count {
            failures.append("expected \(expected.attachments.count) attachments, got \(receipt.attachments.count)")
        }
        for (index, attachment) in expected.attachments.enumerated() where got(index) != attachment {
            failures.append("attachment \(index): expected \(attachment), got \(got(index)?.description ?? "nothing")")
        }
    }
}

/// The table, the JSON report and the JUnit XML.
enum MatrixReport {
    static func table(_ results: [MatrixResult]) -> String {
        let stream = Output.Stream.standardOutput
        var rows: [[String]] = []
        for result in results {
            let verdict = result.passed
                ? Output.styled("ok", .green, for: stream) : Output.styled("FAIL", .red, for: stream)
            rows.append([
                result.name, result.sourceApp ?? "-", "share", "-", "-", result.expected.status,
                result.receipt.status.rawValue, verdict,
            ])
            let count = max(result.expected.attachments.count, result.receipt.attachments.count)
            for index in 0..<count {
                let expected = result.expected.attachments.indices.contains(index)
                    ? result.expected.attachments[index] : nil
                let got = result.got(index)
                let mark = expected == got ? "" : Output.styled("differs", .red, for: stream)
                rows.append([
                    "", "", String(index), result.declaredTypes.indices.contains(index)
                        ? result.declaredTypes[index].joined(separator: ",") : "-",
                    got?.typeIdentifier ?? "-", expected.map(outcome) ?? "-", got.map(outcome) ?? "-", mark,
                ])
            }
            for entry in result.activation {
                let mark = entry.expected == entry.got ? "" : Output.styled("differs", .red, for: stream)
                rows.append([
                    "", "", "rule " + entry.rule, "-", "-", activation(entry.expected), activation(entry.got), mark,
                ])
            }
        }
        let header = [
            "scenario", "source app", "attachment", "declared types", "chosen type", "expected", "got", "result",
        ]
        var text = Output.table(rows, header: header.map { Output.styled($0, .bold, for: stream) })
        for result in results where !result.passed {
            for failure in result.failures { text += "FAIL \(result.name): \(failure)\n" }
        }
        let failed = results.filter { !$0.passed }.count
        text += "\(results.count) scenario\(results.count == 1 ? "" : "s"): \(results.count - failed) passed, "
            + "\(failed) failed\n"
        return text
    }

    private static func outcome(_ attachment: ScenarioExpectation.Attachment) -> String {
        attachment.status == "copied" ? attachment.status : attachment.status + " " + (attachment.code ?? "-")
    }

    private static func activation(_ activated: Bool) -> String { activated ? "activated" : "not activated" }

    /// The `--json` shape.
    struct JSONReport: Encodable {
        struct Outcome: Encodable {
            var status: String
            var typeIdentifier: String?
            var code: String?

            init(_ attachment: ScenarioExpectation.Attachment) {
                status = attachment.status
                typeIdentifier = attachment.typeIdentifier
                code = attachment.code
            }

            enum CodingKeys: String, CodingKey {
                case status, typeIdentifier, code
            }

            /// Every key present, null when absent, as in the expected receipts.
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(status, forKey: .status)
                try container.encode(typeIdentifier, forKey: .typeIdentifier)
                try container.encode(code, forKey: .code)
            }
        }

        struct Attachment: Encodable {
            var index: Int
            var declaredTypes: [String]
            var expected: Outcome?
            var got: Outcome?
            var passed: Bool
        }

        struct Rule: Encodable {
            var rule: String
            var expected: Bool
            var got: Bool
        }

        struct Scenario: Encodable {
            var name: String
            var file: String
            var passed: Bool
            var sourceApp: String?
            var shareId: String
            var expectedStatus: String
            var status: String
            var attachments: [Attachment]
            var activation: [Rule]
            var failures: [String]
            var durationMs: Int64
        }

        var scenarios: [Scenario]
        var total: Int
        var passed: Int
        var failed: Int

        init(_ results: [MatrixResult]) {
            scenarios = results.map { result in
                let count = max(result.expected.attachments.count, result.receipt.attachments.count)
                return Scenario(
                    name: result.name, file: result.file, passed: result.passed, sourceApp: result.sourceApp,
                    shareId: result.receipt.shareId, expectedStatus: result.expected.status,
                    status: result.receipt.status.rawValue,
                    attachments: (0..<count).map { index in
                        let expected = result.expected.attachments.indices.contains(index)
                            ? result.expected.attachments[index] : nil
                        return Attachment(
                            index: index,
                            declaredTypes: result.declaredTypes.indices.contains(index)
                                ? result.declaredTypes[index] : [],
                            expected: expected.map(Outcome.init), got: result.got(index).map(Outcome.init),
                            passed: expected == result.got(index))
                    },
                    activation: result.activation.map { Rule(rule: $0.rule, expected: $0.expected, got: $0.got) },
                    failures: result.failures, durationMs: milliseconds(result.duration))
            }
            total = results.count
            passed = results.filter(\.passed).count
            failed = total - passed
        }
    }

    /// JUnit XML: one test suite per scenario directory, one test case per scenario, a `<failure>` listing what
    /// differed.
    static func junit(_ results: [MatrixResult], elapsed: Duration) -> String {
        let failed = results.filter { !$0.passed }.count
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites name=\"sharepipe matrix\" tests=\"\(results.count)\" failures=\"\(failed)\" "
            + "errors=\"0\" time=\"\(seconds(elapsed))\">\n"
        let suites = Dictionary(grouping: results) { ($0.file as NSString).deletingLastPathComponent }
        for (suite, cases) in suites.sorted(by: { $0.key < $1.key }) {
            let suiteFailures = cases.filter { !$0.passed }.count
            let time = cases.reduce(Duration.zero) { $0 + $1.duration }
            xml += "  <testsuite name=\"\(escape(suite))\" tests=\"\(cases.count)\" failures=\"\(suiteFailures)\" "
                + "errors=\"0\" skipped=\"0\" time=\"\(seconds(time))\">\n"
            for result in cases {
                let opening = "    <testcase classname=\"\(escape(suite))\" name=\"\(escape(result.name))\" "
                    + "file=\"\(escape(result.file))\" time=\"\(seconds(result.duration))\""
                guard !result.passed else {
                    xml += opening + "/>\n"
                    continue
                }
                xml += opening + ">\n"
                xml += "      <failure type=\"expectation\" message=\"\(escape(result.failures[0]))\">"
                    + escape(result.failures.joined(separator: "\n")) + "</failure>\n"
                xml += "    </testcase>\n"
            }
            xml += "  </testsuite>\n"
        }
        return xml + "</testsuites>\n"
    }

    private static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "\n", "\t": escaped.unicodeScalars.append(scalar)
            // XML 1.0 has no way to write other control characters.
            case _ where scalar.value < 0x20: escaped += "?"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func seconds(_ duration: Duration) -> String {
        String(format: "%.3f", Double(milliseconds(duration)) / 1000)
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
