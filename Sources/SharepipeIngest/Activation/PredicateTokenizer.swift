/// One token of an activation predicate, with the character offset where it starts.
struct PredicateToken: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        /// An identifier or keyword; keywords may contain hyphens (`UTI-CONFORMS-TO`).
        case word(String)
        /// `$name`, stored without the `$`.
        case variable(String)
        /// `@count` and friends, stored without the `@`.
        case keyOperator(String)
        case integer(Int)
        case string(String)
        /// Punctuation and operators: `( ) , . == != < <= > >= && || !` (aliases are normalised).
        case symbol(String)
        case end
    }

    var kind: Kind
    var position: Int

    /// How the token reads in an error message.
    var found: String {
        switch kind {
        case .word(let word): return word
        case .variable(let name): return "$" + name
        case .keyOperator(let name): return "@" + name
        case .integer(let value): return String(value)
        case .string(let value): return "the string \"\(value)\""
        case .symbol(let symbol): return "\"\(symbol)\""
        case .end: return "end of predicate"
        }
    }
}

/// Splits predicate text into tokens; offsets count `Character`s from 0.
struct PredicateTokenizer {
    /// Operators and their normalised spelling; `=`, `<>`, `=<` and `=>` are NSPredicate's aliases.
    private static let operators: [String: String] = [
        "==": "==", "=": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", "=<": "<=", ">": ">", ">=": ">=",
        "=>": ">=", "&&": "&&", "||": "||", "!": "!",
    ]
    private static let operatorCharacters: Set<Character> = ["=", "<", ">", "!", "&", "|", "~", "+", "*", "/", "^", "%"]

    private let characters: [Character]
    private var index = 0

    init(_ text: String) {
        characters = Array(text)
    }

    static func tokenize(_ text: String) throws -> [PredicateToken] {
        var tokenizer = PredicateTokenizer(text)
        var tokens: [PredicateToken] = []
        while true {
            let next = try tokenizer.nextTokens()
            tokens += next
            if next.last?.kind == .end { return tokens }
        }
    }

    private func peek(_ offset: Int = 0) -> Character? {
        index + offset < characters.count ? characters[index + offset] : nil
    }

    private static func isWordStart(_ character: Character) -> Bool {
        character == "_" || (character.isASCII && character.isLetter)
    }

    private static func isWordPart(_ character: Character) -> Bool {
        isWordStart(character) || isDigit(character)
    }

    private static func isDigit(_ character: Character) -> Bool {
        character.isASCII && character.isNumber
    }

    /// The next token, or several when a run of operator characters splits into known operators (`&&!`).
    private mutating func nextTokens() throws -> [PredicateToken] {
        while let character = peek(), character.isWhitespace { index += 1 }
        let start = index
        guard let character = peek() else { return [PredicateToken(kind: .end, position: start)] }
        switch character {
        case "(", ")", ",", ".":
            index += 1
            return [PredicateToken(kind: .symbol(String(character)), position: start)]
        case "\"", "'":
            return [try string(quote: character)]
        case "$":
            index += 1
            guard let first = peek(), Self.isWordStart(first) else {
                throw ActivationRuleError.syntax(
                    at: index, expected: "a variable name after $", found: describe(peek()))
            }
            return [PredicateToken(kind: .variable(word()), position: start)]
        case "@":
            index += 1
            guard let first = peek(), Self.isWordStart(first) else {
                throw ActivationRuleError.syntax(
                    at: index, expected: "an operator name after @", found: describe(peek()))
            }
            return [PredicateToken(kind: .keyOperator(word()), position: start)]
        case "-" where peek(1).map(Self.isDigit) == true:
            index += 1
            return [try integer(start: start, negative: true)]
        case _ where Self.isDigit(character):
            return [try integer(start: start, negative: false)]
        case _ where Self.isWordStart(character):
            return [PredicateToken(kind: .word(word()), position: start)]
        case _ where Self.operatorCharacters.contains(character) || character == "-":
            return try operatorRun()
        default:
            throw ActivationRuleError.syntax(
                at: start, expected: "a keyword, key path, number, string, operator or parenthesis",
                found: "\"\(character)\"")
        }
    }

    private func describe(_ character: Character?) -> String {
        character.map { "\"\($0)\"" } ?? "end of predicate"
    }

    /// Letters, digits and underscores; a hyphen joins words only when a letter follows (`UTI-CONFORMS-TO`).
    private mutating func word() -> String {
        var result = ""
        while let character = peek() {
            if Self.isWordPart(character) {
                result.append(character)
                index += 1
            } else if character == "-", let next = peek(1), Self.isWordStart(next), !result.isEmpty {
                result.append(character)
                index += 1
            } else {
                break
            }
        }
        return result
    }

    private mutating func integer(start: Int, negative: Bool) throws -> PredicateToken {
        var digits = negative ? "-" : ""
        while let character = peek(), Self.isDigit(character) {
            digits.append(character)
            index += 1
        }
        if peek() == ".", let next = peek(1), Self.isDigit(next) {
            throw ActivationRuleError.unsupported(
                "decimal number", at: start, expected: "an integer", hint: "counts are compared with integers only")
        }
        guard let value = Int(digits) else {
            throw ActivationRuleError.syntax(at: start, expected: "an integer that fits in 64 bits", found: digits)
        }
        return PredicateToken(kind: .integer(value), position: start)
    }

    /// A quoted string; a backslash escapes the next character (`\n` and `\t` as usual).
    private mutating func string(quote: Character) throws -> PredicateToken {
        let start = index
        index += 1
        var value = ""
        while let character = peek() {
            index += 1
            if character == quote { return PredicateToken(kind: .string(value), position: start) }
            if character == "\\", let escaped = peek() {
                index += 1
                switch escaped {
                case "n": value.append("\n")
                case "t": value.append("\t")
                default: value.append(escaped)
                }
            } else {
                value.append(character)
            }
        }
        let expected = "closing \(quote) for the string opened at position \(start)"
        throw ActivationRuleError(
            "position \(start): expected \(expected), found end of predicate", position: start, expected: expected)
    }

    /// A run of operator characters: one known operator, or several that split cleanly, or an error naming the run.
    private mutating func operatorRun() throws -> [PredicateToken] {
        let start = index
        var run = ""
        while let character = peek(), Self.operatorCharacters.contains(character) || character == "-" {
            if character == "-", peek(1).map(Self.isDigit) == true, !run.isEmpty { break }
            run.append(character)
            index += 1
        }
        var tokens: [PredicateToken] = []
        var rest = Substring(run)
        var offset = start
        while !rest.isEmpty {
            let known = [2, 1].lazy.compactMap { length -> (String, Int)? in
                guard rest.count >= length, let normal = Self.operators[String(rest.prefix(length))] else { return nil }
                return (normal, length)
            }.first
            guard let (normal, length) = known else {
                throw ActivationRuleError.unsupported(
                    "operator \(run)", at: start, expected: "one of == != < <= > >= && || !")
            }
            tokens.append(PredicateToken(kind: .symbol(normal), position: offset))
            rest = rest.dropFirst(length)
            offset += length
        }
        return tokens
    }
}
