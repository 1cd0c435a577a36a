import Foundation
import Testing

@testable import SharepipeCore
@testable import SharepipeDaemon
@testable import SharepipeIngest
@testable import SharepipeLedger
@testable import SharepipeSpool
@testable import SharepipeSystem

/// The HTTP protocols without a socket: the streaming multipart parser fed in every chunking, header parameters
/// (RFC 6266 / 8187), the start of a request (routes, tokens, early limits) and the tus state machine.
@Suite struct MultipartParserTests {
    static let body = Array((
        "preamble to ignore\r\n--b0und\r\nContent-Disposition: form-data; name=\"share\"\r\n"
            + "Content-Type: application/json\r\n\r\n{\"a\":1}\r\n--b0und  \r\n"
            + "Content-Disposition: form-data; name=\"photo\"; filename=\"a.jpg\"\r\nContent-Type: image/JPEG\r\n\r\n"
            + "\r\n--b0un not yet\r\n-- data\r\n--b0und\r\n"
            + "Content-Disposition: form-data; name=\"photo\"; filename*=UTF-8''%C3%A9.png\r\n\r\n\r\n--b0und--\r\nepilogue"
    ).utf8)

    /// Feeds `bytes` in pieces of `size` and merges adjacent data events, so every chunking can be compared.
    static func parse(_ bytes: [UInt8], chunk size: Int) throws -> [MultipartParser.Event] {
        var parser = MultipartParser(boundary: "b0und")
        var events: [MultipartParser.Event] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + size)
            let piece = Array(bytes[start..<end])
            for event in try piece.withUnsafeBytes({ try parser.feed($0) }) {
                if case .partData(let more) = event, case .partData(let earlier)? = events.last {
                    events[events.count - 1] = .partData(earlier + more)
                } else {
                    events.append(event)
                }
            }
            start = end
        }
        try parser.finish()
        return events
    }

    @Test(arguments: [1, 2, 3, 5, 7, 13, 64, 100_000])
    func everyChunkingGivesTheSameParts(chunk: Int) throws {
        let events = try Self.parse(Self.body, chunk: chunk)
        #expect(events == [
            .partBegin(.init(name: "share", filename: nil, contentType: "application/json")),
            .partData(Array("{\"a\":1}".utf8)), .partEnd,
            .partBegin(.init(name: "photo", filename: "a.jpg", contentType: "image/jpeg")),
            .partData(Array("\r\n--b0un not yet\r\n-- data".utf8)), .partEnd,
            // An empty part: its delimiter follows the blank line at once.
            .partBegin(.init(name: "photo", filename: "é.png", contentType: nil)), .partEnd,
            .end,
        ])
    }

    @Test func aBodyWithoutItsClosingDelimiterIsMalformed() throws {
        let cut = Array(Self.body.prefix(Self.body.count - 20))
        let error = #expect(throws: ShareError.self) { try Self.parse(cut, chunk: 10) }
        #expect(error?.code == .badRequest)
    }

    @Test func aPartWithoutADispositionOrWithGarbageAfterADelimiterIsMalformed() {
        let noName = Array("--b0und\r\nContent-Type: text/plain\r\n\r\nx\r\n--b0und--".utf8)
        #expect(throws: ShareError.self) { try Self.parse(noName, chunk: 4) }
        let garbage = Array("--b0undX\r\n".utf8)
        #expect(throws: ShareError.self) { try Self.parse(garbage, chunk: 4) }
    }

    @Test func headersPastTheLimitAreRefused() {
        let long = "--b0und\r\nX-Pad: " + String(repeating: "a", count: MultipartParser.maxHeaderBytes + 1)
        #expect(throws: ShareError.self) { try Self.parse(Array(long.utf8), chunk: 4096) }
    }
}

@Suite struct HeaderValueTests {
    @Test func filenameStarWinsAndQuotedValuesUnescape() {
        let value = HeaderValue(#"attachment; filename="a \"b\".txt"; filename*=UTF-8''%E2%82%AC%20rates.txt"#)
        #expect(value.value == "attachment")
        #expect(value["filename"] == #"a "b".txt"#)
        #expect(value.filename == "€ rates.txt")
        #expect(HeaderValue("attachment; filename*=iso-8859-1'en'%A3.txt").filename == "£.txt")
        #expect(HeaderValue("multipart/form-data; BOUNDARY=abc").parameters["boundary"] == "abc")
    }

    @Test func suggestedNamesLoseTheirPathAndControlCharacters() {
        #expect(HeaderValue.safeFileName("../../etc/passwd") == "passwd")
        #expect(HeaderValue.safeFileName(#"C:\Users\me\IMG_1.HEIC"#) == "IMG_1.HEIC")
        #expect(HeaderValue.safeFileName("a\u{7}b.txt") == "ab.txt")
        #expect(HeaderValue.safeFileName("..") == nil)
        #expect(HeaderValue.safeFileName(nil) == nil)
    }
}

@Suite struct HTTPExchangeTests {
    static let settings = HTTPExchange.Settings(tokens: nil, maxFileSize: 1000, maxShareSize: 5000)

    static func head(_ method: String, _ path: String, _ headers: [String: String] = [:]) -> HTTPRequestHead {
        HTTPRequestHead(method: method, path: path, headers: headers)
    }

    @Test func routesAndMethods() {
        func status(_ start: HTTPExchange.Start) -> Int? {
            if case .respond(let response) = start { return response.status }
            return nil
        }
        #expect(HTTPExchange.begin(Self.head("GET", "/healthz"), settings: Self.settings)
            == .serve(.health, sourceApp: nil, body: nil))
        #expect(HTTPExchange.begin(Self.head("GET", "/v1/shares/X?y=1"), settings: Self.settings)
            == .serve(.showShare("X"), sourceApp: nil, body: nil))
        #expect(status(HTTPExchange.begin(Self.head("GET", "/v1/shares"), settings: Self.settings)) == 405)
        #expect(status(HTTPExchange.begin(Self.head("GET", "/v2/shares"), settings: Self.settings)) == 404)
        #expect(HTTPExchange.begin(Self.head("PATCH", "/v1/uploads/U"), settings: Self.settings)
            == .serve(.tusPatch("U"), sourceApp: nil, body: nil))
        guard case .respond(let response) = HTTPExchange.begin(Self.head("PUT", "/v1/uploads/U"), settings: Self.settings)
        else {
            Issue.record("PUT was served")
            return
        }
        #expect(response.header("Allow") == "HEAD, PATCH, DELETE, OPTIONS")
    }

    @Test func earlyLimitsComeFromContentLength() {
        func code(_ start: HTTPExchange.Start) -> String? {
            guard case .respond(let response) = start,
                let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            else { return nil }
            return (object["error"] as? [String: Any])?["code"] as? String
        }
        #expect(code(HTTPExchange.begin(
            Self.head("POST", "/v1/shares", ["Content-Length": "1001"]), settings: Self.settings)) == "ERR_TOO_LARGE")
        #expect(code(HTTPExchange.begin(Self.head("POST", "/v1/shares", [
            "Content-Length": "5001", "Content-Type": "multipart/form-data; boundary=x",
        ]), settings: Self.settings)) == "ERR_SHARE_TOO_LARGE")
        #expect(HTTPExchange.begin(Self.head("POST", "/v1/shares", [
            "Content-Length": "4000", "Content-Type": "multipart/form-data; boundary=x",
        ]), settings: Self.settings) == .serve(.createShare, sourceApp: nil, body: .multipart(boundary: "x")))
        #expect(code(HTTPExchange.begin(
            Self.head("POST", "/v1/shares", ["Content-Type": "multipart/form-data"]), settings: Self.settings))
            == "ERR_BAD_REQUEST")
    }

    @Test func tokensGiveTheSourceAppAndHealthNeedsNone() {
        let tokens = HTTPTokens(entries: [("phone", "secret-1"), ("scanner", "secret-2")])
        let settings = HTTPExchange.Settings(tokens: tokens, maxFileSize: 1000, maxShareSize: 5000)
        #expect(HTTPExchange.begin(Self.head("POST", "/v1/shares", ["Authorization": "Bearer secret-2"]),
            settings: settings) == .serve(.createShare, sourceApp: "scanner", body: .single))
        guard case .respond(let refused) = HTTPExchange.begin(
            Self.head("POST", "/v1/shares", ["Authorization": "Bearer secret-3"]), settings: settings)
        else {
            Issue.record("a wrong token was accepted")
            return
        }
        #expect(refused.status == 401)
        #expect(refused.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        #expect(HTTPExchange.begin(Self.head("GET", "/healthz"), settings: settings)
            == .serve(.health, sourceApp: nil, body: nil))
        #expect(tokens.name(forAuthorization: "bearer secret-1") == "phone")
        #expect(tokens.name(forAuthorization: "Basic secret-1") == nil)
    }

    @Test func listenAddressesParse() throws {
        #expect(try ListenAddress(parsing: "127.0.0.1:8080") == .tcp(host: "127.0.0.1", port: 8080))
        #expect(try ListenAddress(parsing: "[::1]:8080") == .tcp(host: "::1", port: 8080))
        #expect(try ListenAddress(parsing: "unix:/run/s.sock") == .unix(path: "/run/s.sock"))
        #expect(try !ListenAddress(parsing: "0.0.0.0:8443").isLocal)
        #expect(try ListenAddress(parsing: "[::1]:1").isLocal)
        #expect(throws: ShareError.self) { try ListenAddress(parsing: "8080") }
        #expect(throws: ShareError.self) { try ListenAddress(parsing: "::1:8080") }
        #expect(throws: ShareError.self) { try ListenAddress(parsing: "host:99999") }
    }
}

@Suite struct TusProtocolTests {
    static let now: Int64 = 1_000_000

    static func head(_ headers: [String: String]) -> HTTPRequestHead {
        HTTPRequestHead(method: "PATCH", path: "/v1/uploads/U", headers: ["Tus-Resumable": "1.0.0"].merging(headers) {
            _, new in new
        })
    }

    static func upload(offset: Int64 = 0, length: Int64 = 10) -> TusUpload {
        TusUpload(
            id: "U", length: length, offset: offset, metadata: [:], createdAt: now, expiresAt: now + 60_000,
            owner: "phone")
    }

    @Test func creationNeedsTheVersionAndALengthWithinTheLimit() throws {
        let created = TusProtocol.create(
            Self.head(["Upload-Length": "10", "Upload-Metadata": "filename YS50eHQ=,types cHVibGljLnRleHQ=,flag"]),
            id: "U", now: Self.now, expiry: .seconds(60), maxSize: 100, owner: "phone")
        let upload = try created.get()
        #expect(upload.metadata == ["filename": "a.txt", "types": "public.text", "flag": ""])
        #expect(upload.expiresAt == Self.now + 60_000)
        func status(_ result: Result<TusUpload, HTTPResponse>) -> Int? {
            if case .failure(let response) = result { return response.status }
            return nil
        }
        #expect(status(TusProtocol.create(
            HTTPRequestHead(method: "POST", path: "/", headers: ["Upload-Length": "1"]), id: "U", now: 0,
            expiry: .seconds(1), maxSize: 100, owner: nil)) == 412)
        #expect(status(TusProtocol.create(
            Self.head(["Upload-Length": "101"]), id: "U", now: 0, expiry: .seconds(1), maxSize: 100, owner: nil)) == 413)
        #expect(status(TusProtocol.create(
            Self.head(["Upload-Defer-Length": "1"]), id: "U", now: 0, expiry: .seconds(1), maxSize: 100, owner: nil))
            == 400)
    }

    @Test func aPatchMustStartAtTheDurableOffsetAndStayWithinTheLength() {
        let patch = ["Content-Type": "application/offset+octet-stream"]
        func status(_ start: TusProtocol.PatchStart) -> Int? {
            if case .refuse(let response) = start { return response.status }
            return nil
        }
        let upload = Self.upload(offset: 4)
        #expect(TusProtocol.beginPatch(upload, Self.head(patch.merging(["Upload-Offset": "4"]) { $1 }),
            owner: "phone", now: Self.now) == .receive(offset: 4, limit: 6, checksum: nil))
        #expect(status(TusProtocol.beginPatch(upload, Self.head(patch.merging(["Upload-Offset": "3"]) { $1 }),
            owner: "phone", now: Self.now)) == 409)
        #expect(status(TusProtocol.beginPatch(upload, Self.head(["Upload-Offset": "4"]), owner: "phone", now: Self.now))
            == 415)
        #expect(status(TusProtocol.beginPatch(upload, Self.head(patch.merging(["Upload-Offset": "4"]) { $1 }),
            owner: "scanner", now: Self.now)) == 404)
        #expect(status(TusProtocol.beginPatch(upload, Self.head(patch.merging(["Upload-Offset": "4"]) { $1 }),
            owner: "phone", now: Self.now + 61_000)) == 410)
        #expect(status(TusProtocol.beginPatch(upload, Self.head(patch.merging([
            "Upload-Offset": "4", "Content-Length": "7",
        ]) { $1 }), owner: "phone", now: Self.now)) == 400)
        #expect(status(TusProtocol.beginPatch(upload, Self.head(patch.merging([
            "Upload-Offset": "4", "Upload-Checksum": "md5 AAAA",
        ]) { $1 }), owner: "phone", now: Self.now)) == 400)
    }

    @Test func theOffsetIsRecordedOnlyAfterTheSyncAndAMismatchDiscardsTheBytes() {
        let upload = Self.upload(offset: 4)
        let advanced = TusProtocol.received(upload, bytes: 3, checksumMatched: true, creation: false)
        var recorded = upload
        recorded.offset = 7
        #expect(advanced.prefix(2) == [.sync, .record(recorded)])
        guard case .respond(let response)? = advanced.last else {
            Issue.record("no answer")
            return
        }
        #expect(response.status == 204)
        #expect(response.header("Upload-Offset") == "7")

        let mismatch = TusProtocol.received(upload, bytes: 3, checksumMatched: false, creation: false)
        #expect(mismatch.first == .truncate(to: 4))
        guard case .respond(let refused)? = mismatch.last else {
            Issue.record("no answer")
            return
        }
        #expect(refused.status == 460)
        #expect(!mismatch.contains { if case .record = $0 { true } else { false } })
    }

    @Test func theLastBytesIngestAndTheAnswerNamesTheShare() {
        let upload = Self.upload(offset: 8)
        var finished = upload
        finished.offset = 10
        let actions = TusProtocol.received(upload, bytes: 2, checksumMatched: nil, creation: false)
        #expect(actions == [.sync, .record(finished), .ingest(finished)])
        let receipt = ShareReceipt(shareId: "S", status: .complete, attachments: [])
        var done = finished
        done.shareId = "S"
        let after = TusProtocol.ingested(finished, receipt: receipt, creation: false)
        #expect(after.prefix(2) == [.record(done), .removeData])
        guard case .respond(let response)? = after.last else {
            Issue.record("no answer")
            return
        }
        #expect(response.status == 204)
        #expect(response.header("Sharepipe-Share-Id") == "S")
        #expect(response.header("Location") == "/v1/shares/S")
        // A retried empty final PATCH gets the same answer without ingesting again.
        let retried = TusProtocol.beginPatch(done, Self.head([
            "Content-Type": "application/offset+octet-stream", "Upload-Offset": "10", "Content-Length": "0",
        ]), owner: "phone", now: Self.now)
        #expect(retried == .actions([.respond(TusProtocol.finished(done))]))
        // A share that could not be attempted keeps the bytes for another try.
        let failed = ShareReceipt(
            shareId: "S", status: .failed, attachments: [],
            error: .init(code: .spoolFull, message: "full"))
        let kept = TusProtocol.ingested(finished, receipt: failed, creation: false)
        #expect(kept.count == 1)
        if case .respond(let busy)? = kept.first { #expect(busy.status == 503) }
    }
}

@Suite struct HTTPIngestResponseTests {
    @Test func receiptsMapToTheStatusesOfTheSpec() {
        func receipt(_ status: ShareReceipt.Status, _ code: ShareError.Code? = nil) -> ShareReceipt {
            ShareReceipt(
                shareId: "S", status: status, attachments: [],
                error: code.map { AttachmentRecord.ErrorInfo(code: $0, message: "m") })
        }
        #expect(HTTPIngest.response(for: receipt(.complete)).status == 201)
        #expect(HTTPIngest.response(for: receipt(.partial)).header("Location") == "/v1/shares/S")
        #expect(HTTPIngest.response(for: receipt(.rejected)).status == 422)
        #expect(HTTPIngest.response(for: receipt(.rejected, .notActivated)).status == 422)
        #expect(HTTPIngest.response(for: receipt(.rejected, .tooManyAttachments)).status == 413)
        let full = HTTPIngest.response(for: receipt(.failed, .spoolFull))
        #expect(full.status == 503)
        #expect(full.header("Retry-After") == "5")
        #expect(HTTPIngest.response(for: receipt(.failed, .containerUnavailable)).status == 503)
        #expect(HTTPIngest.response(for: receipt(.failed, .io)).status == 500)
    }
}
