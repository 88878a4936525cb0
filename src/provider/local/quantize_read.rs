//! Reading a GGUF header: the metadata pairs kept as raw bytes (they are
//! copied unchanged), the tensor descriptions parsed.

use super::{Header, MAX_STRING, TensorInfo, align};
use std::io::{self, Read, Seek};

/// A header that could not be read.
#[derive(Debug)]
pub(super) enum ReadError {
    Io(io::Error),
    Format(String),
}

impl From<io::Error> for ReadError {
    fn from(error: io::Error) -> Self {
        if error.kind() == io::ErrorKind::UnexpectedEof {
            Self::Format("the file ends inside its header (truncated)".to_owned())
        } else {
            Self::Io(error)
        }
    }
}

fn bad(message: impl Into<String>) -> ReadError {
    ReadError::Format(message.into())
}

/// Reads what precedes the tensor data; leaves `reader` anywhere.
pub(super) fn read_header<R: Read + Seek>(reader: &mut R) -> Result<Header, ReadError> {
    let mut magic = [0_u8; 4];
    reader.read_exact(&mut magic)?;
    if &magic != b"GGUF" {
        return Err(bad("it is not a GGUF file"));
    }
    let mut fixed = Raw::default();
    let version = fixed.u32(reader)?;
    if !(2..=3).contains(&version) {
        return Err(bad(format!(
            "GGUF version {version} is not supported (2 or 3 are)"
        )));
    }
    let tensor_count = fixed.u64(reader)?;
    let metadata_count = fixed.u64(reader)?;
    if tensor_count > 1 << 20 || metadata_count > 1 << 20 {
        return Err(bad("its header counts are implausible (corrupt)"));
    }

    let mut raw = Raw::default();
    let mut file_type_at = None;
    let mut alignment = 32_u64;
    for _ in 0..metadata_count {
        let key = raw.string(reader)?;
        let kind = raw.u32(reader)?;
        let value_at = raw.bytes.len();
        match (key.as_slice(), kind) {
            (b"general.file_type", 4 | 5) => file_type_at = Some(value_at),
            (b"general.alignment", 4) => {
                let value = raw.u32(reader)?;
                if value == 0 || !value.is_power_of_two() {
                    return Err(bad(format!("general.alignment {value} is not a power of two")));
                }
                alignment = u64::from(value);
                continue;
            }
            _ => {}
        }
        raw.value(reader, kind, 0)?;
    }

    let mut tensors = Vec::new();
    let mut position = 24 + raw.bytes.len() as u64;
    for _ in 0..tensor_count {
        let mut info = Raw::default();
        let name = info.string(reader)?;
        let n_dims = info.u32(reader)?;
        if n_dims == 0 || n_dims > 4 {
            return Err(bad(format!("a tensor has {n_dims} dimensions")));
        }
        let dims = (0..n_dims)
            .map(|_| info.u64(reader))
            .collect::<Result<Vec<u64>, ReadError>>()?;
        let kind = info.u32(reader)?;
        let offset = info.u64(reader)?;
        position += info.bytes.len() as u64;
        tensors.push(TensorInfo {
            name,
            dims,
            kind,
            offset,
        });
    }
    Ok(Header {
        version,
        metadata: raw.bytes,
        metadata_count,
        file_type_at,
        alignment,
        tensors,
        data_start: align(position, alignment),
    })
}

/// Bytes read so far, kept.
#[derive(Default)]
struct Raw {
    bytes: Vec<u8>,
}

impl Raw {
    fn take<R: Read>(&mut self, reader: &mut R, n: usize) -> Result<&[u8], ReadError> {
        let start = self.bytes.len();
        self.bytes.resize(start + n, 0);
        reader.read_exact(&mut self.bytes[start..])?;
        Ok(&self.bytes[start..])
    }

    fn u32<R: Read>(&mut self, reader: &mut R) -> Result<u32, ReadError> {
        let b = self.take(reader, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64<R: Read>(&mut self, reader: &mut R) -> Result<u64, ReadError> {
        let b = self.take(reader, 8)?;
        let mut array = [0_u8; 8];
        array.copy_from_slice(b);
        Ok(u64::from_le_bytes(array))
    }

    fn string<R: Read>(&mut self, reader: &mut R) -> Result<Vec<u8>, ReadError> {
        let len = self.u64(reader)?;
        if len > MAX_STRING {
            return Err(bad("a metadata string is implausibly long (corrupt)"));
        }
        Ok(self.take(reader, usize::try_from(len).unwrap_or(0))?.to_vec())
    }

    /// Skips (keeping its bytes) one value of GGUF metadata type `kind`.
    fn value<R: Read>(&mut self, reader: &mut R, kind: u32, depth: u8) -> Result<(), ReadError> {
        let size = match kind {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            8 => {
                self.string(reader)?;
                return Ok(());
            }
            9 if depth < 2 => {
                let inner = self.u32(reader)?;
                let count = self.u64(reader)?;
                if count > MAX_STRING {
                    return Err(bad("a metadata array is implausibly long (corrupt)"));
                }
                for _ in 0..count {
                    self.value(reader, inner, depth + 1)?;
                }
                return Ok(());
            }
            other => return Err(bad(format!("metadata value type {other} is unknown"))),
        };
        self.take(reader, size)?;
        Ok(())
    }
}
