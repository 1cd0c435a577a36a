#if os(Linux)
import Dispatch
import Foundation
import Synchronization

/// The `userInfo` key under which an error's items and errors are reported to the host.
public let NSExtensionItemsAndErrorsKey = "NSExtensionItemsAndErrorsKey"

/// What an extension's principal object without a user interface adopts (an action extension's request handler):
/// the system calls `beginRequest(with:)` with the request's context; on Linux a test calls it.
public protocol NSExtensionRequestHandling: NSObjectProtocol {
    /// Starts the request; the extension ends it with `completeRequest` or `cancelRequest` on the context.
    func beginRequest(with context: NSExtensionContext)
}

/// The context a host app runs an extension in: the items shared with it, and the calls that end the request.
///
/// On Apple's platforms the system creates the context; on Linux a test (or the extension harness) creates one with
/// ``init(inputItems:)``. Every call that ends the request is recorded: the first ends it, later ones are recorded
/// and otherwise ignored (their completion handlers never run), so a harness can tell "called twice" from "once".
open class NSExtensionContext: NSObject, @unchecked Sendable {
    /// How one call ended the request.
    package enum Ending: Sendable {
        case completed(itemCount: Int)
        case cancelled(String)
    }

    private struct State {
        var endings: [Ending] = []
        var onEnd: (@Sendable () -> Void)?
    }

    private let items: [Any]
    private let state = Mutex(State())

    /// A context whose host shares `inputItems` (usually `NSExtensionItem`s).
    public init(inputItems: [Any]) {
        items = inputItems
        super.init()
    }

    /// The items the host shared, usually `NSExtensionItem`s.
    open var inputItems: [Any] { items }

    /// Ends the request successfully, handing `items` back to the host; `completionHandler` runs once, on a
    /// background queue, with `expired` false. Only the first call that ends the request has an effect.
    open func completeRequest(returningItems items: [Any]?, completionHandler: (@Sendable (Bool) -> Void)? = nil) {
        let (first, onEnd) = end(.completed(itemCount: items?.count ?? 0))
        guard first else { return }
        if let completionHandler {
            DispatchQueue.global(qos: .userInitiated).async { completionHandler(false) }
        }
        onEnd?()
    }

    /// Ends the request with an error (use `CocoaError(.userCancelled)` when the user cancelled). Only the first call
    /// that ends the request has an effect.
    open func cancelRequest(withError error: any Error) {
        let (first, onEnd) = end(.cancelled("\(error)"))
        if first { onEnd?() }
    }

    private func end(_ ending: Ending) -> (Bool, (@Sendable () -> Void)?) {
        state.withLock { state in
            state.endings.append(ending)
            return (state.endings.count == 1, state.endings.count == 1 ? state.onEnd : nil)
        }
    }

    /// Every call that ended (or tried to end) the request, in call order.
    package var endings: [Ending] { state.withLock { $0.endings } }

    /// Runs `action` when the request first ends (at once when it already has).
    package func whenEnded(_ action: @escaping @Sendable () -> Void) {
        let ended = state.withLock { state in
            if state.endings.isEmpty { state.onEnd = action }
            return !state.endings.isEmpty
        }
        if ended { action() }
    }
}
#endif
