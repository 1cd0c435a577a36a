import Foundation
import SharepipeSystem

/// Receives one PATCH (or a creation's body) into a tus upload's data file and performs what `TusProtocol`
/// decides. The body's bytes are appended on the connection's thread as they arrive; `finish` and `perform` run
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
    /// The share the upload became, once ingested.
    private(set) var shareID: String?

    init(
        server: HTTPServer, upload: TusUpload, file: consuming FileDescriptor?, checksum: TusProtocol.Checksum?,
        creation: Bool, limit: Int64 = 0
    ) {
        self.server = server
        self.upload = upload
        self.file = file
        self.checksum = checksum
        self.creation = creation
        self.limit = limit
        digest = checksum.map { MessageDigest($0.algorithm == .sha1 ? .sha1 : .sha256) }
    }

    /// Appends the next bytes of the body.
    func receive(_ bytes: UnsafeRawBufferPointer) throws(ShareError) {
        guard received + Int64(bytes.count) <= limit else {
            file = nil
            try? truncate(to: upload.offset)
            throw ShareError(.badRequest, "the body passes the Upload-Length")
        }
        do {
            try file?.writeAll(bytes)
        } catch {
            file = nil
            throw error as? ShareError ?? ShareError(.io, "\(error)")
        }
        digest?.update(bytes)
        received += Int64(bytes.count)
    }

    /// The body is complete: sync, record, and ingest when the upload is finished.
    func finish() async -> HTTPResponse {
        let matched = checksum.map { digest?.finalize() == $0.digest }
        return await perform(TusProtocol.received(upload, bytes: received, checksumMatched: matched,
        creation: creation))
    }

    /// The request was cut off before its body ended: nothing is recorded; the bytes past the recorded offset are
    /// cut off by the next PATCH.
    func abandon() {
        file = nil
    }

    /// Performs the actions in order; the first response is the answer.
    func perform(_ actions: [TusProtocol.Action]) async -> HTTPResponse {
        var pending = actions[...]
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
                    let receipt = await ingest(upload)
                    pending = TusProtocol.ingested(upload, receipt: receipt, creation: creation)[...] + pending
                case .removeData:
                    try server.uploads.removeData(upload.id)
                case .remove:
                    try server.uploads.remove(upload.id)
                case .respond(let response):
                    return response
                }
            } catch {
                file = nil
                return TusProtocol.refusal(error as? ShareError ?? ShareError(.io, "\(error)"))
            }
        }
        return TusProtocol.refusal(ShareError(.io, "no answer was decided"))
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
        let provider = ReceivedItemProvider(
            representations: types.map { .init(type: $0, path: path) }, suggestedName: name, sniffed: sniffed)
        let receipt = await HTTPIngest(loader: loader, activation: server.activation)
            .ingest([provider], sourceApp: upload.owner)
        if receipt.status != .failed { shareID = receipt.shareId }
        server.logger.info("http.upload_ingested", [
            ("upload", .string(upload.id)), ("share", .string(receipt.shareId)),
            ("status", .string(receipt.status.rawValue)),
        ])
        return receipt
    }
}
