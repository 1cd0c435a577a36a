import SharepipeCore

/// `sharepipe doctor`: one line per host check, with a hint for whatever is wrong; non-zero on any failure.
struct DoctorCommand: Command {
    static let inbox = Option(
        "inbox", .path(placeholder: "DIR"), help: "The inbox to check (default: the config file's, else ./inbox).")
    static let config = Option(
        "config", .path,
        help: "Check this daemon config file too; its state directory and inbox are checked unless given here.")

    static let name = "doctor"
    static let abstract = "Check that this host can run sharepipe; exit 1 when a check fails."
    static let options: [any OptionDeclaration] =
        [ProcessorOptions.state, inbox, ProcessorOptions.output, config] + LedgerOptions.all + [CommonOptions.json] + SpoolLimitOptions.all
        + [DaemonCommand.maxFileSize]
        + [DaemonCommand.listen, DaemonCommand.tokens, DaemonCommand.tlsCert, DaemonCommand.tlsKey]  // issue 19
    static let discussion = """
        Checks: libmagic's database loads and sniffs a JPEG header as image/jpeg; the state directory exists (or
        can be created) and takes new files; its stage directories share one file system; the inbox is readable
        and writable (or can be created); an inotify instance can be created, with the limits from
        /proc/sys/fs/inotify (unknown, not a failure, under systemd's ProcSubset=pid); free space on the state
        directory's file system (a failure under --min-free, a warning under --min-free plus --max-file-size); the
        spool limits in force (--min-free, --max-pending-shares, --max-pending-bytes, --max-file-size, from the
        command line, else the config file, else the defaults); for the state directory, the inbox and the output,
        the file system's type, the barrier (syncfs or fsync per file), the claim method (renameat2 or link) and the
        capacity (unknown where statfs reports none: --min-free is then not applied); with --config, that the
        file parses and every key is a daemon option with a valid value; with --listen (given or in the config file),
        the HTTP listeners (one beyond loopback needs --tokens), the tokens file's mode and lines, and the TLS
        certificate (parses, matches its key, not expired). Nothing is created or changed: writability is proven with
        an empty probe file, and the rename flag with a scratch directory, removed at once.
        """

    /// One check in the JSON array; every key always present, `hint` null when the check passed.
    struct Entry: Encodable {
        var check: String
        var ok: Bool
        /// `ok`, `warn` or `fail`.
        var status: String
        var detail: String
        var hint: String?

        enum CodingKeys: String, CodingKey {
            case check, ok, status, detail, hint
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(check, forKey: .check)
            try container.encode(ok, forKey: .ok)
            try container.encode(status, forKey: .status)
            try container.encode(detail, forKey: .detail)
            try container.encode(hint, forKey: .hint)
        }
    }

    let state: String?
    let inboxPath: String?
    let outputPath: String?
    let configPath: String?
    let ledgerGiven: [(String, String?)]
    let json: Bool
    /// The spool limits given on the command line, as `--name=value` words for the daemon's own parsing.
    let limitArguments: [String]
    /// issue 19: the HTTP options given here, checked with those of the config file.
    let arguments: ParsedArguments

    init(arguments: ParsedArguments) throws {
        state = arguments[ProcessorOptions.state]
        inboxPath = arguments[Self.inbox]
        outputPath = arguments.isSpecified(ProcessorOptions.output) ? arguments[ProcessorOptions.output] : nil
        configPath = arguments[Self.config]
        ledgerGiven = [
            ("ledger", arguments.isSpecified(LedgerOptions.ledger) ? arguments[LedgerOptions.ledger] : nil),
            ("ledger-lease", arguments.isSpecified(LedgerOptions.lease)
                ? arguments[LedgerOptions.lease].map { "\($0)" } : nil),
        ]
        json = arguments[CommonOptions.json]
        self.arguments = arguments
        func given<Value>(_ option: Option<Value>) -> String? {
            guard arguments.isSpecified(option), let value = arguments[option] else { return nil }
            return "--\(option.spec.name)=\(value)"
        }
        limitArguments = [
            given(SpoolLimitOptions.minFree), given(SpoolLimitOptions.maxPendingShares),
            given(SpoolLimitOptions.maxPendingBytes), given(DaemonCommand.maxFileSize),
        ].compactMap { $0 }
    }

    func run() throws -> ExitCode {
        var state = state ?? Spool.defaultRoot()
        var inbox = inboxPath ?? "inbox"
        var limits = LoaderConfiguration()
        var output: String?
        var ledger = LedgerLocation.sqlite
        var configCheck: DiagnosticCheck?
        // The daemon's own reading of its flags and config file decides what a valid config is, and which state
        // directory and inbox it would use.
        do {
            let tokens = ([("state", self.state), ("inbox", inboxPath), ("output", outputPath), ("config", configPath)]
                + ledgerGiven)
                .compactMap { name, value in value.map { "--\(name)=\($0)" } }
            let settings = try DaemonCommand.settings(
                ParsedArguments(parsing: tokens + limitArguments, options: DaemonCommand.options, positionals: []))
            state = settings.configuration.state
            inbox = settings.configuration.inbox
            limits = settings.configuration.loader
            if case .store(let directory, _) = settings.configuration.processor { output = directory }
            ledger = settings.configuration.ledger
            if let configPath {
                configCheck = DiagnosticCheck(
                    name: "config", status: .ok, detail: "\(configPath) is valid: every key is a daemon option")
            }
        } catch {
            configCheck = DiagnosticCheck(
                name: "config", status: .failure, detail: "\(error)",
                hint: "keys are the long option names of \"sharepipe daemon --help\", values as on the command line")
        }
        let checks = Diagnostics.run(state: state, inbox: inbox, output: output, limits: limits) + Diagnostics.ledger(ledger)
            + (configCheck.map { [$0] } ?? []) + httpChecks()
        if json {
            try Output.printJSON(checks.map {
                Entry(check: $0.name, ok: $0.ok, status: $0.status.rawValue, detail: $0.detail, hint: $0.hint)
            })
        } else {
            printReport(checks)
        }
        return checks.allSatisfy(\.ok) ? .success : .failure
    }

    /// issue 19: the HTTP listeners, tokens file and certificate, from these flags over the config file's.
    private func httpChecks() -> [DiagnosticCheck] {
        var words = configPath.map { ["--config=\($0)"] } ?? []
        words += arguments[DaemonCommand.listen].map { "--listen=\($0)" }
        for option in [DaemonCommand.tokens, DaemonCommand.tlsCert, DaemonCommand.tlsKey] {
            if let value = arguments[option] { words.append("--\(option.spec.name)=\(value)") }
        }
        guard let parsed = try? ParsedArguments(parsing: words, options: DaemonCommand.options, positionals: []),
            let merged = try? DaemonCommand.merged(parsed)
        else { return [] }
        let listen = merged[DaemonCommand.listen].compactMap { try? ListenAddress(parsing: $0) }
        return Diagnostics.http(
            listen: listen, tokensPath: merged[DaemonCommand.tokens], certificatePath: merged[DaemonCommand.tlsCert],
            keyPath: merged[DaemonCommand.tlsKey])
    }

    private func printReport(_ checks: [DiagnosticCheck]) {
        var rows: [[String]] = []
        for check in checks {
            let label: String
            switch check.status {
            case .ok: label = Output.styled("ok", .green, for: .standardOutput)
            case .warning: label = Output.styled("warn", .yellow, for: .standardOutput)
            case .failure: label = Output.styled("FAIL", .red, for: .standardOutput)
            }
            rows.append([label, check.name, check.detail])
            if let hint = check.hint {
                rows.append(["", "", Output.styled("hint: " + hint, .dim, for: .standardOutput)])
            }
        }
        Output.write(Output.table(rows))
        let failed = checks.filter { $0.status == .failure }.count
        let warned = checks.filter { $0.status == .warning }.count
        var summary = failed == 0 ? "all \(checks.count) checks passed" : "\(failed) of \(checks.count) checks failed"
        if warned > 0 { summary += ", \(warned) warning\(warned == 1 ? "" : "s")" }
        Output.line("doctor: \(summary)")
    }
}
