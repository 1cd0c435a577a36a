/// Where the store processor puts each copy under `--output`: a relative path template of `/`-separated segments
/// in which `{group}`, `{share}`, `{folder}`, `{name}` and `{date}` are replaced per copy. The default,
/// `{group}/{name}`, sorts copies by type; `{folder}/{name}` or `{date}/{share}/{name}` keeps a share together.
///
/// A template can never lead outside the output directory: it must be relative, may not contain `.` or `..`
/// segments, and every field value is made a single safe path segment (no `/`, no control characters, no leading
/// dot). A segment that comes out empty (`{folder}` of a single dropped file) is left out; the last segment must
/// contain `{name}`, so each copy keeps a name of its own, made unique with ` (1)`, ` (2)` … when taken.
package struct StorePath: Sendable, Equatable, CustomStringConvertible {
    /// A field of the template.
    package enum Field: String, Sendable, CaseIterable {
        /// The type group: image, video, audio, pdf, text, archive or other.
        case group
        /// The share id (a UUID).
        case share
        /// The name of the folder dropped into the inbox; empty for a dropped file or a `share` command.
        case folder
        /// The attachment's suggested name, made safe, with its extension.
        case name
        /// The share's creation date, `YYYY-MM-DD` (UTC).
        case date
    }

    /// A refused template; the message says what is wrong with it.
    package struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        package var message: String
        package var description: String { message }
    }

    enum Piece: Sendable, Equatable {
        case text(String)
        case field(Field)
    }

    /// The template as written.
    package let template: String
    let segments: [[Piece]]

    /// Today's layout: `OUTPUT/<group>/<name>`.
    package static let `default` = StorePath(checked: "{group}/{name}", segments: [[.field(.group)], [.field(.name)]])

    private init(checked template: String, segments: [[Piece]]) {
        self.template = template
        self.segments = segments
    }

    /// Parses and checks a template; throws `Invalid` for one that could escape the output directory or is
    /// malformed.
    package init(_ template: String) throws {
        let fields = Field.allCases.map { "{\($0.rawValue)}" }.joined(separator: " ")
        guard !template.isEmpty else { throw Invalid(message: "expected a path template such as {group}/{name}") }
        guard !template.hasPrefix("/") else {
            throw Invalid(message: "\(template.debugDescription) is absolute; it must be relative to --output")
        }
        var segments: [[Piece]] = []
        for segment in template.split(separator: "/", omittingEmptySubsequences: false) {
            guard !segment.isEmpty else {
                throw Invalid(message: "\(template.debugDescription) has an empty segment (\"//\" or a trailing /)")
            }
            guard segment != ".", segment != ".." else {
                throw Invalid(message: "\(template.debugDescription) has a \(segment) segment: it would leave --output")
            }
            var pieces: [Piece] = []
            var rest = Substring(segment)
            while !rest.isEmpty {
                if rest.first == "{" {
                    guard let close = rest.firstIndex(of: "}") else {
                        throw Invalid(message: "\(template.debugDescription) has a { without its }")
                    }
                    let word = String(rest[rest.index(after: rest.startIndex)..<close])
                    guard let field = Field(rawValue: word) else {
                        throw Invalid(message: "unknown field {\(word)} in \(template.debugDescription); "
                            + "the fields are \(fields)")
                    }
                    pieces.append(.field(field))
                    rest = rest[rest.index(after: close)...]
                } else {
                    let text = rest.prefix { $0 != "{" }
                    guard !text.contains("}") else {
                        throw Invalid(message: "\(template.debugDescription) has a } without its {")
                    }
                    pieces.append(.text(String(text)))
                    rest = rest.dropFirst(text.count)
                }
            }
            segments.append(pieces)
        }
        guard segments.last?.contains(.field(.name)) == true else {
            throw Invalid(message: "the last segment of \(template.debugDescription) must contain {name}")
        }
        self.init(checked: template, segments: segments)
    }

    package var description: String { template }

    /// The path components for one copy: directories first, the file name last. Every value is one safe segment;
    /// a directory segment that comes out empty is left out, and one that would read `.` or `..` becomes `_`.
    func components(_ values: [Field: String]) -> [String] {
        var components: [String] = []
        for (position, pieces) in segments.enumerated() {
            var text = ""
            for piece in pieces {
                switch piece {
                case .text(let literal): text += literal
                case .field(let field): text += values[field] ?? ""
                }
            }
            if text.isEmpty && position < segments.count - 1 { continue }
            if text == "." || text == ".." { text = "_" }
            components.append(Self.capped(text))
        }
        return components
    }

    /// At most 240 UTF-8 bytes, cut at a character boundary: below NAME_MAX with room for ` (n)`.
    private static func capped(_ text: String) -> String {
        guard text.utf8.count > 240 else { return text }
        var result = ""
        for character in text {
            if result.utf8.count + character.utf8.count > 240 { break }
            result.append(character)
        }
        return result
    }
}
