import Foundation
import SharepipeIngest
import SharepipeSystem

/// A scripted share read from `sharepipe share --scenario FILE`, in the SPEC's JSON shape:
///
/// ```json
/// { "sourceApp": "com.apple.mobileslideshow",
///   "attachments": [
///     { "suggestedName": "IMG_0001.HEIC",
///       "representations": [
///         { "type": "public.heic", "kind": "file", "path": "a.heic", "delayMs": 0, "afterCallback": "delete" },
///         { "type": "public.jpeg", "kind": "data", "path": "a.jpg" } ] } ] }
/// ```
///
/// Every key is checked: an unknown key, a missing `type`, a value of the wrong type, an unknown word or error code
/// and a `path` that names no regular file are errors that name the attachment, the representation and the key.
/// Two keys extend the SPEC's shape: `callsTwice` (the provider calls back a second time) and `thread`
/// (`background`, the default, or `caller`: the callback runs before the load call returns).
public struct Scenario: Sendable {
    /// One scripted attachment.
    public struct Attachment: Sendable {
        /// The name the source app suggests.
        package var suggestedName: String?
        /// The representations, highest fidelity first.
        package var representations: [ScriptedItemProvider.Representation]

        /// An attachment with these representations.
        public init(suggestedName: String? = nil, representations: [ScriptedItemProvider.Representation]) {
            self.suggestedName = suggestedName
            self.representations = representations
        }
    }

    /// The bundle identifier of the app that "shared".
    package var sourceApp: String?
    /// The attachments, in share order.
    package var attachments: [Attachment]

    /// A scenario built in code.
    public init(sourceApp: String? = nil, attachments: [Attachment]) {
        self.sourceApp = sourceApp
        self.attachments = attachments
    }

    /// The scripted providers, one per attachment. Each hands out a temporary copy of its sources, so an
    /// `afterCallback` action never touches the files the scenario names.
    public func makeProviders() -> [ScriptedItemProvider] {
        attachments.map { ScriptedItemProvider(representations: $0.representations, suggestedName: $0.suggestedName) }
    }

    /// Reads and checks a scenario file; relative paths inside it are relative to the file's directory.
    /// Throws a `ScenarioError` whose message names the place in the file, such as
    /// `attachments[1].representations[0]: unknown key "kindd" (…)`.
    public static func load(path: String) throws -> Scenario {
        let document = try JSONValue.read(path)
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return try Scenario(document, directory: directory)
    }

    private init(_ document: JSONValue, directory: String) throws {
        let top = try ObjectReader(document, at: "", what: "the scenario", keys: ["sourceApp", "attachments"])
        sourceApp = try top.optionalString("sourceApp")
        let items = try top.array("attachments")
        attachments = try items.enumerated().map { index, item in
            let location = "attachments[\(index)]"
            let object = try ObjectReader(
                item, at: location, what: "an attachment", keys: ["suggestedName", "representations"])
            let suggestedName = try object.optionalString("suggestedName")
            let representations = try object.array("representations").enumerated().map { position, value in
                try Self.representation(value, at: "\(location).representations[\(position)]", directory: directory)
            }
            return Attachment(suggestedName: suggestedName, representations: representations)
        }
    }

    private static let representationKeys = [
        "type", "kind", "path", "delayMs", "error", "noFile", "neverCalls", "afterCallback", "callsTwice", "thread",
    ]

    private static func representation(
        _ value: JSONValue, at location: String, directory: String
    ) throws -> ScriptedItemProvider.Representation {
        let object = try ObjectReader(value, at: location, what: "a representation", keys: representationKeys)
        let type = try object.string("type")
        guard !type.isEmpty else { throw object.failure("\"type\" must not be empty") }
        let kind = try object.word("kind", [RepresentationKind.file, .data]) ?? .file
        let errorCode = try object.optionalString("error").map { text -> ShareError.Code in
            guard let code = ShareError.Code(rawValue: text) else {
                throw object.failure("\"error\": unknown error code \(text.debugDescription) "
                    + "(expected an ERR_* code from the SPEC, such as ERR_LOAD_FAILED or ERR_MISSING_FILE)")
            }
            return code
        }
        let noFile = try object.bool("noFile") ?? false
        let neverCalls = try object.bool("neverCalls") ?? false
        var source = ScriptedItemProvider.Representation.Source.none
        if let relative = try object.optionalString("path") {
            source = .file(try sourceFile(relative, directory: directory, object: object))
        } else if errorCode == nil && !noFile && !neverCalls {
            throw object.failure("missing \"path\" (needed unless \"error\", \"noFile\" or \"neverCalls\" is set)")
        }
        let afterCallback = try object.word("afterCallback", [ScriptedItemProvider.AfterCallback.keep, .delete, .move])
        let thread = try object.word("thread", [ScriptedItemProvider.CallbackThread.background, .caller])
        let callsTwice = try object.bool("callsTwice") ?? false
        return ScriptedItemProvider.Representation(
            type: type, kind: kind, source: source, delay: .milliseconds(try object.milliseconds("delayMs") ?? 0),
            error: errorCode, noFile: noFile, neverCalls: neverCalls, callsTwice: callsTwice,
            afterCallback: afterCallback ?? .keep, thread: thread ?? .background)
    }

    /// The absolute path of a representation's source, which must be a regular file (symlinks are not followed).
    private static func sourceFile(_ relative: String, directory: String, object: ObjectReader) throws -> String {
        guard !relative.isEmpty else { throw object.failure("\"path\" must not be empty") }
        let path = relative.hasPrefix("/") ? relative : directory + "/" + relative
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard let attributes else {
            throw object.failure("\"path\": no file at \(relative.debugDescription) (looked for \(path))")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw object.failure("\"path\": \(relative.debugDescription) is not a regular file")
        }
        return path
    }
}

