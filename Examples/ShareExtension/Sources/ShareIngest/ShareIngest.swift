import Foundation
import UniformTypeIdentifiers

/// What became of one attachment.
public enum IngestResult: Sendable {
    /// Copied into the app group's inbox, at this file.
    case saved(URL)
    /// Not taken; the reason is shown to the user.
    case skipped(reason: String)
    /// Taking it failed.
    case failed(any Error)
}

/// One attachment and what became of it.
public struct IngestEntry: Sendable {
    public let attachment: NSItemProvider
    public let result: IngestResult
}

/// Everything one share did: one entry per attachment, in share order.
public struct IngestReport: Sendable {
    public var entries: [IngestEntry]

    /// The files saved.
    public var saved: [URL] {
        entries.compactMap { if case .saved(let url) = $0.result { url } else { nil } }
    }

    /// Some attachments were saved and some were not: the extension tells the user which.
    public var isPartial: Bool { !saved.isEmpty && saved.count < entries.count }
}

/// Why a load did not finish.
public enum IngestError: Error, Sendable {
    /// The app group has no container (a provisioning mistake).
    case noContainer(String)
    /// The source app did not deliver within the load timeout.
    case timedOut(TimeInterval)
    /// Nothing was saved.
    case nothingSaved
}

/// A share extension's ingest: for every attachment of every input item, pick the first registered type that
/// conforms to an accepted type (trying the next conforming one when a load fails), copy the file inside
/// `loadFileRepresentation`'s completion handler into the app group's container under a UUID name, refuse files
/// over the size limit, and answer every attachment — saved, skipped with a reason, or failed — before ending the
/// request.
public struct ShareIngest: Sendable {
    /// The app group shared with the host app.
    public var groupIdentifier: String
    /// The types the app takes.
    public var acceptedTypes: [UTType]
    /// The largest file taken, in bytes.
    public var maxFileSize: Int
    /// How long a source app may take to deliver one representation.
    public var loadTimeout: TimeInterval

    public init(
        groupIdentifier: String, acceptedTypes: [UTType] = [.image], maxFileSize: Int = 50 << 20,
        loadTimeout: TimeInterval = 30
    ) {
        self.groupIdentifier = groupIdentifier
        self.acceptedTypes = acceptedTypes
        self.maxFileSize = maxFileSize
        self.loadTimeout = loadTimeout
    }

    /// Ingests the context's attachments, ends the request (completes it when anything was saved or there was nothing
    /// to save, cancels it when everything failed) and hands over the report.
    public func ingest(_ context: NSExtensionContext, completion: @escaping @Sendable (IngestReport) -> Void) {
        let attachments = (context.inputItems as? [NSExtensionItem] ?? []).flatMap { $0.attachments ?? [] }
        guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: groupIdentifier)
        else {
            let error = IngestError.noContainer(groupIdentifier)
            context.cancelRequest(withError: error)
            completion(IngestReport(entries: attachments.map { IngestEntry(attachment: $0, result: .failed(error)) }))
            return
        }
        let inbox = container.appendingPathComponent("Inbox", isDirectory: true)
        let results = Results(count: attachments.count)
        let group = DispatchGroup()
        for (index, attachment) in attachments.enumerated() {
            let candidates = attachment.registeredTypeIdentifiers.filter { identifier in
                guard let type = UTType(identifier) else { return false }
                return acceptedTypes.contains { type.conforms(to: $0) }
            }
            guard !candidates.isEmpty else {
                let types = attachment.registeredTypeIdentifiers.joined(separator: ", ")
                results.set(index, .skipped(reason: "not a supported type (\(types))"))
                continue
            }
            group.enter()
            load(attachment, trying: candidates[...], into: inbox) { result in
                results.set(index, result)
                group.leave()
            }
        }
        group.notify(queue: .global()) {
            let report = IngestReport(entries: zip(attachments, results.all).map {
                IngestEntry(attachment: $0, result: $1)
            })
            if report.saved.isEmpty && report.entries.contains(where: {
                if case .failed = $0.result { true } else { false }
            }) {
                context.cancelRequest(withError: IngestError.nothingSaved)
            } else {
                context.completeRequest(returningItems: nil)
            }
            completion(report)
        }
    }

    /// Loads the first of `types`; when that fails, the next one.
    private func load(
        _ attachment: NSItemProvider, trying types: ArraySlice<String>, into inbox: URL,
        completion: @escaping @Sendable (IngestResult) -> Void
    ) {
        guard let type = types.first else {
            completion(.failed(CocoaError(.fileReadUnknown)))
            return
        }
        let progress = attachment.loadFileRepresentation(forTypeIdentifier: type) { url, error in
            // The file at `url` is deleted when this handler returns: check and copy it here.
            let result = save(url, error: error, type: type, into: inbox)
            if case .failed = result, types.count > 1 {
                load(attachment, trying: types.dropFirst(), into: inbox, completion: completion)
            } else {
                completion(result)
            }
        }
        let timeout = loadTimeout
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
            // A silent source app: cancelling makes the handler run with a cancellation error.
            if !progress.isFinished { progress.cancel() }
        }
    }

    private func save(_ url: URL?, error: (any Error)?, type: String, into inbox: URL) -> IngestResult {
        guard let url else {
            if let error = error as? CocoaError, error.code == .userCancelled {
                return .failed(IngestError.timedOut(loadTimeout))
            }
            return .failed(error ?? CocoaError(.fileReadUnknown))
        }
        do {
            let size = try url.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0
            guard size <= maxFileSize else {
                return .skipped(reason: "too large: \(size) bytes (the limit is \(maxFileSize))")
            }
            try FileManager.default.createDirectory(at: inbox, withIntermediateDirectories: true)
            let pathExtension = UTType(type)?.preferredFilenameExtension ?? url.pathExtension
            let destination = inbox.appendingPathComponent(UUID().uuidString).appendingPathExtension(pathExtension)
            try FileManager.default.copyItem(at: url, to: destination)
            return .saved(destination)
        } catch {
            return .failed(error)
        }
    }
}

/// One result slot per attachment, filled from completion handlers on any queue.
final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [IngestResult?]

    init(count: Int) {
        slots = Array(repeating: nil, count: count)
    }

    func set(_ index: Int, _ result: IngestResult) {
        lock.lock()
        defer { lock.unlock() }
        slots[index] = result
    }

    /// Every result; called once all of them are in.
    var all: [IngestResult] {
        lock.lock()
        defer { lock.unlock() }
        return slots.map { $0 ?? .failed(CocoaError(.fileReadUnknown)) }
    }
}
