/// Content sniffing as the loader uses it: how many leading bytes libmagic sees.
enum Sniffer {
    /// libmagic looks at this many leading bytes; enough for every signature and for text encodings.
    static let sniffLength = 64 << 10
}
