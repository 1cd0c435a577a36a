/// One uniform type identifier declaration: the identifier, its direct parents and its tags.
package struct TypeDeclaration: Sendable, Equatable, Hashable {
    /// The reverse-DNS identifier, such as `public.jpeg`.
    package var identifier: String
    /// Direct parents, in declaration order.
    package var conformsTo: [String]
    /// A short human description.
    package var description: String
    /// Filename extensions without the dot, preferred first.
    package var filenameExtensions: [String]
    /// MIME types, preferred first.
    package var mimeTypes: [String]

    /// Creates a declaration.
    package init(
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
package struct TypeDeclarationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, naming the identifier at fault.
    package var message: String

    package init(_ message: String) {
        self.message = message
    }

    package var description: String { message }
}
