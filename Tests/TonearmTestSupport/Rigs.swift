// The real peers and clients (LineClient, FaultProxy, SnapcastRig, Fixtures, …) live in
// TonearmRigs, which the benchmark shares; every test that imports the support has them too.
@_exported import TonearmRigs
