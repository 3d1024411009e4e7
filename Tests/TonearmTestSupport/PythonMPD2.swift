import Foundation

/// python-mpd2 from PyPI in a virtualenv under .build (made once, reused). Two tests may ask at
/// the same moment: the first makes it, the other waits for that (a global `let` is made once).
package func pythonWithMPD2() throws -> String {
    try pythonWithMPD2Once.get()
}

private let pythonWithMPD2Once = Result<String, LineClient.Failure> { () throws(LineClient.Failure) in
    try pythonVenv(".build/python-mpd2", package: "python-mpd2", version: "3.1.1", module: "mpd")
}

/// A virtualenv under the package's root with one PyPI package at a pinned version; reused
/// when it has that version, made anew otherwise. Returns its python.
func pythonVenv(_ directory: String, package: String, version: String, module: String) throws(LineClient.Failure) -> String {
    do {
        let root = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
        let venv = root.appendingPathComponent(directory).path
        let python = venv + "/bin/python"
        let check = [
            "-c",
            "import \(module), importlib.metadata, sys; sys.exit(importlib.metadata.version('\(package)') != '\(version)')",
        ]
        if FileManager.default.isExecutableFile(atPath: python), try runTool(python, check, timeout: 20).status == 0 {
            return python
        }
        let made = try runTool("/usr/bin/python3", ["-m", "venv", "--clear", venv], timeout: 120)
        guard made.status == 0 else { throw LineClient.Failure(description: "python3 -m venv: \(made.output)") }
        let installed = try runTool(
            venv + "/bin/pip", ["install", "--quiet", "--disable-pip-version-check", "\(package)==\(version)"], timeout: 240)
        guard installed.status == 0 else { throw LineClient.Failure(description: "pip install \(package): \(installed.output)") }
        let imported = try runTool(python, check, timeout: 20)
        guard imported.status == 0 else { throw LineClient.Failure(description: "import \(module) \(version): \(imported.output)") }
        return python
    } catch let failure as LineClient.Failure {
        throw failure
    } catch {
        throw LineClient.Failure(description: "\(error)")
    }
}
