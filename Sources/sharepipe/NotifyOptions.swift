import SharepipeCore

/// The daemon's webhook flags (issue 33); their names are also the config file's keys.
enum NotifyOptions {
    private static let defaults = NotifyConfiguration()

    static let notify = ListOption(
        "notify", .string(placeholder: "URL"),
        help: "POST each lifecycle event as signed JSON to this http:// or https:// URL.")
    static let secret = Option(
        "notify-secret", .path,
        help: "The Standard Webhooks signing secret (whsec_ and base64), in a file of mode 600.")
    static let events = ListOption(
        "notify-events", .choice(NotificationType.allCases.map(\.rawValue)),
        default: NotificationType.allCases.map(\.rawValue).joined(separator: ","), help: "The events sent.")
    static let maxAge = Option(
        "notify-max-age", .duration, default: "24h",
        help: "Retry a delivery until a 2xx for this long, then keep it as failed (notifications ls|retry).")
    static let backoff = Option(
        "notify-backoff", .milliseconds, default: "5000",
        help: "The first retry's delay (ms); each further one doubles, up to an hour, with jitter.")
    static let timeout = Option(
        "notify-timeout", .milliseconds, default: "30000",
        help: "Give up on one request after this long (ms; connecting: at most 10 s of it).")
    static let hold = Option(
        "notify-hold", .milliseconds, default: "2000",
        help: "Hold deliveries while the daemon ingests or processes, at most this long (ms); 0 sends at once.")

    static let all: [any OptionDeclaration] = [notify, secret, events, maxAge, backoff, timeout, hold]

    /// The notify settings; a bad URL, secret file or duration is a usage error.
    static func configuration(_ arguments: ParsedArguments) throws -> NotifyConfiguration {
        var configuration = NotifyConfiguration()
        for url in arguments[notify] {
            let lower = url.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), url.count > 8,
                !url.contains(where: { $0 == " " || $0 == "\n" })
            else {
                throw ValidationError(
                    option: notify, "expected an http:// or https:// URL, got \(url.debugDescription)")
            }
            if !configuration.urls.contains(url) { configuration.urls.append(url) }
        }
        if let path = arguments[secret] {
            do {
                configuration.secret = try WebhookSecret.load(path: path)
            } catch let error as ShareError {
                throw ValidationError(option: secret, error.message)
            }
        }
        configuration.events = Set(arguments[events].compactMap(NotificationType.init(rawValue:)))
        let age = try arguments.required(maxAge)
        guard age > .zero else { throw ValidationError(option: maxAge, "expected more than 0") }
        configuration.maxAge = age
        configuration.backoff = .milliseconds(max(1, try arguments.required(backoff)))
        configuration.maxBackoff = max(configuration.backoff, defaults.maxBackoff)
        let limit = try arguments.required(timeout)
        guard limit >= 100 else { throw ValidationError(option: timeout, "expected at least 100 ms") }
        configuration.timeout = .milliseconds(limit)
        configuration.connectTimeout = min(defaults.connectTimeout, configuration.timeout)
        configuration.hold = .milliseconds(try arguments.required(hold))
        return configuration
    }
}
