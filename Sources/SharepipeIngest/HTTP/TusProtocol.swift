import Foundation
import SharepipeLedger
import SharepipeSystem

/// A resumable upload's record: what `HEAD` reports and what survives a restart.
struct TusUpload: Codable, Sendable, Equatable {
    var id: String
    /// `Upload-Length`.
    var length: Int64
    /// Bytes received and fsynced: the only offset ever reported.
    var offset: Int64
    /// `Upload-Metadata`, decoded (`filename`, `filetype`, `types`).
    var metadata: [String: String]
    /// Milliseconds since the epoch.
    var createdAt: Int64
    var expiresAt: Int64
    /// The token NAME that created it; nil without `--tokens`. Only that token may touch it.
    var owner: String?
    /// Set once the finished upload was ingested: the share it became.
    var shareId: String?
    /// The `Upload-Draft-Interop-Version` of an upload made through `ResumableProtocol`; nil for tus. Such an upload's
    /// `length` is -1 until it is known.
    var interop: Int?
    /// Whether the client marked a `ResumableProtocol` upload complete (tus uploads are complete at their length).
    var completed: Bool?

    var isComplete: Bool { completed ?? (offset == length) }
}

/// tus 1.0.0 (core, creation, creation-with-upload, termination, checksum, expiration) as a pure state machine: each
/// function takes what happened and returns what to do — the responses and the disk actions, in order. The owner
/// performs the actions; an upload's record changes only through `.record`, after the bytes it counts are synced.
enum TusProtocol {
    static let version = "1.0.0"
    static let extensions = "creation,creation-with-upload,termination,checksum,expiration"
    static let checksumAlgorithms = "sha1,sha256"
    static let offsetContentType = "application/offset+octet-stream"

    /// A checksum the client asked for (`Upload-Checksum: ALGORITHM BASE64`).
    struct Checksum: Sendable, Equatable {
        enum Algorithm: String, Sendable { case sha1, sha256 }
        var algorithm: Algorithm
        var digest: [UInt8]
    }

    /// What to do, in order.
    enum Action: Sendable, Equatable {
        /// Cut the data file back to this length (bytes past the recorded offset were never acknowledged).
        case truncate(to: Int64)
        /// fsync the data file.
        case sync
        /// Write the record atomically.
        case record(TusUpload)
        /// Ingest the finished upload as a one-attachment share, then call `ingested`.
        case ingest(TusUpload)
        /// Remove the upload's data (the record stays until it expires, for retried final requests).
        case removeData
        /// Remove the upload altogether.
        case remove
        case respond(HTTPResponse)
    }

    /// How a PATCH (or a creation with a body) goes on after its head.
    enum PatchStart: Sendable, Equatable {
        case refuse(HTTPResponse)
        /// Receive at most `limit` bytes appended at `offset`; check the checksum when given.
        case receive(offset: Int64, limit: Int64, checksum: Checksum?)
        /// Nothing to receive: the actions answer at once (an empty PATCH on a finished upload, say).
        case actions([Action])
    }

    /// The headers every tus response carries.
    static func headers(_ upload: TusUpload? = nil) -> [(String, String)] {
        var headers = [("Tus-Resumable", version), ("Cache-Control", "no-store")]
        if let upload {
            headers.append(("Upload-Offset", String(upload.offset)))
            headers.append(("Upload-Length", String(upload.length)))
            headers.append(("Upload-Expires", httpDate(milliseconds: upload.expiresAt)))
        }
        return headers
    }

    static func refusal(_ error: ShareError, status: Int? = nil) -> HTTPResponse {
        HTTPResponse.error(error, status: status, headers: headers())
    }

    /// `OPTIONS`: what this server speaks.
    static func options(maxSize: Int64) -> HTTPResponse {
        HTTPResponse(status: 204, headers: [
            ("Tus-Resumable", version), ("Tus-Version", version), ("Tus-Extension", extensions),
            ("Tus-Max-Size", String(maxSize)), ("Tus-Checksum-Algorithm", checksumAlgorithms),
        ])
    }

    /// Every request but OPTIONS must speak this version.
    static func checkVersion(_ head: HTTPRequestHead) -> HTTPResponse? {
        guard head["tus-resumable"]?.trimmingSpaces() != version else { return nil }
        var response = refusal(ShareError(.badRequest, "Tus-Resumable: \(version) is required"), status: 412)
        response.headers.append(("Tus-Version", version))
        return response
    }

    /// `POST /v1/uploads/`: a new upload, or a refusal.
    static func create(
        _ head: HTTPRequestHead, id: String, now: Int64, expiry: Duration, maxSize: Int64, owner: String?
    ) -> Result<TusUpload, HTTPResponse> {
        if let refused = checkVersion(head) { return .failure(refused) }
        guard let text = head["upload-length"], let length = Int64(text.trimmingSpaces()), length >= 0 else {
            let message = head["upload-defer-length"] != nil
                ? "Upload-Defer-Length is not supported: give Upload-Length" : "Upload-Length is required"
            return .failure(refusal(ShareError(.badRequest, message)))
        }
        guard length <= maxSize else {
            return .failure(refusal(ShareError(.tooLarge, "Upload-Length \(length) is over the \(maxSize)-byte limit")))
        }
        let metadata: [String: String]
        switch parseMetadata(head["upload-metadata"]) {
        case .success(let parsed): metadata = parsed
        case .failure(let error): return .failure(refusal(error))
        }
        do {
            _ = try ShareDetails.fromMetadata(metadata)
        } catch {
            return .failure(refusal(error))
        }
        let (seconds, attoseconds) = expiry.components
        let expiresAt = now + seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return .success(TusUpload(
            id: id, length: length, offset: 0, metadata: metadata, createdAt: now, expiresAt: expiresAt, owner: owner))
    }

    /// The answer to a creation: 201 with `Location` (creation-with-upload answers after its body, through
    /// `received`).
    static func created(_ upload: TusUpload) -> HTTPResponse {
        HTTPResponse(status: 201, headers: headers(upload) + [("Location", location(upload.id))])
    }

    static func location(_ id: String) -> String { "/v1/uploads/" + id }

    /// `HEAD`: the durable offset.
    static func head(_ upload: TusUpload?, _ request: HTTPRequestHead, owner: String?, now: Int64) -> HTTPResponse {
        if let refused = checkVersion(request) { return refused }
        switch find(upload, owner: owner, now: now) {
        case .failure(let response): return response
        case .success(let upload):
            var headers = headers(upload)
            if let shareID = upload.shareId {
                headers += [("Sharepipe-Share-Id", shareID), ("Location", "/v1/shares/" + shareID)]
            }
            return HTTPResponse(status: 200, headers: headers)
        }
    }

    /// `DELETE`: termination.
    static func delete(_ upload: TusUpload?, _ request: HTTPRequestHead, owner: String?, now: Int64) -> [Action] {
        if let refused = checkVersion(request) { return [.respond(refused)] }
        switch find(upload, owner: owner, now: now) {
        case .failure(let response): return [.respond(response)]
        case .success: return [.remove, .respond(HTTPResponse(status: 204, headers: headers()))]
        }
    }

    /// A PATCH's head (or a creation's with `Content-Type: application/offset+octet-stream`).
    static func beginPatch(_ upload: TusUpload?, _ request: HTTPRequestHead, owner: String?, now: Int64) -> PatchStart {
        if let refused = checkVersion(request) { return .refuse(refused) }
        let found: TusUpload
        switch find(upload, owner: owner, now: now) {
        case .failure(let response): return .refuse(response)
        case .success(let existing): found = existing
        }
        let upload = found
        guard HeaderValue(request["content-type"] ?? "").value.lowercased() == offsetContentType else {
            return .refuse(refusal(
                ShareError(.badRequest, "a PATCH body must be \(offsetContentType)"), status: 415))
        }
        guard let text = request["upload-offset"], let offset = Int64(text.trimmingSpaces()) else {
            return .refuse(refusal(ShareError(.badRequest, "Upload-Offset is required")))
        }
        guard offset == upload.offset else {
            return .refuse(refusal(
                ShareError(.badRequest, "Upload-Offset \(offset) is not the upload's offset \(upload.offset)"),
                status: 409))
        }
        let remaining = upload.length - upload.offset
        if let length = request.contentLength, length > remaining {
            return .refuse(refusal(
                ShareError(.badRequest, "\(length) bytes would pass the Upload-Length (\(remaining) remain)")))
        }
        var checksum: Checksum?
        if let header = request["upload-checksum"] {
            switch parseChecksum(header) {
            case .success(let parsed): checksum = parsed
            case .failure(let error): return .refuse(refusal(error))
            }
        }
        if upload.isComplete && (request.contentLength ?? 0) == 0 {
            // A retried final PATCH: the share it became, or another try at ingesting it.
            return .actions(upload.shareId == nil ? [.ingest(upload)] : [.respond(finished(upload))])
        }
        return .receive(offset: upload.offset, limit: remaining, checksum: checksum)
    }

    /// The body of a PATCH ended after `received` bytes were appended (not yet synced); `checksumMatched` is nil
    /// when no checksum was asked for. A checksum mismatch or a body over the remaining length discards the bytes.
    static func received(
        _ upload: TusUpload, bytes received: Int64, checksumMatched: Bool?, creation: Bool
    ) -> [Action] {
        if checksumMatched == false {
            return [.truncate(to: upload.offset), .respond(refusal(
                ShareError(.badRequest, "Upload-Checksum does not match the body; the bytes were discarded"),
                status: 460))]
        }
        var advanced = upload
        advanced.offset += received
        var actions: [Action] = [.sync, .record(advanced)]
        if advanced.isComplete {
            actions.append(.ingest(advanced))
        } else if creation {
            actions.append(.respond(created(advanced)))
        } else {
            actions.append(.respond(HTTPResponse(status: 204, headers: headers(advanced))))
        }
        return actions
    }

    /// The outcome of ingesting a finished upload: its receipt's share id and status, or why it could not be tried.
    static func ingested(_ upload: TusUpload, receipt: ShareReceipt, creation: Bool) -> [Action] {
        switch receipt.status {
        case .complete, .partial, .rejected:
            var done = upload
            done.shareId = receipt.shareId
            let response: HTTPResponse
            if receipt.status == .rejected {
                response = HTTPResponse.json(422, receipt, headers: headers(done) + shareHeaders(receipt.shareId))
            } else {
                var finishedResponse = finished(done)
                if creation {
                    finishedResponse.status = 201
                    finishedResponse.headers.append(("Upload-Location", location(done.id)))
                }
                response = finishedResponse
            }
            return [.record(done), .removeData, .respond(response)]
        case .failed:
            // Nothing was published; the bytes stay so that an empty PATCH tries again.
            let error = receipt.error.map { ShareError($0.code, $0.message) } ?? ShareError(.io, "the share failed")
            return [.respond(HTTPResponse.error(error, headers: headers(upload)))]
        }
    }

    private static func shareHeaders(_ shareID: String) -> [(String, String)] {
        [("Sharepipe-Share-Id", shareID), ("Location", "/v1/shares/" + shareID)]
    }

    /// The answer for a finished, ingested upload.
    static func finished(_ upload: TusUpload) -> HTTPResponse {
        HTTPResponse(status: 204, headers: headers(upload) + (upload.shareId.map(shareHeaders) ?? []))
    }

    private static func find(_ upload: TusUpload?, owner: String?, now: Int64) -> Result<TusUpload, HTTPResponse> {
        guard let upload, upload.owner == owner, upload.interop == nil else {
            return .failure(refusal(ShareError(.notFound, "no such upload"), status: 404))
        }
        guard upload.expiresAt > now else {
            return .failure(refusal(ShareError(.notFound, "the upload expired"), status: 410))
        }
        return .success(upload)
    }

    /// `key base64,key base64,key` (a key without a value is allowed).
    static func parseMetadata(_ header: String?) -> Result<[String: String], ShareError> {
        guard let header, !header.trimmingSpaces().isEmpty else { return .success([:]) }
        var metadata: [String: String] = [:]
        for pair in header.split(separator: ",") {
            let fields = pair.trimmingSpaces().split(separator: " ", omittingEmptySubsequences: true)
            guard let key = fields.first, fields.count <= 2 else {
                return .failure(ShareError(.badRequest, "Upload-Metadata: expected KEY BASE64 pairs"))
            }
            var value = ""
            if fields.count == 2 {
                guard let data = Data(base64Encoded: String(fields[1])), let text = String(data: data, encoding: .utf8)
                else { return .failure(ShareError(.badRequest, "Upload-Metadata: a value is not base64 UTF-8")) }
                value = text
            }
            metadata[String(key)] = value
        }
        return .success(metadata)
    }

    static func parseChecksum(_ header: String) -> Result<Checksum, ShareError> {
        let fields = header.trimmingSpaces().split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count == 2, let algorithm = Checksum.Algorithm(rawValue: fields[0].lowercased()) else {
            return .failure(ShareError(
                .badRequest, "Upload-Checksum: expected ALGORITHM BASE64 with one of \(checksumAlgorithms)"))
        }
        guard let digest = Data(base64Encoded: String(fields[1])) else {
            return .failure(ShareError(.badRequest, "Upload-Checksum: the digest is not base64"))
        }
        return .success(Checksum(algorithm: algorithm, digest: Array(digest)))
    }

    /// An IMF-fixdate (RFC 9110), as `Upload-Expires` wants it.
    static func httpDate(milliseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(days[(parts.weekday ?? 1) - 1]), \(two(parts.day)) \(months[(parts.month ?? 1) - 1]) "
            + "\(parts.year ?? 1970) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) GMT"
    }
}
