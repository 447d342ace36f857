//! Flink's math functions over `DOUBLE`s that are Java's `Math` calls: trigonometry, its
//! inverses and hyperbolics, angle conversions, `LOG(x)` / `LOG(base, x)`, and the constants
//! `PI()` and `E()`; and the random ones (`RAND`, `RAND_INTEGER`, `UUID`).

/// A function of doubles, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Math {
    /// `SIN(x)`.
    Sin,
    /// `COS(x)`.
    Cos,
    /// `TAN(x)`.
    Tan,
    /// `COT(x)`: `1 / TAN(x)`.
    Cot,
    /// `ASIN(x)`.
    Asin,
    /// `ACOS(x)`.
    Acos,
    /// `ATAN(x)`.
    Atan,
    /// `ATAN2(y, x)`.
    Atan2,
    /// `SINH(x)`.
    Sinh,
    /// `COSH(x)`.
    Cosh,
    /// `TANH(x)`.
    Tanh,
    /// `DEGREES(radians)`.
    Degrees,
    /// `RADIANS(degrees)`.
    Radians,
    /// `LOG(x)`: the natural logarithm; `LOG(base, x)`.
    Log,
    /// `PI()`.
    Pi,
    /// `E()`.
    E,
}

impl Math {
    /// The function of this name and how many arguments it takes (at least, at most).
    pub fn named(name: &str) -> Option<(Math, usize, usize)> {
        Some(match name {
            "SIN" => (Math::Sin, 1, 1),
            "COS" => (Math::Cos, 1, 1),
            "TAN" => (Math::Tan, 1, 1),
            "COT" => (Math::Cot, 1, 1),
            "ASIN" => (Math::Asin, 1, 1),
            "ACOS" => (Math::Acos, 1, 1),
            "ATAN" => (Math::Atan, 1, 1),
            "ATAN2" => (Math::Atan2, 2, 2),
            "SINH" => (Math::Sinh, 1, 1),
            "COSH" => (Math::Cosh, 1, 1),
            "TANH" => (Math::Tanh, 1, 1),
            "DEGREES" => (Math::Degrees, 1, 1),
            "RADIANS" => (Math::Radians, 1, 1),
            "LOG" => (Math::Log, 1, 2),
            "PI" => (Math::Pi, 0, 0),
            "E" => (Math::E, 0, 0),
            _ => return None,
        })
    }

    /// The function on `args` (as many as [`Math::named`] allows).
    pub fn apply(self, args: &[f64]) -> f64 {
        let x = args.first().copied().unwrap_or(0.0);
        match self {
            Math::Sin => x.sin(),
            Math::Cos => x.cos(),
            Math::Tan => x.tan(),
            Math::Cot => 1.0 / x.tan(),
            Math::Asin => x.asin(),
            Math::Acos => x.acos(),
            Math::Atan => x.atan(),
            Math::Atan2 => x.atan2(args.get(1).copied().unwrap_or(0.0)),
            Math::Sinh => x.sinh(),
            Math::Cosh => x.cosh(),
            Math::Tanh => x.tanh(),
            Math::Degrees => x.to_degrees(),
            Math::Radians => x.to_radians(),
            Math::Log => match args.get(1) {
                Some(v) => v.ln() / x.ln(),
                None => x.ln(),
            },
            Math::Pi => std::f64::consts::PI,
            Math::E => std::f64::consts::E,
        }
    }
}

/// A random function: a new value each row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Random {
    /// `RAND()`: a `DOUBLE` in `[0, 1)`.
    Double,
    /// `RAND_INTEGER(n)`: an `INT` in `[0, n)`.
    Integer,
    /// `UUID()`: a random (version 4) UUID as text.
    Uuid,
}

/// A version 4 UUID in its text form.
pub fn uuid() -> String {
    let mut b = [0u8; 16];
    for x in &mut b {
        *x = fastrand::u8(..);
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}
