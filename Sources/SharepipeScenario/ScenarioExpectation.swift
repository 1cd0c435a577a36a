import Foundation

/// What a scenario must produce, read from its `<name>.expected.json`:
///
/// ```json
/// { "args": ["--load-timeout", "300"],
///   "status": "partial",
///   "attachments": [ { "status": "copied", "typeIdentifier": "public.jpeg", "code": null },
///                    { "status": "failed", "typeIdentifier": "public.png", "code": "ERR_TIMEOUT" } ],
///   "activation": { "images-only": true, "one-web-url": false } }
/// ```
///
/// `args` (extra `sharepipe share` flags) and `activation` (rule name → whether it activates the share) are optional.
/// Every key is checked as a scenario's are: errors name the key and the index.
package struct ScenarioExpectation: Sendable, Equatable {
    /// The outcome expected for one attachment.
    package struct Attachment: Sendable, Equatable, CustomStringConvertible {
        /// `copied`, `failed` or `rolled-back`.
        package var status: String
        /// The chosen type identifier, when one was chosen.
        package var typeIdentifier: String?
        /// The error code of a failed attachment.
        package var code: String?

        /// An expected outcome.
        package init(status: String, typeIdentifier: String?, code: String?) {
            self.status = status
            self.typeIdentifier = typeIdentifier
            self.code = code
        }

        /// `status type code`, with `-` for what is absent.
        package var description: String { "\(status) \(typeIdentifier ?? "-") \(code ?? "-")" }
    }

    /// Extra `sharepipe share` flags.
    package var args: [String]
    /// The receipt's status: `complete`, `partial`, `rejected` or `failed`.
    package var status: String
    /// Per attachment, in order.
    package var attachments: [Attachment]
    /// Rule name (a file in `rules/` beside the scenario, without its extension) → whether it activates the share.
    package var activation: [String: Bool]

    private static let statuses = ["complete", "partial", "rejected", "failed"]
    private static let attachmentStatuses = ["copied", "failed", "rolled-back"]

    /// Reads and checks an expected receipt.
    package static func load(path: String) throws -> ScenarioExpectation {
        let top = try ObjectReader(
            try JSONValue.read(path), at: "", what: "an expected receipt",
            keys: ["args", "status", "attachments", "activation"])
        let args = try (top.optionalArray("args") ?? []).enumerated().map { index, value in
            guard case .string(let text) = value else {
                throw top.failure("\"args\"[\(index)] must be a string, got \(value.summary)")
            }
            return text
        }
        let status = try top.string("status")
        guard statuses.contains(status) else {
            throw top.failure(
                "\"status\" must be one of \(statuses.joined(separator: ", ")), got \(status.debugDescription)")
        }
        let attachments = try top.array("attachments").enumerated().map { index, value in
            let object = try ObjectReader(
                value, at: "attachments[\(index)]", what: "an attachment", keys: ["status", "typeIdentifier", "code"])
            let status = try object.string("status")
            guard attachmentStatuses.contains(status) else {
                throw object.failure("\"status\" must be one of \(attachmentStatuses.joined(separator: ", ")), "
                    + "got \(status.debugDescription)")
            }
            return Attachment(
                status: status, typeIdentifier: try object.optionalString("typeIdentifier"),
                code: try object.optionalString("code"))
        }
        var activation: [String: Bool] = [:]
        if let rules = try top.optionalObject("activation") {
            for (name, value) in rules {
                guard case .bool(let activated) = value else {
                    throw top.failure(
                        "\"activation\".\(name.debugDescription) must be true or false, got \(value.summary)")
                }
                activation[name] = activated
            }
        }
        return ScenarioExpectation(args: args, status: status, attachments: attachments, activation: activation)
    }

    /// An expectation built in code.
    package init(args: [String] = [], status: String, attachments: [Attachment], activation: [String: Bool] = [:]) {
        self.args = args
        self.status = status
        self.attachments = attachments
        self.activation = activation
    }
}
