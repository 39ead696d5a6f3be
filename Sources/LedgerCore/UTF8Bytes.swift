extension String.UTF8View {
    /// `allSatisfy`, over the string's storage as one buffer when it has one (a native string always does): walked
    /// index by index through the view, the checks on every stored event's ids and hashes were 10 % of a fold.
    func everyByte(_ predicate: (UInt8) -> Bool) -> Bool {
        withContiguousStorageIfAvailable { $0.allSatisfy(predicate) } ?? allSatisfy(predicate)
    }
}
