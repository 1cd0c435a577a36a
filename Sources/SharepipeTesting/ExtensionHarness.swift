import Foundation
import SharepipeCore
import SharepipeScenario
import SharepipeExtensionKit
import Synchronization

/// What a share extension's code did with one attachment, as its test reports it to the ``ExtensionHarness``.
///
/// The extension's own code keeps its own report (whatever an iOS extension shows the user or writes for its host
/// app); the test maps each entry to one outcome. Every attachment needs exactly one.
public struct ExtensionOutcome: Sendable {
    /// The three answers an attachment may get.
    public enum Result: Sendable {
        /// Copied into the app group's container, at this file.
        case accepted(URL)
        /// Not taken, for a reason the user can be told (unsupported type, too large …).
        case refused(reason: String)
        /// Taking it failed (the provider's error, a timeout, a failed copy …).
        case failed(any Error)
    }

    /// The attachment, as the extension found it in `NSExtensionItem.attachments`.
    public var attachment: NSItemProvider
    /// What became of it.
    public var result: Result

    /// An outcome for an attachment.
    public init(_ attachment: NSItemProvider, _ result: Result) {
        self.attachment = attachment
        self.result = result
    }

    /// The attachment was copied to `file`.
    public static func accepted(_ attachment: NSItemProvider, file: URL) -> ExtensionOutcome {
        ExtensionOutcome(attachment, .accepted(file))
    }

    /// The attachment was not taken, for `reason`.
    public static func refused(_ attachment: NSItemProvider, reason: String) -> ExtensionOutcome {
        ExtensionOutcome(attachment, .refused(reason: reason))
    }

    /// Taking the attachment failed with `error`.
    public static func failed(_ attachment: NSItemProvider, error: any Error) -> ExtensionOutcome {
        ExtensionOutcome(attachment, .failed(error))
    }
}

/// What one run of a share extension's code did, and every check it failed.
public struct ExtensionRun: Sendable {
    /// The checks the harness makes; each failure names one.
    public enum Check: String, Sendable, CaseIterable, CustomStringConvertible {
        /// The extension's code returned within the deadline.
        case finished
        /// `completeRequest(returningItems:)` or `cancelRequest(withError:)` was called exactly once.
        case completeRequestOnce
        /// Every attachment got exactly one outcome, and every refusal a reason: nothing silently dropped.
        case everyAttachmentAnswered
        /// The representation loaded is one that conforms to the accepted types, looked for across all of them.
        case firstConformingType
        /// The temporary file was copied inside the completion handler, not used after it returned.
        case copiedInsideHandler
        /// Every accepted copy is a readable regular file holding the bytes of one of its representations.
        case copiesReadable
        /// No two accepted attachments were stored under the same name.
        case distinctNames
        /// Copies live in the app group's container, and nothing else was left there.
        case insideContainer
        /// Every temporary file is gone once its completion handler returned.
        case temporaryFilesGone

        public var description: String { rawValue }
    }

    /// One failed check.
    public struct Failure: Sendable, CustomStringConvertible {
        /// The check that failed.
        public var check: Check
        /// What was expected and what was found.
        public var message: String

        public var description: String { "\(check): \(message)" }
    }

    /// Every failed check, in check order.
    public var failures: [Failure]
    /// The outcomes the code reported (empty when it did not return).
    public var outcomes: [ExtensionOutcome]
    /// The app group's container the run used.
    public var containerURL: URL
    /// How many times the request was ended (`completeRequest` or `cancelRequest`).
    public var requestEndings: Int

    /// Whether every check passed.
    public var passed: Bool { failures.isEmpty }

    /// The failures of one check.
    public func failures(_ check: Check) -> [Failure] { failures.filter { $0.check == check } }

    /// Throws a ``HarnessFailure`` listing every failed check, one per line.
    public func expectPassed() throws {
        guard !failures.isEmpty else { return }
        throw HarnessFailure(failures.map(\.description).joined(separator: "\n"))
    }
}

/// Runs a share extension's own code — written against Apple's `NSExtensionContext`, `NSItemProvider`, `UTType` and
/// `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)` — against scenario items, and checks what a
/// release needs (see ``ExtensionRun/Check``).
///
/// Each run gets a fresh container for the group (the group identifier the code asks for is redirected to it; other
/// groups keep following `SHAREPIPE_APP_GROUP_CONTAINERS`) and a fresh directory for the providers' temporary files.
/// Runs for one group identifier take turns within the process. Everything lives under ``directory``, removed when
/// the harness is released.
public final class ExtensionHarness: Sendable {
    /// The app group the extension's code uses.
    public let groupIdentifier: String
    /// The types the extension takes: an attachment with a representation conforming to one of them must not be
    /// refused without being loaded.
    public let accepting: [UTType]
    /// How long the code may run (from when it starts), and its completion handlers take once it returned.
    public let deadline: Duration
    /// How long the request may take to end after the code returned.
    public let grace: Duration
    /// The harness's directory: one subdirectory per run.
    public let directory: URL

    private let runs = Mutex(0)

    /// A harness for an extension of `groupIdentifier` that takes the `accepting` types.
    public init(
        groupIdentifier: String, accepting: [UTType] = [.item], deadline: Duration = .seconds(30),
        grace: Duration = .seconds(1)
    ) throws {
        self.groupIdentifier = groupIdentifier
        self.accepting = accepting
        self.deadline = deadline
        self.grace = grace
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("sharepipe-extension-harness-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs the code against a scenario file (see `Scenario.load(path:)`).
    public func run(
        scenarioFile path: String, _ code: @escaping @Sendable (NSExtensionContext) async -> [ExtensionOutcome]
    ) async throws -> ExtensionRun {
        await run(try Scenario.load(path: path), code)
    }

    /// Runs `code` with a context whose input items are the scenario's (``Scenario/makeExtensionItems()``), waits
    /// until it returned (at most the deadline from its start), the request ended (at most `grace` after the return)
    /// and every started load's completion handler returned (at most the deadline after the return), and checks the
    /// result.
    public func run(
        _ scenario: Scenario, _ code: @escaping @Sendable (NSExtensionContext) async -> [ExtensionOutcome]
    ) async -> ExtensionRun {
        await GroupTurns.shared.enter(groupIdentifier)
        let result = await runInTurn(scenario, code)
        await GroupTurns.shared.leave(groupIdentifier)
        return result
    }

    private func runInTurn(
        _ scenario: Scenario, _ code: @escaping @Sendable (NSExtensionContext) async -> [ExtensionOutcome]
    ) async -> ExtensionRun {
        let number = runs.withLock { count in
            count += 1
            return count
        }
        let root = directory.appendingPathComponent("run-\(number)", isDirectory: true)
        let containers = root.appendingPathComponent("containers", isDirectory: true)
        let temporary = root.appendingPathComponent("tmp", isDirectory: true)
        let container = containers.appendingPathComponent(groupIdentifier, isDirectory: true)
        try? FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        AppGroupContainers.redirections.withLock { $0[groupIdentifier] = containers }
        defer { _ = AppGroupContainers.redirections.withLock { $0.removeValue(forKey: groupIdentifier) } }

        let items = scenario.makeExtensionItems()
        let providers = items.flatMap { $0.attachments ?? [] }
        for provider in providers { provider.temporaryDirectory = temporary }
        let context = NSExtensionContext(inputItems: items)

        let reported = Mutex<[ExtensionOutcome]?>(nil)
        let started = Mutex<ContinuousClock.Instant?>(nil)
        let returned = Mutex<ContinuousClock.Instant?>(nil)
        let ended = Mutex(false)
        context.whenEnded { ended.withLock { $0 = true } }
        Task {
            started.withLock { $0 = .now }
            let outcomes = await code(context)
            reported.withLock { $0 = outcomes }
            returned.withLock { $0 = .now }
        }
        // Every limit counts from an event of the run, not from the call: on a loaded machine the code's task may
        // start late, and that is no fault of the code.
        await Self.wait {
            if returned.withLock({ $0 }) != nil { return true }
            guard let start = started.withLock({ $0 }) else { return false }
            return ContinuousClock.now >= start + deadline
        }
        if let returnedAt = returned.withLock({ $0 }) {
            // The request may end a moment after the code returned; the handlers get the deadline to return.
            await Self.wait {
                let now = ContinuousClock.now
                let requestSettled = ended.withLock { $0 } || now >= returnedAt + grace
                let handlersSettled = Self.handlersSettled(providers) || now >= returnedAt + deadline
                return requestSettled && handlersSettled
            }
        }

        let checks = ExtensionChecks(
            scenario: scenario, providers: providers, outcomes: reported.withLock { $0 },
            endings: context.endings, accepting: accepting, deadline: deadline,
            container: container, temporary: temporary)
        return ExtensionRun(
            failures: checks.run(), outcomes: reported.withLock { $0 } ?? [], containerURL: container,
            requestEndings: context.endings.count)
    }

    /// Waits (at most the deadline) until every load started on the context's attachments has called back and its
    /// completion handler returned — as when the user reads the share sheet before tapping Post. Code that kept a
    /// temporary URL then finds it gone, as it would on a device.
    public func waitForLoads(in context: NSExtensionContext) async {
        let providers = (context.inputItems as? [NSExtensionItem] ?? []).flatMap { $0.attachments ?? [] }
        let limit = ContinuousClock.now + deadline
        await Self.wait {
            ContinuousClock.now >= limit || providers.allSatisfy { provider in
                provider.loadRecords.allSatisfy { $0.result != nil && $0.handlerReturned }
            }
        }
    }

    /// Whether every load that ended has had its completion handler return.
    private static func handlersSettled(_ providers: [NSItemProvider]) -> Bool {
        providers.allSatisfy { provider in provider.loadRecords.allSatisfy { $0.result == nil || $0.handlerReturned } }
    }

    /// Polls `condition` every 2 ms until it holds.
    private static func wait(_ condition: () -> Bool) async {
        while !condition() {
            try? await Task.sleep(for: .milliseconds(2))
        }
    }
}

/// Lets runs for one app group identifier take turns within the process, since the group's container is redirected
/// per run.
private actor GroupTurns {
    static let shared = GroupTurns()

    private var busy: Set<String> = []
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]

    func enter(_ group: String) async {
        guard busy.contains(group) else {
            busy.insert(group)
            return
        }
        await withCheckedContinuation { waiting[group, default: []].append($0) }
    }

    func leave(_ group: String) {
        if var queue = waiting[group], !queue.isEmpty {
            let next = queue.removeFirst()
            waiting[group] = queue
            next.resume()
        } else {
            busy.remove(group)
        }
    }
}
