import Foundation

/// The async-upnp-client version Tests/Scripts/upnp_control_point.py was verified with (the library
/// Home Assistant's dlna_dmr integration drives renderers with).
package let asyncUPnPClientVersion = "0.49.0"

/// async-upnp-client from PyPI in a virtualenv under .build (made once, reused), for
/// Tests/Scripts/upnp_control_point.py. Two tests may ask at the same moment: the first makes it,
/// the other waits for that (a global `let` is made once).
package func pythonWithUPnPClient() throws -> String {
    try pythonWithUPnPClientOnce.get()
}

/// Tests/Scripts/upnp_control_point.py, run by the python `pythonWithUPnPClient()` returns.
package var upnpControlPointScript: String {
    Fixtures.directory.deletingLastPathComponent().appendingPathComponent("Scripts/upnp_control_point.py").path
}

private let pythonWithUPnPClientOnce = Result<String, LineClient.Failure> { () throws(LineClient.Failure) in
    try pythonVenv(".build/upnp-client", package: "async-upnp-client", version: asyncUPnPClientVersion, module: "async_upnp_client")
}
