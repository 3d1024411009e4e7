import Foundation

/// A budget a figure must meet: at most or at least a value.
enum Budget {
    case atMost(Double)
    case atLeast(Double)

    func passes(_ value: Double) -> Bool {
        switch self {
        case .atMost(let limit): value <= limit
        case .atLeast(let limit): value >= limit
        }
    }

    var text: String {
        switch self {
        case .atMost(let limit): "≤ \(format(limit))"
        case .atLeast(let limit): "≥ \(format(limit))"
        }
    }
}

/// One measured figure: repeated values, reported as median with min and max.
struct Figure {
    let name: String
    let unit: String
    let values: [Double]
    let budget: Budget?

    var sorted: [Double] { values.sorted() }
    var median: Double {
        let s = sorted
        guard !s.isEmpty else { return .nan }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }
    var min: Double { sorted.first ?? .nan }
    var max: Double { sorted.last ?? .nan }
    var passes: Bool? { budget.map { $0.passes(median) } }

    var json: String {
        var object: [String: Any] = ["figure": name, "unit": unit, "median": median, "min": min, "max": max, "runs": values.count]
        if let budget {
            object["budget"] = budget.text
            object["pass"] = passes ?? false
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

/// Percentiles of latencies, as figures of their own.
func percentile(_ values: [Double], _ p: Double) -> Double {
    let s = values.sorted()
    guard !s.isEmpty else { return .nan }
    return s[Swift.min(s.count - 1, Int((Double(s.count - 1) * p).rounded()))]
}

func format(_ value: Double) -> String {
    if value.isNaN { return "n/a" }
    if abs(value) >= 1000 { return String(format: "%.0f", value) }
    if abs(value) >= 10 { return String(format: "%.1f", value) }
    if abs(value) >= 1 { return String(format: "%.2f", value) }
    return String(format: "%.3f", value)
}

final class Report {
    private(set) var figures: [Figure] = []
    let jsonOnly: Bool

    init(jsonOnly: Bool) { self.jsonOnly = jsonOnly }

    func add(_ name: String, _ unit: String, _ values: [Double], budget: Budget? = nil) {
        let figure = Figure(name: name, unit: unit, values: values, budget: budget)
        figures.append(figure)
        // Progress on stderr as figures come in; the table and JSON go to stdout at the end.
        FileHandle.standardError.write(Data("  \(name): \(format(figure.median)) \(unit)\n".utf8))
    }

    func print() {
        if !jsonOnly {
            let width = figures.map(\.name.count).max() ?? 20
            Swift.print(
                "figure".padding(toLength: width, withPad: " ", startingAt: 0) + "  median       min       max  unit          budget      ")
            for figure in figures {
                let verdict = figure.passes.map { $0 ? "pass" : "MISS" } ?? ""
                let columns = [figure.median, figure.min, figure.max].map { format($0).leftPad(9) }.joined(separator: " ")
                Swift.print(
                    figure.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + columns + "  "
                        + figure.unit.padding(toLength: 12, withPad: " ", startingAt: 0) + "  "
                        + (figure.budget?.text ?? "").padding(toLength: 10, withPad: " ", startingAt: 0) + "  " + verdict)
            }
            Swift.print("")
        }
        for figure in figures { Swift.print(figure.json) }
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
