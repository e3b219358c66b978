//! Turning a stream of byte tokens into text pieces: a multi-byte
//! character split across tokens is held back until it is complete.

/// Buffers bytes and hands out the longest complete UTF-8 prefix.
///
/// ```
/// use ferrox_cli::server::utf8::Utf8Stream;
/// let mut s = Utf8Stream::default();
/// let e = "é".as_bytes();
/// assert_eq!(s.push(e[0]), "");
/// assert_eq!(s.push(e[1]), "é");
/// assert_eq!(s.push(0xff), "\u{fffd}"); // not UTF-8: replaced
/// s.push(e[0]);
/// assert_eq!(s.finish(), "\u{fffd}"); // unfinished at the end
/// ```
#[derive(Default, Debug)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds one byte; returns the text it completes (maybe empty).
    pub fn push(&mut self, byte: u8) -> String {
        self.pending.push(byte);
        match std::str::from_utf8(&self.pending) {
            Ok(s) => {
                let s = s.to_string();
                self.pending.clear();
                s
            }
            // An incomplete character at the end: wait for more bytes.
            Err(e) if e.error_len().is_none() => {
                let valid = e.valid_up_to();
                let s = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
                self.pending.drain(..valid);
                s
            }
            // An invalid sequence: replace it and go on.
            Err(_) => {
                let s = String::from_utf8_lossy(&self.pending).into_owned();
                self.pending.clear();
                s
            }
        }
    }

    /// The rest (an unfinished character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        s
    }
}
