//! The protobuf wire format: varints, fixed 32/64-bit values, length-delimited bytes, field tags,
//! and skipping fields nobody asked for (unknown field numbers, groups).
//!
//! Errors carry the words of the Go decoders kube-apiserver runs (gogo-generated `Unmarshal`), since
//! they end up in the 400 Status a client reads.

/// A failure to read the wire format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The input ended inside a value.
    #[error("unexpected EOF")]
    ReadPastEnd,
    /// A varint longer than 64 bits.
    #[error("proto: integer overflow")]
    ReadVarint,
    /// A length that does not fit the address space (Go sees it as negative).
    #[error("proto: negative length found during unmarshaling")]
    ReadLength,
    /// A wire type that does not exist (6, 7).
    #[error("proto: illegal wireType {0}")]
    SkipField(u8),
    /// An end-group marker without its start.
    #[error("proto: unexpected end of group")]
    SkipGroup,
}

/// The wire type of a field (the low three bits of its tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireType {
    /// A varint (ints, bools).
    Varint,
    /// Eight little-endian bytes (`double`, `fixed64`).
    Fixed64,
    /// A length-prefixed byte string (strings, bytes, messages, packed lists).
    Len,
    /// Start of a (deprecated) group.
    StartGroup,
    /// End of a group.
    EndGroup,
    /// Four little-endian bytes (`float`, `fixed32`).
    Fixed32,
    /// 6 or 7: not a wire type.
    Invalid(u8),
}

impl WireType {
    fn from_bits(bits: u8) -> Self {
        match bits {
            0 => Self::Varint,
            1 => Self::Fixed64,
            2 => Self::Len,
            3 => Self::StartGroup,
            4 => Self::EndGroup,
            5 => Self::Fixed32,
            other => Self::Invalid(other),
        }
    }

    /// The wire type's number, as Go's messages print it.
    pub fn number(self) -> u8 {
        match self {
            Self::Varint => 0,
            Self::Fixed64 => 1,
            Self::Len => 2,
            Self::StartGroup => 3,
            Self::EndGroup => 4,
            Self::Fixed32 => 5,
            Self::Invalid(n) => n,
        }
    }
}

/// A cursor over one message's bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// A varint (at most ten bytes).
    pub fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        let mut shift = 0u32;
        loop {
            if shift >= 64 {
                return Err(WireError::ReadVarint);
            }
            let byte = *self.buf.get(self.pos).ok_or(WireError::ReadPastEnd)?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
            shift += 7;
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).ok_or(WireError::ReadLength)?;
        let bytes = self.buf.get(self.pos..end).ok_or(WireError::ReadPastEnd)?;
        self.pos = end;
        Ok(bytes)
    }

    /// Eight little-endian bytes.
    pub fn fixed64(&mut self) -> Result<u64, WireError> {
        let bytes = self.take(8)?;
        let mut array = [0u8; 8];
        array.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(array))
    }

    /// A length-delimited byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let len = self.varint()?;
        // Go reads the length as an int: anything past i64::MAX is negative there.
        if len > i64::MAX as u64 {
            return Err(WireError::ReadLength);
        }
        let len = usize::try_from(len).map_err(|_| WireError::ReadPastEnd)?;
        self.take(len)
    }

    /// A field tag: the field number and the wire type.
    pub fn tag(&mut self) -> Result<(u64, WireType), WireError> {
        let tag = self.varint()?;
        Ok((tag >> 3, WireType::from_bits((tag & 7) as u8)))
    }

    /// Skips the value of a field of the given wire type (groups included, as Go's skip does).
    pub fn skip(&mut self, wire: WireType) -> Result<(), WireError> {
        let mut depth = 0usize;
        let mut wire = wire;
        loop {
            match wire {
                WireType::Varint => {
                    self.varint()?;
                }
                WireType::Fixed64 => {
                    self.take(8)?;
                }
                WireType::Len => {
                    self.bytes()?;
                }
                WireType::Fixed32 => {
                    self.take(4)?;
                }
                WireType::StartGroup => depth += 1,
                WireType::EndGroup => {
                    depth = depth.checked_sub(1).ok_or(WireError::SkipGroup)?;
                }
                WireType::Invalid(n) => return Err(WireError::SkipField(n)),
            }
            if depth == 0 {
                return Ok(());
            }
            wire = self.tag()?.1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        assert_eq!(Reader::new(&[0x96, 0x01]).varint(), Ok(150));
        assert_eq!(Reader::new(&[0x80]).varint(), Err(WireError::ReadPastEnd));
        assert_eq!(Reader::new(&[0xff; 11]).varint(), Err(WireError::ReadVarint));
        // -1 as an int32 on the wire: ten bytes.
        let minus_one = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Reader::new(&minus_one).varint().map(|v| v as i64 as i32), Ok(-1));
    }

    #[test]
    fn lengths_and_fixed() {
        let mut r = Reader::new(&[3, b'a', b'b', b'c', 1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(r.bytes(), Ok(&b"abc"[..]));
        assert_eq!(r.fixed64(), Ok(1));
        assert!(r.is_empty());
        assert_eq!(Reader::new(&[5, b'a']).bytes(), Err(WireError::ReadPastEnd));
        let huge = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Reader::new(&huge).bytes(), Err(WireError::ReadLength));
    }

    #[test]
    fn skipping() {
        // A group (field 1 start, field 2 varint, field 1 end), then a varint field.
        let bytes = [0x0b, 0x10, 0x05, 0x0c, 0x18, 0x07];
        let mut r = Reader::new(&bytes);
        let (n, wire) = r.tag().unwrap();
        assert_eq!((n, wire), (1, WireType::StartGroup));
        r.skip(wire).unwrap();
        assert_eq!(r.tag().unwrap(), (3, WireType::Varint));
        assert_eq!(r.varint(), Ok(7));
        assert_eq!(
            Reader::new(&[]).skip(WireType::Invalid(7)),
            Err(WireError::SkipField(7))
        );
        assert_eq!(
            Reader::new(&[]).skip(WireType::EndGroup),
            Err(WireError::SkipGroup)
        );
    }
}
