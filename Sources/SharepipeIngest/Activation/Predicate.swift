/// The NSPredicate subset that share-extension activation rules use, as a checked syntax tree.
///
/// Every key path has been resolved by the parser, so evaluation cannot meet an unknown key or an unbound variable.
indirect enum Predicate: Sendable, Equatable {
    case constant(Bool)
    case not(Predicate)
    case and([Predicate])
    case or([Predicate])
    /// `left op right` over counts.
    case comparison(CountOperand, ComparisonOperator, CountOperand)
    /// `ANY <type identifiers> UTI-CONFORMS-TO "type"` or `$variable UTI-EQUALS "type"`.
    case typeTest(TypeSubject, TypeOperator, String)
}

/// A collection the predicate can walk: the share's extension items, an item's attachments, an attachment's types.
enum CollectionPath: Sendable, Equatable, CustomStringConvertible {
    case extensionItems
    case attachments(of: String)
    case typeIdentifiers(of: String)

    var description: String {
        switch self {
        case .extensionItems: return "extensionItems"
        case .attachments(let variable): return "$\(variable).attachments"
        case .typeIdentifiers(let variable): return "$\(variable).registeredTypeIdentifiers"
        }
    }
}

/// One side of a count comparison.
indirect enum CountOperand: Sendable, Equatable, CustomStringConvertible {
    case literal(Int)
    /// `<collection>.@count`
    case count(CollectionPath)
    /// `SUBQUERY(<collection>, $variable, <predicate>).@count`
    case subquery(CollectionPath, variable: String, Predicate)

    var description: String {
        switch self {
        case .literal(let value): return String(value)
        case .count(let path): return "\(path).@count"
        case .subquery(let path, let variable, _): return "SUBQUERY(\(path), $\(variable), …).@count"
        }
    }
}

enum ComparisonOperator: String, Sendable, Equatable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="

    func holds(_ left: Int, _ right: Int) -> Bool {
        switch self {
        case .equal: return left == right
        case .notEqual: return left != right
        case .less: return left < right
        case .lessOrEqual: return left <= right
        case .greater: return left > right
        case .greaterOrEqual: return left >= right
        }
    }

    /// The operator that gives the same answer with the operands swapped.
    var mirrored: ComparisonOperator {
        switch self {
        case .equal, .notEqual: return self
        case .less: return .greater
        case .lessOrEqual: return .greaterOrEqual
        case .greater: return .less
        case .greaterOrEqual: return .lessOrEqual
        }
    }
}

/// The left side of a type test: any identifier of a collection, or one identifier bound to a variable.
enum TypeSubject: Sendable, Equatable, CustomStringConvertible {
    case any(CollectionPath)
    case variable(String)

    var description: String {
        switch self {
        case .any(let path): return "ANY \(path)"
        case .variable(let name): return "$\(name)"
        }
    }
}

enum TypeOperator: String, Sendable, Equatable {
    /// The registry's conformance: reflexive, transitive, case-insensitive.
    case conformsTo = "UTI-CONFORMS-TO"
    /// The same identifier, compared case-insensitively as type identifiers are.
    case equals = "UTI-EQUALS"
}

/// The answer for one predicate node and the clause that decided it, in words.
struct PredicateOutcome: Sendable, Equatable {
    var value: Bool
    var reason: String
}

/// Evaluates a checked predicate over extension items (each a list of attachments, each a list of type identifiers).
struct PredicateEvaluator {
    /// What a variable is bound to while a SUBQUERY walks its collection.
    enum Binding {
        case item([[String]])
        case attachment([String])
        case typeIdentifier(String)
    }

    let items: [[[String]]]
    let registry: TypeRegistry

    func evaluate(_ predicate: Predicate) -> PredicateOutcome {
        evaluate(predicate, bindings: [:])
    }

    private func evaluate(_ predicate: Predicate, bindings: [String: Binding]) -> PredicateOutcome {
        switch predicate {
        case .constant(let value):
            let keyword = value ? "TRUEPREDICATE" : "FALSEPREDICATE"
            return PredicateOutcome(value: value, reason: "\(keyword) is always \(value)")
        case .not(let inner):
            let outcome = evaluate(inner, bindings: bindings)
            return PredicateOutcome(value: !outcome.value, reason: "NOT (\(outcome.reason))")
        case .and(let parts):
            return combine(parts, bindings: bindings, decidingValue: false)
        case .or(let parts):
            return combine(parts, bindings: bindings, decidingValue: true)
        case .comparison(let left, let op, let right):
            return compare(left, op, right, bindings: bindings)
        case .typeTest(let subject, let op, let type):
            return typeTest(subject, op, type, bindings: bindings)
        }
    }

    /// AND stops at the first false part and OR at the first true one; that part is the reason. Otherwise every
    /// part took part in the answer, and all are named.
    private func combine(_ parts: [Predicate], bindings: [String: Binding], decidingValue: Bool) -> PredicateOutcome {
        var reasons: [String] = []
        for part in parts {
            let outcome = evaluate(part, bindings: bindings)
            if outcome.value == decidingValue { return outcome }
            reasons.append(outcome.reason)
        }
        return PredicateOutcome(value: !decidingValue, reason: reasons.joined(separator: " and "))
    }

    /// A count with, for a SUBQUERY, the first element that matched and the first that did not.
    private struct Count {
        var value: Int
        var firstMatch: (label: String, reason: String)?
        var firstMiss: (label: String, reason: String)?
    }

    private func count(_ operand: CountOperand, bindings: [String: Binding]) -> Count {
        switch operand {
        case .literal(let value):
            return Count(value: value)
        case .count(let path):
            return Count(value: elements(of: path, bindings: bindings).count)
        case .subquery(let path, let variable, let predicate):
            var result = Count(value: 0)
            for (label, element) in elements(of: path, bindings: bindings) {
                var inner = bindings
                inner[variable] = element
                let outcome = evaluate(predicate, bindings: inner)
                if outcome.value {
                    result.value += 1
                    if result.firstMatch == nil { result.firstMatch = (label, outcome.reason) }
                } else if result.firstMiss == nil {
                    result.firstMiss = (label, outcome.reason)
                }
            }
            return result
        }
    }

    private func compare(_ left: CountOperand, _ op: ComparisonOperator, _ right: CountOperand,
                         bindings: [String: Binding]) -> PredicateOutcome
    {
        let leftCount = count(left, bindings: bindings)
        let rightCount = count(right, bindings: bindings)
        let value = op.holds(leftCount.value, rightCount.value)
        let shown: String
        if case .literal = right {
            shown = String(leftCount.value)
        } else if case .literal = left {
            shown = String(rightCount.value)
        } else {
            shown = "\(leftCount.value) vs \(rightCount.value)"
        }
        var reason = "\(left) \(op.rawValue) \(right) was \(value) (\(shown))"
        // Explain through the SUBQUERY side, seen as `subquery op other`.
        let (subquery, other, seenAs): (Count, Count, ComparisonOperator)
        if case .subquery = left {
            (subquery, other, seenAs) = (leftCount, rightCount, op)
        } else if case .subquery = right {
            (subquery, other, seenAs) = (rightCount, leftCount, op.mirrored)
        } else {
            return PredicateOutcome(value: value, reason: reason)
        }
        if let (label, inner) = Self.deciding(subquery, other.value, seenAs, value) {
            reason += ", because in \(label): \(inner)"
        }
        return PredicateOutcome(value: value, reason: reason)
    }

    /// The element that explains the comparison: a miss when more matches were needed, a match when fewer were, and
    /// the first match when the comparison held.
    private static func deciding(_ subquery: Count, _ other: Int, _ op: ComparisonOperator, _ value: Bool)
        -> (label: String, reason: String)?
    {
        if value {
            switch op {
            case .less, .lessOrEqual: return nil
            default: return subquery.firstMatch
            }
        }
        switch op {
        case .greater, .greaterOrEqual: return subquery.firstMiss
        case .less, .lessOrEqual: return subquery.firstMatch
        case .equal: return subquery.value < other ? subquery.firstMiss : subquery.firstMatch
        case .notEqual: return subquery.firstMatch ?? subquery.firstMiss
        }
    }

    private func typeTest(_ subject: TypeSubject, _ op: TypeOperator, _ type: String,
                          bindings: [String: Binding]) -> PredicateOutcome
    {
        let candidates: [String]
        switch subject {
        case .any(let path):
            candidates = elements(of: path, bindings: bindings).compactMap {
                if case .typeIdentifier(let identifier) = $0.element { return identifier }
                return nil
            }
        case .variable(let name):
            if case .typeIdentifier(let identifier)? = bindings[name] {
                candidates = [identifier]
            } else {
                candidates = []
            }
        }
        let match = candidates.first { candidate in
            switch op {
            case .conformsTo: return registry.conforms(candidate, to: type)
            case .equals: return candidate.caseInsensitiveEquals(type)
            }
        }
        var reason = "\(subject) \(op.rawValue) \"\(type)\" was \(match != nil)"
        if let match { reason += " (\(match))" }
        return PredicateOutcome(value: match != nil, reason: reason)
    }

    /// The elements of a collection, each with the label a reason shows for it.
    private func elements(of path: CollectionPath, bindings: [String: Binding])
        -> [(label: String, element: Binding)]
    {
        switch path {
        case .extensionItems:
            return items.enumerated().map { ("extension item \($0.offset)", .item($0.element)) }
        case .attachments(let variable):
            guard case .item(let attachments)? = bindings[variable] else { return [] }
            return attachments.enumerated().map {
                ("attachment \($0.offset) [\($0.element.joined(separator: ", "))]", .attachment($0.element))
            }
        case .typeIdentifiers(let variable):
            guard case .attachment(let types)? = bindings[variable] else { return [] }
            return types.map { ("type \($0)", .typeIdentifier($0)) }
        }
    }
}
