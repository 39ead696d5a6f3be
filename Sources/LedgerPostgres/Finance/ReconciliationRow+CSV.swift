import LedgerCore

/// Reconciliation rows as CSV records, one column per value (no combined cells), so the HTTP `text/csv` answer and
/// `ledger reconcile --csv` write the same file and a spreadsheet or `CSVReader` can sort and sum it.
extension ReconciliationRow {
    public static let csvHeader = [
        "line", "result", "transaction_id", "order_id", "ledger_state", "ledger_product_id", "ledger_amount_minor",
        "ledger_currency", "provider_status", "provider_product_id", "provider_amount_minor", "provider_currency",
        "provider_occurred_at", "problem",
    ]

    /// The row's fields, in the order of `csvHeader`; an absent value is an empty field.
    public var csvFields: [String] {
        [
            line.map(String.init) ?? "", result.rawValue, transactionId ?? "", ledger?.orderId ?? "",
            ledger?.state.rawValue ?? "", ledger?.productId ?? "", ledger.map { String($0.amount.value) } ?? "",
            ledger?.amount.currency ?? "", providerValues?.status?.rawValue ?? "", providerValues?.productId ?? "",
            providerValues?.amount.map(String.init) ?? "", providerValues?.currency ?? "",
            providerValues?.occurredAt.map(RFC3339.format) ?? "", problem ?? "",
        ]
    }
}
