import Foundation
import SharepipeCore
import SharepipeScenario
import Synchronization

/// `sharepipe share`: simulates one multi-attachment share, loads it into the spool and prints the receipt.
struct ShareCommand: Command {
    static let name = "share"
    static let abstract = "Simulate one multi-attachment share: load, check and publish it into the spool."

    private static let defaults = LoaderConfiguration()

    static let state = Option(
        "state", .path(placeholder: "DIR"),
        help: "The state directory (default: $STATE_DIRECTORY when set, else ./.sharepipe).")
    static let sourceApp = Option(
        "source-app", .string(placeholder: "ID"),
        help: "Bundle identifier of the sharing app, recorded in the manifest (overrides the scenario's).")
    static let accept = ListOption(
        "accept", .string(placeholder: "TYPE"), default: defaults.accept.joined(separator: ","),
        help: "Accepted types; per attachment the first declared type conforming to one of them is chosen.")
    static let policy = Option(
        "policy", .choice(SharePolicy.self), default: defaults.policy.rawValue,
        help: "What a failed attachment does to the rest of the share.")
    static let maxFileSize = Option(
        "max-file-size", .size, default: sizeText(defaults.maxFileSize),
        help: "Largest attachment, counted while copying.")
    static let maxShareSize = Option(
        "max-share-size", .size, default: sizeText(defaults.maxShareSize), help: "Largest share, all attachments.")
    static let maxAttachments = Option(
        "max-attachments", .positiveInteger, default: String(defaults.maxAttachments),
        help: "Most attachments in one share.")
    static let loadTimeout = Option(
        "load-timeout", .milliseconds, default: String(milliseconds(defaults.loadTimeout)),
        help: "How long a provider may take to call back, in milliseconds.")
    static let scenario = Option(
        "scenario", .path,
        help: "Script the providers with a JSON scenario instead of giving ATTACHMENT arguments.")
    static let activationRule = Option(
        "activation-rule", .path,
        help: "Reject the share, before anything is loaded, unless this NSExtensionActivationRule activates it "
            + "(an Info.plist, a JSON file, an inline JSON dictionary or an inline predicate).")

    static let options: [any OptionDeclaration] = [state] + LedgerOptions.all + [
        sourceApp, accept, policy, maxFileSize, maxShareSize, maxAttachments, loadTimeout, CommonOptions.json,
        CommonOptions.types, scenario, activationRule,
    ] + SpoolLimitOptions.all + DuplicateOptions.all
    static let positionals = [
        Positional(
            "ATTACHMENT", .zeroOrMore,
            help: "PATH, or PATH=TYPE1,TYPE2 to declare the types (highest fidelity first).")
    ]
    static let usage = "[options] (ATTACHMENT... | --scenario FILE)"
    static let discussion = """
        Without =TYPES an attachment's types come from its extension, then from its sniffed content. An argument \
        that names an existing file is always a PATH, even when it contains "="; otherwise the text after the last \
        "=" is the type list. share copies the files and never moves or deletes them.

        The receipt goes to stdout as a table (index, suggested name, chosen type, size, result); with --json \
        as {"shareId", "status", "attachments": [...]}, each attachment shaped as in manifest.json, plus \
        "error": {"code", "message"} when the whole share failed or was refused (also printed on stderr). A \
        provider that has not called back after 3 seconds is announced on stderr: which attachment, which type, \
        and the time left before ERR_TIMEOUT.

        A scenario is a JSON object: "sourceApp" and "attachments", each with "suggestedName" and \
        "representations"; a representation has "type" (required), "kind" (file or data, default file), "path" \
        (relative to the scenario file; required unless "error", "noFile" or "neverCalls" is set), "delayMs", \
        "error" (an ERR_* code), "noFile", "neverCalls", "afterCallback" (keep, delete or move, default keep), and \
        two extensions: "callsTwice" (true: call back a second time) and "thread" (background, the default, or \
        caller: call back before the load call returns). Files are handed out as temporary copies, so \
        afterCallback never touches the files the scenario names.

        SIGINT or SIGTERM while the share loads cancels it: whatever was copied is rolled back, nothing is \
        published, the receipt marks the attachments in flight ERR_CANCELLED and the exit status is 1. A second \
        SIGINT ends sharepipe at once, still without publishing anything. On a terminal, stderr shows the bytes \
        copied, the rate and the time left while large attachments copy.

        Exit status: 0 complete, 3 partial, 4 rejected (nothing accepted, rolled back, or not activated), \
        1 failed (e.g. ERR_CONTAINER_UNAVAILABLE), 2 usage error.
        """

    /// What is being shared: files from the command line, or a scripted scenario.
    enum Source {
        case files([(path: String, types: [String]?)])
        case scenario(Scenario)
    }

    let source: Source
    let stateDirectory: String
    let ledger: LedgerLocation
    let sourceAppOverride: String?
    let configuration: LoaderConfiguration
    let registry: TypeRegistry
    let rule: ActivationRule?
    let json: Bool

    init(arguments: ParsedArguments) throws {
        if let path = arguments[Self.scenario] {
            guard arguments.positionals.isEmpty else {
                throw ValidationError(option: Self.scenario, "cannot be combined with ATTACHMENT arguments")
            }
            do {
                source = .scenario(try Scenario.load(path: path))
            } catch let error as ScenarioError {
                throw ValidationError(option: Self.scenario, error.message)
            }
        } else {
            guard !arguments.positionals.isEmpty else {
                throw ValidationError("missing ATTACHMENT (or --scenario FILE)")
            }
            source = .files(try arguments.positionals.map(Self.attachment))
        }
        stateDirectory = arguments[Self.state] ?? Spool.defaultRoot()
        ledger = try LedgerOptions.location(arguments)
        sourceAppOverride = arguments[Self.sourceApp]
        var configuration = LoaderConfiguration()
        configuration.accept = arguments[Self.accept]
        configuration.policy = try arguments.required(Self.policy)
        configuration.maxFileSize = try arguments.required(Self.maxFileSize)
        configuration.maxShareSize = try arguments.required(Self.maxShareSize)
        configuration.maxAttachments = try arguments.required(Self.maxAttachments)
        configuration.loadTimeout = .milliseconds(try arguments.required(Self.loadTimeout))
        try SpoolLimitOptions.apply(arguments, to: &configuration)
        try DuplicateOptions.apply(arguments, to: &configuration)
        self.configuration = configuration
        registry = try loadTypeRegistry(arguments)
        rule = try arguments[Self.activationRule].map { text in
            do {
                return try ActivationRule.load(from: text)
            } catch let error as ActivationRuleError {
                throw ValidationError(option: Self.activationRule, error.message)
            } catch let error as ShareError {
                throw ValidationError(option: Self.activationRule, "\(error.code.rawValue): \(error.message)")
            }
        }
        json = arguments[CommonOptions.json]
    }

    /// `PATH` or `PATH=TYPE1,TYPE2`; text naming an existing file is a path whatever it contains.
    private static func attachment(_ text: String) throws -> (path: String, types: [String]?) {
        guard !text.isEmpty else { throw ValidationError("ATTACHMENT: expected a path, got an empty string") }
        let exists = (try? FileManager.default.attributesOfItem(atPath: text)) != nil
        guard !exists, let separator = text.lastIndex(of: "=") else { return (text, nil) }
        let path = String(text[..<separator])
        guard !path.isEmpty else { throw ValidationError("ATTACHMENT \(text.debugDescription): missing the PATH") }
        do {
            return (path, try ListOption<String>.items(String(text[text.index(after: separator)...])))
        } catch let error as ValidationError {
            throw ValidationError("ATTACHMENT \(text.debugDescription): after \"=\" \(error.message)")
        }
    }

    func run() async throws -> ExitCode {
        for type in configuration.accept where !isKnown(type) {
            Output.printWarning("--accept: \(type.debugDescription) is not a declared type identifier")
        }
        let receipt = try await receipt()
        if let error = receipt.error {
            Output.printError("\(error.code.rawValue): \(error.message)")
        }
        if json {
            try Output.printJSON(receipt)
        } else {
            printReceipt(receipt)
        }
        return ExitCode(rawValue: receipt.exitStatus) ?? .failure
    }

    /// Loads the share and returns its receipt without printing it (`run` and `sharepipe matrix`).
    func receipt() async throws -> ShareReceipt {
        let providers: [any ItemProvider]
        var sourceApp = sourceAppOverride
        switch source {
        case .files(let files):
            providers = files.map { FileItemProvider(path: $0.path, types: $0.types, registry: registry) }
        case .scenario(let scenario):
            providers = scenario.makeProviders()
            sourceApp = sourceApp ?? scenario.sourceApp
        }
        let expected = expectedBytes(providers)
        let watched = providers.enumerated().map { index, provider -> any ItemProvider in
            ProviderWatch(base: provider, index: index, timeout: configuration.loadTimeout)
        }
        return try await share(watched, sourceApp: sourceApp, expectedBytes: expected)
    }

    private func isKnown(_ type: String) -> Bool {
        registry.declaration(for: type) != nil || TypeRegistry.tag(ofDynamic: type) != nil
    }

    /// Checks activation, opens the spool and loads; a share that cannot start still gets a receipt.
    private func share(_ providers: [any ItemProvider], sourceApp: String?, expectedBytes: Int64) async throws
        -> ShareReceipt
    {
        if let rule {
            let result = rule.evaluate(providers.map(\.registeredTypeIdentifiers), registry: registry)
            if !result.activated {
                let error = ShareError(.notActivated, "the activation rule refused the share: \(result.reason)")
                return try ShareReceipt.refused(.rejected, error, providers: providers)
            }
        }
        let spool: Spool
        do {
            spool = try Spool(root: stateDirectory, ledger: ledger, faults: .fromEnvironment())
        } catch {
            let shareError = error as? ShareError ?? ShareError(.containerUnavailable, "\(error)")
            return try ShareReceipt.refused(.failed, shareError, providers: providers)
        }
        let progress = ShareProgress(total: expectedBytes, count: providers.count)
        var configuration = configuration
        configuration.progress = { index, bytes in progress.update(index: index, bytes: bytes) }
        let loader = ShareLoader(spool: spool, registry: registry, configuration: configuration)
        // The first SIGINT or SIGTERM cancels the load, which rolls the share back and still ends in a receipt; a
        // second one ends the process at once (nothing is published half-way: publishing is one rename, and an
        // unpublished staging directory is removed by the next daemon or consume start).
        let receipt = await withCancellationOnSignals(onSignal: { _ in
            progress.finish()
            Output.write("cancelling: rolling the share back (interrupt again to quit at once)\n", to: .standardError)
        }) {
            await loader.load(providers, sourceApp: sourceApp)
        }
        progress.finish()
        return receipt
    }

    /// The bytes the loader should copy, for the progress bar: each attachment's chosen representation, when it
    /// is a file whose size is known beforehand.
    private func expectedBytes(_ providers: [any ItemProvider]) -> Int64 {
        providers.reduce(0) { total, provider in
            let declared = provider.registeredTypeIdentifiers
            let chosen = declared.first { type in configuration.accept.contains { registry.conforms(type, to: $0) } }
            var path: String?
            if let provider = provider as? FileItemProvider {
                path = provider.path
            } else if let provider = provider as? ScriptedItemProvider, let chosen,
                let representation = provider.representations.first(where: { $0.type == chosen }),
                case .file(let source) = representation.source
            {
                path = source
            }
            guard chosen != nil, let path, let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                attributes[.type] as? FileAttributeType == .typeRegular, let size = attributes[.size] as? Int64
            else { return total }
            return total + size
        }
    }

    // MARK: - Human receipt

    private func printReceipt(_ receipt: ShareReceipt) {
        let stream = Output.Stream.standardOutput
        let copied = receipt.attachments.filter { $0.status == .copied }.count
        let summary: String
        switch receipt.status {
        case .complete, .partial:
            summary = "\(copied) of \(receipt.attachments.count) copied into "
                + (stateDirectory as NSString).appendingPathComponent("incoming/" + receipt.shareId)
        case .rejected, .failed:
            summary = "nothing published"
        }
        let style: Output.Style = switch receipt.status {
        case .complete: .green
        case .partial: .yellow
        case .rejected, .failed: .red
        }
        let status = Output.styled(receipt.status.rawValue, style, for: stream)
        var text = "share \(receipt.shareId): \(status), \(summary)\n"
        if let error = receipt.error {
            text += Output.styled(error.code.rawValue, .red, for: stream) + ": \(error.message)\n"
        }
        let rows = receipt.attachments.map { record -> [String] in
            let result: String = switch record.status {
            case .copied:
                Output.styled("copied", .green, for: stream) + " " + (record.file ?? "")
                    + (record.duplicateOf.map { Output.styled(" duplicate of \($0.shareId)", .yellow, for: stream) } ?? "")
            case .rolledBack: Output.styled("rolled back", .yellow, for: stream)
            case .failed: Output.styled(record.error?.code.rawValue ?? "failed", .red, for: stream)
            }
            return [
                String(record.index), Self.displayName(record.suggestedName), record.typeIdentifier ?? "-",
                record.bytes.map(Output.formatBytes) ?? "-", result,
            ]
        }
        let header = ["#", "name", "type", "size", "result"].map { Output.styled($0, .bold, for: stream) }
        text += Output.table(rows, header: header)
        for record in receipt.attachments {
            guard let error = record.error, error != receipt.error else { continue }
            text += Output.styled("\(record.index): \(error.code.rawValue):", .dim, for: stream) + " \(error.message)\n"
        }
        Output.write(text, to: stream)
    }

    /// A suggested name fit for one table cell: control characters shown as `?`, long names shortened.
    private static func displayName(_ name: String?) -> String {
        guard let name, !name.isEmpty else { return "-" }
        let visible = String(String.UnicodeScalarView(name.unicodeScalars.map {
            $0.properties.generalCategory == .control ? "?" : $0
        }))
        return visible.count > 40 ? visible.prefix(24) + "…" + visible.suffix(15) : visible
    }
}

/// One progress bar for the whole share, fed by the loader's per-attachment progress callback from any thread.
private final class ShareProgress: Sendable {
    private let bar: ProgressBar
    private let copied: Mutex<[Int64]>

    init(total: Int64, count: Int) {
        bar = ProgressBar(label: "copying", total: total)
        copied = Mutex([Int64](repeating: 0, count: count))
    }

    func update(index: Int, bytes: Int64) {
        let sum = copied.withLock { copied -> Int64 in
            guard copied.indices.contains(index) else { return copied.reduce(0, +) }
            copied[index] = bytes
            return copied.reduce(0, +)
        }
        bar.update(completed: sum)
    }

    func finish() {
        bar.finish()
    }
}

extension ShareReceipt {
    /// A receipt for a share refused before anything was loaded: the share-level error, and every attachment
    /// failed with it.
    ///
    /// The library's receipt types have no public memberwise initialisers; their `Codable` form, which is the
    /// documented JSON contract, is their public way in.
    static func refused(_ status: Status, _ error: ShareError, providers: [any ItemProvider]) throws -> ShareReceipt {
        struct ErrorShape: Encodable {
            var code: String
            var message: String
        }
        struct AttachmentShape: Encodable {
            var index: Int
            var status = "failed"
            var declaredTypes: [String]
            var suggestedName: String?
            var error: ErrorShape
        }
        struct ReceiptShape: Encodable {
            var shareId: String
            var status: String
            var attachments: [AttachmentShape]
            var error: ErrorShape
        }
        let info = ErrorShape(code: error.code.rawValue, message: error.message)
        let shape = ReceiptShape(
            shareId: UUID().uuidString, status: status.rawValue,
            attachments: providers.enumerated().map { index, provider in
                AttachmentShape(
                    index: index, declaredTypes: provider.registeredTypeIdentifiers,
                    suggestedName: provider.suggestedName, error: info)
            },
            error: info)
        return try JSONDecoder().decode(ShareReceipt.self, from: JSONEncoder().encode(shape))
    }
}

/// A byte count in the largest unit that divides it exactly, as `--max-file-size` reads it: `4G`, `512K`, `100`.
private func sizeText(_ bytes: Int64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] where bytes > 0 && bytes % (1 << shift) == 0 {
        return "\(bytes >> shift)\(unit)"
    }
    return String(bytes)
}

/// A duration in whole milliseconds.
private func milliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1000 + attoseconds / 1_000_000_000_000_000
}
