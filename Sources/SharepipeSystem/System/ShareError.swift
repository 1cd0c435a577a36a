/// A failure with one stable code from the SPEC; the code is the contract, the message is for people.
public struct ShareError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The SPEC's `ERR_*` codes.
    public enum Code: String, Sendable, CaseIterable, Codable {
        case unsupportedType = "ERR_UNSUPPORTED_TYPE"
        case typeMismatch = "ERR_TYPE_MISMATCH"
        case loadFailed = "ERR_LOAD_FAILED"
        case missingFile = "ERR_MISSING_FILE"
        case notRegularFile = "ERR_NOT_REGULAR_FILE"
        case tooLarge = "ERR_TOO_LARGE"
        case shareTooLarge = "ERR_SHARE_TOO_LARGE"
        case tooManyAttachments = "ERR_TOO_MANY_ATTACHMENTS"
        case timeout = "ERR_TIMEOUT"
        case cancelled = "ERR_CANCELLED"
        case containerUnavailable = "ERR_CONTAINER_UNAVAILABLE"
        case spoolFull = "ERR_SPOOL_FULL"
        case io = "ERR_IO"
        case processorFailed = "ERR_PROCESSOR_FAILED"
        case notActivated = "ERR_NOT_ACTIVATED"
        case notFound = "ERR_NOT_FOUND"
        // issue 19: HTTP ingest
        case unauthorized = "ERR_UNAUTHORIZED"
        case badRequest = "ERR_BAD_REQUEST"
        // issue 21: duplicates
        case duplicate = "ERR_DUPLICATE"
    }

    /// The stable code.
    public var code: Code
    /// A human-readable explanation; never contains file content, and file names only where the caller allows them.
    public var message: String
    /// The errno of the failing system call, when there was one.
    package var errno: Int32?

    /// Creates an error with a code and a message.
    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
