import Foundation

/// A value a test shares with a helper thread of its own, under a lock.
package final class Guarded<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    package init(_ value: Value) { stored = value }

    package var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }

    package func update(_ change: (inout Value) -> Void) {
        lock.withLock { change(&stored) }
    }
}
