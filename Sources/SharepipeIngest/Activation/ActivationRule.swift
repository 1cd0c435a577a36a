/// A share extension's `NSExtensionActivationRule`: decides whether the extension would appear for a share.
///
/// The rule is either the documented dictionary of `NSExtensionActivation…` keys or a predicate in the NSPredicate
/// subset that extensions use (`SUBQUERY`, `ANY … UTI-CONFORMS-TO`, `UTI-EQUALS`, counts, `AND`/`OR`/`NOT`).
/// A share is one extension item whose attachments each list their registered type identifiers, highest fidelity
/// first.
public struct ActivationRule: Sendable, Equatable {
    enum Form: Sendable, Equatable {
        case dictionary(ActivationDictionary)
        case predicate(Predicate)
    }

    let form: Form

    init(form: Form) {
        self.form = form
    }

    /// Reads a rule from `string`, which is one of:
    /// - a path to an `Info.plist` (XML or binary): the rule at `NSExtension` → `NSExtensionAttributes` →
    ///   `NSExtensionActivationRule`;
    /// - a path to a JSON file: the rule itself (a dictionary, or a string holding a predicate), or the same
    ///   `NSExtension` nesting as an `Info.plist`;
    /// - an inline JSON dictionary (text starting with `{`);
    /// - an inline predicate.
    ///
    /// Throws `ActivationRuleError` for a rule that is malformed, uses keys or operators sharepipe does not model, or
    /// names a file that does not exist; a file that exists but cannot be read throws `ShareError`.
    public static func load(from string: String) throws -> ActivationRule {
        try ActivationRuleSource.load(from: string)
    }

    /// Whether the extension would appear for a share with these attachments (each its registered type identifiers,
    /// highest fidelity first), and the clause that decided it.
    public func evaluate(_ attachments: [[String]], registry: TypeRegistry) -> ActivationResult {
        switch form {
        case .dictionary(let dictionary):
            return dictionary.evaluate(attachments, registry: registry)
        case .predicate(let predicate):
            let outcome = PredicateEvaluator(items: [attachments], registry: registry).evaluate(predicate)
            return ActivationResult(activated: outcome.value, reason: outcome.reason)
        }
    }
}

/// Whether an extension would appear for a share, and why.
public struct ActivationResult: Sendable, Equatable, CustomStringConvertible {
    /// True when the extension would appear in the share sheet.
    public var activated: Bool
    /// The clause that decided it, for people: `NSExtensionActivationSupportsImageWithMaxCount: 3 images > 2`.
    public var reason: String

    init(activated: Bool, reason: String) {
        self.activated = activated
        self.reason = reason
    }

    /// `activated: <reason>` or `not activated: <reason>`.
    public var description: String { (activated ? "activated: " : "not activated: ") + reason }
}
