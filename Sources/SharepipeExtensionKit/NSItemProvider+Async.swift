#if os(Linux)
import Foundation
import Synchronization

extension NSItemProvider {
    /// The `async` form Swift imports from `loadItem(forTypeIdentifier:options:completionHandler:)` on Apple's
    /// platforms: the coerced item, or the load's error. In an `async` context `try await` picks this form, as on iOS;
    /// cancelling the task cancels the load (`CocoaError(.userCancelled)`).
    public func loadItem(
        forTypeIdentifier typeIdentifier: String, options: [AnyHashable: Any]? = nil
    ) async throws -> any NSSecureCoding {
        try await Self.awaitLoad { finish in
            loadCoercedItem(typeIdentifier) { item, error in finish(item, error) }
        }.value
    }

    /// The bytes `loadDataRepresentation(forTypeIdentifier:completionHandler:)` delivers. Linux only: Swift imports
    /// no `async` form of a method that returns a `Progress`.
    public func loadDataRepresentation(forTypeIdentifier typeIdentifier: String) async throws -> Data {
        try await Self.awaitLoad { finish in
            loadDataRepresentation(forTypeIdentifier: typeIdentifier) { data, error in finish(data, error) }
        }
    }

    /// The bytes of the first representation conforming to `contentType`; see
    /// ``loadDataRepresentation(forTypeIdentifier:)``.
    public func loadDataRepresentation(for contentType: UTType) async throws -> Data {
        try await loadDataRepresentation(forTypeIdentifier: contentType.identifier)
    }

    /// A temporary copy of the first representation conforming to `typeIdentifier`, kept (as `loadItem`'s files are)
    /// until the provider is released, since no handler marks the end of its use. Linux only: Swift imports no
    /// `async` form of a method that returns a `Progress`.
    public func loadFileRepresentation(forTypeIdentifier typeIdentifier: String) async throws -> URL {
        try await Self.awaitLoad { finish in
            load(typeIdentifier, method: .file, keepsFile: true) { payload, _, error in
                guard case .file(let url)? = payload else {
                    finish(nil, error ?? Self.error(.unknownError, typeIdentifier))
                    return
                }
                finish(url, nil)
            }
        }
    }

    /// A temporary copy of the first representation conforming to `contentType` and whether it was opened in place
    /// (never); see ``loadFileRepresentation(forTypeIdentifier:)``.
    public func loadFileRepresentation(for contentType: UTType, openInPlace: Bool = false) async throws -> (URL, Bool) {
        (try await loadFileRepresentation(forTypeIdentifier: contentType.identifier), false)
    }

    /// An instance of `aClass` made from the first representation it can read; see
    /// `loadObject(ofClass:completionHandler:)`. Linux only, as for the other `Progress`-returning loads.
    public func loadObject(ofClass aClass: any NSItemProviderReading.Type) async throws -> any NSItemProviderReading {
        try await Self.awaitLoad { finish in
            loadObject(ofClass: aClass) { object, error in finish(object.map(HeldObject.init), error) }
        }.value
    }

    /// A `String`, `URL` or `Data` made from the first representation its class can read; see
    /// `loadObject(ofClass:completionHandler:)`.
    public func loadObject<T: _ObjectiveCBridgeable & Sendable>(ofClass: T.Type) async throws -> T
    where T._ObjectiveCType: NSItemProviderReading {
        try await Self.awaitLoad { finish in
            loadObject(ofClass: T.self) { object, error in finish(object, error) }
        }
    }

    /// Runs a load whose handler gets a value or an error, as one `async` call: the load's `Progress` is cancelled
    /// when the task is.
    private static func awaitLoad<Value: Sendable>(
        _ start: (@escaping @Sendable (Value?, (any Error)?) -> Void) -> Progress
    ) async throws -> Value {
        let progress = Mutex<Progress?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let started = start { value, error in
                    if let value {
                        continuation.resume(returning: value)
                    } else {
                        continuation.resume(throwing: error ?? CocoaError(.userCancelled))
                    }
                }
                let cancelled = progress.withLock { held in
                    held = started
                    return Task.isCancelled
                }
                if cancelled { started.cancel() }
            }
        } onCancel: {
            progress.withLock { $0 }?.cancel()
        }
    }
}

/// An object a load made, handed between queues (the kit's readable classes are immutable).
private struct HeldObject: @unchecked Sendable {
    let value: any NSItemProviderReading
}
#endif
