import Foundation
import SharepipeCore

/// `sharepipe events`: the ledger's lifecycle events, one per line, for piping into other tools.
struct EventsCommand: Command {
    static let name = "events"
    static let abstract = "Print lifecycle events, one per line; --follow keeps printing new ones as they happen."
    static let follow = Flag(
        "follow", help: "After the recorded events, print new ones as they are recorded until SIGINT or SIGTERM.")
    static let options: [any OptionDeclaration] =
        [ProcessorOptions.state, follow] + LedgerOptions.all + [CommonOptions.json]
    static let discussion = """
        Each line is one event, oldest first: logfmt (time, seq, share, event, then attempt, attachment, type, \
        bytes, code and duration_ms when they apply), or with --json one JSON object per line (JSON Lines) with \
        every key present. Events hold ids, stages, codes, sizes and type identifiers, never content or file names. \
        --follow looks at the ledger every 200 ms, so an event shows within a fraction of a second; SIGINT or \
        SIGTERM ends it with exit status 0. Use "sharepipe show SHARE-ID" for one share.
        """

    /// How often `--follow` looks for new events.
    static let pollInterval = Duration.milliseconds(200)

    let state: String
    let ledger: LedgerLocation
    let following: Bool
    let json: Bool

    init(arguments: ParsedArguments) throws {
        state = ProcessorOptions.stateDirectory(arguments)
        ledger = try LedgerOptions.location(arguments)
        following = arguments[Self.follow]
        json = arguments[CommonOptions.json]
    }

    func run() async throws -> ExitCode {
        let spool: Spool
        var last: Int64
        do {
            spool = try Spool.openExisting(root: state, ledger: ledger)
            last = try printEvents(spool, after: 0)
        } catch let error as ShareError {
            return reportFailure(error, json: json)
        }
        guard following else { return .success }
        let start = last
        let json = json
        do {
            try await followingSignals {
                var last = start
                while !Task.isCancelled {
                    try await Task.sleep(for: Self.pollInterval)
                    last = try Self.printEvents(spool, after: last, json: json)
                }
            }
        } catch is CancellationError {
            return .success
        } catch let error as ShareError {
            return reportFailure(error, json: json)
        }
        return .success
    }

    private func printEvents(_ spool: Spool, after sequence: Int64) throws -> Int64 {
        try Self.printEvents(spool, after: sequence, json: json)
    }

    /// Prints every event after `sequence`, a batch at a time; returns the last sequence printed.
    private static func printEvents(_ spool: Spool, after sequence: Int64, json: Bool) throws -> Int64 {
        var last = sequence
        while true {
            let batch = try spool.events(after: last)
            guard !batch.isEmpty else { return last }
            var text = ""
            for event in batch {
                let line = EventLine(event)
                text += (json ? try Self.jsonLine(line) : line.logfmt) + "\n"
                last = event.sequence
            }
            Output.write(text)
        }
    }

    private static func jsonLine(_ line: EventLine) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(line), as: UTF8.self)
    }
}

/// Runs `body` until the first SIGINT or SIGTERM cancels it; the signals' default actions come back when it returns.
private func followingSignals(_ body: @escaping @Sendable () async throws -> Void) async throws {
    let task = Task { try await body() }
    let numbers = [Signal.interrupt, Signal.terminate]
    let sources = numbers.map { number -> any DispatchSourceSignal in
        Signal.ignore(number)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { task.cancel() }
        source.resume()
        return source
    }
    defer {
        for source in sources { source.cancel() }
        for number in numbers { Signal.restoreDefault(number) }
    }
    try await task.value
}
