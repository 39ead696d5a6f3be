import Foundation
import LedgerTestSupport
import LedgerCore

/// The system's Chromium, headless, driven through chromedriver's W3C WebDriver protocol (plain HTTP and JSON): the
/// console is tested in a real browser. Both come from the distribution's packages (`.ci/run` installs `chromium` and
/// `chromium-driver` when missing); nothing downloads a browser of its own. Waiting is WebDriver's own: an implicit
/// wait makes "find element" wait until the element exists, for up to 60 s — on a CI machine running every suite at
/// once, a search that takes 0.1 s alone has been seen to take more than 20 s.
final class HeadlessBrowser: Sendable {
    let driver: SpawnedProcess
    let endpoint: String
    let session: String

    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    struct WebDriverError: Error, CustomStringConvertible {
        let description: String
    }

    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let chromedriver = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"].first { FileManager.default.isExecutableFile(atPath: $0) }

    private init(driver: SpawnedProcess, endpoint: String, session: String) {
        self.driver = driver
        self.endpoint = endpoint
        self.session = session
    }

    /// Starts chromedriver on a port of its own and opens a headless session.
    static func start() async throws -> HeadlessBrowser {
        guard let chromium, let chromedriver else {
            throw Missing(description: "Chromium and chromedriver are needed for the console tests: apt-get install chromium chromium-driver")
        }
        var lastError: (any Error)?
        for _ in 0..<5 {
            let port = Int.random(in: 20_000...60_000)
            let driver = SpawnedProcess()
            driver.executableURL = URL(fileURLWithPath: chromedriver)
            driver.arguments = ["--port=\(port)", "--allowed-ips=127.0.0.1"]
            driver.standardOutput = FileHandle.nullDevice
            driver.standardError = FileHandle.nullDevice
            try driver.run()
            let endpoint = "http://127.0.0.1:\(port)"
            do {
                try await waitUntilReady(endpoint, driver: driver)
                let created = try await call("POST", endpoint + "/session", [
                    "capabilities": ["alwaysMatch": [
                        "browserName": "chrome",
                        "goog:chromeOptions": [
                            "binary": .string(chromium),
                            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                     "--window-size=1280,1000", "--no-first-run", "--disable-extensions"],
                        ],
                    ]],
                ])
                guard case .string(let session)? = created["sessionId"] else { throw WebDriverError(description: "no session: \(created)") }
                let browser = HeadlessBrowser(driver: driver, endpoint: endpoint, session: session)
                _ = try await browser.command("POST", "/timeouts", ["implicit": 60_000, "script": 60_000, "pageLoad": 60_000])
                return browser
            } catch {
                lastError = error
                stop(driver)
            }
        }
        throw lastError ?? WebDriverError(description: "chromedriver did not start")
    }

    /// chromedriver answers `/status` once it listens; until then the connection is refused.
    private static func waitUntilReady(_ endpoint: String, driver: SpawnedProcess) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        var last = "not started"
        while ContinuousClock.now < deadline, driver.isRunning {
            do {
                if try await call("GET", endpoint + "/status", nil)["ready"] == .bool(true) { return }
                last = "not ready"
            } catch {
                last = "\(error)"
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw WebDriverError(description: "chromedriver did not become ready: \(last)")
    }

    func close() async {
        _ = try? await command("DELETE", "", nil)
        Self.stop(driver)
    }

    /// Kills chromedriver (Foundation reaps it). Not `terminate()`: a process started from the test process inherits
    /// the spawning thread's blocked signals, SIGTERM among them, and every run left its chromedrivers running.
    private static func stop(_ driver: SpawnedProcess) {
        if driver.isRunning { kill(driver.processIdentifier, SIGKILL) }
    }

    // MARK: Commands

    func open(_ url: String) async throws {
        _ = try await command("POST", "/url", ["url": .string(url)])
    }

    /// The window's size, as a phone's or a laptop's.
    func resize(width: Int, height: Int) async throws {
        _ = try await command("POST", "/window/rect", ["width": .int(Int64(width)), "height": .int(Int64(height))])
    }

    /// The first element matching a CSS selector, waiting (implicitly) until one exists.
    func element(_ selector: String) async throws -> String {
        let found = try await command("POST", "/element", ["using": "css selector", "value": .string(selector)])
        guard case .object(let members) = found, let id = members.values.first, case .string(let element) = id else {
            throw WebDriverError(description: "no element \(selector): \(found)")
        }
        return element
    }

    func text(_ selector: String) async throws -> String {
        let element = try await element(selector)
        return Self.string(try await command("GET", "/element/\(element)/text", nil)) ?? ""
    }

    func type(_ text: String, into selector: String) async throws {
        let element = try await element(selector)
        _ = try await command("POST", "/element/\(element)/clear", [:])
        _ = try await command("POST", "/element/\(element)/value", ["text": .string(text)])
    }

    /// Chooses a file for an `<input type=file>`.
    func attach(_ path: String, to selector: String) async throws {
        let element = try await element(selector)
        _ = try await command("POST", "/element/\(element)/value", ["text": .string(path)])
    }

    func click(_ selector: String) async throws {
        let element = try await element(selector)
        _ = try await command("POST", "/element/\(element)/click", [:])
    }

    /// Runs a script in the page (the test's own: the page's CSP governs the page's scripts, not WebDriver's).
    @discardableResult
    func run(_ script: String, _ arguments: [JSONValue] = []) async throws -> JSONValue {
        try await command("POST", "/execute/sync", ["script": .string(script), "args": .array(arguments)])
    }

    /// Waits, through an async script, until `condition` (a JavaScript expression) holds in the page.
    func waitUntil(_ condition: String) async throws {
        let result = try await command("POST", "/execute/async", ["script": .string("""
            const done = arguments[arguments.length - 1];
            const check = () => { try { if (\(condition)) return done(true); } catch (e) {} requestAnimationFrame(check); };
            check();
            """), "args": []])
        guard result == .bool(true) else { throw WebDriverError(description: "never held: \(condition)") }
    }

    /// A PNG of the page, written to `directory/name.png`; the path is printed so CI's log names the artifact.
    @discardableResult
    func screenshot(_ name: String, in directory: URL) async throws -> URL {
        guard let base64 = Self.string(try await command("GET", "/screenshot", nil)), let png = Data(base64Encoded: base64) else {
            throw WebDriverError(description: "no screenshot")
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent(name + ".png")
        try png.write(to: file)
        print("console screenshot: \(file.path)")
        return file
    }

    static func string(_ value: JSONValue?) -> String? {
        if case .string(let text)? = value { text } else { nil }
    }

    private func command(_ method: String, _ path: String, _ body: JSONValue?) async throws -> JSONValue {
        try await Self.call(method, "\(endpoint)/session/\(session)\(path)", body)
    }

    /// One WebDriver call: the answer's `value`, or its error as a thrown `WebDriverError`. Sent with curl: Foundation's
    /// URLSession on Linux fails on chromedriver's answers ("Failed writing header"). The answer goes to a file, not a
    /// pipe: a screenshot is larger than a pipe's buffer, and curl would wait on it forever.
    private static func call(_ method: String, _ url: String, _ body: JSONValue?) async throws -> JSONValue {
        let answerFile = FileManager.default.temporaryDirectory.appendingPathComponent("webdriver-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: answerFile) }
        let curl = SpawnedProcess()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["curl", "-s", "-S", "--max-time", "90", "-o", answerFile.path, "-X", method, url]
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body.canonicalJSON] }
        curl.arguments = arguments
        curl.standardOutput = FileHandle.nullDevice
        curl.standardError = FileHandle.nullDevice
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            curl.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try curl.run() } catch { continuation.resume(throwing: error) }
        }
        guard status == 0 else { throw WebDriverError(description: "curl \(method) \(url) exited \(status)") }
        let data = try Data(contentsOf: answerFile)
        let answer = try JSONValue(parsing: Array(data))
        let value = answer["value"] ?? .null
        if case .string(let error)? = value["error"] {
            throw WebDriverError(description: "\(error): \(string(value["message"]) ?? "")")
        }
        return value
    }
}
