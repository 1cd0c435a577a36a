/// A recursive-descent parser for the activation-rule subset of NSPredicate.
///
/// Grammar (keywords are case-insensitive, key names are not):
///
///     predicate  := and (("OR" | "||") and)*
///     and        := unary (("AND" | "&&") unary)*
///     unary      := ("NOT" | "!") unary | primary
///     primary    := "(" predicate ")" | "TRUEPREDICATE" | "FALSEPREDICATE"
///                 | ("ANY" | "SOME") keyPath typeOp STRING
///                 | $variable typeOp STRING                       -- a variable bound to one type identifier
///                 | count compareOp count
///     count      := INTEGER | keyPath ".@count" | "SUBQUERY" "(" keyPath "," $variable "," predicate ")" ".@count"
///     keyPath    := ("extensionItems" | $variable) ("." key)*     -- keys: attachments, registeredTypeIdentifiers
///     typeOp     := "UTI-CONFORMS-TO" | "UTI-EQUALS"
///     compareOp  := "==" | "=" | "!=" | "<>" | "<" | "<=" | ">" | ">="
///
/// Key paths are checked as they are read: each variable must be bound by an enclosing SUBQUERY and each key must
/// exist on what it is applied to, so evaluation never meets an unknown key.
struct PredicateParser {
    /// What a SUBQUERY variable stands for.
    enum ElementKind: Equatable {
        case item
        case attachment
        case typeIdentifier
    }

    /// A key path after resolution.
    private enum Resolved {
        case collection(CollectionPath, element: ElementKind)
        case element(variable: String, ElementKind)
        case count(CollectionPath)
    }

    /// The left side of a comparison or type test.
    private enum Operand {
        case count(CountOperand)
        case typeVariable(String)
        case collection(CollectionPath)
    }

    private static let unsupportedStringOperators: Set<String> = [
        "MATCHES", "LIKE", "BEGINSWITH", "ENDSWITH", "CONTAINS", "IN", "BETWEEN",
    ]
    private static let comparisonOperators: [String: ComparisonOperator] = [
        "==": .equal, "!=": .notEqual, "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual,
    ]
    private static let modelledKeys =
        "extensionItems, $item.attachments, $attachment.registeredTypeIdentifiers and @count"

    private let tokens: [PredicateToken]
    private var index = 0
    private var scopes: [(name: String, kind: ElementKind)] = []

    private init(tokens: [PredicateToken]) {
        self.tokens = tokens
    }

    /// Parses and checks a whole predicate.
    static func parse(_ text: String) throws -> Predicate {
        var parser = PredicateParser(tokens: try PredicateTokenizer.tokenize(text))
        let predicate = try parser.parseOr()
        guard parser.current.kind == .end else {
            throw parser.syntaxError(expected: "AND, OR or end of predicate")
        }
        return predicate
    }

    // MARK: Token helpers

    private var current: PredicateToken { tokens[index] }

    private mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    private func isSymbol(_ symbol: String) -> Bool {
        current.kind == .symbol(symbol)
    }

    private func isKeyword(_ keyword: String) -> Bool {
        if case .word(let word) = current.kind { return word.uppercased() == keyword }
        return false
    }

    private func syntaxError(expected: String) -> ActivationRuleError {
        .syntax(at: current.position, expected: expected, found: current.found)
    }

    private mutating func expectSymbol(_ symbol: String) throws {
        guard isSymbol(symbol) else { throw syntaxError(expected: "\"\(symbol)\"") }
        advance()
    }

    // MARK: Predicates

    private mutating func parseOr() throws -> Predicate {
        var parts = [try parseAnd()]
        while isSymbol("||") || isKeyword("OR") {
            advance()
            parts.append(try parseAnd())
        }
        return parts.count == 1 ? parts[0] : .or(parts)
    }

    private mutating func parseAnd() throws -> Predicate {
        var parts = [try parseUnary()]
        while isSymbol("&&") || isKeyword("AND") {
            advance()
            parts.append(try parseUnary())
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    private mutating func parseUnary() throws -> Predicate {
        if isSymbol("!") || isKeyword("NOT") {
            advance()
            return .not(try parseUnary())
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws -> Predicate {
        if isSymbol("(") {
            advance()
            let inner = try parseOr()
            try expectSymbol(")")
            return inner
        }
        if isKeyword("TRUEPREDICATE") || isKeyword("FALSEPREDICATE") {
            defer { advance() }
            return .constant(isKeyword("TRUEPREDICATE"))
        }
        if isKeyword("ANY") || isKeyword("SOME") {
            advance()
            let pathStart = current.position
            guard case .collection(let path, let element) = try parseKeyPath() else {
                throw ActivationRuleError.syntax(
                    at: pathStart, expected: "a collection of type identifiers after ANY", found: "a single value")
            }
            guard element == .typeIdentifier else {
                throw ActivationRuleError.unsupported(
                    "ANY over \(path)", at: pathStart, expected: "$attachment.registeredTypeIdentifiers",
                    hint: "ANY is modelled over type identifiers only; count other collections with SUBQUERY")
            }
            let op = try parseTypeOperator()
            return .typeTest(.any(path), op, try parseTypeLiteral())
        }
        if isKeyword("ALL") || isKeyword("NONE") {
            throw ActivationRuleError.unsupported(
                "aggregate \(current.found)", at: current.position, expected: "ANY or SUBQUERY",
                hint: "compare a SUBQUERY's @count instead")
        }
        return try parseComparison()
    }

    private mutating func parseComparison() throws -> Predicate {
        let start = current.position
        switch try parseOperand(expected: "a predicate") {
        case .typeVariable(let name):
            let op = try parseTypeOperator()
            return .typeTest(.variable(name), op, try parseTypeLiteral())
        case .collection(let path):
            guard case .word(let word) = current.kind, TypeOperator(rawValue: word.uppercased()) != nil else {
                throw syntaxError(expected: "\".@count\" after \(path)")
            }
            guard case .typeIdentifiers = path else {
                throw ActivationRuleError.unsupported(
                    "type test on \(path)", at: start, expected: "ANY $attachment.registeredTypeIdentifiers",
                    hint: "type operators apply to an attachment's registeredTypeIdentifiers")
            }
            throw ActivationRuleError.syntax(at: start, expected: "ANY before \(path)", found: nil)
        case .count(let left):
            let op = try parseComparisonOperator()
            let rightStart = current.position
            guard case .count(let right) = try parseOperand(expected: "an integer or a count") else {
                throw ActivationRuleError.syntax(
                    at: rightStart, expected: "an integer or a count", found: "a value that is not a count")
            }
            return .comparison(left, op, right)
        }
    }

    private mutating func parseComparisonOperator() throws -> ComparisonOperator {
        let expected = "one of == != < <= > >="
        switch current.kind {
        case .symbol(let symbol):
            guard let op = Self.comparisonOperators[symbol] else { throw syntaxError(expected: expected) }
            advance()
            return op
        case .word(let word) where TypeOperator(rawValue: word.uppercased()) != nil:
            throw ActivationRuleError.unsupported(
                "operator \(word) on a count", at: current.position, expected: expected,
                hint: "type operators need ANY $attachment.registeredTypeIdentifiers on their left")
        case .word(let word):
            throw ActivationRuleError.unsupported("operator \(word)", at: current.position, expected: expected)
        default:
            throw syntaxError(expected: expected)
        }
    }

    private mutating func parseTypeOperator() throws -> TypeOperator {
        let expected = "UTI-CONFORMS-TO or UTI-EQUALS"
        switch current.kind {
        case .word(let word):
            guard let op = TypeOperator(rawValue: word.uppercased()) else {
                throw ActivationRuleError.unsupported("operator \(word)", at: current.position, expected: expected)
            }
            advance()
            return op
        case .symbol(let symbol) where Self.comparisonOperators[symbol] != nil:
            throw ActivationRuleError.unsupported(
                "operator \(symbol) on type identifiers", at: current.position, expected: expected,
                hint: "compare type identifiers with UTI-EQUALS or UTI-CONFORMS-TO")
        default:
            throw syntaxError(expected: expected)
        }
    }

    private mutating func parseTypeLiteral() throws -> String {
        guard case .string(let value) = current.kind else {
            throw syntaxError(expected: "a quoted type identifier")
        }
        advance()
        return value
    }

    // MARK: Operands and key paths

    private mutating func parseOperand(expected: String) throws -> Operand {
        switch current.kind {
        case .integer(let value):
            advance()
            return .count(.literal(value))
        case .word(let word) where word.uppercased() == "SUBQUERY":
            return .count(try parseSubquery())
        case .word(let word) where Self.unsupportedStringOperators.contains(word.uppercased()):
            throw ActivationRuleError.unsupported("operator \(word)", at: current.position, expected: expected)
        case .word, .variable:
            switch try parseKeyPath() {
            case .count(let path): return .count(.count(path))
            case .collection(let path, _): return .collection(path)
            case .element(let variable, .typeIdentifier): return .typeVariable(variable)
            case .element(let variable, _):
                throw syntaxError(expected: "a key after $\(variable)")
            }
        default:
            throw syntaxError(expected: expected)
        }
    }

    private mutating func parseSubquery() throws -> CountOperand {
        advance()
        try expectSymbol("(")
        let collectionStart = current.position
        guard case .collection(let path, let element) = try parseKeyPath() else {
            throw ActivationRuleError.syntax(
                at: collectionStart, expected: "a collection to walk (\(Self.modelledKeys))", found: "a single value")
        }
        try expectSymbol(",")
        guard case .variable(let name) = current.kind else { throw syntaxError(expected: "a $variable") }
        advance()
        try expectSymbol(",")
        scopes.append((name, element))
        let predicate = try parseOr()
        scopes.removeLast()
        try expectSymbol(")")
        guard isSymbol(".") else { throw syntaxError(expected: "\".@count\" after SUBQUERY(…)") }
        advance()
        guard current.kind == .keyOperator("count") else {
            throw syntaxError(expected: "@count (a SUBQUERY is compared by its count only)")
        }
        advance()
        return .subquery(path, variable: name, predicate)
    }

    private mutating func parseKeyPath() throws -> Resolved {
        let start = current.position
        var resolved: Resolved
        var text: String
        switch current.kind {
        case .variable(let name):
            guard let scope = scopes.last(where: { $0.name == name }) else {
                throw syntaxError(expected: "a variable bound by an enclosing SUBQUERY")
            }
            resolved = .element(variable: name, scope.kind)
            text = "$" + name
        case .word("extensionItems"):
            guard scopes.isEmpty else {
                throw ActivationRuleError.unsupported(
                    "key path extensionItems inside SUBQUERY", at: start, expected: "a SUBQUERY variable",
                    hint: "refer to the enclosing SUBQUERY's variable")
            }
            resolved = .collection(.extensionItems, element: .item)
            text = "extensionItems"
        case .word(let word):
            throw ActivationRuleError.unsupported(
                "key path \(word)", at: start, expected: "extensionItems or a $variable",
                hint: "sharepipe models \(Self.modelledKeys)")
        default:
            throw syntaxError(expected: "a key path")
        }
        advance()
        while isSymbol(".") {
            if case .count = resolved { throw syntaxError(expected: "an operator after @count") }
            advance()
            let segmentStart = current.position
            switch (current.kind, resolved) {
            case (.keyOperator("count"), .collection(let path, _)):
                resolved = .count(path)
            case (.keyOperator(let name), _):
                throw ActivationRuleError.unsupported(
                    "collection operator @\(name)", at: segmentStart, expected: "@count on a collection",
                    hint: "sharepipe models \(Self.modelledKeys)")
            case (.word("attachments"), .element(let variable, .item)):
                resolved = .collection(.attachments(of: variable), element: .attachment)
            case (.word("registeredTypeIdentifiers"), .element(let variable, .attachment)):
                resolved = .collection(.typeIdentifiers(of: variable), element: .typeIdentifier)
            case (.word(let key), _):
                throw ActivationRuleError.unsupported(
                    "key path \(text).\(key)", at: start, expected: "attachments, registeredTypeIdentifiers or @count",
                    hint: "sharepipe models \(Self.modelledKeys)")
            default:
                throw syntaxError(expected: "a key after \".\"")
            }
            text += "." + current.found
            advance()
        }
        return resolved
    }
}
