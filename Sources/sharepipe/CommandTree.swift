/// The visible commands of a `CommandLineTool` as a flat list, in the order help lists them: what shell completion
/// and the man page are generated from, so that neither can drift from `--help`.
struct CommandTree {
    /// A command word that selects subcommands; the root (no words) is the tool itself.
    struct Group {
        var path: [String]
        var children: [any CommandNode.Type]
    }

    /// A runnable command and the words that select it.
    struct Entry {
        var path: [String]
        var command: any Command.Type
    }

    /// How a shell completes a value.
    enum ValueCompletion {
        /// Free text: nothing to offer.
        case none
        case file
        case directory
        case words([String])
    }

    let groups: [Group]
    let commands: [Entry]

    init(_ tool: CommandLineTool) {
        var groups: [Group] = []
        var commands: [Entry] = []
        func walk(_ level: [any CommandNode.Type], path: [String]) {
            let visible = level.filter { !$0.isHidden }
            groups.append(Group(path: path, children: visible))
            for node in visible {
                if let command = node as? any Command.Type {
                    commands.append(Entry(path: path + [node.name], command: command))
                } else if let group = node as? any CommandGroup.Type {
                    walk(group.subcommands, path: path + [node.name])
                }
            }
        }
        walk(tool.commands, path: [])
        self.groups = groups
        self.commands = commands
    }

    /// Every word sequence that names a group or a command, joined with spaces: `types`, `types show`.
    var allPaths: [String] {
        (groups.dropFirst().map(\.path) + commands.map(\.path)).map { $0.joined(separator: " ") }
    }

    /// What an option's value completes to: its choices, a directory for `DIR`, a file for `FILE` and `PATH`.
    static func completion(of spec: OptionSpec) -> ValueCompletion {
        if !spec.choices.isEmpty { return .words(spec.choices) }
        switch spec.placeholder {
        case "DIR": return .directory
        case "FILE", "PATH": return .file
        default: return .none
        }
    }

    /// What a positional argument completes to: its choices, else a file when it names one.
    static func completion(of positional: Positional) -> ValueCompletion {
        if !positional.choices.isEmpty { return .words(positional.choices) }
        return ["FILE", "PATH", "ATTACHMENT"].contains(positional.name) ? .file : .none
    }

    /// The first sentence of a help text, for the one-line descriptions shells show.
    static func summary(_ text: String) -> String {
        guard let end = text.range(of: ". ") else { return text }
        return String(text[..<end.lowerBound]) + "."
    }
}
