/// An activation rule that could not be read: where in the predicate, and what was expected there.
///
/// For a predicate, `position` is the 0-based character offset into the predicate text and `expected` names what
/// would have been valid there. For anything else (a dictionary key, a rule file) `position` is -1.
package struct ActivationRuleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The whole explanation, position included, such as `position 42: expected ")", found end of predicate`.
    package var message: String
    /// The 0-based character offset in the predicate text, or -1 when the error is not in a predicate's text.
    package var position: Int
    /// What would have been valid at `position`, such as `")"`; for other errors, what the value must be.
    package var expected: String

    /// Creates an error; `message` is used as it is.
    init(_ message: String, position: Int = -1, expected: String = "") {
        self.message = message
        self.position = position
        self.expected = expected
    }

    /// The message.
    package var description: String { message }

    /// A syntax error: `position P: expected E, found F`.
    static func syntax(at position: Int, expected: String, found: String?) -> ActivationRuleError {
        var message = "position \(position): expected \(expected)"
        if let found { message += ", found \(found)" }
        return ActivationRuleError(message, position: position, expected: expected)
    }

    /// Something well-formed that sharepipe does not model: refused, never guessed.
    static func unsupported(_ what: String, at position: Int, expected: String, hint: String? = nil)
        -> ActivationRuleError
    {
        var message = "unsupported \(what) at position \(position)"
        if let hint { message += ": \(hint)" }
        return ActivationRuleError(message, position: position, expected: expected)
    }
}
