import Dispatch
import Foundation
import SharepipeIngest
import SharepipeSystem
import Synchronization

/// A test double whose callback timing and failures are fully scripted: the contract's bad days, on demand.
///
/// A file representation is handed out as a fresh temporary copy of its source (as the system does), so the
/// scripted `afterCallback` action — delete or move — hits only that temporary, never the caller's file.
public final class ScriptedItemProvider: ItemProvider {
    /// What happens to the temporary file the moment the completion returns.
    public enum AfterCallback: String, Sendable, Codable {
        case keep, delete, move
    }

    /// Where the completion runs.
    public enum CallbackThread: String, Sendable, Codable {
        /// On the thread that asked for the load, before the load call returns.
        case caller
        /// On a background queue.
        case background
    }

    /// One scripted representation.
    public struct Representation: Sendable {
        /// Type identifier.
        package var type: String
        /// File or data.
        package var kind: RepresentationKind
        /// Where the bytes come from (a file path), or inline bytes.
        package var source: Source
        /// Wait before calling back.
        package var delay: Duration
        /// Report this error instead of delivering (an `ERR_*` code).
        package var error: ShareError.Code?
        /// Call back with neither file nor error.
        package var noFile: Bool
        /// Never call back at all.
        package var neverCalls: Bool
        /// Call back a second time after the first completion returned.
        package var callsTwice: Bool
        /// What happens to the temporary file once the completion returns.
        package var afterCallback: AfterCallback
        /// Where the completion runs.
        package var thread: CallbackThread

        /// The bytes of a representation.
        public enum Source: Sendable {
            case file(String)
            case bytes(Data)
            case none
        }

        /// A scripted representation; defaults describe a well-behaved provider.
        public init(
            type: String, kind: RepresentationKind = .file, source: Source, delay: Duration = .zero,
            error: ShareError.Code? = nil, noFile: Bool = false, neverCalls: Bool = false, callsTwice: Bool = false,
            afterCallback: AfterCallback = .keep, thread: CallbackThread = .background
        ) {
            self.type = type
            self.kind = kind
            self.source = source
            self.delay = delay
            self.error = error
            self.noFile = noFile
            self.neverCalls = neverCalls
            self.callsTwice = callsTwice
            self.afterCallback = afterCallback
            self.thread = thread
        }
    }

    /// The scripted representations, highest fidelity first.
    package let representations: [Representation]
    /// The name the scripted source suggests.
    public let suggestedName: String?
    /// The representations' types, in order.
    public var registeredTypeIdentifiers: [String] { representations.map(\.type) }

    /// Every temporary URL handed out so far, so tests can check what became of them.
    package var handedOutURLs: [URL] { handedOut.withLock { $0 } }
    private let handedOut = Mutex<[URL]>([])
    private let temporaryDirectory: URL

    /// A provider with the given representations, highest fidelity first.
    public init(representations: [Representation], suggestedName: String? = nil) {
        self.representations = representations
        self.suggestedName = suggestedName
        self.temporaryDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("sharepipe-scripted-\(UUID().uuidString)")
    }

    deinit {
        try? FileManager.default.removeItem(at: temporaryDirectory)
    }

    /// The kind of the representation scripted for `typeIdentifier` (file when none is).
    public func representationKind(for typeIdentifier: String) -> RepresentationKind {
        representation(for: typeIdentifier)?.kind ?? .file
    }

    private func representation(for typeIdentifier: String) -> Representation? {
        // Type identifiers compare case-insensitively, and are ASCII.
        representations.first { $0.type.lowercased() == typeIdentifier.lowercased() }
    }

    /// Hands out a fresh temporary copy of the source, as scripted; the copy is valid until `completion` returns.
    public func loadFileRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (URL?, (any Error)?) -> Void
    ) {
        schedule(typeIdentifier) { representation in
            if let failure = Self.scriptedFailure(representation) {
                completion(nil, failure)
                return
            }
            let url: URL
            do {
                url = try self.makeTemporaryCopy(representation.source)
            } catch {
                completion(nil, error)
                return
            }
            completion(url, nil)
            self.apply(representation.afterCallback, to: url)
        }
    }

    /// Hands out the source's bytes, as scripted.
    public func loadDataRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        schedule(typeIdentifier) { representation in
            if let failure = Self.scriptedFailure(representation) {
                completion(nil, failure)
                return
            }
            switch representation.source {
            case .file(let path):
                do {
                    completion(try Data(contentsOf: URL(fileURLWithPath: path)), nil)
                } catch {
                    completion(nil, error)
                }
            case .bytes(let data):
                completion(data, nil)
            case .none:
                completion(nil, nil)
            }
        }
    }

    /// What a failing representation hands the completion instead of a file: an error, or nothing at all
    /// (`noFile`); nil when it delivers.
    private static func scriptedFailure(_ representation: Representation) -> (any Error)?? {
        if let code = representation.error {
            return .some(ShareError(code, "the provider reported an error (scripted)"))
        }
        if representation.noFile { return .some(nil) }
        return nil
    }

    /// Runs `deliver` as scripted: never, after a delay, on the caller's thread or a queue, once or twice.
    private func schedule(_ typeIdentifier: String, deliver: @escaping @Sendable (Representation) -> Void) {
        guard let representation = representation(for: typeIdentifier) else {
            let error = ShareError(.loadFailed, "the provider does not offer \(typeIdentifier)")
            let failing = Representation(type: typeIdentifier, source: .none, error: error.code)
            DispatchQueue.global().async { deliver(failing) }
            return
        }
        guard !representation.neverCalls else { return }
        let run: @Sendable () -> Void = {
            deliver(representation)
            if representation.callsTwice { deliver(representation) }
        }
        if representation.thread == .caller && representation.delay == .zero {
            run()
            return
        }
        let (seconds, attoseconds) = representation.delay.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: run)
    }

    private func makeTemporaryCopy(_ source: Representation.Source) throws -> URL {
        try FileManager.default.createDirectory(at: temporaryDirectory, withIntermediateDirectories: true)
        let url = temporaryDirectory.appendingPathComponent(UUID().uuidString)
        switch source {
        case .file(let path):
            try FileManager.default.copyItem(atPath: path, toPath: url.path)
        case .bytes(let data):
            try data.write(to: url)
        case .none:
            try Data().write(to: url)
        }
        handedOut.withLock { $0.append(url) }
        return url
    }

    private func apply(_ action: AfterCallback, to url: URL) {
        switch action {
        case .keep:
            break
        case .delete:
            try? FileManager.default.removeItem(at: url)
        case .move:
            let moved = url.deletingLastPathComponent().appendingPathComponent("moved-\(UUID().uuidString)")
            try? FileManager.default.moveItem(at: url, to: moved)
        }
    }
}
