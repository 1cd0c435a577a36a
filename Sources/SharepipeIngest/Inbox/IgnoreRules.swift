import SharepipeSystem

/// Names in the inbox that the watcher never reports and never touches: hidden, temporary and OS litter, and
/// always what sharepipe itself writes into the inbox, whatever the user's globs say.
package struct IgnoreRules: Sendable, Equatable {
    /// The globs of `default`: hidden and partial-download names, and what Windows, Synology and macOS leave behind.
    package static let defaultGlobs = [
        ".*", "*.part", "*.tmp", "*.crdownload", "~$*", "Thumbs.db", "desktop.ini", "@eaDir", "__MACOSX",
    ]

    /// What sharepipe writes into the inbox: the rejection folder and `doctor`'s writability probes. These are
    /// ignored even when `--ignore` replaces the default globs, so the daemon never ingests its own output.
    static let reservedGlobs = [".rejected", ".sharepipe-*"]

    /// The rules sharepipe uses unless `--ignore` replaces them.
    static let `default` = IgnoreRules(globs: defaultGlobs)

    /// The shell globs (fnmatch(3)) matched against a whole top-level name, besides `reservedGlobs`.
    let globs: [String]

    package init(globs: [String]) {
        self.globs = globs
    }

    /// Whether an inbox entry with this name is left alone.
    package func ignores(_ name: String) -> Bool {
        (Self.reservedGlobs + globs).contains { System.matchesGlob(name, pattern: $0) }
    }
}
