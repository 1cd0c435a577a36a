/// Names in the inbox that the watcher never reports and never touches: hidden, temporary and OS litter.
struct IgnoreRules: Sendable, Equatable {
    /// The globs of `default`: hidden and partial-download names, and what Windows, Synology and macOS leave behind.
    static let defaultGlobs = [
        ".*", "*.part", "*.tmp", "*.crdownload", "~$*", "Thumbs.db", "desktop.ini", "@eaDir", "__MACOSX",
    ]

    /// The rules sharepipe uses unless `--ignore` replaces them.
    static let `default` = IgnoreRules(globs: defaultGlobs)

    /// The shell globs (fnmatch(3)) matched against a whole top-level name.
    let globs: [String]

    init(globs: [String]) {
        self.globs = globs
    }

    /// Whether a top-level inbox entry with this name is left alone.
    func ignores(_ name: String) -> Bool {
        globs.contains { System.matchesGlob(name, pattern: $0) }
    }
}
