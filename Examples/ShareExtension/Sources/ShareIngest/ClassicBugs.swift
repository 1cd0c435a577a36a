import Foundation
import UniformTypeIdentifiers

// The classic share-extension bugs, each in the ingest code a team would plausibly write. Each one works in a quick
// try with one photo; the tests run them against the scenarios and expect the extension harness to name the bug.

/// **First type only**: decides from `registeredTypeIdentifiers.first` whether the attachment is an image, so a Photos
/// item that registers `com.apple.live-photo` before `public.heic` is refused although it carries a HEIC and a JPEG.
public struct FirstTypeOnlyIngest: Sendable {
    public var groupIdentifier: String

    public init(groupIdentifier: String) {
        self.groupIdentifier = groupIdentifier
    }

    public func ingest(_ context: NSExtensionContext, completion: @escaping @Sendable (IngestReport) -> Void) {
        let attachments = (context.inputItems as? [NSExtensionItem] ?? []).flatMap { $0.attachments ?? [] }
        let inbox = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: groupIdentifier)!
        let results = Results(count: attachments.count)
        let group = DispatchGroup()
        for (index, attachment) in attachments.enumerated() {
            guard let type = attachment.registeredTypeIdentifiers.first, UTType(type)?.conforms(to: .image) == true
            else {
                results.set(index, .skipped(reason: "not an image"))
                continue
            }
            group.enter()
            attachment.loadFileRepresentation(forTypeIdentifier: type) { url, error in
                defer { group.leave() }
                guard let url else { return results.set(index, .failed(error ?? CocoaError(.fileReadUnknown))) }
                let destination = inbox.appendingPathComponent(UUID().uuidString + "." + url.pathExtension)
                do {
                    try FileManager.default.copyItem(at: url, to: destination)
                    results.set(index, .saved(destination))
                } catch {
                    results.set(index, .failed(error))
                }
            }
        }
        group.notify(queue: .global()) {
            context.completeRequest(returningItems: nil)
            completion(IngestReport(entries: zip(attachments, results.all).map(IngestEntry.init)))
        }
    }
}

/// **URL kept past the handler**: a compose-sheet extension that loads the attachments when the sheet appears,
/// keeps the temporary URLs the completion handlers got, and copies them when the user taps Post — by then every
/// temporary file has been deleted.
public struct KeptURLIngest: Sendable {
    public var groupIdentifier: String

    /// What the sheet loaded: per attachment, the temporary URL or why there is none.
    public struct Loaded: Sendable {
        var attachments: [NSItemProvider]
        var results: [IngestResult]
    }

    public init(groupIdentifier: String) {
        self.groupIdentifier = groupIdentifier
    }

    /// When the sheet appears: loads every image attachment and keeps its URL.
    public func prepare(_ context: NSExtensionContext, completion: @escaping @Sendable (Loaded) -> Void) {
        let attachments = (context.inputItems as? [NSExtensionItem] ?? []).flatMap { $0.attachments ?? [] }
        let loaded = Results(count: attachments.count)
        let group = DispatchGroup()
        for (index, attachment) in attachments.enumerated() {
            guard let type = attachment.registeredTypeIdentifiers.first(where: {
                UTType($0)?.conforms(to: .image) == true
            }) else {
                loaded.set(index, .skipped(reason: "not an image"))
                continue
            }
            group.enter()
            attachment.loadFileRepresentation(forTypeIdentifier: type) { url, error in
                loaded.set(index, url.map { .saved($0) } ?? .failed(error ?? CocoaError(.fileReadUnknown)))
                group.leave()
            }
        }
        group.notify(queue: .global()) { completion(Loaded(attachments: attachments, results: loaded.all)) }
    }

    /// When the user taps Post: copies what was loaded into the app group's container and ends the request.
    public func post(_ loaded: Loaded, context: NSExtensionContext) -> IngestReport {
        let inbox = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: groupIdentifier)!
        let entries = zip(loaded.attachments, loaded.results).map { attachment, result -> IngestEntry in
            guard case .saved(let temporary) = result else {
                return IngestEntry(attachment: attachment, result: result)
            }
            let destination = inbox.appendingPathComponent(UUID().uuidString + "." + temporary.pathExtension)
            do {
                try FileManager.default.copyItem(at: temporary, to: destination)
                return IngestEntry(attachment: attachment, result: .saved(destination))
            } catch {
                return IngestEntry(attachment: attachment, result: .failed(error))
            }
        }
        context.completeRequest(returningItems: nil)
        return IngestReport(entries: entries)
    }
}

/// **Fixed file name**: stores each image under the name the source suggests, replacing what is there — three photos
/// all called `IMG_0001.JPG` (three cameras, or one camera's counter wrapping) leave one file.
public struct FixedNameIngest: Sendable {
    public var groupIdentifier: String

    public init(groupIdentifier: String) {
        self.groupIdentifier = groupIdentifier
    }

    public func ingest(_ context: NSExtensionContext, completion: @escaping @Sendable (IngestReport) -> Void) {
        let attachments = (context.inputItems as? [NSExtensionItem] ?? []).flatMap { $0.attachments ?? [] }
        let inbox = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: groupIdentifier)!
        let results = Results(count: attachments.count)
        let group = DispatchGroup()
        for (index, attachment) in attachments.enumerated() {
            guard let type = attachment.registeredTypeIdentifiers.first(where: {
                UTType($0)?.conforms(to: .image) == true
            }) else {
                results.set(index, .skipped(reason: "not an image"))
                continue
            }
            group.enter()
            attachment.loadFileRepresentation(forTypeIdentifier: type) { url, error in
                defer { group.leave() }
                guard let url else { return results.set(index, .failed(error ?? CocoaError(.fileReadUnknown))) }
                let destination = inbox.appendingPathComponent(attachment.suggestedName ?? "shared-image")
                do {
                    // Writes over whatever is there: the handlers run at once, and each one's copy succeeds.
                    try Data(contentsOf: url).write(to: destination, options: .atomic)
                    results.set(index, .saved(destination))
                } catch {
                    results.set(index, .failed(error))
                }
            }
        }
        group.notify(queue: .global()) {
            context.completeRequest(returningItems: nil)
            completion(IngestReport(entries: zip(attachments, results.all).map(IngestEntry.init)))
        }
    }
}

/// **Silently dropped attachment**: saves the images and passes over everything else without a word, so the user
/// who shared a photo and a link believes both arrived.
public struct DroppingIngest: Sendable {
    public var groupIdentifier: String

    public init(groupIdentifier: String) {
        self.groupIdentifier = groupIdentifier
    }

    public func ingest(_ context: NSExtensionContext, completion: @escaping @Sendable (IngestReport) -> Void) {
        let attachments = (context.inputItems as? [NSExtensionItem] ?? []).flatMap { $0.attachments ?? [] }
        let inbox = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: groupIdentifier)!
        let entries = Entries()
        let group = DispatchGroup()
        for attachment in attachments {
            guard let type = attachment.registeredTypeIdentifiers.first(where: {
                UTType($0)?.conforms(to: .image) == true
            }) else { continue }
            group.enter()
            attachment.loadFileRepresentation(forTypeIdentifier: type) { url, error in
                defer { group.leave() }
                guard let url else {
                    let failure = error ?? CocoaError(.fileReadUnknown)
                    return entries.append(IngestEntry(attachment: attachment, result: .failed(failure)))
                }
                let destination = inbox.appendingPathComponent(UUID().uuidString + "." + url.pathExtension)
                do {
                    try FileManager.default.copyItem(at: url, to: destination)
                    entries.append(IngestEntry(attachment: attachment, result: .saved(destination)))
                } catch {
                    entries.append(IngestEntry(attachment: attachment, result: .failed(error)))
                }
            }
        }
        group.notify(queue: .global()) {
            context.completeRequest(returningItems: nil)
            completion(IngestReport(entries: entries.all))
        }
    }
}

/// Entries appended from completion handlers on any queue.
final class Entries: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [IngestEntry] = []

    func append(_ entry: IngestEntry) {
        lock.lock()
        defer { lock.unlock() }
        entries.append(entry)
    }

    var all: [IngestEntry] {
        lock.lock()
        defer { lock.unlock() }
        return entries
    }
}
