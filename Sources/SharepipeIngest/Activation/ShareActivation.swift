import SharepipeSystem

/// Decides whether a share with these declared types (one list per attachment) activates the extension.
package typealias ShareActivation = @Sendable ([[String]]) -> (activated: Bool, reason: String)

/// Asks the activation rule about a share before it is loaded, as the inbox and HTTP both do: nil when there is no
/// rule or it activates the share, else the ERR_NOT_ACTIVATED error with the rule's reason.
func activationRefusal(_ rule: ShareActivation?, declaredBy providers: [any ItemProvider]) -> ShareError? {
    guard let decision = rule?(providers.map(\.registeredTypeIdentifiers)), !decision.activated else { return nil }
    return ShareError(.notActivated, "the activation rule refused the share: \(decision.reason)")
}
