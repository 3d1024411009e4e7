/// At most `limit` events per `window` seconds, for log lines that could flood a journal: each
/// event asks `admit`, which says whether it goes through, whether it is the one just past the
/// limit (the moment to say the rest are left out), or whether it is left out. Time is given by
/// the caller (any monotonic seconds), so the budget holds no clock.
package struct RateBudget: Sendable {
    package enum Verdict: Sendable { case admitted, firstLeftOut, leftOut }

    package let limit: Int
    package let window: Double
    private var windowStart = -Double.infinity
    private var count = 0

    package init(limit: Int, window: Double) {
        self.limit = limit
        self.window = window
    }

    package mutating func admit(at now: Double) -> Verdict {
        if now - windowStart >= window {
            windowStart = now
            count = 0
        }
        count += 1
        if count <= limit { return .admitted }
        return count == limit + 1 ? .firstLeftOut : .leftOut
    }
}
