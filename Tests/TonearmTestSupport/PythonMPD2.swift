import Foundation

/// python-mpd2 from PyPI in a virtualenv under .build (made once, reused). Two tests may ask at
/// the same moment: the first makes it, the other waits for that (a global `let` is made once).
package func pythonWithMPD2() throws -> String {
    try pythonWithMPD2Once.get()
}

private let pythonWithMPD2Once = Result<String, LineClient.Failure> { () throws(LineClient.Failure) in
    do { return try makePythonWithMPD2() } catch let failure as LineClient.Failure { throw failure } catch {
        throw LineClient.Failure(description: "\(error)")
    }
}

private func makePythonWithMPD2() throws -> String {
    let root = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
    let venv = root.appendingPathComponent(".build/python-mpd2").path
    let python = venv + "/bin/python"
    if FileManager.default.isExecutableFile(atPath: python), try runTool(python, ["-c", "import mpd"], timeout: 20).status == 0 {
        return python
    }
    let made = try runTool("/usr/bin/python3", ["-m", "venv", "--clear", venv], timeout: 120)
    guard made.status == 0 else { throw LineClient.Failure(description: "python3 -m venv: \(made.output)") }
    let installed = try runTool(
        venv + "/bin/pip",
        [
            "install", "--quiet", "--disable-pip-version-check",
            "python-mpd2==3.1.1",
        ], timeout: 240)
    guard installed.status == 0 else { throw LineClient.Failure(description: "pip install python-mpd2: \(installed.output)") }
    return python
}
