import Dispatch
import Foundation
import SharepipeCore
import Synchronization

/// An item provider that says so on stderr when the provider it wraps has not called back within a few seconds:
/// which attachment, which type, and how long until the load times out. `share` would otherwise sit silent for the
/// whole `--load-timeout`.
struct ProviderWatch: ItemProvider {
    /// How long a load may take before it is announced.
    static let patience: Duration = .seconds(3)

    let base: any ItemProvider
    /// The attachment's index, as the receipt shows it.
    let index: Int
    /// The loader's `--load-timeout`.
    let timeout: Duration

    var registeredTypeIdentifiers: [String] { base.registeredTypeIdentifiers }
    var suggestedName: String? { base.suggestedName }

    func representationKind(for typeIdentifier: String) -> RepresentationKind {
        base.representationKind(for: typeIdentifier)
    }

    func loadFileRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (URL?, (any Error)?) -> Void
    ) {
        let called = watch(typeIdentifier)
        base.loadFileRepresentation(forTypeIdentifier: typeIdentifier) { url, error in
            called.set()
            completion(url, error)
        }
    }

    func loadDataRepresentation(
        forTypeIdentifier typeIdentifier: String, completion: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        let called = watch(typeIdentifier)
        base.loadDataRepresentation(forTypeIdentifier: typeIdentifier) { data, error in
            called.set()
            completion(data, error)
        }
    }

    /// Arms the announcement for one load; the callback sets the returned flag, which disarms it.
    private func watch(_ typeIdentifier: String) -> CallbackFlag {
        let called = CallbackFlag()
        guard timeout > Self.patience else { return called }
        let left = timeout - Self.patience
        let message = "waiting for attachment \(index) (\(typeIdentifier)): no callback after "
            + "\(Self.seconds(Self.patience)), ERR_TIMEOUT in \(Self.seconds(left))\n"
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.timeInterval(Self.patience)) {
            guard !called.isSet else { return }
            Output.write(message, to: .standardError)
        }
        return called
    }

    /// Set once the provider called back, from whichever thread it calls back on.
    final class CallbackFlag: Sendable {
        private let called = Mutex(false)

        var isSet: Bool { called.withLock { $0 } }

        func set() {
            called.withLock { $0 = true }
        }
    }

    private static func timeInterval(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    /// `3 s`, `27 s`, `1.5 s`.
    private static func seconds(_ duration: Duration) -> String {
        let value = timeInterval(duration)
        return value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }
}
