/// Decides whether a share with these declared types (one list per attachment) activates the extension.
package typealias ShareActivation = @Sendable ([[String]]) -> (activated: Bool, reason: String)
