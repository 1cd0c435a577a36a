import SharepipeCore

/// The processor a share goes to (`--processor`).
enum ProcessorKind: String, Sendable, CaseIterable {
    case store, exec, discard
}

/// The consumer's flags, declared once for `consume` and `daemon` so that both take the same words with the same
/// defaults: the state directory, the processor and its settings, workers and retries. A command lists `all` (or
/// `state` and `processorOptions` where it wants them) in its `options` and builds its configuration with
/// `stateDirectory(_:)`, `processorChoice(_:)` and `consumerConfiguration(_:)`.
enum ProcessorOptions {
    /// `--state DIR`; without it `$STATE_DIRECTORY` (its first entry), else `./.sharepipe`.
    static let state = Option(
        "state", .path(placeholder: "DIR"),
        help: "The state directory (default: $STATE_DIRECTORY when set, else ./.sharepipe).")
    /// `--processor store|exec|discard`.
    static let processor = Option(
        "processor", .choice(ProcessorKind.self), default: "store",
        help: "Store the copies in --output, run --exec per copy, or discard them.")
    /// `--output DIR`, where `store` puts copies.
    static let output = Option(
        "output", .path(placeholder: "DIR"), default: "./processed",
        help: "Where store moves copies: DIR/image, video, audio, pdf, text, archive or other.")
    /// `--store-path TEMPLATE`, where `store` puts each copy under `--output`.
    static let storePath = Option(
        "store-path", .storePath, default: StorePath.default.template,
        help: "Where store puts each copy under --output: a relative path with the fields {group}, {share}, "
            + "{folder} (the dropped folder's name), {name}, {date} (YYYY-MM-DD), {title} and {tag} (the share's "
            + "title and first tag, made safe as {name} is); e.g. {folder}/{name} keeps a "
            + "dropped folder together. A segment that comes out empty is left out; the last must contain {name}.")
    /// `--exec CMD`, required by `--processor exec`.
    static let exec = Option(
        "exec", .string(placeholder: "CMD"),
        help: "For --processor exec: run by /bin/sh -c once per copy, with SHAREPIPE_FILE, SHAREPIPE_TYPE, "
            + "SHAREPIPE_MIME, SHAREPIPE_SHARE_ID and SHAREPIPE_SUGGESTED_NAME set (and SHAREPIPE_DUPLICATE_OF, the "
            + "original's share id, for a copy flagged by --duplicates flag), SHAREPIPE_TITLE, SHAREPIPE_TAGS "
            + "(comma-separated) and SHAREPIPE_SHARE_JSON (a read-only file with the share's title, text, userInfo "
            + "and tags, removed when the share's runs end); exit status 0 means processed.")
    /// `--exec-timeout MS`, the longest one run of the command may take.
    static let execTimeout = Option(
        "exec-timeout", .milliseconds, default: "300000",
        help: "Kill a run of the --exec command after this long (SIGTERM, then SIGKILL); the attempt fails.")
    /// `--workers N`, shares processed at the same time.
    static let workers = Option("workers", .positiveInteger, default: "2", help: "Shares processed at the same time.")
    /// `--max-attempts N`, attempts before a share is quarantined.
    static let maxAttempts = Option(
        "max-attempts", .positiveInteger, default: "3",
        help: "Attempts per share before it is quarantined with ERR_PROCESSOR_FAILED.")
    /// `--retry-delay MS`, the wait before the second attempt, doubling after each further one.
    static let retryDelay = Option(
        "retry-delay", .milliseconds, default: "1000",
        help: "Wait before retrying a failed share; doubles for each further attempt.")

    /// The processor, worker and retry flags, without `--state` (for a command that places `state` itself).
    static let processorOptions: [any OptionDeclaration] = [
        processor, output, storePath, exec, execTimeout, workers, maxAttempts, retryDelay,
    ]

    /// `--state` and every processor flag, in the order help lists them.
    static let all: [any OptionDeclaration] = [state] + processorOptions

    /// The state directory: `--state`, else the default (`$STATE_DIRECTORY`, else `./.sharepipe`).
    static func stateDirectory(_ arguments: ParsedArguments) -> String {
        arguments[state] ?? Spool.defaultRoot()
    }

    /// The processor the flags name. `--processor exec` without a command, or with an empty one, is a usage error
    /// naming `--exec`; a zero `--exec-timeout` is one naming `--exec-timeout`. `--exec` with another processor is
    /// ignored with a warning.
    static func processorChoice(_ arguments: ParsedArguments) throws -> DaemonConfiguration.ProcessorChoice {
        let kind = arguments[processor] ?? .store
        let command = arguments[exec]
        if kind != .exec, command != nil {
            Output.printWarning("--exec is ignored unless --processor exec is given")
        }
        switch kind {
        case .store:
            return .store(output: arguments[output] ?? "./processed", path: arguments[storePath] ?? .default)
        case .discard:
            return .discard
        case .exec:
            guard let command else { throw ValidationError(option: exec, "required with --processor exec") }
            guard !command.allSatisfy(\.isWhitespace) else {
                throw ValidationError(option: exec, "expected a shell command, got an empty string")
            }
            let timeout = arguments[execTimeout] ?? 300_000
            guard timeout > 0 else { throw ValidationError(option: execTimeout, "expected more than 0 ms") }
            return .exec(command: command, timeout: .milliseconds(timeout))
        }
    }

    /// Workers, attempts and backoff from the flags; everything else keeps the library's defaults.
    static func consumerConfiguration(_ arguments: ParsedArguments) -> ConsumerConfiguration {
        var configuration = ConsumerConfiguration()
        configuration.workers = arguments[workers] ?? configuration.workers
        configuration.maxAttempts = arguments[maxAttempts] ?? configuration.maxAttempts
        if let delay = arguments[retryDelay] { configuration.retryDelay = .milliseconds(delay) }
        return configuration
    }
}

extension ValueParser where Value == StorePath {
    /// A `--store-path` template; one that could lead outside `--output` is refused.
    static var storePath: ValueParser<StorePath> {
        ValueParser(placeholder: "TEMPLATE") { text in
            do {
                return try StorePath(text)
            } catch let error as StorePath.Invalid {
                throw ValidationError(error.message)
            }
        }
    }
}
