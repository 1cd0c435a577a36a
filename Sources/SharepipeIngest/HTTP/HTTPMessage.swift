import Foundation
import SharepipeSystem

/// A request as far as it is known before its body: method, path and headers (names lowercased).
struct HTTPRequestHead: Sendable, Equatable {
    var method: String
    /// The path without the query.
    var path: String
    var headers: [String: String]

    init(method: String, path: String, headers: [String: String]) {
        self.method = method
        self.path = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
            ?? path
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first,
        _ in first })
    }

    subscript(header: String) -> String? { headers[header] }

    /// `Content-Length`, when given and valid.
    var contentLength: Int64? { headers["content-length"].flatMap { Int64($0.trimmingSpaces()) } }
}

/// A response: status, headers, body. It is an `Error` so that a refusal can be the failure of a `Result`.
struct HTTPResponse: Error, Sendable, Equatable {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    static func == (lhs: HTTPResponse, rhs: HTTPResponse) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body
            && lhs.headers.map { $0.0 + ":" + $0.1 } == rhs.headers.map { $0.0 + ":" + $0.1 }
    }

    /// The value of a header of this response.
    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// A JSON body, encoded as `share --json` prints it (sorted keys, pretty, slashes unescaped).
    static func json(_ status: Int, _ value: some Encodable, headers: [(String, String)] = []) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let body: [UInt8] = (try? encoder.encode(value)).map { [UInt8]($0) + [0x0A] } ?? []
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: body)
    }

    /// `{"error": {"code", "message"}}` with the status the code gets.
    static func error(_ error: ShareError, status: Int? = nil, headers: [(String, String)] = []) -> HTTPResponse {
        struct Detail: Encodable {
            var code: String
            var message: String
        }
        struct Body: Encodable {
            var error: Detail
        }
        var headers = headers
        let status = status ?? Self.status(for: error.code)
        if status == 503 { headers.append(("Retry-After", String(Self.retryAfterSeconds))) }
        if status == 401 { headers.append(("WWW-Authenticate", "Bearer realm=\"sharepipe\"")) }
        return json(status, Body(error: Detail(code: error.code.rawValue, message: error.message)), headers: headers)
    }

    /// What a client is told to wait before trying again after a 503.
    static let retryAfterSeconds = 5

    /// The HTTP status an error code gets when nothing more specific applies.
    static func status(for code: ShareError.Code) -> Int {
        switch code {
        case .tooLarge, .shareTooLarge, .tooManyAttachments: 413
        case .spoolFull, .containerUnavailable: 503
        case .unauthorized: 401
        case .badRequest: 400
        case .notFound: 404
        case .unsupportedType, .typeMismatch, .notActivated, .loadFailed, .missingFile, .notRegularFile: 422
        default: 500
        }
    }
}
