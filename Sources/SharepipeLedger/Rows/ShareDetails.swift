import Foundation
import SharepipeSystem

/// The whole share besides its attachments (SPEC "Spool layout": the whole share): the extension item's title, its
/// text (what the user typed in the share sheet, or the page text a host app passes), its `userInfo`, and tags.
/// Built only through the checking initialisers, so a value of this type always holds to the limits: title and text
/// at most 64 KiB of UTF-8 each (else ERR_TOO_LARGE), `userInfo` a JSON object of at most 64 KiB encoded (else
/// ERR_TOO_LARGE), at most 64 tags of at most 255 bytes without commas or control characters (else
/// ERR_BAD_REQUEST). An empty title or text is no title or text; a repeated tag is kept once. User content: never
/// logged, never in the ledger.
public struct ShareDetails: Sendable, Equatable {
    /// The most UTF-8 bytes of a title, a text, or an encoded `userInfo`.
    public static let maxBytes = 64 * 1024
    /// The most tags of one share.
    public static let maxTags = 64
    /// The most UTF-8 bytes of one tag.
    public static let maxTagBytes = 255

    /// The item's title (`attributedTitle`), if any.
    public private(set) var title: String?
    /// The item's text (`attributedContentText`), if any.
    public private(set) var text: String?
    /// The item's `userInfo`, a JSON object, if any.
    public private(set) var userInfo: [String: JSONValue]?
    /// The share's tags, in order, each once.
    public private(set) var tags: [String]

    /// No title, text, userInfo or tags.
    public static let empty = ShareDetails(checkedTitle: nil, text: nil, userInfo: nil, tags: [])

    private init(checkedTitle title: String?, text: String?, userInfo: [String: JSONValue]?, tags: [String]) {
        self.title = title
        self.text = text
        self.userInfo = userInfo
        self.tags = tags
    }

    /// Checks and keeps the parts of a share. Throws ERR_TOO_LARGE for a title, text or userInfo over 64 KiB and
    /// ERR_BAD_REQUEST for a title with a NUL character or a tag that breaks the rules above.
    public init(
        title: String? = nil, text: String? = nil, userInfo: [String: JSONValue]? = nil, tags: [String] = []
    ) throws(ShareError) {
        let title = title?.isEmpty == true ? nil : title
        let text = text?.isEmpty == true ? nil : text
        if let title {
            try Self.checkSize(title.utf8.count, of: "the title")
            guard !title.utf8.contains(0) else { throw ShareError(.badRequest, "the title contains a NUL character") }
        }
        if let text { try Self.checkSize(text.utf8.count, of: "the text") }
        if let userInfo { try Self.checkSize(try Self.encoded(userInfo).count, of: "userInfo") }
        var kept: [String] = []
        for (index, tag) in tags.enumerated() {
            guard !tag.isEmpty else { throw ShareError(.badRequest, "tag \(index) is empty") }
            guard tag.utf8.count <= Self.maxTagBytes else {
                throw ShareError(.badRequest, "tag \(index) is \(tag.utf8.count) bytes, at most \(Self.maxTagBytes)")
            }
            guard !tag.unicodeScalars.contains(where: { $0 == "," || $0.properties.generalCategory == .control })
            else {
                throw ShareError(.badRequest, "tag \(index) contains a comma or a control character")
            }
            if !kept.contains(tag) { kept.append(tag) }
        }
        guard kept.count <= Self.maxTags else {
            throw ShareError(.badRequest, "\(kept.count) tags, at most \(Self.maxTags)")
        }
        self.init(checkedTitle: title, text: text, userInfo: userInfo, tags: kept)
    }

    /// A `userInfo` given as JSON text: ERR_BAD_REQUEST unless it is a JSON object.
    public static func userInfo(json: some Collection<UInt8>) throws(ShareError) -> [String: JSONValue] {
        guard let value = JSONValue.parse(json) else {
            throw ShareError(.badRequest, "userInfo is not valid JSON")
        }
        guard case .object(let members) = value else {
            throw ShareError(.badRequest, "userInfo must be a JSON object, got \(value.kind)")
        }
        return members
    }

    /// True when the share carries none of the four.
    public var isEmpty: Bool { self == .empty }

    /// The keys a JSON description of a share may use for these parts.
    package static let keys = ["title", "text", "userInfo", "tags"]

    /// Reads the parts from a JSON object's `title`, `text`, `userInfo` and `tags` (other keys are the caller's):
    /// `what` names the object in the error (such as `share.json`). A key of the wrong type is ERR_BAD_REQUEST.
    package init(members: [String: JSONValue], what: String) throws(ShareError) {
        func string(_ key: String) throws(ShareError) -> String? {
            switch members[key] {
            case nil, .null?: return nil
            case .string(let value)?: return value
            case let value?: throw ShareError(.badRequest, "\(what): \"\(key)\" must be a string, got \(value.kind)")
            }
        }
        var userInfo: [String: JSONValue]?
        switch members["userInfo"] {
        case nil, .null?: break
        case .object(let object)?: userInfo = object
        case let value?:
            throw ShareError(.badRequest, "\(what): \"userInfo\" must be a JSON object, got \(value.kind)")
        }
        var tags: [String] = []
        switch members["tags"] {
        case nil, .null?: break
        case .array(let items)?:
            for item in items {
                guard case .string(let tag) = item else {
                    throw ShareError(.badRequest, "\(what): \"tags\" must hold strings, got \(item.kind)")
                }
                tags.append(tag)
            }
        case let value?:
            throw ShareError(.badRequest, "\(what): \"tags\" must be an array of strings, got \(value.kind)")
        }
        let (title, text) = (try string("title"), try string("text"))
        do {
            try self.init(title: title, text: text, userInfo: userInfo, tags: tags)
        } catch {
            throw ShareError(error.code, "\(what): \(error.message)")
        }
    }

    /// These parts with `more` tags before the share's own (an inbox folder's path tags before its share.json's).
    package func adding(tags more: [String]) throws(ShareError) -> ShareDetails {
        try ShareDetails(title: title, text: text, userInfo: userInfo, tags: more + tags)
    }

    /// `{"tags", "text", "title", "userInfo"}` as JSON (the exec processor's SHAREPIPE_SHARE_JSON file).
    package func json() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(self))
    }

    private static func checkSize(_ bytes: Int, of what: String) throws(ShareError) {
        guard bytes <= maxBytes else { throw ShareError(.tooLarge, "\(what) is \(bytes) bytes, at most \(maxBytes)") }
    }

    private static func encoded(_ userInfo: [String: JSONValue]) throws(ShareError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(userInfo)
        } catch {
            throw ShareError(.badRequest, "userInfo cannot be written as JSON (a number that is not finite)")
        }
    }
}

/// As JSON: `title`, `text`, `userInfo` (null when absent) and `tags`, written as keys of whatever object is being
/// encoded, so the manifest and the receipt carry them beside their own keys. Decoding checks as `init` does; absent
/// keys (a manifest written before issue 31) are no details.
extension ShareDetails: Codable {
    private enum CodingKeys: String, CodingKey {
        case title, text, userInfo, tags
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(title, forKey: .title)
        try container.encode(text, forKey: .text)
        try container.encode(userInfo, forKey: .userInfo)
        try container.encode(tags, forKey: .tags)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            title: try container.decodeIfPresent(String.self, forKey: .title),
            text: try container.decodeIfPresent(String.self, forKey: .text),
            userInfo: try container.decodeIfPresent([String: JSONValue].self, forKey: .userInfo),
            tags: try container.decodeIfPresent([String].self, forKey: .tags) ?? [])
    }
}
