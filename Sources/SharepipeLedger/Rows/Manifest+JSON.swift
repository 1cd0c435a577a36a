import SharepipeSystem

/// `manifest.json` written and read without `Codable`: every share's manifest is written once by its ingester and read
/// once by its consumer, and Foundation's `JSONEncoder`/`JSONDecoder` took 8% of the daemon's CPU per 4 KiB upload
/// (perf, session 13). The bytes are the same as `JSONEncoder` with sorted keys and unescaped slashes writes
/// (`ManifestJSONTests` compares them); a manifest with a `userInfo`, whose values are arbitrary JSON, and anything
/// this reader does not take as written are left to Foundation, which keeps its errors and its number rules.
extension Manifest {
    /// The manifest's JSON, or nil when it has a `userInfo` (Foundation writes it).
    func compactJSON() -> [UInt8]? {
        guard details.userInfo == nil else { return nil }
        var out = JSONOutput()
        out.bytes.reserveCapacity(512 + attachments.count * 512)
        out.open("attachments", first: true)
        out.array(attachments) { out, record in record.write(to: &out) }
        out.key("createdAt")
        out.string(createdAt)
        if let folder {
            out.key("folder")
            out.string(folder)
        }
        out.key("policy")
        out.string(policy.rawValue)
        out.key("shareId")
        out.string(shareId)
        out.key("sourceApp")
        out.optional(sourceApp)
        out.key("tags")
        out.array(details.tags) { out, tag in out.string(tag) }
        out.key("text")
        out.optional(details.text)
        out.key("title")
        out.optional(details.title)
        out.key("userInfo")
        out.bytes += "null".utf8
        out.bytes.append(UInt8(ascii: "}"))
        return out.bytes
    }

    /// The manifest these bytes hold, or nil when they are not a manifest exactly as `compactJSON` writes one (a
    /// `userInfo`, a number written as a fraction, malformed JSON): the caller then asks Foundation.
    static func compactDecoded(_ bytes: [UInt8]) -> Manifest? {
        guard case .object(let members)? = JSONScanner.parse(bytes) else { return nil }
        switch members["userInfo"] {
        case nil, .null?: break
        default: return nil
        }
        guard let shareId = members.string("shareId"), let createdAt = members.string("createdAt"),
            let policy = members.string("policy").flatMap(SharePolicy.init(rawValue:)),
            case .array(let items)? = members["attachments"],
            let sourceApp = members.optionalString("sourceApp"), let folder = members.optionalString("folder"),
            let title = members.optionalString("title"), let text = members.optionalString("text"),
            let tags = members.optionalStrings("tags")
        else { return nil }
        var attachments: [AttachmentRecord] = []
        attachments.reserveCapacity(items.count)
        for item in items {
            guard case .object(let fields) = item, let record = AttachmentRecord(compact: fields) else { return nil }
            attachments.append(record)
        }
        guard let details = try? ShareDetails(title: title, text: text, userInfo: nil, tags: tags ?? []) else {
            return nil
        }
        return Manifest(
            shareId: shareId, sourceApp: sourceApp, createdAt: createdAt, policy: policy, attachments: attachments,
            folder: folder, details: details)
    }
}

extension AttachmentRecord {
    fileprivate func write(to out: inout JSONOutput) {
        var first = true
        func key(_ name: String) {
            out.open(name, first: first)
            first = false
        }
        /// A string field Codable leaves out when nil.
        func string(_ name: String, _ value: String?) {
            guard let value else { return }
            key(name)
            out.string(value)
        }
        if let attempts {
            key("attempts")
            out.array(attempts) { out, attempt in
                out.strings([("code", attempt.code?.rawValue), ("type", attempt.type)])
            }
        }
        if let bytes {
            key("bytes")
            out.integer(bytes)
        }
        key("declaredTypes")
        out.array(declaredTypes) { out, type in out.string(type) }
        if let duplicateOf {
            key("duplicateOf")
            out.strings([
                ("createdAt", duplicateOf.createdAt), ("fileId", duplicateOf.fileId), ("shareId", duplicateOf.shareId),
            ])
        }
        if let error {
            key("error")
            out.strings([("code", error.code.rawValue), ("message", error.message)])
        }
        string("file", file)
        string("fileId", fileId)
        key("index")
        out.integer(Int64(index))
        string("sha256", sha256)
        string("sniffedMimeType", sniffedMimeType)
        key("status")
        out.string(status.rawValue)
        string("suggestedName", suggestedName)
        string("typeIdentifier", typeIdentifier)
        out.bytes.append(UInt8(ascii: "}"))
    }

    fileprivate init?(compact fields: [String: JSONValue]) {
        guard case .integer(let index)? = fields["index"], let position = Int(exactly: index),
            let status = fields.string("status").flatMap(Status.init(rawValue:)),
            let declaredTypes = fields.optionalStrings("declaredTypes") ?? nil,
            let fileId = fields.optionalString("fileId"), let file = fields.optionalString("file"),
            let typeIdentifier = fields.optionalString("typeIdentifier"),
            let sniffedMimeType = fields.optionalString("sniffedMimeType"),
            let sha256 = fields.optionalString("sha256"), let suggestedName = fields.optionalString("suggestedName")
        else { return nil }
        guard let bytes = fields.optional("bytes", { value -> Int64? in
                guard case .integer(let count) = value else { return nil }
                return count
            }),
            let error = fields.optional("error", { value -> ErrorInfo? in
                guard case .object(let info) = value,
                    let code = info.string("code").flatMap(ShareError.Code.init(rawValue:)),
                    let message = info.string("message")
                else { return nil }
                return ErrorInfo(code: code, message: message)
            }),
            let attempts = fields.optional("attempts", { value -> [Attempt]? in
                guard case .array(let items) = value else { return nil }
                var tried: [Attempt] = []
                for item in items {
                    guard case .object(let attempt) = item, let type = attempt.string("type"),
                        let code = attempt.optional("code", { ShareError.Code(rawValue: $0.text ?? "") })
                    else { return nil }
                    tried.append(Attempt(type: type, code: code))
                }
                return tried
            }),
            let duplicateOf = fields.optional("duplicateOf", { value -> DuplicateOrigin? in
                guard case .object(let origin) = value, let shareId = origin.string("shareId"),
                    let fileId = origin.string("fileId"), let createdAt = origin.string("createdAt")
                else { return nil }
                return DuplicateOrigin(shareId: shareId, fileId: fileId, createdAt: createdAt)
            })
        else { return nil }
        self.init(
            index: position, status: status, fileId: fileId, file: file, typeIdentifier: typeIdentifier,
            declaredTypes: declaredTypes, sniffedMimeType: sniffedMimeType, bytes: bytes, sha256: sha256,
            suggestedName: suggestedName, error: error, attempts: attempts, duplicateOf: duplicateOf)
    }
}

extension JSONValue {
    /// The string this value is, if it is one.
    fileprivate var text: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }
}

extension [String: JSONValue] {
    /// The string at `key`; nil when absent or not a string.
    fileprivate func string(_ key: String) -> String? { self[key]?.text }

    /// A field Codable decodes with `decodeIfPresent`: `.some(nil)` when the key is absent or null, `.some(value)`
    /// when `read` takes what is there, nil (not a manifest as written) when it does not.
    fileprivate func optional<Field>(_ key: String, _ read: (JSONValue) -> Field?) -> Field?? {
        guard let value = self[key], value != .null else { return .some(nil) }
        guard let read = read(value) else { return nil }
        return .some(read)
    }

    fileprivate func optionalString(_ key: String) -> String?? { optional(key) { $0.text } }

    fileprivate func optionalStrings(_ key: String) -> [String]?? {
        optional(key) { value in
            guard case .array(let items) = value else { return nil }
            let strings = items.compactMap(\.text)
            return strings.count == items.count ? strings : nil
        }
    }
}

/// Compact JSON written byte by byte, escaped as Foundation's `JSONEncoder` escapes with `.withoutEscapingSlashes`.
struct JSONOutput {
    var bytes: [UInt8] = []

    /// `{"name":` when `first`, else `,"name":`.
    mutating func open(_ name: String, first: Bool) {
        bytes.append(UInt8(ascii: first ? "{" : ","))
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    /// `,"name":`.
    mutating func key(_ name: String) { open(name, first: false) }

    mutating func array<Element>(_ elements: [Element], _ write: (inout JSONOutput, Element) -> Void) {
        bytes.append(UInt8(ascii: "["))
        for (position, element) in elements.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            write(&self, element)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// An object of string fields in the order given (sorted by the caller), a nil one written as null.
    mutating func strings(_ fields: [(String, String?)]) {
        for (position, (name, value)) in fields.enumerated() {
            open(name, first: position == 0)
            optional(value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    mutating func integer(_ value: Int64) { bytes += String(value).utf8 }

    mutating func optional(_ text: String?) {
        if let text { string(text) } else { bytes += "null".utf8 }
    }

    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += [0x5C, 0x22]
            case UInt8(ascii: "\\"): bytes += [0x5C, 0x5C]
            case 0x08: bytes += [0x5C, UInt8(ascii: "b")]
            case 0x0C: bytes += [0x5C, UInt8(ascii: "f")]
            case 0x0A: bytes += [0x5C, UInt8(ascii: "n")]
            case 0x0D: bytes += [0x5C, UInt8(ascii: "r")]
            case 0x09: bytes += [0x5C, UInt8(ascii: "t")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// A strict JSON reader (RFC 8259) into `JSONValue`. Numbers: an integer literal that fits in `Int64` is
/// `.integer`, any other number `.number`. Nil for anything that is not one JSON text, and for an object with a
/// repeated key.
enum JSONScanner {
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = Cursor(buffer: buffer)
            guard let value = scanner.value(depth: 0) else { return nil }
            scanner.skipSpace()
            return scanner.position == buffer.count ? value : nil
        }
    }

    private struct Cursor {
        let buffer: UnsafeBufferPointer<UInt8>
        var position = 0

        init(buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func skipSpace() {
            while position < buffer.count {
                switch buffer[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) -> JSONValue? {
            guard depth < 64 else { return nil }
            skipSpace()
            guard position < buffer.count else { return nil }
            switch buffer[position] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            default: return number()
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard position + count <= buffer.count else { return false }
            for offset in 0..<count where buffer[position + offset] != word.utf8Start[offset] { return false }
            position += count
            return true
        }

        mutating func object(depth: Int) -> JSONValue? {
            position += 1
            var members: [String: JSONValue] = [:]
            skipSpace()
            if position < buffer.count, buffer[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard position < buffer.count, buffer[position] == UInt8(ascii: "\""), let name = string() else {
                    return nil
                }
                skipSpace()
                guard position < buffer.count, buffer[position] == UInt8(ascii: ":") else { return nil }
                position += 1
                // A repeated key is left to Foundation, which keeps the first value (this would keep the last).
                guard members[name] == nil, let member = value(depth: depth + 1) else { return nil }
                members[name] = member
                skipSpace()
                guard position < buffer.count else { return nil }
                switch buffer[position] {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "}"):
                    position += 1
                    return .object(members)
                default: return nil
                }
            }
        }

        mutating func array(depth: Int) -> JSONValue? {
            position += 1
            var items: [JSONValue] = []
            skipSpace()
            if position < buffer.count, buffer[position] == UInt8(ascii: "]") {
                position += 1
                return .array(items)
            }
            while true {
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipSpace()
                guard position < buffer.count else { return nil }
                switch buffer[position] {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "]"):
                    position += 1
                    return .array(items)
                default: return nil
                }
            }
        }

        /// A string starting at the opening quote; its raw bytes must be UTF-8 without control characters.
        mutating func string() -> String? {
            position += 1
            let start = position
            // The common case: no escape, so the bytes are taken as they are.
            while position < buffer.count {
                let byte = buffer[position]
                if byte == UInt8(ascii: "\"") {
                    let text = String(validating: UnsafeBufferPointer(rebasing: buffer[start..<position]), as: UTF8.self)
                    position += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 { return nil }
                position += 1
            }
            var scalars = Array(buffer[start..<position])
            while position < buffer.count {
                let byte = buffer[position]
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(validating: scalars, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard position < buffer.count else { return nil }
                    let escape = buffer[position]
                    position += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                    case UInt8(ascii: "b"): scalars.append(0x08)
                    case UInt8(ascii: "f"): scalars.append(0x0C)
                    case UInt8(ascii: "n"): scalars.append(0x0A)
                    case UInt8(ascii: "r"): scalars.append(0x0D)
                    case UInt8(ascii: "t"): scalars.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let scalar = unicodeEscape() else { return nil }
                        scalars += String(Character(scalar)).utf8
                    default: return nil
                    }
                case 0..<0x20: return nil
                default: scalars.append(byte)
                }
            }
            return nil
        }

        /// The scalar of `XXXX` (after `\u`), or of a surrogate pair `XXXX\uYYYY`.
        mutating func unicodeEscape() -> Unicode.Scalar? {
            guard let high = hex4() else { return nil }
            if (0xD800..<0xDC00).contains(high) {
                guard position + 1 < buffer.count, buffer[position] == UInt8(ascii: "\\"),
                    buffer[position + 1] == UInt8(ascii: "u")
                else { return nil }
                position += 2
                guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            }
            return Unicode.Scalar(high)
        }

        mutating func hex4() -> UInt32? {
            guard position + 4 <= buffer.count else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = buffer[position]
                position += 1
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func number() -> JSONValue? {
            let start = position
            func digits() -> Int {
                let first = position
                while position < buffer.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buffer[position]) {
                    position += 1
                }
                return position - first
            }
            if position < buffer.count, buffer[position] == UInt8(ascii: "-") { position += 1 }
            let leading = position
            guard digits() > 0 else { return nil }
            if buffer[leading] == UInt8(ascii: "0"), position - leading > 1 { return nil }
            var integral = true
            if position < buffer.count, buffer[position] == UInt8(ascii: ".") {
                position += 1
                integral = false
                guard digits() > 0 else { return nil }
            }
            if position < buffer.count, buffer[position] == UInt8(ascii: "e") || buffer[position] == UInt8(ascii: "E") {
                position += 1
                integral = false
                if position < buffer.count, buffer[position] == UInt8(ascii: "+") || buffer[position] == UInt8(ascii: "-") {
                    position += 1
                }
                guard digits() > 0 else { return nil }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<position]), as: UTF8.self)
            if integral, let integer = Int64(text) { return .integer(integer) }
            return Double(text).map(JSONValue.number)
        }
    }
}
