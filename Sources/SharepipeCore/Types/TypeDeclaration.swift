/// One uniform type identifier declaration: the identifier, its direct parents and its tags.
public struct TypeDeclaration: Sendable, Equatable, Hashable {
    /// The reverse-DNS identifier, such as `public.jpeg`.
    public var identifier: String
    /// Direct parents, in declaration order.
    public var conformsTo: [String]
    /// A short human description.
    public var description: String
    /// Filename extensions without the dot, preferred first.
    public var filenameExtensions: [String]
    /// MIME types, preferred first.
    public var mimeTypes: [String]

    /// Creates a declaration.
    public init(
        _ identifier: String, conformsTo: [String], description: String = "",
        filenameExtensions: [String] = [], mimeTypes: [String] = []
    ) {
        self.identifier = identifier
        self.conformsTo = conformsTo
        self.description = description
        self.filenameExtensions = filenameExtensions
        self.mimeTypes = mimeTypes
    }
}

/// A declaration file that could not be used: which declaration, and why.
public struct TypeDeclarationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, naming the identifier at fault.
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
