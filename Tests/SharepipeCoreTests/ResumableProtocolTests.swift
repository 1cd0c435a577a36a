import Foundation
import Testing

@testable import SharepipeCore
@testable import SharepipeIngest
@testable import SharepipeSystem

/// `ResumableProtocol` without a socket: what each interop version sends and gets, offsets, lengths and limits.
@Suite struct ResumableProtocolTests {
    static let now: Int64 = 1_700_000_000_000
    static let maxSize: Int64 = 100 << 20

    static func head(_ method: String, _ headers: [String: String], path: String = "/v1/shares") -> HTTPRequestHead {
        HTTPRequestHead(method: method, path: path, headers: headers)
    }

    static func create(_ headers: [String: String]) -> ResumableProtocol.Creation {
        ResumableProtocol.create(
            head("POST", headers), id: "6F9619FF-8B86-D011-B42D-00C04FC964FF", now: now, expiry: .seconds(3600),
            maxSize: maxSize, owner: nil)
    }

    static func created(_ headers: [String: String]) throws -> (TusUpload, ResumableProtocol.Append) {
        guard case .create(let upload, _, let append) = create(headers) else {
            throw ShareError(.badRequest, "not a creation: \(create(headers))")
        }
        return (upload, append)
    }

    @Test func structuredFieldsAreReadStrictly() {
        #expect(ResumableProtocol.boolean("?1") == true)
        #expect(ResumableProtocol.boolean(" ?0 ;a=1") == false)
        #expect(ResumableProtocol.boolean("1") == nil)
        #expect(ResumableProtocol.integer("42") == 42)
        #expect(ResumableProtocol.integer("-1") == nil)
        #expect(ResumableProtocol.integer("1234567890123456") == nil)
        #expect(ResumableProtocol.integer("4.2") == nil)
    }

    @Test func withoutTheInteropHeaderOrACompletenessHeaderAnUploadIsPlain() {
        #expect(Self.create(["Upload-Complete": "?1", "Content-Length": "5"]) == .plain)
        #expect(Self.create(["Upload-Draft-Interop-Version": "6", "Content-Length": "5"]) == .plain)
        // An unknown version: a complete body is an ordinary upload, a partial one is refused.
        #expect(Self.create(["Upload-Draft-Interop-Version": "99", "Upload-Complete": "?1"]) == .plain)
        guard case .refuse(let refusal) = Self.create(["Upload-Draft-Interop-Version": "99", "Upload-Complete": "?0"])
        else {
            Issue.record("a partial upload in an unknown version was accepted")
            return
        }
        #expect(refusal.status == 400)
    }

    @Test func version3SaysUploadIncompleteAndTheLaterOnesUploadComplete() throws {
        let (old, oldAppend) = try Self.created([
            "Upload-Draft-Interop-Version": "3", "Upload-Incomplete": "?0", "Content-Length": "10",
        ])
        #expect(old.interop == 3)
        #expect(old.length == 10)
        #expect(oldAppend.complete)
        let (_, partial) = try Self.created(["Upload-Draft-Interop-Version": "8", "Upload-Complete": "?0"])
        #expect(!partial.complete)
        #expect(partial.lengthUnknown)
        #expect(partial.limit == Self.maxSize)
        #expect(ResumableProtocol.completeness(true, .v3) == ("Upload-Incomplete", "?0"))
        #expect(ResumableProtocol.completeness(false, .v5) == ("Upload-Complete", "?0"))
    }

    @Test func theInterimResponseCarriesTheVersionLocationAndLimits() throws {
        let (upload, _) = try Self.created([
            "Upload-Draft-Interop-Version": "8", "Upload-Complete": "?1", "Content-Length": "10",
            "Content-Disposition": "attachment; filename=\"IMG_1.HEIC\"", "Content-Type": "image/heic",
        ])
        #expect(upload.metadata == ["filename": "IMG_1.HEIC", "filetype": "image/heic"])
        let text = String(decoding: ResumableProtocol.interim(
            upload, .v8, location: "http://h/v1/uploads/x", maxSize: Self.maxSize, now: Self.now), as: UTF8.self)
        #expect(text == "HTTP/1.1 104 Upload Resumption Supported\r\nUpload-Draft-Interop-Version: 8\r\n"
            + "Location: http://h/v1/uploads/x\r\nUpload-Limit: max-size=104857600, max-age=3600\r\n\r\n")
        let v6 = String(decoding: ResumableProtocol.interim(
            upload, .v6, location: "/v1/uploads/x", maxSize: Self.maxSize, now: Self.now), as: UTF8.self)
        #expect(v6.contains("Upload-Limit: max-size=104857600, expires=3600\r\n"))
        let v3 = String(decoding: ResumableProtocol.interim(
            upload, .v3, location: "/v1/uploads/x", maxSize: Self.maxSize, now: Self.now), as: UTF8.self)
        #expect(!v3.contains("Upload-Limit"))
    }

    @Test func aKnownLengthOverTheLimitOrInconsistentLengthsAreRefused() {
        guard case .refuse(let large) = Self.create([
            "Upload-Draft-Interop-Version": "6", "Upload-Complete": "?0", "Upload-Length": String(Self.maxSize + 1),
        ]) else {
            Issue.record("an upload over the limit was created")
            return
        }
        #expect(large.status == 413)
        #expect(large.header("Upload-Limit") == "max-size=104857600, expires=3600")
        guard case .refuse(let mismatch) = Self.create([
            "Upload-Draft-Interop-Version": "8", "Upload-Complete": "?1", "Upload-Length": "5", "Content-Length": "6",
        ]) else {
            Issue.record("inconsistent lengths were accepted")
            return
        }
        #expect(mismatch.status == 400)
    }

    @Test func theOffsetIsReportedAndAWrongOffsetIsAConflict() throws {
        var (upload, _) = try Self.created([
            "Upload-Draft-Interop-Version": "8", "Upload-Complete": "?1", "Content-Length": "100",
        ])
        upload.offset = 40
        let head = ResumableProtocol.offset(upload, .v8, owner: nil, now: Self.now, maxSize: Self.maxSize)
        #expect(head.status == 204)
        #expect(head.header("Upload-Offset") == "40")
        #expect(head.header("Upload-Complete") == "?0")
        #expect(head.header("Upload-Length") == "100")
        #expect(head.header("Cache-Control") == "no-store")
        let old = ResumableProtocol.offset(upload, .v3, owner: nil, now: Self.now, maxSize: Self.maxSize)
        #expect(old.header("Upload-Incomplete") == "?1")
        #expect(old.header("Upload-Limit") == nil)
        #expect(ResumableProtocol.offset(upload, .v8, owner: "other", now: Self.now, maxSize: Self.maxSize).status
            == 404)
        #expect(ResumableProtocol.offset(upload, .v8, owner: nil, now: upload.expiresAt, maxSize: Self.maxSize).status
            == 410)
        let patch: [String: String] = [
            "Upload-Draft-Interop-Version": "8", "Upload-Complete": "?1", "Upload-Offset": "41",
            "Content-Type": "application/partial-upload", "Content-Length": "59",
        ]
        guard case .refuse(let conflict) = ResumableProtocol.beginAppend(
            upload, Self.head("PATCH", patch), .v8, owner: nil, now: Self.now, maxSize: Self.maxSize)
        else {
            Issue.record("a wrong offset was accepted")
            return
        }
        #expect(conflict.status == 409)
        #expect(conflict.header("Upload-Offset") == "40")
        var right = patch
        right["Upload-Offset"] = "40"
        right["Content-Length"] = "60"
        #expect(ResumableProtocol.beginAppend(
            upload, Self.head("PATCH", right), .v8, owner: nil, now: Self.now, maxSize: Self.maxSize)
            == .receive(.init(limit: 60, complete: true, length: 100)))
        right["Content-Type"] = "application/octet-stream"
        guard case .refuse(let type) = ResumableProtocol.beginAppend(
            upload, Self.head("PATCH", right), .v6, owner: nil, now: Self.now, maxSize: Self.maxSize)
        else {
            Issue.record("version 6 took an append that is not application/partial-upload")
            return
        }
        #expect(type.status == 415)
        // Version 5 has no content type for appends.
        #expect(ResumableProtocol.beginAppend(
            upload, Self.head("PATCH", right), .v5, owner: nil, now: Self.now, maxSize: Self.maxSize)
            == .receive(.init(limit: 60, complete: true, length: 100)))
    }

    @Test func anAppendIsSyncedBeforeItIsRecordedAndTheLastOneIsIngested() throws {
        let (upload, append) = try Self.created(["Upload-Draft-Interop-Version": "5", "Upload-Complete": "?0"])
        let partial = ResumableProtocol.received(
            upload, bytes: 30, append, creation: true, .v5, location: "/v1/uploads/x", maxSize: Self.maxSize,
            now: Self.now)
        var advanced = upload
        advanced.offset = 30
        guard partial.count == 3, case .respond(let created) = partial[2] else {
            Issue.record("unexpected actions \(partial)")
            return
        }
        #expect(Array(partial[..<2]) == [.sync, .record(advanced)])
        #expect(created.status == 201)
        #expect(created.header("Location") == "/v1/uploads/x")
        #expect(created.header("Upload-Offset") == "30")
        let last = ResumableProtocol.received(
            advanced, bytes: 20, .init(limit: Self.maxSize - 30, complete: true, length: -1), creation: false, .v5,
            location: "/v1/uploads/x", maxSize: Self.maxSize, now: Self.now)
        var done = advanced
        done.offset = 50
        done.length = 50
        done.completed = true
        #expect(last == [.sync, .record(done), .ingest(done)])
        #expect(ResumableProtocol.interrupted(upload, bytes: 0).isEmpty)
        #expect(ResumableProtocol.interrupted(upload, bytes: 30) == [.sync, .record(advanced)])
    }
}

/// RFC 9530's fields: parsed strictly for the algorithms verified here, others ignored.
@Suite struct DigestFieldsTests {
    static let sum = Array(repeating: UInt8(1), count: 32)

    @Test func knownAlgorithmsAreByteSequencesOfTheirSize() throws {
        let text = "sha-256=:" + Data(Self.sum).base64EncodedString() + ":, unixsum=:AAA=:"
        #expect(try DigestFields.parse(text, name: "Repr-Digest").get() == DigestFields(sha256: Self.sum))
        #expect(try DigestFields.parse("md5=:AAA=:", name: "Repr-Digest").get() == nil)
        #expect(try DigestFields.parse(nil, name: "Repr-Digest").get() == nil)
        #expect(throws: ShareError.self) { try DigestFields.parse("sha-256=:AAA=:", name: "Repr-Digest").get() }
        #expect(throws: ShareError.self) { try DigestFields.parse("sha-512=abc", name: "Repr-Digest").get() }
    }

    @Test func wantReprDigestIsAnsweredWithTheStoredSHA256() {
        let hex = Self.sum.map { String(format: "%02x", $0) }.joined()
        let answer = DigestFields.answer(want: "sha-256=3", sha256Hex: hex)
        let expected = "Repr-Digest: sha-256=:" + Data(Self.sum).base64EncodedString() + ":"
        #expect(answer.map { $0.0 + ": " + $0.1 } == [expected])
        #expect(DigestFields.answer(want: "sha-256=0", sha256Hex: hex).isEmpty)
        #expect(DigestFields.answer(want: nil, sha256Hex: hex).isEmpty)
    }

    @Test func aCheckComparesEveryDigestGiven() {
        let bytes: [UInt8] = Array("hello".utf8)
        let sha = MessageDigest(.sha256)
        bytes.withUnsafeBytes { sha.update($0) }
        let right = DigestFields.Check(DigestFields(sha256: sha.finalize()))
        bytes.withUnsafeBytes { right.update($0) }
        #expect(right.matches())
        let wrong = DigestFields.Check(DigestFields(sha256: Self.sum))
        bytes.withUnsafeBytes { wrong.update($0) }
        #expect(!wrong.matches())
    }
}
