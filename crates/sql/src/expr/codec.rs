//! Digests and encodings of strings, as Flink's `MD5`, `SHA256`, `SHA2`, `TO_BASE64`,
//! `FROM_BASE64`, `HEX` and `BIN` compute them (UTF-8 bytes in, lower-case hex out).

use base64::Engine;
use md5::Digest;

/// A digest or an encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// `MD5(s)`.
    Md5,
    /// `SHA224(s)`, `SHA256(s)`, `SHA384(s)`, `SHA512(s)`, `SHA2(s, bits)` (bits a literal).
    Sha2(u16),
    /// `TO_BASE64(s)`.
    ToBase64,
    /// `FROM_BASE64(s)`: `NULL` where `s` is not base64 (or not UTF-8 once decoded).
    FromBase64,
    /// `HEX(s)`: the string's bytes in upper-case hex; `HEX(n)`: the number's.
    Hex,
    /// `BIN(n)`: the number in binary (two's complement for a negative one).
    Bin,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Codec {
    /// The codec of a string; `None` where its value is `NULL`.
    pub fn of_text(self, s: &str) -> Option<String> {
        let bytes = s.as_bytes();
        Some(match self {
            Codec::Md5 => hex(&md5::Md5::digest(bytes)),
            Codec::Sha2(224) => hex(&sha2::Sha224::digest(bytes)),
            Codec::Sha2(256) => hex(&sha2::Sha256::digest(bytes)),
            Codec::Sha2(384) => hex(&sha2::Sha384::digest(bytes)),
            Codec::Sha2(512) => hex(&sha2::Sha512::digest(bytes)),
            Codec::Sha2(_) => return None,
            Codec::ToBase64 => base64::engine::general_purpose::STANDARD.encode(bytes),
            Codec::FromBase64 => {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(bytes)
                    .ok()?;
                String::from_utf8(decoded).ok()?
            }
            Codec::Hex => hex(bytes).to_uppercase(),
            Codec::Bin => return None,
        })
    }

    /// The codec of an integer (`HEX`, `BIN`), as Java's `Long.toHexString` and
    /// `toBinaryString`.
    pub fn of_integer(self, n: i64) -> Option<String> {
        match self {
            Codec::Hex => Some(format!("{:X}", n as u64)),
            Codec::Bin => Some(format!("{:b}", n as u64)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_and_encodings_are_the_well_known_ones() {
        assert_eq!(
            Codec::Md5.of_text("").as_deref(),
            Some("d41d8cd98f00b204e9800998ecf8427e")
        );
        assert_eq!(
            Codec::Sha2(256).of_text("abc").as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(Codec::ToBase64.of_text("hi!").as_deref(), Some("aGkh"));
        assert_eq!(Codec::FromBase64.of_text("aGkh").as_deref(), Some("hi!"));
        assert_eq!(Codec::FromBase64.of_text("%%").as_deref(), None);
        assert_eq!(Codec::Hex.of_text("ab").as_deref(), Some("6162"));
        assert_eq!(Codec::Hex.of_integer(255).as_deref(), Some("FF"));
        assert_eq!(Codec::Bin.of_integer(5).as_deref(), Some("101"));
        assert_eq!(Codec::Sha2(100).of_text("x"), None);
    }
}
