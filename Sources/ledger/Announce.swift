import Foundation

/// Writes a line to standard output at once: a long-running `serve` must not hold its token and address back in the
/// buffer until it exits. A reader that went away is no reason to stop serving: the line is dropped.
func announce(_ line: String) {
    try? StandardOutput.line(line)
    try? StandardOutput.flush()
}
