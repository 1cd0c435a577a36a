import Foundation

/// A scenario or expected receipt that cannot be used: the message names the place in the file and the key, such as
/// `attachments[1].representations[0]: unknown key "kindd" (expected one of: …)`.
package struct ScenarioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, starting with the location in the file.
    package var message: String

    /// An error with this message.
    package init(_ message: String) {
        self.message = message
    }

    /// The message.
    package var description: String { message }
}

/// Reads one JSON object of a scenario or an expected receipt, refusing keys it does not know and values of the
/// wrong type; every error starts with the object's location, such as `attachments[1].representations[0]: `.
struct ObjectReader {
    let location: String
    let members: [String: JSONValue]

    init(_ value: JSONValue, at location: String, what: String, keys: [String]) throws {
        self.location = location
        guard case .object(let members) = value else {
            throw ScenarioError((location.isEmpty ? "" : location + ": ") + "expected \(what) (a JSON object), "
                + "got \(value.summary)")
        }
        self.members = members
        if let unknown = members.keys.sorted().first(where: { !keys.contains($0) }) {
            throw failure("unknown key \(unknown.debugDescription) (expected one of: \(keys.joined(separator: ", ")))")
        }
    }

    /// An error at this object.
    func failure(_ message: String) -> ScenarioError {
        ScenarioError((location.isEmpty ? "" : location + ": ") + message)
    }

    private func mismatch(_ key: String, _ expected: String, _ value: JSONValue) -> ScenarioError {
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

    /// An array, or nil when the key is absent.
    func optionalArray(_ key: String) throws -> [JSONValue]? {
        members[key] == nil ? nil : try array(key)
    }

    /// An object, or nil when the key is absent.
    func optionalObject(_ key: String) throws -> [String: JSONValue]? {
        switch members[key] {
        case nil: return nil
        case .object(let members)?: return members
        case let value?: throw mismatch(key, "an object", value)
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
enum JSONValue: Decodable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Reads and decodes a JSON file; a missing, unreadable or invalid file is a `ScenarioError`.
    static func read(_ path: String) throws -> JSONValue {
        guard (try? FileManager.default.attributesOfItem(atPath: path)) != nil else {
            throw ScenarioError("no such file \(path.debugDescription)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ScenarioError("cannot read \(path.debugDescription)")
        }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw ScenarioError("\(path.debugDescription) is not valid JSON")
        }
    }

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
