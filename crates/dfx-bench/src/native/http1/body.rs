//! Body decoding without buffering: a byte-level state machine over whatever one read
//! returned, handing out the data as ranges of that read. Chunk-size lines (with their
//! extensions) and trailers are bounded; their bytes are counted, never kept.

use std::ops::Range;

/// Longest chunk-size line, extensions included (bytes).
pub(crate) const MAX_CHUNK_LINE: usize = 4096;
/// Most trailer bytes after the last chunk.
pub(crate) const MAX_TRAILERS: usize = 16 * 1024;

/// How a body's framing is broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    /// A chunk-size line that is not hex digits, optional blanks and extensions, CRLF.
    #[error("invalid chunk size line")]
    ChunkSize,
    /// A chunk size beyond 64 bits.
    #[error("chunk size overflows")]
    ChunkSizeOverflow,
    /// A chunk-size line longer than [`MAX_CHUNK_LINE`].
    #[error("chunk size line longer than {MAX_CHUNK_LINE} bytes")]
    ChunkLineTooLong,
    /// Chunk data not followed by CRLF.
    #[error("chunk data not followed by CRLF")]
    ChunkEnd,
    /// A trailer line not ended by CRLF.
    #[error("invalid trailer line")]
    Trailer,
    /// More than [`MAX_TRAILERS`] bytes of trailers.
    #[error("trailers longer than {MAX_TRAILERS} bytes")]
    TrailersTooLong,
}

/// Where a chunked body's decoder stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// In the hex digits of a size (`line` bytes of the line so far).
    Size { value: u64, digits: u8, line: usize },
    /// After the digits: blanks, then `;` extensions or CR.
    SizeBlank { value: u64, line: usize },
    /// In the extensions, up to CR.
    Ext { value: u64, line: usize },
    /// CR of the size line seen, LF expected.
    SizeLf { value: u64 },
    /// In a chunk's data, this many bytes to go.
    Data(u64),
    /// After the data, CR expected.
    DataCr,
    /// After the data's CR, LF expected.
    DataLf,
    /// In the trailer section: `line` bytes of the current line, `total` of all.
    Trailer { line: usize, total: usize },
    /// A trailer line's CR seen (`empty`: the line was empty, the body ends at LF).
    TrailerLf { empty: bool, total: usize },
}

/// A body's framing and how far it has been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoder {
    /// `Content-Length`: this many bytes to go.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked(ChunkedState),
    /// No framing: the body ends when the server closes the connection.
    UntilClose,
    /// The whole body was read.
    Done,
}

/// The state of a chunked body (opaque).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkedState(Chunk);

impl Decoder {
    /// A `Content-Length` body of `n` bytes.
    pub(crate) fn length(n: u64) -> Decoder {
        if n == 0 {
            Decoder::Done
        } else {
            Decoder::Length(n)
        }
    }

    /// A chunked body, before its first size line.
    pub(crate) fn chunked() -> Decoder {
        Decoder::Chunked(ChunkedState(START))
    }

    /// Whether the whole body was read.
    pub(crate) fn is_done(&self) -> bool {
        *self == Decoder::Done
    }

    /// Decodes from the start of `input`: returns how many bytes were used and the range
    /// of `input` that is body data, if the bytes used end in data. Stops after one data
    /// range, at the end of the body, or at the end of `input`.
    pub(crate) fn step(
        &mut self,
        input: &[u8],
    ) -> Result<(usize, Option<Range<usize>>), BodyError> {
        match self {
            Decoder::Done => Ok((0, None)),
            Decoder::UntilClose => Ok((input.len(), (!input.is_empty()).then_some(0..input.len()))),
            Decoder::Length(rem) => {
                let n = take(*rem, input.len());
                *rem -= n as u64;
                if *rem == 0 {
                    *self = Decoder::Done;
                }
                Ok((n, (n > 0).then_some(0..n)))
            }
            Decoder::Chunked(ChunkedState(state)) => {
                let (used, data, done) = chunked_step(state, input)?;
                if done {
                    *self = Decoder::Done;
                }
                Ok((used, data))
            }
        }
    }
}

const START: Chunk = Chunk::Size {
    value: 0,
    digits: 0,
    line: 0,
};

/// `min(rem, avail)` without overflow.
fn take(rem: u64, avail: usize) -> usize {
    usize::try_from(rem).map_or(avail, |r| r.min(avail))
}

/// One step of a chunked body: (bytes used, data range, body ended).
fn chunked_step(
    state: &mut Chunk,
    input: &[u8],
) -> Result<(usize, Option<Range<usize>>, bool), BodyError> {
    let mut i = 0;
    while i < input.len() {
        if let Chunk::Data(rem) = *state {
            let n = take(rem, input.len() - i);
            let left = rem - n as u64;
            *state = if left == 0 {
                Chunk::DataCr
            } else {
                Chunk::Data(left)
            };
            return Ok((i + n, Some(i..i + n), false));
        }
        let b = input[i];
        i += 1;
        *state = framing_byte(*state, b)?;
        if *state == FINISHED {
            return Ok((i, None, true));
        }
    }
    Ok((i, None, false))
}

/// The state after the end of the trailers.
const FINISHED: Chunk = Chunk::TrailerLf {
    empty: true,
    total: usize::MAX,
};

/// The next state after one framing byte `b` (any state but `Data`).
fn framing_byte(state: Chunk, b: u8) -> Result<Chunk, BodyError> {
    let line_check = |line: usize| {
        if line >= MAX_CHUNK_LINE {
            Err(BodyError::ChunkLineTooLong)
        } else {
            Ok(line + 1)
        }
    };
    Ok(match state {
        Chunk::Size {
            value,
            digits,
            line,
        } => {
            let line = line_check(line)?;
            match (b as char).to_digit(16) {
                Some(d) => {
                    let value = value
                        .checked_mul(16)
                        .map(|v| v + u64::from(d))
                        .ok_or(BodyError::ChunkSizeOverflow)?;
                    Chunk::Size {
                        value,
                        digits: digits.saturating_add(1),
                        line,
                    }
                }
                None if digits == 0 => return Err(BodyError::ChunkSize),
                None => after_size(value, line, b)?,
            }
        }
        Chunk::SizeBlank { value, line } => after_size(value, line_check(line)?, b)?,
        Chunk::Ext { value, line } => match b {
            b'\r' => Chunk::SizeLf { value },
            b'\n' => return Err(BodyError::ChunkSize),
            _ => Chunk::Ext {
                value,
                line: line_check(line)?,
            },
        },
        Chunk::SizeLf { value } => match (b, value) {
            (b'\n', 0) => Chunk::Trailer { line: 0, total: 0 },
            (b'\n', v) => Chunk::Data(v),
            _ => return Err(BodyError::ChunkSize),
        },
        // Data is taken by `chunked_step` before a byte is looked at.
        Chunk::Data(v) => Chunk::Data(v),
        Chunk::DataCr if b == b'\r' => Chunk::DataLf,
        Chunk::DataLf if b == b'\n' => START,
        Chunk::DataCr | Chunk::DataLf => return Err(BodyError::ChunkEnd),
        Chunk::Trailer { line, total } => {
            if total >= MAX_TRAILERS {
                return Err(BodyError::TrailersTooLong);
            }
            match b {
                b'\r' => Chunk::TrailerLf {
                    empty: line == 0,
                    total: total + 1,
                },
                b'\n' => return Err(BodyError::Trailer),
                _ => Chunk::Trailer {
                    line: line + 1,
                    total: total + 1,
                },
            }
        }
        Chunk::TrailerLf { empty, total } => match (b, empty) {
            (b'\n', true) => FINISHED,
            (b'\n', false) => Chunk::Trailer { line: 0, total },
            _ => return Err(BodyError::Trailer),
        },
    })
}

/// After a size's digits: blanks, `;` (extensions) or CR.
fn after_size(value: u64, line: usize, b: u8) -> Result<Chunk, BodyError> {
    match b {
        b' ' | b'\t' => Ok(Chunk::SizeBlank { value, line }),
        b';' => Ok(Chunk::Ext { value, line }),
        b'\r' => Ok(Chunk::SizeLf { value }),
        _ => Err(BodyError::ChunkSize),
    }
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
