//! Natural order of trial names: digit runs compare as numbers, so steps sort `c1`, `c8`,
//! `c16`, `c64` (not `c1`, `c16`, `c64`, `c8`).

use std::cmp::Ordering;

/// Compares `a` and `b` with digit runs as numbers (leading zeros ignored), other
/// characters as they are; equal keys fall back to the plain string order.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let (dx, rx) = split_digits(x);
                let (dy, ry) = split_digits(y);
                let ord = dx.len().cmp(&dy.len()).then_with(|| dx.cmp(dy));
                if ord != Ordering::Equal {
                    return ord;
                }
                (x, y) = (rx, ry);
            }
            (Some(p), Some(q)) => {
                if p != q {
                    return p.cmp(q);
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

/// The leading digits of `s` without leading zeros, and the rest.
fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let end = s
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    let digits = &s[..end];
    let first = digits
        .iter()
        .position(|b| *b != b'0')
        .unwrap_or(digits.len());
    (&digits[first..], &s[end..])
}

#[cfg(test)]
mod tests {
    use super::natural_cmp;

    #[test]
    fn steps_sort_by_number() {
        let mut names = vec!["t::e::c64", "t::e::c8", "t::e::c1", "t::e::c16", "t::d::c2"];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            ["t::d::c2", "t::e::c1", "t::e::c8", "t::e::c16", "t::e::c64"]
        );
        assert!(natural_cmp("qps0.5", "qps2").is_lt());
        assert!(natural_cmp("c01", "c1").is_ne());
    }
}
