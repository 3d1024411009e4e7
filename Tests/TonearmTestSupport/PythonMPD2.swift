import Foundation
import Testing

/// python-mpd2 from PyPI in a virtualenv under .build (made once, reused).
public func pythonWithMPD2() throws -> String {
    let root = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
    let venv = root.appendingPathComponent(".build/python-mpd2").path
    let python = venv + "/bin/python"
    if FileManager.default.isExecutableFile(atPath: python), try runTool(python, ["-c", "import mpd"], timeout: 20).status == 0 {
        return python
    }
    let made = try runTool("/usr/bin/python3", ["-m", "venv", "--clear", venv], timeout: 120)
    try #require(made.status == 0, "python3 -m venv: \(made.output)")
    let installed = try runTool(venv + "/bin/pip", ["install", "--quiet", "--disable-pip-version-check",
                                                    "python-mpd2==3.1.1"], timeout: 240)
    try #require(installed.status == 0, "pip install python-mpd2: \(installed.output)")
    return python
}
