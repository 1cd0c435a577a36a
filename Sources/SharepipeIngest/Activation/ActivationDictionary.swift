import Foundation

/// The dictionary form of `NSExtensionActivationRule`, evaluated the way sharepipe reads Apple's documentation.
///
/// **What each key counts.** Every attachment is classified by its registered type identifiers, through the
/// registry's conformance; one attachment may fall in several kinds (`…` is `NSExtensionActivationSupports`):
///
/// | key | counts the attachments with a type conforming to |
/// | --- | --- |
/// | `…ImageWithMaxCount` | `public.image` |
/// | `…MovieWithMaxCount` | `public.movie` |
/// | `…Text` (a Bool, no maximum) | `public.text` |
/// | `…WebURLWithMaxCount` | `public.url` but not `public.file-url` (types are seen, not URL schemes) |
/// | `…WebPageWithMaxCount` | `com.apple.active-webpage` or `com.apple.property-list` |
/// | `…FileWithMaxCount` | `public.file-url`; or `public.data`, unless the attachment is text, web URL or web page |
/// | `…AttachmentsWithMinCount`/`MaxCount` | anything: they bound the total only, and allow no type |
///
/// A web page is what a browser shares (it adds `com.apple.active-webpage` to the page's URL) or what a JavaScript
/// preprocessing file returns (a property list).
///
/// **Version.** `NSExtensionActivationDictionaryVersion` is 1 (the default) or 2. In version 1 the file key counts
/// only files that are neither images nor movies (those are counted by their own keys); in version 2 it counts all
/// files, images and movies included, so `FileWithMaxCount` alone admits photos.
///
/// **Allowed kinds and limits.** A key with a count above 0 (or `…Text` true) allows its kind, and its count is a
/// maximum that must hold whatever the matching mode. A key present with 0 (or false) refuses its kind; an absent
/// key neither allows nor refuses. An attachment is *covered* when a kind it falls in is allowed.
///
/// **Matching.** Strict: every attachment must be covered. Fuzzy: attachments that no key covers are ignored,
/// unless a key refuses their kind explicitly (present with 0 or false). Version 1 always matches strictly;
/// version 2 matches fuzzily unless `NSExtensionActivationUsesStrictMatching` is true.
///
/// **Activation.** The extension appears when the total is within the attachment bounds, every allowed kind is
/// within its maximum, the matching mode is satisfied, and at least one attachment is covered: an empty share, or
/// a rule that allows nothing, never activates.
///
/// **Checking.** Unknown keys are errors, never ignored. Counts must be non-negative integers; `…Text` and
/// `NSExtensionActivationUsesStrictMatching` must be booleans (the integers 0 and 1 pass too, as Info.plist files
/// use them); the version must be 1 or 2. Each error names its key.
struct ActivationDictionary: Sendable, Equatable {
    /// The kinds of attachment the dictionary keys count, in the order reasons name them.
    enum Kind: CaseIterable, Sendable {
        case image
        case movie
        case file
        case text
        case webURL
        case webPage

        var key: String {
            switch self {
            case .image: return ActivationDictionary.imageKey
            case .movie: return ActivationDictionary.movieKey
            case .file: return ActivationDictionary.fileKey
            case .text: return ActivationDictionary.textKey
            case .webURL: return ActivationDictionary.webURLKey
            case .webPage: return ActivationDictionary.webPageKey
            }
        }

        /// `3 images`, `1 web URL`.
        func counted(_ count: Int) -> String {
            switch self {
            case .image: return plural(count, "image", "images")
            case .movie: return plural(count, "movie", "movies")
            case .file: return plural(count, "file", "files")
            case .text: return plural(count, "text attachment", "text attachments")
            case .webURL: return plural(count, "web URL", "web URLs")
            case .webPage: return plural(count, "web page", "web pages")
            }
        }

        /// `an image`, `text`: what an attachment "is".
        var noun: String {
            switch self {
            case .image: return "an image"
            case .movie: return "a movie"
            case .file: return "a file"
            case .text: return "text"
            case .webURL: return "a web URL"
            case .webPage: return "a web page"
            }
        }
    }

    static let minAttachmentsKey = "NSExtensionActivationSupportsAttachmentsWithMinCount"
    static let maxAttachmentsKey = "NSExtensionActivationSupportsAttachmentsWithMaxCount"
    static let fileKey = "NSExtensionActivationSupportsFileWithMaxCount"
    static let imageKey = "NSExtensionActivationSupportsImageWithMaxCount"
    static let movieKey = "NSExtensionActivationSupportsMovieWithMaxCount"
    static let textKey = "NSExtensionActivationSupportsText"
    static let webURLKey = "NSExtensionActivationSupportsWebURLWithMaxCount"
    static let webPageKey = "NSExtensionActivationSupportsWebPageWithMaxCount"
    static let strictMatchingKey = "NSExtensionActivationUsesStrictMatching"
    static let versionKey = "NSExtensionActivationDictionaryVersion"

    static let knownKeys: [String] = [
        minAttachmentsKey, maxAttachmentsKey, fileKey, imageKey, movieKey, textKey, webURLKey, webPageKey,
        strictMatchingKey, versionKey,
    ]

    var minAttachments: Int?
    var maxAttachments: Int?
    /// The value of each kind's key that is present: a maximum count; text is `Int.max` when true and 0 when false.
    var limits: [Kind: Int] = [:]
    var strictMatchingRequested = false
    var version = 1

    var usesStrictMatching: Bool { version < 2 || strictMatchingRequested }

    /// Reads and checks a rule dictionary, as decoded from a property list or JSON.
    init(_ dictionary: [String: Any]) throws {
        for key in dictionary.keys.sorted() where !Self.knownKeys.contains(key) {
            throw ActivationRuleError(
                "unknown key \(key) in NSExtensionActivationRule",
                expected: "one of \(Self.knownKeys.joined(separator: ", "))")
        }
        for (key, value) in dictionary {
            switch key {
            case Self.minAttachmentsKey: minAttachments = try Self.count(value, key: key)
            case Self.maxAttachmentsKey: maxAttachments = try Self.count(value, key: key)
            case Self.textKey: limits[.text] = try Self.flag(value, key: key) ? Int.max : 0
            case Self.strictMatchingKey: strictMatchingRequested = try Self.flag(value, key: key)
            case Self.versionKey:
                let number = try Self.count(value, key: key)
                guard number == 1 || number == 2 else {
                    throw ActivationRuleError("\(key) must be 1 or 2, found \(number)", expected: "1 or 2")
                }
                version = number
            default:
                guard let kind = Kind.allCases.first(where: { $0.key == key }) else { continue }
                limits[kind] = try Self.count(value, key: key)
            }
        }
    }

    // MARK: Checking values

    private enum Scalar {
        case boolean(Bool)
        case integer(Int)
        case other(String)
    }

    /// Property lists decode booleans as `Bool` and JSON as a boolean `NSNumber`, and an integer `NSNumber` casts to
    /// `Bool` too: only the number's encoding tells a boolean (`c`) from an integer.
    private static func scalar(_ value: Any) -> Scalar {
        if let string = value as? String { return .other("the string \"\(string)\"") }
        guard let number = value as? NSNumber else {
            if value is [Any] { return .other("an array") }
            if value is [String: Any] { return .other("a dictionary") }
            return .other("a \(type(of: value))")
        }
        let encoding = String(cString: number.objCType)
        if encoding == "c" || encoding == "B" { return .boolean(number.boolValue) }
        if encoding == "d" || encoding == "f" { return .other(number.stringValue) }
        return .integer(number.intValue)
    }

    private static func count(_ value: Any, key: String) throws -> Int {
        let found: String
        switch scalar(value) {
        case .integer(let number) where number >= 0: return number
        case .integer(let number): found = String(number)
        case .boolean(let flag): found = String(flag)
        case .other(let described): found = described
        }
        let expected = "a non-negative integer"
        throw ActivationRuleError("\(key) must be \(expected), found \(found)", expected: expected)
    }

    private static func flag(_ value: Any, key: String) throws -> Bool {
        let found: String
        switch scalar(value) {
        case .boolean(let flag): return flag
        case .integer(let number) where number == 0 || number == 1: return number == 1
        case .integer(let number): found = String(number)
        case .other(let described): found = described
        }
        throw ActivationRuleError("\(key) must be a boolean, found \(found)", expected: "a boolean")
    }

    // MARK: Evaluation

    /// The kinds an attachment falls in, by its registered type identifiers.
    func classify(_ types: [String], registry: TypeRegistry) -> Set<Kind> {
        func any(_ supertype: String) -> Bool { types.contains { registry.conforms($0, to: supertype) } }
        var kinds: Set<Kind> = []
        if any("public.image") { kinds.insert(.image) }
        if any("public.movie") { kinds.insert(.movie) }
        if any("public.text") { kinds.insert(.text) }
        let webURL = types.contains {
            registry.conforms($0, to: "public.url") && !registry.conforms($0, to: "public.file-url")
        }
        if webURL { kinds.insert(.webURL) }
        if any("com.apple.active-webpage") || any("com.apple.property-list") { kinds.insert(.webPage) }
        let isFile = any("public.file-url")
            || (any("public.data") && kinds.isDisjoint(with: [.text, .webURL, .webPage]))
        if isFile && (version >= 2 || kinds.isDisjoint(with: [.image, .movie])) { kinds.insert(.file) }
        return kinds
    }

    func evaluate(_ attachments: [[String]], registry: TypeRegistry) -> ActivationResult {
        let total = attachments.count
        let counted = plural(total, "attachment", "attachments")
        if let minAttachments, total < minAttachments {
            return .refused("\(Self.minAttachmentsKey): \(counted) < \(minAttachments)")
        }
        if let maxAttachments, total > maxAttachments {
            return .refused("\(Self.maxAttachmentsKey): \(counted) > \(maxAttachments)")
        }
        let kinds = attachments.map { classify($0, registry: registry) }
        let allowed = Set(limits.filter { $0.value > 0 }.keys)
        var within: [String] = []
        for kind in Kind.allCases where allowed.contains(kind) {
            let count = kinds.filter { $0.contains(kind) }.count
            guard count > 0 else { continue }
            guard kind != .text else {
                within.append("\(kind.key): \(kind.counted(count))")
                continue
            }
            let limit = limits[kind] ?? 0
            guard count <= limit else { return .refused("\(kind.key): \(kind.counted(count)) > \(limit)") }
            within.append("\(kind.key): \(kind.counted(count)) <= \(limit)")
        }
        func describe(_ index: Int) -> String {
            let nouns = Kind.allCases.filter(kinds[index].contains).map(\.noun)
            let what = nouns.isEmpty
                ? "none of image, movie, file, text, web URL or web page" : nouns.joined(separator: " and ")
            return "attachment \(index) [\(attachments[index].joined(separator: ", "))] is \(what)"
        }
        let uncovered = attachments.indices.filter { kinds[$0].isDisjoint(with: allowed) }
        if let first = uncovered.first, usesStrictMatching {
            let mode = strictMatchingRequested
                ? Self.strictMatchingKey : "strict matching (dictionary version 1 always matches strictly)"
            return .refused("\(mode): \(describe(first)), and no key allows it")
        }
        for index in uncovered {
            if let refusing = Kind.allCases.first(where: { kinds[index].contains($0) && limits[$0] == 0 }) {
                let value = refusing == .text ? "false" : "0"
                return .refused("\(refusing.key) is \(value): \(describe(index)), and no other key allows it")
            }
        }
        guard total > 0 else { return .refused("the share has no attachments") }
        guard uncovered.count < total else {
            return .refused("no attachment matches a key that allows it: \(describe(uncovered[0]))")
        }
        var reason = within.joined(separator: "; ")
        if !uncovered.isEmpty {
            reason += "; fuzzy matching ignores " + uncovered.map { "attachment \($0)" }.joined(separator: ", ")
        }
        return ActivationResult(activated: true, reason: reason)
    }
}

/// `1 image`, `3 images`.
func plural(_ count: Int, _ singular: String, _ pluralForm: String) -> String {
    "\(count) \(count == 1 ? singular : pluralForm)"
}

extension ActivationResult {
    static func refused(_ reason: String) -> ActivationResult {
        ActivationResult(activated: false, reason: reason)
    }
}
