import Foundation
import SharepipeSystem

/// Resumable uploads as Apple's `URLSession` sends them: the IETF "Resumable Uploads for HTTP" protocol
/// (draft-ietf-httpbis-resumable-upload) on `POST /v1/shares`, for every interop version a shipping client sends
/// (`Upload-Draft-Interop-Version` 3 = draft -01, 5 = -03, 6 = -04/-05) and the current draft's (8 = -09 and later).
/// A pure state machine like `TusProtocol`: each function takes what happened and returns what to do; the upload
/// lives in the same `TusStore` as a tus upload (its record marked with the interop version), and an upload's record
/// changes only through `.record`, after the bytes it counts are synced.
///
/// What differs between the versions: version 3 says `Upload-Incomplete` where the later ones say `Upload-Complete`
/// (the opposite Boolean); from version 6 an append's body must be `application/partial-upload` and responses carry
/// `Upload-Limit` (`expires` in version 6, `max-age` from version 8) and `Upload-Length`.
enum ResumableProtocol {
    enum Version: Int, Sendable, Comparable, CaseIterable {
        case v3 = 3
        case v5 = 5
        case v6 = 6
        case v8 = 8

        static func < (lhs: Version, rhs: Version) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    static let partialUploadType = "application/partial-upload"
    static let interimStatusLine = "HTTP/1.1 104 Upload Resumption Supported"

    /// What the daemon allows an upload: `--max-file-size`, and the time left until `--upload-expiry`.
    struct Limits: Sendable, Equatable {
        var maxSize: Int64
        /// Seconds the upload has left (at its creation: the whole expiry).
        var secondsLeft: Int64
    }

    /// How a `POST /v1/shares` goes on.
    enum Creation: Sendable, Equatable {
        /// Not a resumable upload (no interop header, or no completeness header): today's behaviour.
        case plain
        case refuse(HTTPResponse)
        /// Create this upload, send the interim response, and receive the body as its first append.
        case create(TusUpload, Version, Append)
    }

    /// How an append (or the body of a creation) is received.
    struct Append: Sendable, Equatable {
        /// At most this many bytes (the rest of the known length, else up to the size limit).
        var limit: Int64
        /// Whether the request completes the upload.
        var complete: Bool
        /// The upload's length as known after this request's head (-1: not known).
        var length: Int64
        /// Whether the length is not known: passing `limit` is then the size limit's 413, not a length mismatch.
        var lengthUnknown: Bool { length < 0 }
    }

    /// How a PATCH goes on after its head.
    enum AppendStart: Sendable, Equatable {
        case refuse(HTTPResponse)
        case receive(Append)
        /// Nothing to receive: the actions answer at once (a retried completion whose ingest failed).
        case actions([TusProtocol.Action])
    }

    // MARK: Header values

    /// The version a request speaks: nil without `Upload-Draft-Interop-Version`; `.failure` for one not spoken here.
    static func version(_ head: HTTPRequestHead) -> Result<Version, ShareError>? {
        guard let text = head["upload-draft-interop-version"] else { return nil }
        guard let number = integer(text), let version = Version(rawValue: Int(number)) else {
            let spoken = Version.allCases.map { String($0.rawValue) }.joined(separator: ", ")
            return .failure(ShareError(.badRequest, "Upload-Draft-Interop-Version \(text) is not spoken here ("
                + spoken + ")"))
        }
        return .success(version)
    }

    /// A structured-field Boolean (`?1`, `?0`; parameters ignored), nil for anything else.
    static func boolean(_ text: String) -> Bool? {
        let item = text.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first.map {
            $0.trimmingSpaces()
        }
        switch item {
        case "?1": return true
        case "?0": return false
        default: return nil
        }
    }

    /// A structured-field Integer that is not negative (at most 15 digits), nil for anything else.
    static func integer(_ text: String) -> Int64? {
        let item = text.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first.map {
            $0.trimmingSpaces()
        } ?? ""
        guard !item.isEmpty, item.utf8.count <= 15, item.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int64(item)
    }

    /// Whether a request says it completes the upload (nil: it does not say).
    static func complete(_ head: HTTPRequestHead, _ version: Version) -> Bool? {
        if version == .v3 { return head["upload-incomplete"].flatMap(boolean).map { !$0 } }
        return head["upload-complete"].flatMap(boolean)
    }

    /// The completeness header of a response.
    static func completeness(_ complete: Bool, _ version: Version) -> (String, String) {
        version == .v3 ? ("Upload-Incomplete", complete ? "?0" : "?1") : ("Upload-Complete", complete ? "?1" : "?0")
    }

    /// `Upload-Limit`, from version 6.
    static func limitHeaders(_ limits: Limits, _ version: Version) -> [(String, String)] {
        switch version {
        case .v3, .v5: []
        case .v6: [("Upload-Limit", "max-size=\(limits.maxSize), expires=\(max(0, limits.secondsLeft))")]
        case .v8: [("Upload-Limit", "max-size=\(limits.maxSize), max-age=\(max(0, limits.secondsLeft))")]
        }
    }

    static func limits(of upload: TusUpload, maxSize: Int64, now: Int64) -> Limits {
        Limits(maxSize: maxSize, secondsLeft: (upload.expiresAt - now) / 1000)
    }

    /// A refusal in this protocol: the error body every route has, the version, and what the status needs.
    static func refusal(
        _ error: ShareError, status: Int? = nil, _ version: Version, headers: [(String, String)] = []
    ) -> HTTPResponse {
        HTTPResponse.error(error, status: status, headers: [("Upload-Draft-Interop-Version", String(version.rawValue))]
            + headers)
    }

    private static func tooLarge(_ length: Int64, _ limits: Limits, _ version: Version) -> HTTPResponse {
        refusal(
            ShareError(.tooLarge, "the upload's length \(length) is over the \(limits.maxSize)-byte limit"),
            version, headers: limitHeaders(limits, version))
    }

    private static func inconsistent(_ message: String, _ version: Version) -> HTTPResponse {
        refusal(ShareError(.badRequest, "inconsistent upload length: " + message), version)
    }

    // MARK: Creation

    /// `POST /v1/shares` with an interop version: a new upload, a refusal, or a plain upload.
    static func create(
        _ head: HTTPRequestHead, id: String, now: Int64, expiry: Duration, maxSize: Int64, owner: String?
    ) -> Creation {
        guard let spoken = version(head) else { return .plain }
        let version: Version
        switch spoken {
        case .success(let found): version = found
        case .failure(let error):
            // A version not spoken here: a complete body is still an ordinary upload; a partial one cannot be.
            let says = head["upload-complete"].flatMap(boolean)
                ?? head["upload-incomplete"].flatMap(boolean).map { !$0 }
            return says == false ? .refuse(HTTPResponse.error(error)) : .plain
        }
        guard let complete = complete(head, version) else { return .plain }
        let (seconds, attoseconds) = expiry.components
        let expiresAt = now + seconds * 1000 + attoseconds / 1_000_000_000_000_000
        let limits = Limits(maxSize: maxSize, secondsLeft: seconds)
        if let text = head["upload-offset"], integer(text) != 0 {
            return .refuse(refusal(ShareError(.badRequest, "a creation starts at Upload-Offset 0"), version))
        }
        var length: Int64 = -1
        if let text = head["upload-length"] {
            guard let given = integer(text) else {
                return .refuse(refusal(ShareError(.badRequest, "Upload-Length is not an integer"), version))
            }
            length = given
        }
        if complete, let contentLength = head.contentLength {
            if length >= 0, length != contentLength {
                return .refuse(inconsistent("Upload-Length \(length), Content-Length \(contentLength)", version))
            }
            length = contentLength
        }
        if length > maxSize { return .refuse(tooLarge(length, limits, version)) }
        var metadata: [String: String] = [:]
        if let name = head["content-disposition"].map(HeaderValue.init)?.filename { metadata["filename"] = name }
        if let type = head["content-type"].map({ HeaderValue($0).value.lowercased() }), !type.isEmpty {
            metadata["filetype"] = type
        }
        if let types = head["sharepipe-type"] { metadata["types"] = types }
        if case .failure(let error) = DigestFields.parse(head["repr-digest"], name: "Repr-Digest") {
            return .refuse(refusal(error, version))
        }
        metadata[DigestFields.reprKey] = head["repr-digest"]
        metadata[DigestFields.wantKey] = head["want-repr-digest"]
        let upload = TusUpload(
            id: id, length: length, offset: 0, metadata: metadata, createdAt: now, expiresAt: expiresAt, owner: owner,
            interop: version.rawValue, completed: false)
        let append = Append(limit: length >= 0 ? length : maxSize, complete: complete, length: length)
        if let contentLength = head.contentLength, contentLength > append.limit {
            return .refuse(inconsistent("Content-Length \(contentLength) passes Upload-Length \(length)", version))
        }
        return .create(upload, version, append)
    }

    /// The interim response sent before the creation's body is read.
    static func interim(_ upload: TusUpload, _ version: Version, location: String, maxSize: Int64, now: Int64)
        -> [UInt8]
    {
        var text = interimStatusLine + "\r\nUpload-Draft-Interop-Version: \(version.rawValue)\r\nLocation: "
            + location + "\r\n"
        for (name, value) in limitHeaders(limits(of: upload, maxSize: maxSize, now: now), version) {
            text += name + ": " + value + "\r\n"
        }
        return Array((text + "\r\n").utf8)
    }

    // MARK: The upload resource

    private static func find(
        _ upload: TusUpload?, owner: String?, now: Int64, _ version: Version
    ) -> Result<TusUpload, HTTPResponse> {
        guard let upload, upload.owner == owner, upload.interop != nil else {
            return .failure(refusal(ShareError(.notFound, "no such upload"), status: 404, version))
        }
        guard upload.expiresAt > now else {
            return .failure(refusal(ShareError(.notFound, "the upload expired"), status: 410, version))
        }
        return .success(upload)
    }

    /// The headers that describe an upload's state.
    private static func state(
        _ upload: TusUpload, _ version: Version, maxSize: Int64, now: Int64
    ) -> [(String, String)] {
        var headers = [
            ("Upload-Draft-Interop-Version", String(version.rawValue)), completeness(upload.isComplete, version),
            ("Upload-Offset", String(upload.offset)),
        ]
        if version >= .v6 {
            if upload.length >= 0 { headers.append(("Upload-Length", String(upload.length))) }
            headers += limitHeaders(limits(of: upload, maxSize: maxSize, now: now), version)
        }
        if let shareID = upload.shareId { headers.append(("Sharepipe-Share-Id", shareID)) }
        return headers
    }

    /// `HEAD`: the offset on disk.
    static func offset(
        _ upload: TusUpload?, _ version: Version, owner: String?, now: Int64, maxSize: Int64
    ) -> HTTPResponse {
        switch find(upload, owner: owner, now: now, version) {
        case .failure(let response): return response
        case .success(let upload):
            return HTTPResponse(
                status: 204,
                headers: state(upload, version, maxSize: maxSize, now: now) + [("Cache-Control", "no-store")])
        }
    }

    /// `DELETE`: the upload is removed.
    static func cancel(_ upload: TusUpload?, _ version: Version, owner: String?, now: Int64) -> [TusProtocol.Action] {
        switch find(upload, owner: owner, now: now, version) {
        case .failure(let response): return [.respond(response)]
        case .success:
            return [.remove, .respond(HTTPResponse(
                status: 204, headers: [("Upload-Draft-Interop-Version", String(version.rawValue))]))]
        }
    }

    /// A PATCH's head.
    static func beginAppend(
        _ record: TusUpload?, _ head: HTTPRequestHead, _ version: Version, owner: String?, now: Int64, maxSize: Int64
    ) -> AppendStart {
        let upload: TusUpload
        switch find(record, owner: owner, now: now, version) {
        case .failure(let response): return .refuse(response)
        case .success(let found): upload = found
        }
        let limits = limits(of: upload, maxSize: maxSize, now: now)
        if version >= .v6, HeaderValue(head["content-type"] ?? "").value.lowercased() != partialUploadType {
            return .refuse(refusal(
                ShareError(.badRequest, "an append's body must be \(partialUploadType)"), status: 415, version))
        }
        guard let offset = head["upload-offset"].flatMap(integer) else {
            return .refuse(refusal(ShareError(.badRequest, "Upload-Offset is required"), version))
        }
        // A client that does not say completes the upload (as Apple's server reads it).
        let complete = Self.complete(head, version) ?? true
        let contentLength = head.contentLength ?? (head["transfer-encoding"] == nil ? 0 : nil)
        if upload.isComplete {
            if contentLength == 0, offset == upload.offset, upload.shareId == nil {
                // The completing request was answered with a failure: trying again ingests the bytes on disk.
                return .actions([.ingest(upload)])
            }
            return .refuse(refusal(
                ShareError(.badRequest, "the upload is already complete"), status: 400, version,
                headers: state(upload, version, maxSize: maxSize, now: now)))
        }
        guard offset == upload.offset else {
            return .refuse(refusal(
                ShareError(.badRequest, "Upload-Offset \(offset) is not the upload's offset \(upload.offset)"),
                status: 409, version, headers: state(upload, version, maxSize: maxSize, now: now)))
        }
        var length = upload.length
        if let text = head["upload-length"] {
            guard let given = integer(text), length < 0 || given == length else {
                return .refuse(inconsistent("Upload-Length \(text), recorded \(length)", version))
            }
            length = given
        }
        if complete, let contentLength {
            let implied = offset + contentLength
            if length >= 0, implied != length {
                return .refuse(inconsistent("the append ends at \(implied), the length is \(length)", version))
            }
            length = implied
        }
        if length > maxSize { return .refuse(tooLarge(length, limits, version)) }
        if length >= 0, length < offset {
            return .refuse(inconsistent("the length \(length) is below the offset \(offset)", version))
        }
        let append = Append(limit: (length >= 0 ? length : maxSize) - offset, complete: complete, length: length)
        if let contentLength, contentLength > append.limit {
            return .refuse(append.lengthUnknown
                ? tooLarge(offset + contentLength, limits, version)
                : inconsistent("the append passes the length \(length)", version))
        }
        return .receive(append)
    }

    /// The body of a creation or append ended after `received` bytes were appended (not yet synced).
    static func received(
        _ upload: TusUpload, bytes received: Int64, _ append: Append, creation: Bool, _ version: Version,
        location: String, maxSize: Int64, now: Int64
    ) -> [TusProtocol.Action] {
        var advanced = upload
        advanced.offset += received
        if append.length >= 0 { advanced.length = append.length }
        if append.complete {
            if advanced.length >= 0, advanced.offset != advanced.length {
                // Fewer bytes than the length said: kept (a later append may bring the rest), not complete.
                return [.sync, .record(advanced), .respond(inconsistent(
                    "the body ended at \(advanced.offset) of \(advanced.length) bytes",
                    version))]
            }
            advanced.length = advanced.offset
            advanced.completed = true
            return [.sync, .record(advanced), .ingest(advanced)]
        }
        var headers = state(advanced, version, maxSize: maxSize, now: now)
        if creation {
            headers.append(("Location", location))
            return [.sync, .record(advanced), .respond(HTTPResponse(status: 201, headers: headers))]
        }
        return [.sync, .record(advanced), .respond(HTTPResponse(status: 204, headers: headers))]
    }

    /// A creation or append cut off mid-body: what arrived is kept (the draft's "append as much as possible"), synced
    /// before it is counted.
    static func interrupted(_ upload: TusUpload, bytes received: Int64) -> [TusProtocol.Action] {
        guard received > 0 else { return [] }
        var advanced = upload
        advanced.offset += received
        return [.sync, .record(advanced)]
    }

    /// The completed upload was ingested: the receipt a plain upload would get, marked complete.
    static func ingested(_ upload: TusUpload, receipt: ShareReceipt, _ version: Version) -> [TusProtocol.Action] {
        var response = HTTPIngest.response(for: receipt)
        response.headers += [("Upload-Draft-Interop-Version", String(version.rawValue)), completeness(true, version)]
        guard receipt.status != .failed else {
            // Nothing was published; the bytes stay so that an empty completing append tries again.
            return [.respond(response)]
        }
        var done = upload
        done.shareId = receipt.shareId
        response.headers.append(("Sharepipe-Share-Id", receipt.shareId))
        return [.record(done), .removeData, .respond(response)]
    }
}
