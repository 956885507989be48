//! Per-run secrets: random bytes from the operating system, and a
//! comparison that takes as long whatever the guess.

/// `bytes` random bytes, or why the operating system gave none.
pub fn random<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)
        .map_err(|e| std::io::Error::other(format!("no randomness from the system: {e}")))?;
    Ok(bytes)
}

/// A random token of 16 bytes (128 bits), as 32 hex digits.
pub fn token() -> std::io::Result<String> {
    Ok(random::<16>()?.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `text` has the shape of a [`token`] (a kept one read back).
pub fn is_token(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A new identity (an agent's, a call's, a question's): `prefix` and 128
/// random bits, so that no two processes, machines or databases ever make
/// the same one, whatever they count.
pub fn id(prefix: &str) -> std::io::Result<String> {
    Ok(format!("{prefix}{}", token()?))
}

/// Whether `given` is `expected`, compared in constant time.
pub fn same(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_differ_and_compare_whole() {
        let (a, b) = (super::token().unwrap(), super::token().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(super::same(a.as_bytes(), a.as_bytes()));
        assert!(!super::same(a.as_bytes(), b.as_bytes()));
        assert!(!super::same(&a.as_bytes()[..31], a.as_bytes()));
        let id = super::id("q").unwrap();
        assert!(id.starts_with('q') && id.len() == 33, "{id}");
        assert_ne!(id, super::id("q").unwrap());
    }
}
