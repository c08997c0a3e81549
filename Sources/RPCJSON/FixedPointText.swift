/// Decimal text with a fixed number of fraction digits, ties to even: what `String(format:
/// "%.2f")` gives, without Foundation (rpcd ships no ICU). For display (status lines, rpcctl), not for JSON.
public enum FixedPointText {
    /// `value` with exactly `digits` (0...9) fraction digits: `text(0.2134, digits: 3)` is "0.213". Non-finite
    /// values and magnitudes past 1e15 are written as Swift writes them.
    public static func text(_ value: Double, digits: Int) -> String {
        let digits = min(max(digits, 0), 9)
        var scale: Int64 = 1
        for _ in 0..<digits { scale *= 10 }
        guard value.isFinite, abs(value) < 1e15 else { return "\(value)" }
        let scaled = Int64((abs(value) * Double(scale)).rounded(.toNearestOrEven))
        let whole = String(scaled / scale)
        let sign = value < 0 && scaled != 0 ? "-" : ""
        guard digits > 0 else { return sign + whole }
        let fraction = String(scaled % scale)
        return sign + whole + "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
}
