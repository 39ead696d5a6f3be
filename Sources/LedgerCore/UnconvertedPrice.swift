/// A price a provider stated in thousandths of its currency's major unit (Apple's `price`, milliunits per item) that
/// is not a whole, non-negative number of the currency's minor units once multiplied by the quantity: 4991 USD
/// milliunits is 4.991 USD, -4990 a negative price. No order's amount can equal it. It is kept as stated, so that the
/// comparison with the order refuses it (`amount_mismatch`): read as "no price", it used to skip the comparison and
/// verify the order.
public struct UnconvertedPrice: Sendable, Hashable, CustomStringConvertible {
    /// The price per item, as stated.
    public var milliunits: Int64
    public var quantity: Int64
    /// ISO 4217 code, as stated.
    public var currency: String

    public init(milliunits: Int64, quantity: Int64, currency: String) {
        self.milliunits = milliunits
        self.quantity = quantity
        self.currency = currency
    }

    /// "4991 milliunits USD", "4991 milliunits USD × 2".
    public var description: String {
        "\(milliunits) milliunits \(currency)" + (quantity == 1 ? "" : " × \(quantity)")
    }
}
