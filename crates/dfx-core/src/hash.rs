//! The one stable hash of the project: 64-bit FNV-1a (offset basis 0xcbf29ce484222325,
//! prime 0x100000001b3), written out so that what it decides (a server group's shard, the
//! simulator's per-request draws) never depends on a library's or the standard library's
//! hasher, whatever the Rust release.

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// FNV-1a of several parts, each followed by the byte 0xff (which UTF-8 never contains),
/// so that `["ab", "c"]` and `["a", "bc"]` differ.
pub fn fnv1a64_parts(parts: &[&[u8]]) -> u64 {
    parts.iter().fold(OFFSET, |h, p| {
        p.iter()
            .chain(&[0xff])
            .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_test_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn parts_are_separated() {
        assert_eq!(fnv1a64_parts(&[b"a"]), fnv1a64(b"a\xff"));
        assert_ne!(fnv1a64_parts(&[b"ab", b"c"]), fnv1a64_parts(&[b"a", b"bc"]));
    }
}
