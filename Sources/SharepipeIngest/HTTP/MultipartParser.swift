import SharepipeSystem

/// A streaming `multipart/form-data` parser (RFC 7578 over RFC 2046's framing) as a pure state machine: bytes go
/// in as they arrive, in chunks of any size, and events come out; nothing is read from or written to anywhere.
/// Part bodies are never held: each chunk's part data is handed out at once, and at most the length of the
/// delimiter is kept back between chunks (the bytes that may be the start of the next delimiter).
struct MultipartParser {
    /// The headers of one part that matter to a share.
    struct PartHead: Sendable, Equatable {
        /// The form field name (`Content-Disposition: form-data; name=…`).
        var name: String
        /// The file name, when the part is a file (`filename=` or `filename*=`).
        var filename: String?
        /// The part's `Content-Type`, lowercased without parameters; nil when absent.
        var contentType: String?
    }

    /// What the parser saw.
    enum Event: Sendable, Equatable {
        case partBegin(PartHead)
        case partData([UInt8])
        case partEnd
        /// The closing delimiter: the body is complete (an epilogue after it is ignored).
        case end
    }

    private enum State {
        /// Before the first delimiter (the preamble is ignored).
        case preamble
        /// Just after a delimiter: CRLF starts a part, `--` ends the body.
        case afterDelimiter
        /// Reading a part's header block up to the empty line.
        case headers
        /// Inside a part's body.
        case body
        /// After the closing delimiter.
        case epilogue
    }

    /// The largest header block of one part.
    static let maxHeaderBytes = 16 << 10

    private var state = State.preamble
    /// `CRLF--boundary`: what ends a part's body.
    private let delimiter: [UInt8]
    /// Bytes kept back between chunks: a possible partial delimiter, or an unfinished header block.
    private var pending: [UInt8]

    /// A parser for `boundary` (from the `Content-Type` parameter, without the leading dashes).
    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        // The body may start with the delimiter itself, without a CRLF before it: the CRLF is supplied here.
        pending = [0x0D, 0x0A]
    }

    /// Feeds the next bytes of the body.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(ShareError) -> [Event] {
        if case .epilogue = state { return [] }
        var input = pending
        input.append(contentsOf: bytes)
        pending = []
        var events: [Event] = []
        var position = 0
        loop: while position < input.count {
            switch state {
            case .preamble:
                guard let found = Self.find(delimiter, in: input, from: position) else {
                    pending = Array(input[max(position, input.count - delimiter.count + 1)...])
                    break loop
                }
                position = found + delimiter.count
                state = .afterDelimiter
            case .afterDelimiter:
                guard input.count - position >= 2 else {
                    pending = Array(input[position...])
                    break loop
                }
                if input[position] == 0x2D && input[position + 1] == 0x2D {
                    state = .epilogue
                    events.append(.end)
                    break loop
                }
                // Transport padding (spaces or tabs) may precede the CRLF.
                var cursor = position
                while cursor < input.count, input[cursor] == 0x20 || input[cursor] == 0x09 { cursor += 1 }
                guard input.count - cursor >= 2 else {
                    pending = Array(input[position...])
                    break loop
                }
                guard input[cursor] == 0x0D, input[cursor + 1] == 0x0A else {
                    throw ShareError(.badRequest, "multipart: a delimiter is not followed by CRLF or --")
                }
                position = cursor + 2
                state = .headers
            case .headers:
                guard let end = Self.find(Self.headerEnd, in: input, from: position) else {
                    // A part without headers: the empty line comes at once.
                    if input.count - position >= 2, input[position] == 0x0D, input[position + 1] == 0x0A {
                        throw ShareError(.badRequest, "multipart: a part has no Content-Disposition")
                    }
                    guard input.count - position <= Self.maxHeaderBytes else {
                        throw ShareError(.badRequest, "multipart: a part's headers are over \(Self.maxHeaderBytes) bytes")
                    }
                    pending = Array(input[position...])
                    break loop
                }
                let head = try Self.partHead(Array(input[position..<end]))
                events.append(.partBegin(head))
                position = end + Self.headerEnd.count
                state = .body
            case .body:
                if let found = Self.find(delimiter, in: input, from: position) {
                    if found > position { events.append(.partData(Array(input[position..<found]))) }
                    events.append(.partEnd)
                    position = found + delimiter.count
                    state = .afterDelimiter
                } else {
                    // Everything but a tail that could be the start of the delimiter is part data now.
                    let keep = Self.partialMatchLength(delimiter, atEndOf: input, from: position)
                    let cut = input.count - keep
                    if cut > position { events.append(.partData(Array(input[position..<cut]))) }
                    pending = Array(input[cut...])
                    break loop
                }
            case .epilogue:
                break loop
            }
        }
        return events
    }

    /// The body ended; a body without its closing delimiter is malformed.
    func finish() throws(ShareError) {
        guard case .epilogue = state else {
            throw ShareError(.badRequest, "multipart: the body ended before the closing delimiter")
        }
    }

    private static let headerEnd: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A]

    /// The first index of `needle` in `haystack` at or after `start`.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, haystack.count - start >= needle.count else { return nil }
        var index = start
        let last = haystack.count - needle.count
        while index <= last {
            guard let candidate = haystack[index...last].firstIndex(of: first) else { return nil }
            var matched = true
            for offset in 1..<needle.count where haystack[candidate + offset] != needle[offset] {
                matched = false
                break
            }
            if matched { return candidate }
            index = candidate + 1
        }
        return nil
    }

    /// How many bytes at the end of `haystack` (after `start`) are a proper prefix of `needle`.
    static func partialMatchLength(_ needle: [UInt8], atEndOf haystack: [UInt8], from start: Int) -> Int {
        let longest = min(needle.count - 1, haystack.count - start)
        var length = longest
        while length > 0 {
            if haystack[(haystack.count - length)...].elementsEqual(needle[..<length]) { return length }
            length -= 1
        }
        return 0
    }

    /// Parses a part's header block (without the terminating empty line).
    static func partHead(_ block: [UInt8]) throws(ShareError) -> PartHead {
        let text = String(decoding: block, as: UTF8.self)
        var disposition: HeaderValue?
        var contentType: String?
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":") else {
                throw ShareError(.badRequest, "multipart: a part header line has no colon")
            }
            let name = line[..<colon].trimmingSpaces().lowercased()
            let value = String(line[line.index(after: colon)...])
            switch name {
            case "content-disposition": disposition = HeaderValue(value)
            case "content-type": contentType = HeaderValue(value).value.lowercased()
            default: continue
            }
        }
        guard let disposition, disposition.value.lowercased() == "form-data", let name = disposition["name"] else {
            throw ShareError(.badRequest, "multipart: a part has no Content-Disposition: form-data with a name")
        }
        return PartHead(name: name, filename: disposition.filename, contentType: contentType)
    }
}
