import Foundation

/// The `SHARE-ID` positional of `show` and `requeue`.
enum ShareIDArgument {
    /// The share id given first, upper case as share ids are written (any case is accepted); anything but a UUID is a
    /// usage error.
    static func parse(_ arguments: ParsedArguments) throws -> String {
        let text = arguments.positionals[0]
        guard let uuid = UUID(uuidString: text) else {
            throw ValidationError("SHARE-ID: expected a share id (a UUID), got \(text.debugDescription)")
        }
        return uuid.uuidString
    }
}
