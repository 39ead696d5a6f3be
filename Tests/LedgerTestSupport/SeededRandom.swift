/// SplitMix64: a small deterministic generator, so a failing run can be replayed from its seed.
public struct SeededRandom: RandomNumberGenerator {
    public let seed: UInt64
    private var state: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }

    public mutating func pick<T>(_ choices: [T]) -> T { choices[next(below: choices.count)] }
}
