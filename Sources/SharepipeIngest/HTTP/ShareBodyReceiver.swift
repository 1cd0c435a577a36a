import Foundation
import SharepipeLedger
import SharepipeSystem

/// What a `POST /v1/shares` body was, once received: its files in a receive directory, grouped into attachments.
struct ReceivedBody: Sendable {
    /// One received file.
    struct Part: Sendable, Equatable {
        var path: String
        var filename: String?
        var contentType: String?
        /// The file's size and SHA-256, counted and hashed as it was received; nil until the part is complete.
        var received: ReceivedFile?
    }

    /// One attachment: a form field's parts (multipart) or the body (single).
    struct Attachment: Sendable, Equatable {
        var field: String?
        var parts: [Part]
        /// Declared types from the `share` part or `Sharepipe-Type`.
        var types: [String]?
        var suggestedName: String?
    }

    var attachments: [Attachment]
    /// The `share` part's `sourceApp`.
    var sourceApp: String?
    /// The title, text, userInfo and tags from the `share` part or a single body's headers.
    var details: ShareDetails = .empty
}

/// The `share` part of a multipart upload.
struct SharePart: Decodable, Sendable {
    struct Attachment: Decodable, Sendable {
        var types: [String]?
        var suggestedName: String?
    }

    var sourceApp: String?
    var attachments: [String: Attachment]?
}

/// Receives a `POST /v1/shares` body into the server's `ReceiveDirectory` under `staging/` (locked like a share being
/// loaded, so no recovery removes it while it is written, and any recovery removes it after a crash), one file per
/// representation (`REQUEST-N`), written as the bytes arrive; the limits are counted and the SHA-256 computed as
/// they arrive, and each file's writeback is started as it grows, so the loader adopts the files as the share's
/// copies without reading them again and the publisher's barrier finds little left to write. Used from the
/// connection's thread, one call at a time, until `finish`; then only `discard`, from the thread that ingests.
final class ShareBodyReceiver: @unchecked Sendable {
    /// The names of this body's files in the receive directory: `REQUEST-`, then the part's number.
    private let namePrefix = UUID.random().uuidString + "-"
    /// Every file created so far, for `discard`.
    private var created: [String] = []
    /// The receive directory, which may hand out a spare for a file.
    private let directory: ReceiveDirectory
    /// The length of the spare the file being written took (zeros past what is written are cut at its end).
    private var spareLength: Int64 = 0
    private let maxFileSize: Int64
    private let maxShareSize: Int64
    private let maxAttachments: Int
    private var parser: MultipartParser?
    private var single: ReceivedBody.Attachment?
    /// A single body's details, from its headers (checked before anything is received).
    private var singleDetails = ShareDetails.empty
    private var file: FileDescriptor?
    private var fileBytes: Int64 = 0
    /// Writes the file being written and computes its SHA-256.
    private var writer: ReceiveWriter?
    private(set) var totalBytes: Int64 = 0
    private var attachments: [ReceivedBody.Attachment] = []
    private var shareJSON: [UInt8]?
    /// Inside a part that is kept (a file), or the `share` part, or a form field that is skipped.
    private enum PartState { case none, file, share, skipped }
    private var partState = PartState.none
    private var partCount = 0
    /// The attachment and part the file being written belongs to.
    private var current: (attachment: Int, part: Int)?
    /// The body's `Repr-Digest` (or `Content-Digest`), checked over the bytes as they arrive.
    private let digest: DigestFields.Check?

    /// Most parts of one multipart body (files, the `share` part and skipped fields together).
    static let maxParts = 1000
    /// The largest `share` part.
    static let maxSharePartBytes = 256 << 10

    /// A receiver for a body of `kind`; `head` gives a single body's name and types.
    init(
        directory: ReceiveDirectory, kind: HTTPExchange.ShareBody, head: HTTPRequestHead, limits: LoaderConfiguration
    ) throws {
        maxFileSize = limits.maxFileSize
        maxShareSize = limits.maxShareSize
        maxAttachments = limits.maxAttachments
        self.directory = directory
        digest = try DigestFields.expected(head).get().map(DigestFields.Check.init)
        switch kind {
        case .multipart(let boundary):
            parser = MultipartParser(boundary: boundary)
        case .single:
            singleDetails = try ShareDetails.fromHeaders(head)
            let disposition = head["content-disposition"].map(HeaderValue.init)
            let types = head["sharepipe-type"].map { text in
                text.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
            }
            let contentType = head["content-type"].map { HeaderValue($0).value.lowercased() }
            let part = ReceivedBody.Part(
                path: filePath(part: "0"), filename: disposition?.filename, contentType: contentType)
            single = ReceivedBody.Attachment(
                field: nil, parts: [part], types: types, suggestedName: HeaderValue.safeFileName(part.filename))
            try begin(part: "0")
        }
    }

    /// Writes the next bytes of the body.
    func receive(_ bytes: UnsafeRawBufferPointer) throws(ShareError) {
        digest?.update(bytes)
        do {
            if parser == nil {
                try append(bytes)
                return
            }
            for event in try parser!.feed(bytes) {
                try handle(event)
            }
        } catch let error as ShareError {
            throw error
        } catch {
            throw ShareError(.io, "\(error)")
        }
    }

    /// The body is complete: what it holds.
    func finish() throws(ShareError) -> ReceivedBody {
        if let digest, !digest.matches() {
            throw ShareError(
                .badRequest, "the body does not match its Repr-Digest/Content-Digest; nothing was ingested")
        }
        if var single {
            single.parts[0].received = try end(single.parts[0].path)
            return ReceivedBody(attachments: [single], details: singleDetails)
        }
        closeFile()
        try parser!.finish()
        var sourceApp: String?
        var details = ShareDetails.empty
        if let shareJSON {
            let part: SharePart
            do {
                part = try JSONDecoder().decode(SharePart.self, from: Data(shareJSON))
            } catch {
                throw ShareError(.badRequest, "the share part is not the JSON object the API describes")
            }
            if case .object(let members)? = JSONValue.parse(shareJSON) {
                details = try ShareDetails(members: members, what: "the share part")
            }
            sourceApp = part.sourceApp
            for index in attachments.indices {
                guard let field = attachments[index].field, let given = part.attachments?[field] else { continue }
                if let types = given.types {
                    guard types.count == attachments[index].parts.count else {
                        throw ShareError(.badRequest, "the share part gives \(types.count) types for a field of "
                            + "\(attachments[index].parts.count) parts")
                    }
                    attachments[index].types = types
                }
                if let name = given.suggestedName { attachments[index].suggestedName = HeaderValue.safeFileName(name) }
            }
        }
        guard !attachments.isEmpty else { throw ShareError(.badRequest, "the multipart body holds no file part") }
        return ReceivedBody(attachments: attachments, sourceApp: sourceApp, details: details)
    }

    /// Removes what was received (after the loader adopted it, or when the request failed or was cut off).
    func discard() {
        closeFile()
        for path in created { try? System.unlink(path) }
        created = []
    }

    private func handle(_ event: MultipartParser.Event) throws {
        switch event {
        case .partBegin(let head):
            partCount += 1
            guard partCount <= Self.maxParts else {
                throw ShareError(.badRequest, "more than \(Self.maxParts) parts")
            }
            if head.name == "share" && head.filename == nil {
                guard partCount == 1 else { throw ShareError(.badRequest, "the share part must come first") }
                partState = .share
                shareJSON = []
                return
            }
            guard head.filename != nil else {
                // A plain form field: not a representation (only parts with a file name are).
                partState = .skipped
                return
            }
            let path = filePath(part: String(partCount))
            let part = ReceivedBody.Part(path: path, filename: head.filename, contentType: head.contentType)
            if let index = attachments.firstIndex(where: { $0.field == head.name }) {
                attachments[index].parts.append(part)
                current = (index, attachments[index].parts.count - 1)
            } else {
                guard attachments.count < maxAttachments else {
                    throw ShareError(.tooManyAttachments, "more than \(maxAttachments) attachments")
                }
                attachments.append(ReceivedBody.Attachment(
                    field: head.name, parts: [part], suggestedName: HeaderValue.safeFileName(head.filename)))
                current = (attachments.count - 1, 0)
            }
            try begin(part: String(partCount))
            partState = .file
        case .partData(let bytes):
            switch partState {
            case .file:
                try bytes.withUnsafeBytes { try append($0) }
            case .share:
                shareJSON?.append(contentsOf: bytes)
                if (shareJSON?.count ?? 0) > Self.maxSharePartBytes {
                    throw ShareError(.badRequest, "the share part is over \(Self.maxSharePartBytes) bytes")
                }
            case .skipped, .none:
                break
            }
        case .partEnd:
            if partState == .file, let (attachment, part) = current {
                attachments[attachment].parts[part].received = try end(attachments[attachment].parts[part].path)
            }
            current = nil
            partState = .none
        case .end:
            break
        }
    }

    private func append(_ bytes: UnsafeRawBufferPointer) throws {
        if fileBytes + Int64(bytes.count) > maxFileSize {
            throw ShareError(.tooLarge, "an attachment is over the \(maxFileSize)-byte limit")
        }
        if totalBytes + Int64(bytes.count) > maxShareSize {
            throw ShareError(.shareTooLarge, "the share is over the \(maxShareSize)-byte limit")
        }
        try writer?.append(bytes)
        fileBytes += Int64(bytes.count)
        totalBytes += Int64(bytes.count)
    }

    /// Where part `number`'s file goes: `RECEIVE-DIRECTORY/REQUEST-number`.
    private func filePath(part number: String) -> String {
        directory.path + "/" + namePrefix + number
    }

    /// Creates the file of part `number` (`REQUEST-number`, a kept spare when there is one) and starts writing it.
    private func begin(part number: String) throws {
        let path = filePath(part: number)
        let opened: FileDescriptor
        if let length = directory.takeSpare(as: namePrefix + number) {
            do {
                opened = try FileDescriptor.openExisting(path)
            } catch {
                try? System.unlink(path)
                throw error
            }
            spareLength = length
        } else {
            opened = try Self.create(path)
            spareLength = 0
        }
        created.append(path)
        writer = ReceiveWriter(descriptor: opened.rawValue)
        file = consume opened
        fileBytes = 0
    }

    /// The file being written is complete (every byte written, a spare's zeros past them cut): what was received.
    private func end(_ path: String) throws(ShareError) -> ReceivedFile {
        defer { closeFile() }
        let sha256 = try writer?.finish() ?? ""
        if spareLength > fileBytes {
            do {
                try file?.truncate(to: fileBytes)
            } catch {
                throw error as? ShareError ?? ShareError(.io, "\(error)")
            }
        }
        return ReceivedFile(path: path, bytes: fileBytes, sha256: sha256)
    }

    /// Closes the file being written, once its writer no longer uses it.
    private func closeFile() {
        writer?.waitUntilIdle()
        writer = nil
        file = nil
    }

    private static func create(_ path: String) throws -> FileDescriptor {
        try FileDescriptor.create(path)
    }
}
