import Foundation
import SharepipeSystem

/// Where an activation rule comes from: a rule file, inline JSON or an inline predicate.
enum ActivationRuleSource {
    static let attributesPath = "NSExtension → NSExtensionAttributes → NSExtensionActivationRule"

    static func load(from string: String) throws -> ActivationRule {
        let trimmed = string.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw ActivationRuleError(
                "the activation rule is empty", expected: "a file, a JSON dictionary or a predicate")
        }
        if trimmed.hasPrefix("{") {
            return try rule(fromDocument: try json(Data(trimmed.utf8), source: "the inline JSON rule"),
                            source: "the inline JSON rule")
        }
        if isExistingFile(string) {
            return try rule(fromFile: string)
        }
        if looksLikePath(trimmed) {
            throw ActivationRuleError("no activation rule file at \(string)", expected: "an existing file")
        }
        return try rule(fromPredicate: string)
    }

    static func rule(fromPredicate text: String) throws -> ActivationRule {
        ActivationRule(form: .predicate(try PredicateParser.parse(text)))
    }

    static func rule(fromFile path: String) throws -> ActivationRule {
        let data = Data(try System.readFile(path))
        let firstByte = data.first(where: { !(Character(UnicodeScalar($0)).isWhitespace) })
        let document: Any
        if data.starts(with: Array("bplist".utf8)) || firstByte == UInt8(ascii: "<") {
            do {
                document = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
            } catch {
                throw ActivationRuleError("\(path) is not a valid property list", expected: "an Info.plist")
            }
        } else {
            document = try json(data, source: path)
        }
        return try rule(fromDocument: document, source: path)
    }

    private static func json(_ data: Data, source: String) throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw ActivationRuleError(
                "\(source) is neither a property list nor valid JSON", expected: "an Info.plist or a JSON file")
        }
    }

    /// A decoded plist or JSON document: a predicate string, the rule dictionary, or an `Info.plist`-shaped
    /// dictionary holding the rule at `NSExtension` → `NSExtensionAttributes` → `NSExtensionActivationRule`.
    static func rule(fromDocument document: Any, source: String) throws -> ActivationRule {
        var value = document
        if let dictionary = document as? [String: Any] {
            if dictionary["NSExtension"] != nil {
                value = try nested(dictionary, source: source)
            } else if let rule = dictionary["NSExtensionActivationRule"], dictionary.count == 1 {
                value = rule
            }
        }
        if let predicate = value as? String {
            return try rule(fromPredicate: predicate)
        }
        if let dictionary = value as? [String: Any] {
            return ActivationRule(form: .dictionary(try ActivationDictionary(dictionary)))
        }
        throw ActivationRuleError(
            "the activation rule in \(source) must be a dictionary or a predicate string",
            expected: "a dictionary or a string")
    }

    private static func nested(_ document: [String: Any], source: String) throws -> Any {
        guard let extensionInfo = document["NSExtension"] as? [String: Any] else {
            throw ActivationRuleError("NSExtension in \(source) is not a dictionary", expected: "a dictionary")
        }
        guard let attributes = extensionInfo["NSExtensionAttributes"] as? [String: Any] else {
            throw ActivationRuleError(
                "\(source) has no \(attributesPath)", expected: "a dictionary at NSExtensionAttributes")
        }
        guard let rule = attributes["NSExtensionActivationRule"] else {
            throw ActivationRuleError("\(source) has no \(attributesPath)", expected: "NSExtensionActivationRule")
        }
        return rule
    }

    private static func isExistingFile(_ string: String) -> Bool {
        guard !string.isEmpty, !string.contains("\n"), string.utf8.count < 4096 else { return false }
        return ((try? System.lstatIfPresent(string)) ?? nil) != nil
    }

    /// A path-like string that names no file is a missing file, not a predicate to report syntax errors in.
    private static func looksLikePath(_ string: String) -> Bool {
        if string.contains(where: { "()\"' \t\n".contains($0) }) { return false }
        let lowered = string.lowercased()
        return string.contains("/") || lowered.hasSuffix(".plist") || lowered.hasSuffix(".json")
    }
}
