import Foundation
import SharepipeCore

/// `sharepipe daemon`: watch the inbox, ingest, consume, delete — until SIGTERM.
struct DaemonCommand: Command {
    static let name = "daemon"
    static let abstract = "Watch an inbox, turn drops into shares, process them and delete the copies."
    static let discussion = """
        Each file dropped into the inbox becomes a one-attachment share and each folder one multi-attachment share,
        once it has been quiet for --settle. Published shares are processed by --processor and deleted. What cannot
        be ingested goes to INBOX/.rejected/ with a .reason.json; nothing in the inbox is deleted unless its share
        was published. --config FILE is JSON whose keys are these long option names; the command line wins.
        Under systemd: Type=notify (READY, STATUS, WATCHDOG, STOPPING); SIGTERM stops, SIGHUP reloads --config.
        """

    static let inbox = Option("inbox", .path(placeholder: "DIR"), default: "inbox", help: "The watched inbox.")
    static let config = Option("config", .path, help: "JSON file of defaults for these options.")
    static let accept = ListOption(
        "accept", .string(placeholder: "TYPE"), default: "public.item", help: "Accepted types (conformance).")
    static let policy = Option(
        "policy", .choice(SharePolicy.self), default: "keep-successful",
        help: "What a failed attachment does to a folder's share.")
    static let maxFileSize = Option("max-file-size", .size, default: "4G", help: "Largest attachment.")
    static let maxShareSize = Option("max-share-size", .size, default: "16G", help: "Largest share.")
    static let maxAttachments = Option(
        "max-attachments", .positiveInteger, default: "100", help: "Most files in one folder share.")
    static let loadTimeout = Option("load-timeout", .milliseconds, default: "30000", help: "Load timeout in ms.")
    static let settle = Option(
        "settle", .milliseconds, default: "250", help: "Quiet time (ms) before a drop counts as complete.")
    static let poll = Option(
        "poll", .milliseconds, help: "Scan every MS instead of inotify (NFS, SMB, FUSE); ready after two equal scans.")
    static let rescan = Option(
        "rescan-interval", .milliseconds, default: "60000", help: "Safety rescan interval (ms) with inotify.")
    static let activationRule = Option(
        "activation-rule", .path, help: "Reject drops an extension with this NSExtensionActivationRule would not take.")
    static let ignore = ListOption(
        "ignore", .string(placeholder: "GLOB"), default: defaultIgnore, help: "Inbox names to leave alone.")
    static let metricsFile = Option(
        "metrics-file", .path(placeholder: "PATH"), help: "Prometheus textfile, replaced every 10 s and on exit.")
    static let logFormat = Option(
        "log-format", .choice(["logfmt", "json"]), default: "logfmt", help: "Log line format on stderr.")
    static let logLevel = Option(
        "log-level", .choice(["debug", "info", "warning", "error"]), default: "info", help: "Lowest level logged.")
    static let logNames = Flag("log-names", help: "Allow file names in logs (never content).")
    static let oneshot = Flag("oneshot", help: "Ingest and process what is in the inbox now, then exit.")

    // --- issue 19: HTTP ingest ---
    static let listen = ListOption(
        "listen", .string(placeholder: "ADDR"),
        help: "Also accept shares over HTTP: HOST:PORT, [IPV6]:PORT or unix:PATH (systemd's LISTEN_FDS sockets too).")
    static let tokens = Option(
        "tokens", .path, help: "Bearer tokens, one \"NAME TOKEN\" per line (mode 600); NAME becomes the sourceApp.")
    static let tlsCert = Option("tls-cert", .path, help: "Serve HTTPS with this PEM certificate (with --tls-key).")
    static let tlsKey = Option("tls-key", .path, help: "The PEM private key of --tls-cert.")
    static let maxConnections = Option(
        "max-connections", .positiveInteger, default: "10000", help: "HTTP connections held at once, per listener.")
    static let maxConnectionsPerClient = Option(
        "max-connections-per-client", .positiveInteger, default: "256",
        help: "HTTP connections held at once from one peer address.")
    static let headerTimeout = Option(
        "header-timeout", .milliseconds, default: "10s",
        help: "A request's headers must arrive within this long of its first line (ms; at least 1 s).")
    static let minBodyRate = Option(
        "min-body-rate", .rate, default: "1KiB/s",
        help: "Cut off (408) a request body slower than this, measured over 20 s (0: no minimum).")
    static let connectionTimeout = Option(
        "connection-timeout", .milliseconds, default: "60000",
        help: "Close an HTTP connection idle this long (ms; at least 1 s).")
    static let uploadExpiry = Option(
        "upload-expiry", .durationSeconds, default: "24h", help: "Remove unfinished resumable uploads this old.")
    static let httpOptions: [any OptionDeclaration] = [
        listen, tokens, tlsCert, tlsKey, maxConnections, maxConnectionsPerClient, connectionTimeout, headerTimeout,
        minBodyRate, uploadExpiry,
    ]

    /// The HTTP settings; a listener beyond loopback without --tokens is a usage error.
    static func httpConfiguration(_ arguments: ParsedArguments) throws -> HTTPConfiguration {
        var http = HTTPConfiguration()
        http.listen = try arguments[listen].map { text in
            do {
                return try ListenAddress(parsing: text)
            } catch let error as ShareError {
                throw ValidationError(option: listen, "\(text.debugDescription): \(error.message)")
            }
        }
        let environment = ProcessInfo.processInfo.environment
        http.socketActivation = environment["LISTEN_PID"] == String(ProcessInfo.processInfo.processIdentifier)
        if let path = arguments[tokens] {
            do {
                http.tokens = try HTTPTokens.load(path: path)
            } catch let error as ShareError {
                throw ValidationError(option: tokens, error.message)
            }
        } else if let open = http.listen.first(where: { !$0.isLocal }) {
            throw ValidationError(
                option: listen, "\(open) is reachable from other hosts: give --tokens FILE (ERR_USAGE)")
        }
        switch (arguments[tlsCert], arguments[tlsKey]) {
        case (nil, nil):
            break
        case (let certificate?, let key?):
            func read(_ path: String, _ option: Option<String>) throws -> String {
                guard let text = try? String(contentsOfFile: path, encoding: .utf8), text.contains("-----BEGIN") else {
                    throw ValidationError(option: option, "cannot read a PEM file at \(path)")
                }
                return text
            }
            http.tls = (try read(certificate, tlsCert), try read(key, tlsKey))
        default:
            throw ValidationError(option: arguments[tlsCert] == nil ? tlsCert : tlsKey, "--tls-cert and --tls-key go together")
        }
        http.maxConnections = arguments[maxConnections]!
        http.maxConnectionsPerClient = arguments[maxConnectionsPerClient]!
        http.connectionTimeout = .milliseconds(max(1000, arguments[connectionTimeout]!))
        http.headerTimeout = .milliseconds(max(1000, arguments[headerTimeout]!))
        http.minBodyRate = arguments[minBodyRate]!
        http.uploadExpiry = .seconds(arguments[uploadExpiry]!)
        return http
    }
    // --- end issue 19 ---

    static let defaultIgnore = ".*,*.part,*.tmp,*.crdownload,~$*,Thumbs.db,desktop.ini,@eaDir,__MACOSX"

    static let options: [any OptionDeclaration] = [
        inbox, ProcessorOptions.state, config,
    ] + LedgerOptions.all + ProcessorOptions.processorOptions + [
        accept, policy, maxFileSize, maxShareSize, maxAttachments, loadTimeout, settle, poll, rescan,
        CommonOptions.types, activationRule, ignore, metricsFile, logFormat, logLevel, logNames, oneshot,
    ] + SpoolLimitOptions.all + httpOptions + DuplicateOptions.all

    let arguments: ParsedArguments

    init(arguments: ParsedArguments) throws {
        self.arguments = arguments
        _ = try Self.settings(arguments)
    }

    /// The command line, with the config file's values under it.
    static func merged(_ arguments: ParsedArguments) throws -> ParsedArguments {
        guard let path = arguments[config] else { return arguments }
        let values: [String: ConfigValue]
        do {
            values = try JSONDecoder().decode([String: ConfigValue].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch let error as DecodingError {
            throw ValidationError(option: config, "\(path) is not a JSON object of option values: \(error)")
        } catch {
            throw ValidationError(option: config, "cannot read \(path): \(error.localizedDescription)")
        }
        guard values["config"] == nil else { throw ValidationError(option: config, "\(path): \"config\" cannot nest") }
        let fallbacks = values.mapValues(\.texts)
        return try arguments.addingFallbacks(fallbacks, origin: path)
    }

    struct Settings {
        var configuration: DaemonConfiguration
        var registry: TypeRegistry
        var logger: Logger
        var activation: ActivationRule?
    }

    /// Everything the daemon needs, from the command line over the config file.
    static func settings(_ given: ParsedArguments) throws -> Settings {
        let arguments = try merged(given)
        var configuration = DaemonConfiguration()
        configuration.inbox = arguments[inbox]!
        configuration.state = ProcessorOptions.stateDirectory(arguments)
        configuration.ledger = try LedgerOptions.location(arguments)
        configuration.faults = .fromEnvironment()
        configuration.processor = try ProcessorOptions.processorChoice(arguments)
        let idlePoll = configuration.consumer.pollInterval
        configuration.consumer = ProcessorOptions.consumerConfiguration(arguments)
        configuration.consumer.pollInterval = idlePoll
        configuration.loader.accept = arguments[accept]
        configuration.loader.policy = arguments[policy]!
        configuration.loader.maxFileSize = arguments[maxFileSize]!
        configuration.loader.maxShareSize = arguments[maxShareSize]!
        configuration.loader.maxAttachments = arguments[maxAttachments]!
        configuration.loader.loadTimeout = .milliseconds(arguments[loadTimeout]!)
        try SpoolLimitOptions.apply(arguments, to: &configuration.loader)
        try DuplicateOptions.apply(arguments, to: &configuration.loader)
        configuration.settle = .milliseconds(arguments[settle]!)
        configuration.poll = arguments[poll].map { .milliseconds(max(1, $0)) }
        configuration.rescanInterval = .milliseconds(max(1, arguments[rescan]!))
        configuration.ignore = arguments[ignore]
        configuration.metricsFile = arguments[metricsFile]
        configuration.oneshot = arguments[oneshot]
        configuration.http = try httpConfiguration(arguments)
        let registry = try loadTypeRegistry(arguments)
        var activation: ActivationRule?
        if let path = arguments[activationRule] {
            do {
                activation = try ActivationRule.load(from: path)
            } catch {
                throw ValidationError(option: activationRule, "\(error)")
            }
        }
        let logger = Logger(
            format: Logger.Format(rawValue: arguments[logFormat]!) ?? .logfmt,
            level: Logger.Level(rawValue: arguments[logLevel]!) ?? .info, logsNames: arguments[logNames])
        return Settings(configuration: configuration, registry: registry, logger: logger, activation: activation)
    }

    func run() async throws -> ExitCode {
        let settings = try Self.settings(arguments)
        let given = arguments
        let registry = settings.registry
        var check: Daemon.Activation?
        if let rule = settings.activation {
            check = { attachments in
                let result = rule.evaluate(attachments, registry: registry)
                return (result.activated, result.reason)
            }
        }
        let daemon = Daemon(
            configuration: settings.configuration, registry: registry, logger: settings.logger,
            environment: ProcessInfo.processInfo.environment, activation: check,
            reload: { try Self.settings(given).configuration },
            timeline: { spool, shareID in
                let report = try ShowCommand.report(spool: spool, shareID: shareID, names: false)
                return (Array(try Output.jsonText(report).utf8) + [0x0A], report.sourceApp)
            })
        do {
            let status = try await daemon.run()
            return ExitCode(rawValue: status) ?? .failure
        } catch let error as HTTPUsageError {
            throw ValidationError(option: Self.listen, error.message)
        } catch let error as ShareError {
            settings.logger.error("daemon.failed", [("code", .string(error.code.rawValue)), ("message", .string(error.message))])
            throw error
        }
    }
}

/// One value of a config file: a string, a number, a boolean or a list of them, read as option text.
private struct ConfigValue: Decodable {
    let texts: [String]

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let flag = try? container.decode(Bool.self) {
            texts = [String(flag)]
        } else if let number = try? container.decode(Int64.self) {
            texts = [String(number)]
        } else if let text = try? container.decode(String.self) {
            texts = [text]
        } else {
            texts = try container.decode([ConfigValue].self).flatMap(\.texts)
        }
    }
}

// --- issue 29 ---
extension ValueParser where Value == Int64 {
    /// Bytes per second: a size with an optional `/s`: `1KiB/s`, `512`, `0`.
    static var rate: ValueParser<Int64> {
        ValueParser(placeholder: "SIZE/s") { text in
            let bare = text.lowercased().hasSuffix("/s") ? String(text.dropLast(2)) : text
            return try ValueParser<Int64>.size.convert(bare)
        }
    }
}

// --- issue 19 ---
extension ValueParser where Value == Int {
    /// A duration in whole seconds: `90`, `90s`, `15m`, `24h`, `7d`.
    static var durationSeconds: ValueParser<Int> {
        ValueParser(placeholder: "DURATION") { text in
            let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
            var digits = Substring(text.lowercased())
            var multiplier = 1
            if let unit = digits.last, let scale = units[unit] {
                multiplier = scale
                digits = digits.dropLast()
            }
            guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                let value = Int(digits), value > 0, value <= Int.max / multiplier
            else {
                throw ValidationError("expected a duration such as 90s, 15m, 24h or 7d, got \(text.debugDescription)")
            }
            return value * multiplier
        }
    }
}
