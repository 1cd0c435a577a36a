/// The `sharepipe(1)` manual page in man(7) markup, generated from the command definitions: every command's usage,
/// description, arguments and options as `--help` shows them.
enum ManPage {
    /// The page's source text.
    static func render(_ tool: CommandLineTool) -> String {
        let tree = CommandTree(tool)
        let title = tool.name.uppercased()
        var page = """
            .TH \(title) 1 "" "\(tool.name) \(tool.version)" "User Commands"
            .SH NAME
            \(tool.name) \\- \(escape(lowercasedFirst(tool.abstract)))
            .SH SYNOPSIS
            .B \(tool.name)
            .I COMMAND
            .RI [ options ]
            .br
            .B \(tool.name)
            .I COMMAND
            .B \\-\\-help
            .SH DESCRIPTION
            \(escape(tool.abstract))
            A command's result, human\\-readable or with
            .B \\-\\-json
            machine\\-readable, goes to standard output; progress, logs, warnings and errors go to standard error.
            With
            .BR \\-\\-json ,
            an error is also printed on standard output as
            .BR "{\\(dqerror\\(dq: {\\(dqcode\\(dq, \\(dqmessage\\(dq}}" .
            .SH COMMANDS

            """
        for entry in tree.commands {
            let words = ([tool.name] + entry.path).joined(separator: " ")
            let usage = entry.command.usage
            page += ".SS \"\(escape(words))\(usage.isEmpty ? "" : " " + escape(usage))\"\n"
            page += escape(entry.command.abstract) + "\n"
            for paragraph in paragraphs(entry.command.discussion) {
                page += ".PP\n" + escape(paragraph) + "\n"
            }
            for positional in entry.command.positionals {
                page += ".TP\n.I \(escape(positional.name))\n\(escape(positional.help))\n"
            }
            for spec in entry.command.options.map(\.spec) {
                let placeholder = spec.kind == .flag ? "" : " \\fI\(escape(spec.placeholder))\\fR"
                page += ".TP\n.B \\-\\-\(spec.name)\(placeholder)\n\(escape(spec.fullHelp))\n"
            }
        }
        page += """
            .SH EXIT STATUS
            .TP
            .B 0
            Success.
            .TP
            .B 1
            Failure (the error names one ERR_* code).
            .TP
            .B 2
            Usage error, or no command given.
            .TP
            .B 3
            Partial success: part of a share was accepted.
            .TP
            .B 4
            Rejected: nothing was accepted.
            .SH ENVIRONMENT
            .TP
            .B STATE_DIRECTORY
            The default state directory (its first entry), as systemd sets it; otherwise ./.sharepipe.
            .TP
            .B NOTIFY_SOCKET
            Set by systemd for Type=notify services: the daemon reports READY, STATUS, WATCHDOG and STOPPING.
            .TP
            .B NO_COLOR
            When set and not empty, no colour is used on a terminal.
            .SH FILES
            .TP
            .I /etc/sharepipe/sharepipe.json
            The packaged service's configuration: JSON whose keys are the long option names of
            .BR "\(tool.name) daemon" .
            .TP
            .I /var/lib/sharepipe
            The packaged service's state directory (spool and ledger).
            .SH SEE ALSO
            .BR systemctl (1),
            .BR systemd.service (5)

            """
        return page
    }

    /// Paragraphs of a help text: blank lines separate them, line breaks inside one are spaces.
    private static func paragraphs(_ text: String) -> [String] {
        text.components(separatedBy: "\n\n").map { paragraph in
            paragraph.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        }.filter { !$0.isEmpty }
    }

    private static func lowercasedFirst(_ text: String) -> String {
        text.prefix(1).lowercased() + text.dropFirst()
    }

    /// Text safe in a man page line: backslashes and hyphens escaped, and a leading `.` or `'` neutralised so it
    /// is not read as a request.
    static func escape(_ text: String) -> String {
        var escaped = text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        if escaped.hasPrefix(".") || escaped.hasPrefix("'") { escaped = "\\&" + escaped }
        return escaped
    }
}
