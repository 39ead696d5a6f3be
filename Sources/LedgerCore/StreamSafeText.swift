/// Text Swift can compare and hash in time proportional to its length. To compare or hash a string that is not
/// ASCII, Swift first puts it in a normal form, and sorts each run of combining marks by insertion: k marks in the
/// wrong order take about k²/4 steps. One 64 KB string of 32,000 accents took 0.47 s to compare with "paid"; one
/// posted body of 60,000 (120 KB) cost the service 1.6 s of CPU to refuse, and 2 ms once held to this. Unicode's
/// stream-safe text format (UAX #15) allows at most 30 non-starters (combining marks) in a row, more than any script
/// needs: text that comes in (request bodies, headers, provider forms, CSV files) is held to it before anything
/// compares or hashes it.
public enum StreamSafeText {
    public static let maximumNonStarters = 30

    /// Whether `scalars` never have more than `maximumNonStarters` combining marks in a row.
    public static func isStreamSafe(_ scalars: some Sequence<Unicode.Scalar>) -> Bool {
        var run = 0
        for scalar in scalars {
            guard scalar.properties.canonicalCombiningClass != .notReordered else {
                run = 0
                continue
            }
            run += 1
            if run > maximumNonStarters { return false }
        }
        return true
    }

    /// The same for UTF-8 bytes (invalid sequences read as U+FFFD, a starter); ASCII is answered without decoding.
    /// Inlinable, so the scan is specialised where it is called: every request's headers go through it.
    @inlinable
    public static func isStreamSafe(utf8 bytes: some Collection<UInt8>) -> Bool {
        guard bytes.contains(where: { $0 >= 0x80 }) else { return true }
        return isStreamSafe(String(decoding: bytes, as: UTF8.self).unicodeScalars)
    }

    /// Why text was refused, for error messages.
    public static let rule = "must not have more than \(maximumNonStarters) combining marks in a row"
}
