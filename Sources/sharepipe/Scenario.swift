import Foundation
import SharepipeCore

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
struct Scenario {
    /// One scripted attachment.
    struct Attachment {
        var suggestedName: String?
        var representations: [ScriptedItemProvider.Representation]
    }

    /// The bundle identifier of the app that "shared".
    var sourceApp: String?
    var attachments: [Attachment]

    /// The scripted providers, one per attachment. Each hands out a temporary copy of its sources, so an
    /// `afterCallback` action never touches the files the scenario names.
    func makeProviders() -> [ScriptedItemProvider] {
        attachments.map { ScriptedItemProvider(representations: $0.representations, suggestedName: $0.suggestedName) }
    }

    /// Reads and checks a scenario file; relative paths inside it are relative to the file's directory.
    /// Throws a `ValidationError` whose message names the place in the file (without the `--scenario` prefix).
    static func load(path: String) throws -> Scenario {
        guard (try? FileManager.default.attributesOfItem(atPath: path)) != nil else {
            throw ValidationError("no such file \(path.debugDescription)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read \(path.debugDescription)")
        }
        let document: JSONValue
        do {
            document = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw ValidationError("\(path.debugDescription) is not valid JSON")
        }
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

/// Reads one JSON object of a scenario, refusing keys it does not know and values of the wrong type; every error
/// starts with the object's location, such as `attachments[1].representations[0]: `.
private struct ObjectReader {
    let location: String
    let members: [String: JSONValue]

    init(_ value: JSONValue, at location: String, what: String, keys: [String]) throws {
        self.location = location
        guard case .object(let members) = value else {
            throw ValidationError((location.isEmpty ? "" : location + ": ") + "expected \(what) (a JSON object), "
                + "got \(value.summary)")
        }
        self.members = members
        if let unknown = members.keys.sorted().first(where: { !keys.contains($0) }) {
            throw failure("unknown key \(unknown.debugDescription) (expected one of: \(keys.joined(separator: ", ")))")
        }
    }

    /// An error at this object.
    func failure(_ message: String) -> ValidationError {
        ValidationError((location.isEmpty ? "" : location + ": ") + message)
    }

    private func mismatch(_ key: String, _ expected: String, _ value: JSONValue) -> ValidationError {
        failure("\(key.debugDescription) must be \(expected), got \(value.summary)")
    }

    func string(_ key: String) throws -> String {
        guard let value = try optionalString(key) else { throw failure("missing \(key.debugDescription)") }
        return value
    }

    /// A string, or nil when the key is absent or null.
    func optionalString(_ key: String) throws -> String? {
        switch members[key] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let value?: throw mismatch(key, "a string", value)
        }
    }

    /// A required array.
    func array(_ key: String) throws -> [JSONValue] {
        switch members[key] {
        case nil: throw failure("missing \(key.debugDescription)")
        case .array(let items)?: return items
        case let value?: throw mismatch(key, "an array", value)
        }
    }

    func bool(_ key: String) throws -> Bool? {
        switch members[key] {
        case nil: return nil
        case .bool(let flag)?: return flag
        case let value?: throw mismatch(key, "true or false", value)
        }
    }

    func milliseconds(_ key: String) throws -> Int? {
        switch members[key] {
        case nil: return nil
        case .integer(let number)? where number >= 0 && number <= 86_400_000: return Int(number)
        case let value?: throw mismatch(key, "a whole number of milliseconds from 0 to 86400000", value)
        }
    }

    /// One of `words`, by raw value.
    func word<Word: RawRepresentable>(_ key: String, _ words: [Word]) throws -> Word? where Word.RawValue == String {
        guard let text = try optionalString(key) else { return nil }
        guard let word = words.first(where: { $0.rawValue == text }) else {
            let list = words.map(\.rawValue).joined(separator: ", ")
            throw failure("\(key.debugDescription) must be one of \(list), got \(text.debugDescription)")
        }
        return word
    }
}

/// Any JSON value, kept precise enough to tell `true` from `1` and `1` from `1.5`.
private enum JSONValue: Decodable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Int64.self) {
            self = .integer(number)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let items = try? container.decode([JSONValue].self) {
            self = .array(items)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// The value for an error message: short values as written, containers by kind.
    var summary: String {
        switch self {
        case .null: "null"
        case .bool(let flag): "\(flag)"
        case .integer(let number): "\(number)"
        case .number(let number): "\(number)"
        case .string(let text): text.count <= 40 ? text.debugDescription : "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
