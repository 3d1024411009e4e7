import Testing
import TonearmFrontEnd

@Suite("Access policy: who may control, read, or nothing")
struct AccessPolicyTests {
    static let daemon: UInt32 = 500
    static let policy = AccessPolicy(allowUIDs: [1000], allowGIDs: [29], readGIDs: [100])

    @Test(arguments: [
        // uid, groups, level
        (UInt32(0), Set<UInt32>([0]), AccessPolicy.Level.control),  // root, always
        (daemon, Set<UInt32>([500]), .control),  // the daemon's own user, always
        (1000, Set<UInt32>([1000]), .control),  // listed uid
        (1001, Set<UInt32>([1001, 29]), .control),  // listed group (supplementary)
        (1002, Set<UInt32>([100]), .read),  // read group
        (1003, Set<UInt32>([100, 29]), .control),  // control wins over read
        (1004, Set<UInt32>([1004]), .none),  // nobody listed
    ])
    func levels(uid: UInt32, groups: Set<UInt32>, expected: AccessPolicy.Level) {
        #expect(Self.policy.level(uid: uid, groups: groups, daemonUID: Self.daemon) == expected)
    }

    @Test func withNoListEveryoneControls() {
        #expect(AccessPolicy().isOpen)
        #expect(AccessPolicy().level(uid: 4242, groups: [4242], daemonUID: Self.daemon) == .control)
    }
}
