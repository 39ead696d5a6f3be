/// The console's static files (Assets/), embedded in the binary like the SQL: no build step, no CDN, nothing
/// fetched at run time, so the console works in an air-gapped office. `LedgerHTTP` serves them at `/console/`.
public enum ConsoleAssets {
    public struct Asset: Sendable {
        public let bytes: [UInt8]
        public let contentType: String
    }

    /// The file of that name (`index.html`, `console.css`, `console.js`); nil for any other.
    public static func asset(named name: String) -> Asset? {
        switch name {
        case "", "index.html": Asset(bytes: PackageResources.index_html, contentType: "text/html; charset=utf-8")
        case "console.css": Asset(bytes: PackageResources.console_css, contentType: "text/css; charset=utf-8")
        case "console.js": Asset(bytes: PackageResources.console_js, contentType: "text/javascript; charset=utf-8")
        default: nil
        }
    }
}
