import Foundation
import SharepipeCore

/// `sharepipe consume`: recovery, then every published share through the processor, retries included; then exit.
struct ConsumeCommand: Command {
    static let name = "consume"
    static let abstract = "Process every published share (retries included), then exit."
    static let options: [any OptionDeclaration] =
        ProcessorOptions.all + LedgerOptions.all + [CommonOptions.types, CommonOptions.json]
    static let discussion = """
        Starts with recovery: unpublished shares left in staging are deleted and shares whose claimer died go
        back to incoming. A failing share is retried after --retry-delay (doubling) and quarantined after
        --max-attempts; consume waits for its retries. SIGINT or SIGTERM stop claiming: shares in flight finish,
        or go back to incoming without counting an attempt. The summary goes to stdout; recovery notes to stderr.
        Exit status: 0 when no share was quarantined, 1 otherwise.
        """

    /// The JSON shape: the consumer's counts and what recovery did first.
    struct Report: Encodable {
        /// `RecoveryReport`, field for field.
        struct Recovery: Encodable {
            var stagingRemoved: Int
            var returnedToIncoming: Int
            var completed: Int
            var rolledForward: Int
            var liveClaims: Int
        }

        var processed: Int
        var retried: Int
        var quarantined: Int
        var released: Int
        var recovery: Recovery
    }

    let state: String
    let ledger: LedgerLocation
    let processor: DaemonConfiguration.ProcessorChoice
    let configuration: ConsumerConfiguration
    let registry: TypeRegistry
    let json: Bool

    init(arguments: ParsedArguments) throws {
        state = ProcessorOptions.stateDirectory(arguments)
        ledger = try LedgerOptions.location(arguments)
        processor = try ProcessorOptions.processorChoice(arguments)
        configuration = ProcessorOptions.consumerConfiguration(arguments)
        registry = try loadTypeRegistry(arguments)
        json = arguments[CommonOptions.json]
    }

    func run() async throws -> ExitCode {
        let spool = try Spool(root: state, ledger: ledger, faults: .fromEnvironment())
        let recovery = try spool.recover()
        if case .store(let output, let path) = processor {
            _ = StoreProcessor(output: output, path: path, registry: registry).removeLeftTemporaries()
        }
        let consumer = Consumer(
            spool: spool, processor: Daemon.makeProcessor(processor, registry: registry), configuration: configuration)
        let summary = try await cancellingOnSignals { try await consumer.drain() }
        let report = Report(
            processed: summary.processed, retried: summary.retried, quarantined: summary.quarantined,
            released: summary.released,
            recovery: Report.Recovery(
                stagingRemoved: recovery.stagingRemoved, returnedToIncoming: recovery.returnedToIncoming,
                completed: recovery.completed, rolledForward: recovery.rolledForward,
                liveClaims: recovery.liveClaims))
        if json {
            try Output.printJSON(report)
        } else {
            printSummary(report)
        }
        return summary.quarantined == 0 ? .success : .failure
    }

    private func printSummary(_ report: Report) {
        let recovery = report.recovery
        let recovered = [
            (recovery.stagingRemoved, "unpublished share(s) removed from staging"),
            (recovery.returnedToIncoming, "interrupted claim(s) returned to incoming"),
            (recovery.completed + recovery.rolledForward, "interrupted transition(s) finished"),
            (recovery.liveClaims, "share(s) left to another running consumer"),
        ].filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }
        if !recovered.isEmpty {
            Output.write("recovery: " + recovered.joined(separator: ", ") + "\n", to: .standardError)
        }
        var line = "consumed: \(report.processed) processed, \(report.retried) retried, "
        let quarantined = "\(report.quarantined) quarantined"
        line += report.quarantined > 0 ? Output.styled(quarantined, .red, for: .standardOutput) : quarantined
        line += ", \(report.released) released"
        Output.line(line)
        if report.quarantined > 0 {
            Output.write(
                "see \"sharepipe ls\" for the reasons; \"sharepipe requeue SHARE-ID\" tries a share again\n",
                to: .standardError)
        }
    }
}

/// Runs `body` in a task that the first SIGINT or SIGTERM cancels instead of ending the process, so that work in
/// flight can finish or be put back; a second one ends the process at once (recovery then puts its claims back).
/// The signals' default actions come back when `body` returns.
func cancellingOnSignals<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let task = Task { try await body() }
    let numbers = [Signal.interrupt, Signal.terminate]
    let sources = numbers.map { number -> any DispatchSourceSignal in
        Signal.ignore(number)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            for number in numbers { Signal.restoreDefault(number) }
            Output.write(
                "stopping: shares in flight finish or go back to incoming (signal again to quit now)\n",
                to: .standardError)
            task.cancel()
        }
        source.resume()
        return source
    }
    defer {
        for source in sources { source.cancel() }
        for number in numbers { Signal.restoreDefault(number) }
    }
    return try await task.value
}
