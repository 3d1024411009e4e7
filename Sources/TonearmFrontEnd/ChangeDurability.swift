/// What the request path needs of the player's numbered changes (its `ChangeLog`): how many
/// are recorded, and a call once those up to a number are durable. A front-end hands these
/// two functions over, not the log: the request path needs no player, and its tests link
/// neither FFmpeg nor ALSA.
package struct ChangeDurability: Sendable {
    package let recorded: @Sendable () -> Int
    package let whenDurable: @Sendable (Int, @escaping @Sendable () -> Void) -> Void

    package init(
        recorded: @escaping @Sendable () -> Int,
        whenDurable: @escaping @Sendable (Int, @escaping @Sendable () -> Void) -> Void
    ) {
        self.recorded = recorded
        self.whenDurable = whenDurable
    }
}
