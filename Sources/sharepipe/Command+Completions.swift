/// `sharepipe completions bash|zsh|fish`: prints a completion script generated from the command definitions.
struct CompletionsCommand: Command {
    static let name = "completions"
    static let abstract = "Print a shell completion script for bash, zsh or fish."
    static let options: [any OptionDeclaration] = []
    static let positionals = [
        Positional("SHELL", choices: ShellCompletion.allCases.map(\.rawValue), help: "bash, zsh or fish.")
    ]
    static let discussion = """
        The script is generated from the same definitions as --help, so it offers exactly the commands, options
        and choices this version takes. To try it in the current shell: source <(sharepipe completions bash).
        Packages install it where each shell finds it: /usr/share/bash-completion/completions/sharepipe,
        /usr/share/zsh/vendor-completions/_sharepipe and /usr/share/fish/vendor_completions.d/sharepipe.fish.
        """

    let shell: ShellCompletion

    init(arguments: ParsedArguments) throws {
        let text = arguments.positionals[0]
        guard let shell = ShellCompletion(rawValue: text) else {
            throw ValidationError("SHELL: expected one of bash, zsh, fish, got \(text.debugDescription)")
        }
        self.shell = shell
    }

    func run() throws -> ExitCode {
        Output.write(shell.script(for: .sharepipe))
        return .success
    }
}

/// `sharepipe manpage`: prints the sharepipe(1) man page source. Hidden: the packaging script uses it.
struct ManpageCommand: Command {
    static let name = "manpage"
    static let abstract = "Print the sharepipe(1) manual page (man(7) markup) generated from the command definitions."
    static let isHidden = true
    static let options: [any OptionDeclaration] = []

    init(arguments: ParsedArguments) throws {}

    func run() throws -> ExitCode {
        Output.write(ManPage.render(.sharepipe))
        return .success
    }
}
