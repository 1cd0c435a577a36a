import SharepipeSystem

/// How one request starts, decided from its head alone before any of its body is read: routing (404, 405),
/// authentication (401), the early limits (413 from `Content-Length`) and the kind of body to receive. A pure
/// function of the head and the server's settings, so every refusal the SPEC lists is testable without a socket.
enum HTTPExchange {
    /// What the server knows when a request starts.
    struct Settings: Sendable {
        var tokens: HTTPTokens?
        var maxFileSize: Int64
        var maxShareSize: Int64
    }

    /// The routes.
    enum Route: Sendable, Equatable {
        case health
        case createShare
        case showShare(String)
        case tusOptions
        case tusCreate
        case tusHead(String)
        case tusPatch(String)
        case tusDelete(String)
        /// The upload resource of `ResumableProtocol` (a request to `/v1/uploads/ID` with an interop version).
        case resumableOffset(String)
        case resumableAppend(String)
        case resumableCancel(String)
    }

    /// How the body of `POST /v1/shares` is read.
    enum ShareBody: Sendable, Equatable {
        case multipart(boundary: String)
        case single
    }

    /// The first decision about a request.
    enum Start: Sendable, Equatable {
        /// Answer at once; the body, if any, is not read.
        case respond(HTTPResponse)
        /// Serve the route; `sourceApp` is the token's NAME (nil without `--tokens`).
        case serve(Route, sourceApp: String?, body: ShareBody?)
    }

    static func begin(_ head: HTTPRequestHead, settings: Settings) -> Start {
        let route: Route
        switch Self.route(method: head.method, path: head.path) {
        case .success(let found): route = found
        case .failure(let response): return .respond(response)
        }
        var sourceApp: String?
        if route != .health, let tokens = settings.tokens {
            guard let name = tokens.name(forAuthorization: head["authorization"]) else {
                return .respond(.error(ShareError(.unauthorized, "a valid Authorization: Bearer token is required")))
            }
            sourceApp = name
        }
        guard route == .createShare else {
            return .serve(resumable(route, head), sourceApp: sourceApp, body: nil)
        }
        let contentType = HeaderValue(head["content-type"] ?? "")
        let body: ShareBody
        if contentType.value.lowercased() == "multipart/form-data" {
            guard let boundary = contentType["boundary"], !boundary.isEmpty, boundary.utf8.count <= 70 else {
                return .respond(.error(ShareError(.badRequest, "multipart/form-data needs a boundary of 1-70 bytes")))
            }
            body = .multipart(boundary: boundary)
        } else {
            body = .single
        }
        if let length = head.contentLength {
            if length > settings.maxShareSize {
                return .respond(.error(ShareError(
                    .shareTooLarge, "Content-Length \(length) is over the \(settings.maxShareSize)-byte share limit")))
            }
            if body == .single, length > settings.maxFileSize {
                return .respond(.error(ShareError(
                    .tooLarge, "Content-Length \(length) is over the \(settings.maxFileSize)-byte attachment limit")))
            }
        }
        return .serve(route, sourceApp: sourceApp, body: body)
    }

    /// A request to an upload that speaks `ResumableProtocol` (it names an interop version) goes to that protocol.
    private static func resumable(_ route: Route, _ head: HTTPRequestHead) -> Route {
        guard head["upload-draft-interop-version"] != nil else { return route }
        switch route {
        case .tusHead(let id): return .resumableOffset(id)
        case .tusPatch(let id): return .resumableAppend(id)
        case .tusDelete(let id): return .resumableCancel(id)
        default: return route
        }
    }

    /// The route of a method and path; 404 for an unknown path, 405 (with `Allow`) for a known path and another
    /// method.
    static func route(method: String, path: String) -> Result<Route, HTTPResponse> {
        func notAllowed(_ allowed: [String]) -> Result<Route, HTTPResponse> {
            .failure(.error(
                ShareError(.badRequest, "\(method) is not allowed here; allowed: \(allowed.joined(separator: ", "))"),
                status: 405, headers: [("Allow", allowed.joined(separator: ", "))]))
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch parts.count {
        case 1 where parts[0] == "healthz":
            return method == "GET" || method == "HEAD" ? .success(.health) : notAllowed(["GET", "HEAD"])
        case 2 where parts == ["v1", "shares"]:
            return method == "POST" ? .success(.createShare) : notAllowed(["POST"])
        case 3 where parts[0] == "v1" && parts[1] == "shares":
            return method == "GET" ? .success(.showShare(parts[2])) : notAllowed(["GET"])
        case 2 where parts == ["v1", "uploads"]:
            switch method {
            case "OPTIONS": return .success(.tusOptions)
            case "POST": return .success(.tusCreate)
            default: return notAllowed(["OPTIONS", "POST"])
            }
        case 3 where parts[0] == "v1" && parts[1] == "uploads":
            switch method {
            case "HEAD": return .success(.tusHead(parts[2]))
            case "PATCH": return .success(.tusPatch(parts[2]))
            case "DELETE": return .success(.tusDelete(parts[2]))
            case "OPTIONS": return .success(.tusOptions)
            default: return notAllowed(["HEAD", "PATCH", "DELETE", "OPTIONS"])
            }
        default:
            return .failure(.error(ShareError(.notFound, "no such route"), status: 404))
        }
    }
}
