import Foundation
import SharepipeLedger
import SharepipeSystem

/// Receives one PATCH (or a creation's body) into a tus upload's data file and performs what `TusProtocol`
/// decides; with `resumable`, the same for an upload of `ResumableProtocol`, whose decisions differ where noted.
/// The body's bytes are appended on the connection's thread as they arrive; `finish` and `perform` run
/// on the server's threads once the connection is suspended, so the two never overlap.
final class TusReceiver: @unchecked Sendable {
    private let server: HTTPServer
    private let upload: TusUpload
    private let creation: Bool
    private let limit: Int64
    private var file: FileDescriptor?
    private let checksum: TusProtocol.Checksum?
    private let digest: MessageDigest?
    private var received: Int64 = 0
    /// Where the bytes whose writeback was not started yet begin (so the sync at the end finds little to write).
    private var writebackFrom: Int64 = 0
    /// The share the upload became, once ingested.
    private(set) var shareID: String?
    /// The first request of a `ResumableProtocol` upload writes its data file through this, as a plain body's is
    /// (past the first MiB written and hashed from memory on a thread of its own), so its SHA-256 is known as its
    /// bytes arrive: when the upload completes in this request (not interrupted), its data file is adopted as the
    /// share's copy without being read again. It uses `file`'s descriptor: stopped (`stopWriting`) before `file` is
    /// closed or anything else writes the data file.
    private var writer: ReceiveWriter?
    private var wholeSHA256: String?
    /// The request's `Content-Digest`, checked over its body: a mismatch appends nothing.
    private let contentDigest: DigestFields.Check?
    /// An upload of `ResumableProtocol`: its version, what this request appends, and the upload's `Location`.
    let resumable: (version: ResumableProtocol.Version, append: ResumableProtocol.Append, location: String)?

    init(
        server: HTTPServer, upload: TusUpload, file: consuming FileDescriptor?, checksum: TusProtocol.Checksum?,
        creation: Bool, limit: Int64 = 0, contentDigest: DigestFields? = nil,
        resumable: (version: ResumableProtocol.Version, append: ResumableProtocol.Append, location: String)? = nil
    ) {
        self.resumable = resumable
        self.contentDigest = contentDigest.map(DigestFields.Check.init)
        if resumable != nil && upload.offset == 0 && limit > 0, let descriptor = file?.rawValue {
            writer = ReceiveWriter(descriptor: descriptor)
        }
        self.server = server
        self.upload = upload
        self.file = file
        self.checksum = checksum
        self.creation = creation
        self.limit = limit
        digest = checksum.map { MessageDigest($0.algorithm == .sha1 ? .sha1 : .sha256) }
    }

    deinit {
        stopWriting()
    }

    /// Ends the writer: its thread no longer writes the data file (what waits in its buffers is dropped).
    private func stopWriting() {
        writer?.waitUntilIdle()
        writer = nil
    }

    /// Appends the next bytes of the body.
    func receive(_ bytes: UnsafeRawBufferPointer) throws(ShareError) {
        guard received + Int64(bytes.count) <= limit else {
            if let resumable {
                throw resumable.append.lengthUnknown
                    ? ShareError(.tooLarge, "the upload passes the \(upload.offset + limit)-byte limit")
                    : ShareError(.badRequest, "the body passes the upload's length")
            }
            file = nil
            try? truncate(to: upload.offset)
            throw ShareError(.badRequest, "the body passes the Upload-Length")
        }
        do {
            if let writer {
                try writer.append(bytes)
            } else {
                try file?.writeAll(bytes)
            }
        } catch {
            stopWriting()
            file = nil
            throw error as? ShareError ?? ShareError(.io, "\(error)")
        }
        digest?.update(bytes)
        contentDigest?.update(bytes)
        received += Int64(bytes.count)
        // The writer starts its own writeback.
        if writer == nil && received - writebackFrom >= Int64(CopyEngine.chunkSize) {
            file?.startWriteback(offset: upload.offset + writebackFrom, length: Int(received - writebackFrom))
            writebackFrom = received
        }
    }

    /// The body is complete: sync, record, and ingest when the upload is finished.
    func finish() async -> HTTPResponse {
        if let contentDigest, !contentDigest.matches() {
            stopWriting()
            let error = ShareError(.badRequest, "the body does not match its Content-Digest; nothing was appended")
            return await perform([.truncate(to: upload.offset), .respond(
                resumable.map { ResumableProtocol.refusal(error, $0.version) } ?? TusProtocol.refusal(error))])
        }
        if let resumable {
            if let writer {
                do {
                    wholeSHA256 = try writer.finish()
                } catch {
                    // A write failed: what reached the file is recorded, as for a cut request.
                    abandon()
                    return ResumableProtocol.refusal(error, resumable.version)
                }
                stopWriting()
            }
            let now = System.wallClockNanoseconds() / 1_000_000
            return await perform(ResumableProtocol.received(
                upload, bytes: received, resumable.append, creation: creation, resumable.version,
                location: resumable.location, maxSize: server.loaderConfiguration().maxFileSize, now: now))
        }
        let matched = checksum.map { digest?.finalize() == $0.digest }
        return await perform(TusProtocol.received(upload, bytes: received, checksumMatched: matched,
        creation: creation))
    }

    /// The request was cut off before its body ended. tus: nothing is recorded; the bytes past the recorded offset
    /// are cut off by the next PATCH. `ResumableProtocol`: what arrived is synced and recorded (on the connection's
    /// thread, before the upload is released, so a resuming request that waits for it sees the new offset).
    func abandon() {
        if let writer {
            writer.flush()
            received = min(received, writer.bytesInFile)
        }
        stopWriting()
        defer { file = nil }
        guard resumable != nil, file != nil else { return }
        for action in ResumableProtocol.interrupted(upload, bytes: received) {
            do {
                switch action {
                case .sync: try file?.sync()
                case .record(let advanced): try server.uploads.record(advanced)
                default: continue
                }
            } catch {
                server.logger.warning("http.upload_record_failed", [
                    ("upload", .string(upload.id)), ("message", .string("\(error)")),
                ])
                return
            }
        }
    }

    /// The request is refused in the middle of its body: the answer. An upload of `ResumableProtocol` that passed the
    /// size limit or its length is removed (it cannot be completed); otherwise it keeps what arrived.
    func refused(_ error: ShareError) -> HTTPResponse {
        guard let resumable else {
            abandon()
            return TusProtocol.refusal(error)
        }
        if error.code == .tooLarge || error.code == .badRequest {
            stopWriting()
            file = nil
            try? server.uploads.remove(upload.id)
        } else {
            abandon()
        }
        let limits = ResumableProtocol.limits(
            of: upload, maxSize: server.loaderConfiguration().maxFileSize,
            now: System.wallClockNanoseconds() / 1_000_000)
        return ResumableProtocol.refusal(
            error, resumable.version,
            headers: error.code == .tooLarge ? ResumableProtocol.limitHeaders(limits, resumable.version) : [])
    }

    /// Performs the actions in order; the first response is the answer.
    func perform(_ actions: [TusProtocol.Action]) async -> HTTPResponse {
        var pending = actions[...]
        var digestHeaders: [(String, String)] = []
        while let action = pending.popFirst() {
            do {
                switch action {
                case .truncate(let length):
                    try truncate(to: length)
                case .sync:
                    try file?.sync()
                    file = nil
                case .record(let upload):
                    try server.uploads.record(upload)
                case .ingest(let upload):
                    if let refusal = try reprDigestRefusal(upload) {
                        pending = [.remove, .respond(refusal)]
                        continue
                    }
                    let receipt = await ingest(upload)
                    digestHeaders = DigestFields.answer(
                        want: upload.metadata[DigestFields.wantKey], sha256Hex: DigestFields.stored(receipt))
                    let next = resumable.map { ResumableProtocol.ingested(upload, receipt: receipt, $0.version) }
                        ?? TusProtocol.ingested(upload, receipt: receipt, creation: creation)
                    pending = next[...] + pending
                case .removeData:
                    try server.uploads.removeData(upload.id)
                case .remove:
                    try server.uploads.remove(upload.id)
                case .respond(var response):
                    response.headers += digestHeaders
                    return response
                }
            } catch {
                file = nil
                let failure = error as? ShareError ?? ShareError(.io, "\(error)")
                return resumable.map { ResumableProtocol.refusal(failure, $0.version) } ?? TusProtocol.refusal(failure)
            }
        }
        return TusProtocol.refusal(ShareError(.io, "no answer was decided"))
    }

    /// A completed upload whose `Repr-Digest` (given at its creation) does not match the bytes on disk: the refusal
    /// (the upload is removed, nothing ingested).
    private func reprDigestRefusal(_ upload: TusUpload) throws -> HTTPResponse? {
        guard case .success(let expected?) = DigestFields.parse(upload.metadata[DigestFields.reprKey], name: "")
        else { return nil }
        if expected.sha512 == nil, let expectedSHA256 = expected.sha256, let wholeSHA256 {
            if hex(expectedSHA256) == wholeSHA256 { return nil }
        } else if try DigestFields.Check.file(server.uploads.dataPath(upload.id), matches: expected) {
            return nil
        }
        let error = ShareError(.badRequest, "the upload does not match its Repr-Digest; nothing was ingested")
        return resumable.map { ResumableProtocol.refusal(error, $0.version) } ?? TusProtocol.refusal(error)
    }

    /// A second name of a completed `ResumableProtocol` upload's data file for the loader to adopt as the copy (a
    /// hard link: the loader links it into the share and removes this name; the data file stays until the share is
    /// published, so an ingest that fails can be tried again). Its SHA-256 comes from this request when the upload
    /// was not interrupted, else from reading the file once; nil (a plain copy) when the link cannot be made.
    private func adoptable(_ upload: TusUpload, path: String) -> ReceivedFile? {
        let name = path + ".adopt"
        try? System.unlink(name)
        guard (try? System.linkNoReplace(path, to: name)) == true else { return nil }
        var sha256 = wholeSHA256
        if sha256 == nil {
            sha256 = try? DigestFields.sha256(ofFile: path)
        }
        guard let sha256 else {
            try? System.unlink(name)
            return nil
        }
        return ReceivedFile(path: name, bytes: upload.offset, sha256: sha256)
    }

    private func truncate(to length: Int64) throws {
        let data = try FileDescriptor.openForWriting(server.uploads.dataPath(upload.id))
        try System.truncate(descriptor: data.rawValue, length: length)
        try data.sync()
    }

    /// The finished upload as a one-attachment share, through the same loader as every source.
    private func ingest(_ upload: TusUpload) async -> ShareReceipt {
        let loader = ShareLoader(
            spool: server.spool, registry: server.registry, configuration: server.loaderConfiguration())
        let path = server.uploads.dataPath(upload.id)
        let name = HeaderValue.safeFileName(upload.metadata["filename"])
        let explicit = upload.metadata["types"].map { text in
            text.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        }
        let (types, sniffed) = ReceivedItemProvider.declaredTypes(
            explicit: explicit, mimeType: upload.metadata["filetype"]?.lowercased(), suggestedName: name, path: path,
            registry: server.registry)
        let adopted = resumable == nil ? nil : adoptable(upload, path: path)
        defer { if let adopted { try? System.unlink(adopted.path) } }
        let provider = ReceivedItemProvider(
            representations: types.map { .init(type: $0, path: path, received: adopted) }, suggestedName: name,
            sniffed: sniffed)
        let ingest = HTTPIngest(loader: loader, activation: server.activation)
        let receipt: ShareReceipt
        do {
            receipt = await ingest.ingest(
                [provider], sourceApp: upload.owner, details: try ShareDetails.fromMetadata(upload.metadata))
        } catch {
            // Checked when the upload was created; an upload record from before the check may still fail it.
            let info = AttachmentRecord.ErrorInfo(code: error.code, message: error.message)
            receipt = ShareReceipt(
                shareId: UUID.random().uuidString, status: .rejected,
                attachments: [AttachmentRecord(
                    index: 0, status: .failed, declaredTypes: types, suggestedName: name, error: info)],
                error: info)
        }
        if receipt.status != .failed { shareID = receipt.shareId }
        server.logger.info("http.upload_ingested", [
            ("upload", .string(upload.id)), ("share", .string(receipt.shareId)),
            ("status", .string(receipt.status.rawValue)),
        ])
        return receipt
    }
}
