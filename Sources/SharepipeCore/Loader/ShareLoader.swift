import Dispatch
import Foundation
import Glibc

/// Loads a share the way a share extension must: per attachment the first declared type that conforms to an
/// accepted type, copied inside the provider's callback into `staging`, checked, and published with one rename.
public struct ShareLoader: Sendable {
    /// The spool the share is published into.
    public let spool: Spool
    /// Types and conformance.
    public let registry: TypeRegistry
    /// Limits and policy.
    public let configuration: LoaderConfiguration

    /// A loader publishing into `spool`.
    public init(spool: Spool, registry: TypeRegistry = .standard, configuration: LoaderConfiguration = .init()) {
        self.spool = spool
        self.registry = registry
        self.configuration = configuration
    }

    /// Loads and publishes one share. `sources[i]`, when given, is the identity of the inbox file behind
    /// attachment i, recorded for exactly-once ingest. Never throws: every failure is in the receipt.
    public func load(
        _ providers: [any ItemProvider], sourceApp: String? = nil, sources: [SourceIdentity?] = []
    ) async -> ShareReceipt {
        let shareID = UUID().uuidString
        let declared = providers.map(\.registeredTypeIdentifiers)
        func refused(_ status: ShareReceipt.Status, _ error: ShareError) -> ShareReceipt {
            let info = AttachmentRecord.ErrorInfo(code: error.code, message: error.message)
            let attachments = declared.enumerated().map { index, types in
                AttachmentRecord(index: index, status: .failed, declaredTypes: types, error: info)
            }
            return ShareReceipt(shareId: shareID, status: status, attachments: attachments, error: info)
        }
        if providers.count > configuration.maxAttachments {
            return refused(.rejected, ShareError(
                .tooManyAttachments, "\(providers.count) attachments, at most \(configuration.maxAttachments)"))
        }
        if providers.isEmpty {
            return refused(.rejected, ShareError(.unsupportedType, "the share has no attachments"))
        }
        // The staging directory is locked (flock on the directory) for as long as this loader works on it, so a
        // recovery started by another process (`consume` beside a running daemon) can tell it from a dead one.
        let stagingLock: DirectoryLock
        do {
            stagingLock = try makeLockedStaging(shareID)
        } catch {
            return refused(.failed, error as? ShareError ?? ShareError(.io, "\(error)"))
        }

        let shareState = CopyEngine.ShareState()
        let records = await withTaskCancellationHandler {
            await loadAttachments(providers, shareID: shareID, shareState: shareState)
        } onCancel: {
            shareState.cancelled.store(true, ordering: .relaxed)
        }
        let receipt: ShareReceipt
        if shareState.outOfSpace.load(ordering: .relaxed) {
            try? spool.remove(.staging, shareID)
            let info = AttachmentRecord.ErrorInfo(
                code: .io, message: "no space left in the state directory (errno \(ENOSPC))")
            receipt = ShareReceipt(shareId: shareID, status: .failed, attachments: records, error: info)
        } else if shareState.cancelled.load(ordering: .relaxed) {
            receipt = rollBackCancelled(shareID: shareID, sourceApp: sourceApp, records: records)
        } else {
            receipt = finish(shareID: shareID, sourceApp: sourceApp, records: records, sources: sources)
        }
        _ = consume stagingLock
        return receipt
    }

    /// Creates `staging/S` and takes an exclusive flock on the directory itself; the lock moves with the directory
    /// when it is published and ends when the descriptor is closed.
    private func makeLockedStaging(_ shareID: String) throws -> DirectoryLock {
        try spool.checkCapacity(configuration)
        try System.makeDirectory(spool.path(.staging, shareID))
        // A recovery in another process may remove the directory between its creation and the lock: then the
        // share cannot be attempted now, and its sources stay untouched for a later try.
        guard let lock = try DirectoryLock.acquire(spool.path(.staging, shareID)) else {
            throw ShareError(.io, "the staging directory was removed before it could be locked", errno: ENOENT)
        }
        return lock
    }

    /// Loads every attachment, at most `concurrency` at a time; results stay in attachment order.
    private func loadAttachments(
        _ providers: [any ItemProvider], shareID: String, shareState: CopyEngine.ShareState
    ) async -> [AttachmentRecord] {
        await withTaskGroup(of: AttachmentRecord.self) { group in
            var records: [AttachmentRecord?] = Array(repeating: nil, count: providers.count)
            var next = 0
            func startNext() {
                let index = next
                next += 1
                group.addTask {
                    await loadAttachment(providers[index], index: index, shareID: shareID, shareState: shareState)
                }
            }
            while next < min(providers.count, max(1, configuration.concurrency)) { startNext() }
            for await record in group {
                records[record.index] = record
                if next < providers.count { startNext() }
            }
            return records.map { $0! }
        }
    }

    private func loadAttachment(
        _ provider: any ItemProvider, index: Int, shareID: String, shareState: CopyEngine.ShareState
    ) async -> AttachmentRecord {
        let declared = provider.registeredTypeIdentifiers
        var record = AttachmentRecord(
            index: index, status: .failed, declaredTypes: declared, suggestedName: provider.suggestedName)
        func failed(_ error: ShareError) -> AttachmentRecord {
            var failure = record
            failure.error = AttachmentRecord.ErrorInfo(code: error.code, message: error.message)
            return failure
        }
        guard let chosen = chooseType(declared) else {
            return failed(ShareError(
                .unsupportedType, "no declared type conforms to \(configuration.accept.joined(separator: ", "))"))
        }
        record.typeIdentifier = chosen
        if Task.isCancelled { return failed(ShareError(.cancelled, "the share was cancelled")) }

        let fileID = UUID().uuidString
        let fileName = fileID + "." + fileExtension(for: chosen, suggestedName: provider.suggestedName)
        let destination = spool.path(.staging, shareID) + "/" + fileName
        var progress: (@Sendable (Int64) -> Void)?
        if let report = configuration.progress {
            progress = { bytes in report(index, bytes) }
        }
        let engine = CopyEngine(
            maxFileSize: configuration.maxFileSize, maxShareSize: configuration.maxShareSize, share: shareState,
            progress: progress)

        let outcome = await deliver(provider, type: chosen, engine: engine, destination: destination, cancel: shareState)
        switch outcome {
        case .failure(let error):
            if error.errno == ENOSPC || error.errno == EDQUOT { shareState.outOfSpace.store(true, ordering: .relaxed) }
            return failed(error)
        case .success(let copy):
            do {
                // The provider may have sniffed these very bytes already (an inbox file); libmagic is the costliest
                // step of a small share, so the same head is not sniffed twice.
                let presniffed = (provider as? FileItemProvider)?.sniffed
                let mimeType = try presniffed.flatMap { $0.head == copy.head ? $0.mimeType : nil }
                    ?? Magic.shared.mimeType(of: copy.head)
                record.sniffedMimeType = mimeType
                guard registry.isCompatible(sniffedMIMEType: mimeType, declaredType: chosen, isEmpty: copy.bytes == 0)
                else {
                    try? System.unlink(destination)
                    return failed(ShareError(.typeMismatch, "content sniffed as \(mimeType) is not \(chosen)"))
                }
            } catch let error as ShareError {
                try? System.unlink(destination)
                return failed(error)
            } catch {
                try? System.unlink(destination)
                return failed(ShareError(.io, "\(error)"))
            }
            record.status = .copied
            record.fileId = fileID
            record.file = fileName
            record.bytes = copy.bytes
            record.sha256 = copy.sha256
            return record
        }
    }

    /// The first declared type that conforms to an accepted type — never blindly the first one.
    func chooseType(_ declared: [String]) -> String? {
        declared.first { type in configuration.accept.contains { registry.conforms(type, to: $0) } }
    }

    private func fileExtension(for type: String, suggestedName: String?) -> String {
        if let preferred = registry.preferredFilenameExtension(for: type), Self.isSafeExtension(preferred) {
            return preferred
        }
        let suggested = ((suggestedName ?? "") as NSString).pathExtension.lowercased()
        return Self.isSafeExtension(suggested) ? suggested : "bin"
    }

    private static func isSafeExtension(_ candidate: String) -> Bool {
        !candidate.isEmpty && candidate.count <= 16
            && candidate.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x7a).contains($0) || $0 == 0x2d }
    }

    /// Asks the provider for the representation and copies it inside the callback; a timeout or cancellation
    /// that comes first wins, and a late callback then does nothing.
    private func deliver(
        _ provider: any ItemProvider, type: String, engine: CopyEngine, destination: String,
        cancel shareState: CopyEngine.ShareState
    ) async -> Result<CopyEngine.Result, ShareError> {
        let gate = LoadGate<Result<CopyEngine.Result, ShareError>>()
        let timeout = configuration.loadTimeout
        return await withTaskCancellationHandler {
            await gate.wait {
                let (seconds, attoseconds) = timeout.components
                let nanoseconds = Int(min(seconds, 86_400 * 365)) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
                    gate.expire(.failure(ShareError(.timeout, "the provider did not call back within \(timeout)")))
                }
                switch provider.representationKind(for: type) {
                case .file:
                    provider.loadFileRepresentation(forTypeIdentifier: type) { url, error in
                        guard gate.begin() else { return }
                        gate.finish(Self.copy(url: url, error: error, engine: engine, destination: destination))
                    }
                case .data:
                    provider.loadDataRepresentation(forTypeIdentifier: type) { data, error in
                        guard gate.begin() else { return }
                        gate.finish(Self.copy(data: data, error: error, engine: engine, destination: destination))
                    }
                }
            }
        } onCancel: {
            shareState.cancelled.store(true, ordering: .relaxed)
            gate.expire(.failure(ShareError(.cancelled, "the share was cancelled")))
        }
    }

    private static func providerError(_ error: any Error) -> ShareError {
        if let error = error as? ShareError { return error }
        return ShareError(.loadFailed, "the provider reported an error: \(type(of: error))")
    }

    /// Runs inside the file callback: the URL is valid only until this returns.
    private static func copy(url: URL?, error: (any Error)?, engine: CopyEngine, destination: String)
        -> Result<CopyEngine.Result, ShareError>
    {
        if let error { return .failure(providerError(error)) }
        guard let url, url.isFileURL else { return .failure(ShareError(.missingFile, "the provider delivered no file")) }
        do {
            return .success(try engine.copyFile(from: url.path, to: destination))
        } catch let error as ShareError {
            return .failure(error)
        } catch {
            return .failure(ShareError(.io, "\(error)"))
        }
    }

    private static func copy(data: Data?, error: (any Error)?, engine: CopyEngine, destination: String)
        -> Result<CopyEngine.Result, ShareError>
    {
        if let error { return .failure(providerError(error)) }
        guard let data else { return .failure(ShareError(.missingFile, "the provider delivered no data")) }
        do {
            return .success(try data.withUnsafeBytes { try engine.copyData($0, to: destination) })
        } catch let error as ShareError {
            return .failure(error)
        } catch {
            return .failure(ShareError(.io, "\(error)"))
        }
    }

    /// A share cancelled before it was published: whatever was copied is rolled back, the ledger records the share
    /// rejected with ERR_CANCELLED, and the receipt says the share failed (exit 1).
    private func rollBackCancelled(shareID: String, sourceApp: String?, records: [AttachmentRecord]) -> ShareReceipt {
        var records = records
        for index in records.indices where records[index].status == .copied {
            records[index].status = .rolledBack
        }
        try? spool.remove(.staging, shareID)
        try? spool.ledger.recordStaged(Manifest(
            shareId: shareID, sourceApp: sourceApp, createdAt: Date().rfc3339, policy: configuration.policy,
            attachments: records), sources: [])
        try? spool.ledger.recordRejected(shareID: shareID, code: .cancelled)
        let info = AttachmentRecord.ErrorInfo(code: .cancelled, message: "the share was cancelled")
        return ShareReceipt(shareId: shareID, status: .failed, attachments: records, error: info)
    }

    /// Applies the policy, then publishes (manifest, ledger, one rename) or rolls the share back.
    private func finish(
        shareID: String, sourceApp: String?, records: [AttachmentRecord], sources: [SourceIdentity?]
    ) -> ShareReceipt {
        var records = records
        let copied = records.filter { $0.status == .copied }.count
        let rollBack = copied == 0 || (configuration.policy == .allOrNothing && copied < records.count)
        let manifest = Manifest(
            shareId: shareID, sourceApp: sourceApp, createdAt: Date().rfc3339, policy: configuration.policy,
            attachments: records)
        if rollBack {
            for index in records.indices where records[index].status == .copied {
                records[index].status = .rolledBack
            }
            try? spool.remove(.staging, shareID)
            try? spool.ledger.recordStaged(Manifest(
                shareId: shareID, sourceApp: sourceApp, createdAt: manifest.createdAt, policy: manifest.policy,
                attachments: records), sources: [])
            let firstError = records.first(where: { $0.error != nil })?.error
            try? spool.ledger.recordRejected(shareID: shareID, code: firstError?.code)
            return ShareReceipt(shareId: shareID, status: .rejected, attachments: records)
        }
        do {
            try spool.writeManifest(manifest)
            let identities = zip(records, sources).compactMap { record, source -> SourceIdentity? in
                guard var identity = source, record.status == .copied, let sha256 = record.sha256 else { return nil }
                identity.sha256 = sha256
                return identity
            }
            try spool.ledger.recordStaged(manifest, sources: identities)
            try spool.publish(shareID)
            try spool.ledger.recordPublished(shareID: shareID)
        } catch {
            let shareError = error as? ShareError ?? ShareError(.io, "\(error)")
            // Before the rename nothing is visible; after it the share stands even if the ledger write failed.
            if (try? System.lstatIfPresent(spool.path(.incoming, shareID))) == nil {
                try? spool.remove(.staging, shareID)
                try? spool.ledger.recordRejected(shareID: shareID, code: shareError.code)
                let info = AttachmentRecord.ErrorInfo(code: shareError.code, message: shareError.message)
                return ShareReceipt(shareId: shareID, status: .failed, attachments: records, error: info)
            }
        }
        return ShareReceipt(shareId: shareID, status: copied == records.count ? .complete : .partial, attachments: records)
    }
}
