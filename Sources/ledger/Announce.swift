import Foundation

/// Writes a line to standard output at once. `print` is block-buffered when output is a pipe or a file, so a
/// long-running `serve` would hold its token and address back until it exits.
func announce(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
