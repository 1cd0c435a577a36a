import Dispatch
import Foundation
import SharepipeLedger
import SharepipeSpool
import SharepipeSystem

/// Loads a share the way a share extension must: per attachment the first declared type that conforms to an
/// accepted type, copied inside the provider's callback into `staging`, checked, and published with one rename.
public struct ShareLoader: Sendable {
    /// The spool the share is published into.
    package let spool: Spool
    /// Types and conformance.
    package let registry: TypeRegistry
    /// Limits and policy.
    package let configuration: LoaderConfiguration

    /// A loader publishing into `spool`.
    public init(spool: Spool, registry: TypeRegistry = .standard, configuration: LoaderConfiguration = .init()) {
        self.spool = spool
        self.registry = registry
        self.configuration = configuration
    }

    /// Loads and publishes one share with its title, text, userInfo and tags (`details`, written into the manifest
    /// and the receipt). Never throws: every failure is in the receipt.
    public func load(
        _ providers: [any ItemProvider], sourceApp: String? = nil, details: ShareDetails = .empty
    ) async -> ShareReceipt {
        await load(providers, sourceApp: sourceApp, details: details, origin: nil)
    }

    /// Loads one share and hands it to the lifecycle's executor. `origin`, given by a source that removes what it
    /// ingested (the inbox), names a dropped folder and supplies the source identities recorded with the share and
    /// the owner told to remove the sources once the share is published.
    /// `arrival`, from `Spool.expectPublish`, ends when the share joins its publish batch.
    func load(
        _ providers: [any ItemProvider], sourceApp: String?, details: ShareDetails = .empty, origin: ShareOrigin?,
        arrival: LaneArrival? = nil
    ) async -> ShareReceipt {
        var receipt = await publish(
            providers, sourceApp: sourceApp, details: details, origin: origin, arrival: arrival)
        receipt.details = details
        return receipt
    }

    private func publish(
        _ providers: [any ItemProvider], sourceApp: String?, details: ShareDetails, origin: ShareOrigin?,
        arrival: LaneArrival?
    ) async -> ShareReceipt {
        let shareID = UUID.random().uuidString
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
        // The staging directory is locked (flock on the directory) for as long as this share is worked on, until it
        // is published, so a recovery started by another process can tell it from a dead one.
        let stagingLock: DirectoryLock
        var spareFiles: [StagingSpares.Spare] = []
        do {
            stagingLock = try makeLockedStaging(shareID, spares: &spareFiles)
        } catch {
            return refused(.failed, error as? ShareError ?? ShareError(.io, "\(error)"))
        }

        let receipt = await loadAdmitted(
            providers, shareID: shareID, lock: stagingLock, spareFiles: spareFiles, sourceApp: sourceApp,
            details: details, origin: origin, arrival: arrival)
        let published = receipt.status == .complete || receipt.status == .partial
        spool.admissionEnded(
            published: published, bytes: receipt.attachments.reduce(0) { $0 + ($1.bytes ?? 0) })
        return receipt
    }

    /// Loads and publishes a share admitted past the pending limits, in its locked staging directory.
    private func loadAdmitted(
        _ providers: [any ItemProvider], shareID: String, lock stagingLock: consuming DirectoryLock,
        spareFiles: [StagingSpares.Spare], sourceApp: String?, details: ShareDetails, origin: ShareOrigin?,
        arrival: LaneArrival?
    ) async -> ShareReceipt {
        let shareState = CopyEngine.ShareState()
        let spares = StagingSpares(shareID: shareID, spares: spareFiles, staging: spool.directories.staging)
        let records = await withTaskCancellationHandler {
            await loadAttachments(providers, shareID: shareID, spares: spares, shareState: shareState)
        } onCancel: {
            shareState.cancelled.store(true, ordering: .relaxed)
        }
        if shareState.outOfSpace.load(ordering: .relaxed) {
            spool.discard(shareID)
            let info = AttachmentRecord.ErrorInfo(
                code: .io, message: "no space left in the state directory (errno \(Errno.noSpace))")
            return ShareReceipt(shareId: shareID, status: .failed, attachments: records, error: info)
        }
        if shareState.cancelled.load(ordering: .relaxed) {
            return rollBackCancelled(shareID: shareID, sourceApp: sourceApp, details: details, records: records)
        }
        var spareSink: (any SpareSink)?
        for case let adopting as any AdoptingProvider in providers {
            adopting.adoptionsEnded()
            spareSink = spareSink ?? adopting.spareSink
        }
        return await finish(
            shareID: shareID, lock: stagingLock, spares: spares, spareSink: spareSink, sourceApp: sourceApp,
            details: details, records: records, origin: origin, arrival: arrival)
    }

    /// Creates `staging/S` and takes an exclusive flock on the directory itself; the lock moves with the directory
    /// when it is published and ends when the descriptor is closed. A directory the recycler kept is taken instead
    /// when there is one (already locked; its emptied files go to `spares`).
    private func makeLockedStaging(_ shareID: String, spares: inout [StagingSpares.Spare]) throws -> DirectoryLock {
        try spool.admit(configuration)
        do {
            return try makeStaging(shareID, spares: &spares)
        } catch {
            spool.admissionEnded(published: false, bytes: 0)
            throw error
        }
    }

    private func makeStaging(_ shareID: String, spares: inout [StagingSpares.Spare]) throws -> DirectoryLock {
        if let recycled = spool.recycler.take(as: shareID, into: spool.directories.staging, spares: &spares) {
            return recycled
        }
        try spool.directories.staging.makeDirectory(shareID)
        // A recovery in another process may remove the directory between its creation and the lock: then the
        // share cannot be attempted now, and its sources stay untouched for a later try.
        guard let lock = try DirectoryLock.acquire(spool.path(.staging, shareID)) else {
            throw ShareError(
                .io, "the staging directory was removed before it could be locked", errno: Errno.noEntry)
        }
        return lock
    }

    /// Loads every attachment, at most `concurrency` at a time; results stay in attachment order.
    private func loadAttachments(
        _ providers: [any ItemProvider], shareID: String, spares: StagingSpares, shareState: CopyEngine.ShareState
    ) async -> [AttachmentRecord] {
        // One attachment (every inbox share) is loaded in this task: a child task would hop to the global
        // executor's threads and back, two thread switches per share for nothing to overlap.
        if providers.count == 1 {
            let record = await loadAttachment(
                providers[0], index: 0, shareID: shareID, spares: spares, shareState: shareState)
            return [record]
        }
        return await withTaskGroup(of: AttachmentRecord.self) { group in
            var records: [AttachmentRecord?] = Array(repeating: nil, count: providers.count)
            var next = 0
            func startNext() {
                let index = next
                next += 1
                group.addTask {
                    await loadAttachment(
                        providers[index], index: index, shareID: shareID, spares: spares, shareState: shareState)
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

    /// Loads one attachment: the first declared type that conforms to an accepted type, then, while a load fails
    /// in a way the next representation may not (SPEC Types "Fallback"), each later conforming type in turn.
    private func loadAttachment(
        _ provider: any ItemProvider, index: Int, shareID: String, spares: StagingSpares,
        shareState: CopyEngine.ShareState
    ) async -> AttachmentRecord {
        let declared = provider.registeredTypeIdentifiers
        var record = AttachmentRecord(
            index: index, status: .failed, declaredTypes: declared, suggestedName: provider.suggestedName)
        func failed(_ error: ShareError) -> AttachmentRecord {
            var failure = record
            failure.error = AttachmentRecord.ErrorInfo(code: error.code, message: error.message)
            return failure
        }
        let candidates = chooseTypes(declared)
        guard !candidates.isEmpty else {
            return failed(ShareError(
                .unsupportedType, "no declared type conforms to \(configuration.accept.joined(separator: ", "))"))
        }
        var attempts: [AttachmentRecord.Attempt] = []
        var lastFailure = record
        for chosen in candidates {
            record.typeIdentifier = chosen
            if Task.isCancelled { return failed(ShareError(.cancelled, "the share was cancelled")) }
            let outcome = await loadRepresentation(
                provider, type: chosen, index: index, shareID: shareID, spares: spares, shareState: shareState)
            attempts.append(AttachmentRecord.Attempt(type: chosen, code: outcome.error?.code))
            record.attempts = attempts.count > 1 ? attempts : nil
            record.sniffedMimeType = outcome.sniffedMimeType
            if let error = outcome.error {
                lastFailure = failed(error)
                if Self.fallbackCodes.contains(error.code) { continue }
                return lastFailure
            }
            record.status = .copied
            record.fileId = outcome.fileID
            record.file = outcome.file
            record.bytes = outcome.copy?.bytes
            record.sha256 = outcome.copy?.sha256
            return record
        }
        return lastFailure
    }

    /// The failures after which the next conforming representation is tried: the provider's fault or the
    /// representation's, not the share's (a size limit, cancellation or a full disk end the attachment).
    static let fallbackCodes: Set<ShareError.Code> = [.loadFailed, .missingFile, .timeout, .typeMismatch]

    /// What one attempt at one representation gave.
    private struct RepresentationOutcome {
        var fileID: String
        var file: String
        var copy: CopyEngine.Result?
        var sniffedMimeType: String?
        var error: ShareError?
    }

    /// Loads and copies one representation into staging and checks its content against the type; on any failure
    /// the copy is gone again.
    private func loadRepresentation(
        _ provider: any ItemProvider, type chosen: String, index: Int, shareID: String, spares: StagingSpares,
        shareState: CopyEngine.ShareState
    ) async -> RepresentationOutcome {
        let fileID = UUID.random().uuidString
        let fileName = fileID + "." + fileExtension(for: chosen, suggestedName: provider.suggestedName)
        var outcome = RepresentationOutcome(fileID: fileID, file: fileName)
        let path = spool.path(.staging, shareID) + "/" + fileName
        let destination = CopyEngine.Destination(path: path, name: fileName, spares: spares)
        var progress: (@Sendable (Int64) -> Void)?
        if let report = configuration.progress {
            progress = { bytes in report(index, bytes) }
        }
        let engine = CopyEngine(
            maxFileSize: configuration.maxFileSize, maxShareSize: configuration.maxShareSize, share: shareState,
            progress: progress)

        // Every copy is sniffed once it is complete; the database loads meanwhile (once per process).
        Magic.shared.prepare()
        let copied: Result<CopyEngine.Result, ShareError>
        if let opened = provider as? any DescriptorBackedProvider {
            copied = opened.copy(engine: engine, to: destination)
        } else if let received = (provider as? any AdoptingProvider)?.receivedFile(forTypeIdentifier: chosen) {
            copied = engine.adopting(received, to: path)
        } else {
            copied = await deliver(provider, type: chosen, engine: engine, destination: destination, cancel: shareState)
        }
        switch copied {
        case .failure(let error):
            if error.errno == Errno.noSpace || error.errno == Errno.quotaExceeded {
                shareState.outOfSpace.store(true, ordering: .relaxed)
            }
            outcome.error = error
        case .success(let copy):
            do {
                // The provider may have sniffed these very bytes already (to derive its types); libmagic is the
                // costliest step of a small share, so the same head is not sniffed twice.
                let presniffed = (provider as? any PresniffedProvider)?.sniffed
                let mimeType = try presniffed.flatMap { $0.head == copy.head ? $0.mimeType : nil }
                    ?? Magic.shared.mimeType(
                        of: copy.head, scope: registry.sniffScope(declaredType: chosen, head: copy.head))
                outcome.sniffedMimeType = mimeType
                if registry.isCompatible(sniffedMIMEType: mimeType, declaredType: chosen, head: copy.head) {
                    outcome.copy = copy
                    return outcome
                }
                outcome.error = ShareError(.typeMismatch, "content sniffed as \(mimeType) is not \(chosen)")
            } catch {
                outcome.error = error as? ShareError ?? ShareError(.io, "\(error)")
            }
            try? System.unlink(path)
            // The refused copy no longer counts against the share's size limit.
            shareState.bytes.subtract(copy.bytes, ordering: .relaxed)
        }
        return outcome
    }

    /// The declared types that conform to an accepted type, in the provider's fidelity order — never blindly the
    /// first one. The first is loaded; the others are the fallbacks.
    func chooseTypes(_ declared: [String]) -> [String] {
        declared.filter { type in configuration.accept.contains { registry.conforms(type, to: $0) } }
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
        _ provider: any ItemProvider, type: String, engine: CopyEngine, destination: CopyEngine.Destination,
        cancel shareState: CopyEngine.ShareState
    ) async -> Result<CopyEngine.Result, ShareError> {
        let gate = LoadGate<Result<CopyEngine.Result, ShareError>>()
        let timeout = configuration.loadTimeout
        // Cancelled as soon as the load ends, so a burst of shares does not leave a live timer per attachment.
        let timer = DispatchWorkItem {
            gate.expire(.failure(ShareError(.timeout, "the provider did not call back within \(timeout)")))
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await gate.wait {
                let (seconds, attoseconds) = timeout.components
                let nanoseconds = Int(min(seconds, 86_400 * 365)) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: timer)
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
    private static func copy(url: URL?, error: (any Error)?, engine: CopyEngine, destination: CopyEngine.Destination)
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

    private static func copy(
        data: Data?, error: (any Error)?, engine: CopyEngine, destination: CopyEngine.Destination
    )
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
    private func rollBackCancelled(
        shareID: String, sourceApp: String?, details: ShareDetails, records: [AttachmentRecord]
    ) -> ShareReceipt {
        var records = records
        for index in records.indices where records[index].status == .copied {
            records[index].status = .rolledBack
        }
        spool.rollBack(Manifest(
            shareId: shareID, sourceApp: sourceApp, createdAt: Date().rfc3339, policy: configuration.policy,
            attachments: records, details: details), code: .cancelled)
        let info = AttachmentRecord.ErrorInfo(code: .cancelled, message: "the share was cancelled")
        return ShareReceipt(shareId: shareID, status: .failed, attachments: records, error: info)
    }

    /// How long a content reservation of a share that was never staged counts as an original: far longer than a
    /// loader takes from the check to staging, short enough that a loader that died meanwhile (on a host that does
    /// not come back to recover its staging) does not hold the content back for long.
    static let reservationLifetime: Duration = .seconds(600)

    /// The duplicate check (`--duplicates flag|reject`): the copies' contents are looked up and reserved in the
    /// ledger in one step, so that of two shares with one content, loaded at once by two daemons, one is the
    /// original. A flagged copy names its original; a rejected one is removed and fails with `ERR_DUPLICATE`. The
    /// ledger failing fails the share (its sources stay for a later try).
    private func checkDuplicates(shareID: String, createdAt: Int64, records: inout [AttachmentRecord]) async throws {
        guard configuration.duplicates != .accept else { return }
        // An all-or-nothing share that already lost an attachment is rolled back whatever the check would say.
        if configuration.policy == .allOrNothing && records.contains(where: { $0.status != .copied }) { return }
        let claims = records.compactMap { record -> ContentClaim? in
            guard record.status == .copied, let sha256 = record.sha256, let fileID = record.fileId else { return nil }
            return ContentClaim(index: record.index, sha256: sha256, fileID: fileID)
        }
        guard !claims.isEmpty else { return }
        let now = LedgerClock.now()
        let origins = try await spool.reserveContents(ContentReservation(
            shareID: shareID, createdAt: createdAt, claims: claims, policy: configuration.duplicates,
            allOrNothing: configuration.policy == .allOrNothing,
            windowStart: now - configuration.duplicateWindow.milliseconds,
            reservationsSince: now - Self.reservationLifetime.milliseconds))
        for (claim, origin) in zip(claims, origins) {
            guard let origin else { continue }
            records[claim.index].duplicateOf = origin
            guard configuration.duplicates == .reject else { continue }
            if let file = records[claim.index].file { try? System.unlink(spool.path(.staging, shareID) + "/" + file) }
            let error = ShareError.duplicate(of: origin)
            records[claim.index].status = .failed
            records[claim.index].error = AttachmentRecord.ErrorInfo(code: error.code, message: error.message)
            records[claim.index].fileId = nil
            records[claim.index].file = nil
            records[claim.index].bytes = nil
        }
    }

    /// Applies the policy, then writes the manifest and hands the share to the executor, or rolls it back.
    private func finish(
        shareID: String, lock: consuming DirectoryLock, spares: StagingSpares, spareSink: (any SpareSink)?,
        sourceApp: String?, details: ShareDetails, records: [AttachmentRecord], origin: ShareOrigin?,
        arrival: LaneArrival?
    ) async -> ShareReceipt {
        var records = records
        let created = Date()
        let createdAt = created.rfc3339
        do {
            try await checkDuplicates(
                shareID: shareID, createdAt: Int64((created.timeIntervalSince1970 * 1000).rounded(.down)),
                records: &records)
        } catch {
            spool.discard(shareID)
            let shareError = error as? ShareError ?? ShareError(.io, "\(error)")
            let info = AttachmentRecord.ErrorInfo(code: shareError.code, message: shareError.message)
            return ShareReceipt(shareId: shareID, status: .failed, attachments: records, error: info)
        }
        let copied = records.filter { $0.status == .copied }.count
        let rollBack = copied == 0 || (configuration.policy == .allOrNothing && copied < records.count)
        func manifest() -> Manifest {
            Manifest(
                shareId: shareID, sourceApp: sourceApp, createdAt: createdAt, policy: configuration.policy,
                attachments: records, folder: origin?.folder, details: details)
        }
        if rollBack {
            for index in records.indices where records[index].status == .copied {
                records[index].status = .rolledBack
            }
            let firstError = records.first(where: { $0.error != nil })?.error
            spool.rollBack(manifest(), code: firstError?.code)
            return ShareReceipt(shareId: shareID, status: .rejected, attachments: records)
        }
        do {
            try spool.writeManifest(manifest(), spares: spares)
            try spares.removeUnused(into: spareSink)
        } catch {
            let shareError = error as? ShareError ?? ShareError(.io, "\(error)")
            spool.rollBack(manifest(), code: shareError.code)
            let info = AttachmentRecord.ErrorInfo(code: shareError.code, message: shareError.message)
            return ShareReceipt(shareId: shareID, status: .failed, attachments: records, error: info)
        }
        let copiedAttachments = records.compactMap { record in
            record.status == .copied ? record.sha256.map { (index: record.index, sha256: $0) } : nil
        }
        let sources = origin?.sources(copiedAttachments, copied == records.count)
        let staged = StagedShare(
            record: StagedRecord(manifest: manifest(), sources: sources?.identities ?? []), lock: lock,
            sources: sources?.owner)
        switch await spool.publish(staged, arrival: arrival) {
        case .published:
            return ShareReceipt(
                shareId: shareID, status: copied == records.count ? .complete : .partial, attachments: records)
        case .failed(let error):
            let info = AttachmentRecord.ErrorInfo(code: error.code, message: error.message)
            return ShareReceipt(shareId: shareID, status: .failed, attachments: records, error: info)
        }
    }
}
