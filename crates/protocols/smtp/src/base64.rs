//! Standard base64 (RFC 4648 §4, with padding), the encoding of SASL
//! exchanges in AUTH (RFC 4954). Twenty lines do not justify a dependency.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes `input` as padded base64.
pub(crate) fn encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let bytes = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let group = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]);
        for i in 0..4 {
            if i <= chunk.len() {
                let index = (group >> (18 - 6 * i)) & 0x3f;
                out.push(char::from(ALPHABET[index as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Why a base64 string could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidBase64;

/// Decodes padded base64 strictly: no whitespace, padding only at the end,
/// length a multiple of four.
pub(crate) fn decode(input: &str) -> Result<Vec<u8>, InvalidBase64> {
    let bytes = input.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return Err(InvalidBase64);
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let groups = bytes.len() / 4;
    for (index, chunk) in bytes.chunks(4).enumerate() {
        let is_last = index + 1 == groups;
        let padding = chunk.iter().rev().take_while(|&&b| b == b'=').count();
        if padding > 2 || (padding > 0 && !is_last) {
            return Err(InvalidBase64);
        }
        let mut group = 0u32;
        for &byte in &chunk[..4 - padding] {
            group = (group << 6) | sextet(byte).ok_or(InvalidBase64)?;
        }
        group <<= 6 * padding;
        let [_, a, b, c] = group.to_be_bytes();
        out.extend_from_slice(&[a, b, c][..3 - padding]);
    }
    Ok(out)
}

fn sextet(byte: u8) -> Option<u32> {
    let value = match byte {
        b'A'..=b'Z' => byte - b'A',
        b'a'..=b'z' => byte - b'a' + 26,
        b'0'..=b'9' => byte - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 4648 §10 test vectors, plus the SASL strings peakhour sends.
    const VECTORS: &[(&[u8], &str)] = &[
        (b"", ""),
        (b"f", "Zg=="),
        (b"fo", "Zm8="),
        (b"foo", "Zm9v"),
        (b"foob", "Zm9vYg=="),
        (b"fooba", "Zm9vYmE="),
        (b"foobar", "Zm9vYmFy"),
        (b"Username:", "VXNlcm5hbWU6"),
        (b"Password:", "UGFzc3dvcmQ6"),
        (b"\0user\0pass", "AHVzZXIAcGFzcw=="),
        (b"\xff\xfe\x00", "//4A"),
    ];

    #[test]
    fn encodes_and_decodes_the_rfc_vectors() {
        for (plain, encoded) in VECTORS {
            assert_eq!(encode(plain), *encoded, "encode {plain:?}");
            assert_eq!(decode(encoded).as_deref(), Ok(*plain), "decode {encoded}");
        }
    }

    #[test]
    fn round_trips_every_length() {
        let data: Vec<u8> = (0..=255).collect();
        for len in 0..data.len() {
            assert_eq!(decode(&encode(&data[..len])), Ok(data[..len].to_vec()));
        }
    }

    #[test]
    fn rejects_invalid_input() {
        for bad in [
            "Zg=", "Zg===", "Z===", "Zm9v\r\n", "Zg==Zg==", "Zm9*", "=Zm9",
        ] {
            assert_eq!(decode(bad), Err(InvalidBase64), "{bad:?}");
        }
    }
}
