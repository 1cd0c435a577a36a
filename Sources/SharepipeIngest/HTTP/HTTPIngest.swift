import Foundation
import SharepipeLedger
import SharepipeSpool
import SharepipeSystem

/// Turns a received body into a share through the one loader every source uses, and a receipt into a response.
struct HTTPIngest: Sendable {
    let loader: ShareLoader
    let activation: ShareActivation?
    /// Where the spares the received bodies' shares leave unused go (the server's receive directory).
    var spareSink: (any SpareSink)?

    /// Providers for a received body: per attachment its parts as representations, in fidelity order. A multipart
    /// part is one representation and declares one type (from the `share` part, else its MIME type or name); a
    /// single body declares what its headers say, or what an inbox drop of that name and content would.
    func providers(_ body: ReceivedBody) -> [ReceivedItemProvider] {
        let registry = loader.registry
        return body.attachments.map { attachment in
            let single = attachment.field == nil
            var representations: [ReceivedItemProvider.Representation] = []
            var sniffed: TypeSniffer.SniffedHead?
            for (index, part) in attachment.parts.enumerated() {
                let explicit: [String]?
                if single {
                    explicit = attachment.types
                } else {
                    explicit = attachment.types.map { [$0[index]] }
                }
                let (types, head) = ReceivedItemProvider.declaredTypes(
                    explicit: explicit, mimeType: part.contentType,
                    suggestedName: HeaderValue.safeFileName(part.filename), path: part.path, registry: registry)
                sniffed = sniffed ?? head
                if single {
                    for type in types where !representations.contains(where: { $0.type == type }) {
                        representations.append(.init(type: type, path: part.path, received: part.received))
                    }
                } else if let type = types.first {
                    // Every part is a representation, also a second one of the same type: its fallback.
                    representations.append(.init(type: type, path: part.path, received: part.received))
                }
            }
            return ReceivedItemProvider(
                representations: representations, suggestedName: attachment.suggestedName, sniffed: sniffed,
                spareSink: spareSink)
        }
    }

    /// Checks the activation rule, then loads and publishes; the receipt is returned once the share is durable.
    func ingest(
        _ providers: [ReceivedItemProvider], sourceApp: String?, details: ShareDetails, arrival: LaneArrival? = nil
    ) async -> ShareReceipt {
        if let error = activationRefusal(activation, declaredBy: providers) {
            let info = AttachmentRecord.ErrorInfo(code: error.code, message: error.message)
            let attachments = providers.enumerated().map { index, provider in
                AttachmentRecord(
                    index: index, status: .failed, declaredTypes: provider.registeredTypeIdentifiers,
                    suggestedName: provider.suggestedName, error: info)
            }
            return ShareReceipt(
                shareId: UUID.random().uuidString, status: .rejected, attachments: attachments, error: info,
                details: details)
        }
        return await loader.load(providers, sourceApp: sourceApp, details: details, origin: nil, arrival: arrival)
    }

    /// What the ledger keeps of a receipt for an `Idempotency-Key` replay: the receipt without its text and userInfo,
    /// which are user content and stay out of the ledger (the title and tags stay).
    static func storedAnswer(for receipt: ShareReceipt, _ response: HTTPResponse) -> StoredAnswer {
        guard receipt.details.text != nil || receipt.details.userInfo != nil else {
            return StoredAnswer(shareId: receipt.shareId, status: response.status, body: response.body)
        }
        var kept = receipt
        kept.details = (try? ShareDetails(title: receipt.details.title, tags: receipt.details.tags)) ?? .empty
        let body = HTTPResponse.json(response.status, kept).body
        return StoredAnswer(shareId: receipt.shareId, status: response.status, body: body)
    }

    /// `422 ERR_DUPLICATE` for a body refused before it was read: the error, and the original as a receipt names it.
    static func duplicate(of origin: DuplicateOrigin) -> HTTPResponse {
        struct Detail: Encodable {
            var code: String
            var message: String
        }
        struct Body: Encodable {
            var error: Detail
            var duplicateOf: DuplicateOrigin
        }
        let error = ShareError.duplicate(of: origin)
        return .json(422, Body(error: Detail(code: error.code.rawValue, message: error.message), duplicateOf: origin))
    }

    /// The response a receipt gets: 201 (complete, partial) or 422 (rejected) with the receipt and `Location`; a
    /// share refused whole for a limit is 413, a share that could not be attempted 503 (spool full, state or
    /// ledger unusable, with `Retry-After`) or 500.
    static func response(for receipt: ShareReceipt) -> HTTPResponse {
        let location = [("Location", "/v1/shares/" + receipt.shareId)]
        switch receipt.status {
        case .complete, .partial:
            return .json(201, receipt, headers: location)
        case .rejected:
            if let error = receipt.error, HTTPResponse.status(for: error.code) == 413 {
                return .error(ShareError(error.code, error.message))
            }
            return .json(422, receipt, headers: location)
        case .failed:
            let error = receipt.error.map { ShareError($0.code, $0.message) } ?? ShareError(.io, "the share failed")
            return .error(error, status: HTTPResponse.status(for: error.code) == 503 ? 503 : 500)
        }
    }
}
