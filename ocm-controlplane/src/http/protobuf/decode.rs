//! Protobuf messages to the JSON kube-apiserver's Go types marshal for them.
//!
//! A message is decoded as Go's generated code decodes it into a zero struct (unknown fields
//! skipped, the last occurrence of a scalar winning, repeated occurrences of a message merged,
//! packed and unpacked repeated numbers both accepted), then written out with Go's JSON rules:
//! a zero non-pointer field with `omitempty` is left out, a pointer that was sent keeps its zero
//! value, structs are always written, nil lists and maps without `omitempty` are `null`, `bytes`
//! are base64, and the types with their own JSON form (`Time`, `Quantity`, `IntOrString`, raw
//! JSON, ...) are written as theirs. The result is what a JSON client sending the same Go object
//! would have sent, so the REST layer treats both alike.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::schema::{Field, Message, Scalar, Schema, Special, ValueType};
use super::wire::{Reader, WireError, WireType};

/// How deep messages may nest (CRD schemas nest; the request is at most 3 MiB).
const MAX_DEPTH: usize = 128;

/// Go's zero `time.Time` (0001-01-01T00:00:00Z) in Unix seconds.
const GO_ZERO_TIME: i64 = -62_135_596_800;

/// A failure to decode a message, worded as Go's decoders word it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// The wire format itself is broken.
    #[error(transparent)]
    ReadWire(#[from] WireError),
    /// Field number zero.
    #[error("proto: {message}: illegal tag {number} (wire type {wire})")]
    ReadTag {
        /// The Go type being decoded.
        message: String,
        /// The field number read.
        number: u64,
        /// The wire type read.
        wire: u8,
    },
    /// An end-group marker where a field should start.
    #[error("proto: {message}: wiretype end group for non-group")]
    ReadEndGroup {
        /// The Go type being decoded.
        message: String,
    },
    /// A known field sent with a wire type its type cannot have.
    #[error("proto: wrong wireType = {wire} for field {field}")]
    CheckWireType {
        /// The wire type read.
        wire: u8,
        /// The Go field name.
        field: String,
    },
    /// A message index the tables do not hold (a broken table).
    #[error("protobuf field tables: no message {0}")]
    LookupMessage(usize),
    /// Messages nested deeper than `MAX_DEPTH`.
    #[error("proto: messages nested deeper than {MAX_DEPTH} levels")]
    LimitDepth,
    /// Raw JSON (`RawExtension`, `FieldsV1`, apiextensions `JSON`) that is not JSON.
    #[error("error decoding embedded JSON: {0}")]
    ParseRawJson(String),
    /// An `IntOrString` whose type is neither 0 (int) nor 1 (string).
    #[error("impossible IntOrString.Type")]
    FormatIntOrString,
    /// A time Go cannot write as RFC 3339.
    #[error("Time.MarshalJSON: year outside of range [0,9999]")]
    FormatTime,
    /// A `double` that JSON cannot hold.
    #[error("json: unsupported value: {0}")]
    FormatFloat(f64),
}

/// What was read for one field before it is written as JSON.
#[derive(Debug, Clone)]
enum Slot {
    Absent,
    Scalar(Value),
    Bytes(Vec<u8>),
    /// The bytes of every occurrence, concatenated (protobuf's merge of a message).
    Message(Vec<u8>),
    List(Vec<Value>),
    Map(Map<String, Value>),
}

/// The Go name of a field, for error messages: its JSON name capitalized, or for an embedded
/// struct its type's name — inline ones, and `metadata`, which every kind embeds as
/// `metav1.ObjectMeta` (lists as `metav1.ListMeta`) under a JSON name of its own.
fn go_field_name(schema: &Schema, field: &Field) -> String {
    if let ValueType::Message(id) = field.value
        && let Some(embedded) = schema.message(id)
        && (field.inline
            || (field.json == "metadata" && matches!(embedded.short.as_str(), "ObjectMeta" | "ListMeta")))
    {
        return embedded.short.clone();
    }
    let mut chars = field.json.trim_start_matches('$').chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn base64(bytes: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn string(bytes: &[u8]) -> Value {
    // Go keeps the bytes; its JSON encoder writes invalid UTF-8 as U+FFFD.
    Value::String(String::from_utf8_lossy(bytes).into_owned())
}

fn double(v: f64) -> Result<Value, DecodeError> {
    if !v.is_finite() {
        return Err(DecodeError::FormatFloat(v));
    }
    // Go writes integral floats without a fraction (`5`, not `5.0`).
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return Ok(json!(v as i64));
    }
    Ok(json!(v))
}

/// One scalar value of a non-repeated field or one element of a repeated one; `None` when the
/// wire type does not fit the field's type.
fn read_scalar(kind: Scalar, wire: WireType, r: &mut Reader<'_>) -> Result<Option<Value>, DecodeError> {
    Ok(Some(match (kind, wire) {
        (Scalar::String, WireType::Len) => string(r.bytes()?),
        (Scalar::Bytes, WireType::Len) => base64(r.bytes()?),
        (Scalar::Bool, WireType::Varint) => Value::Bool(r.varint()? != 0),
        (Scalar::Int32, WireType::Varint) => json!(r.varint()? as i64 as i32),
        (Scalar::Int64, WireType::Varint) => json!(r.varint()? as i64),
        (Scalar::Double, WireType::Fixed64) => double(f64::from_bits(r.fixed64()?))?,
        _ => return Ok(None),
    }))
}

/// The element wire type of a numeric scalar that may come packed in one length-delimited field.
fn packed_wire(kind: Scalar) -> Option<WireType> {
    match kind {
        Scalar::Bool | Scalar::Int32 | Scalar::Int64 => Some(WireType::Varint),
        Scalar::Double => Some(WireType::Fixed64),
        Scalar::String | Scalar::Bytes => None,
    }
}

/// Decodes messages with the given tables.
pub struct Decoder<'s> {
    schema: &'s Schema,
}

impl<'s> Decoder<'s> {
    /// A decoder over the given tables.
    pub fn new(schema: &'s Schema) -> Self {
        Self { schema }
    }

    fn message(&self, id: usize) -> Result<&'s Message, DecodeError> {
        // Indices come from the same tables; a miss would be a broken table.
        self.schema.message(id).ok_or(DecodeError::LookupMessage(id))
    }

    /// The JSON of message `id` encoded in `bytes`.
    pub fn decode(&self, id: usize, bytes: &[u8]) -> Result<Value, DecodeError> {
        self.value(id, bytes, 0)
    }

    fn value(&self, id: usize, bytes: &[u8], depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::LimitDepth);
        }
        let message = self.message(id)?;
        let slots = self.read(message, bytes, depth)?;
        match message.special {
            Some(special) => self.special(message, special, bytes, slots, depth),
            None => self.object(message, slots, depth),
        }
    }

    /// Reads every field of a message into its slot.
    fn read(&self, message: &Message, bytes: &[u8], depth: usize) -> Result<Vec<Slot>, DecodeError> {
        let mut slots = vec![Slot::Absent; message.fields.len()];
        let mut r = Reader::new(bytes);
        while !r.is_empty() {
            let (number, wire) = r.tag()?;
            if wire == WireType::EndGroup {
                return Err(DecodeError::ReadEndGroup {
                    message: message.short.clone(),
                });
            }
            if number == 0 {
                return Err(DecodeError::ReadTag {
                    message: message.short.clone(),
                    number,
                    wire: wire.number(),
                });
            }
            let Some(position) = message.position(number) else {
                r.skip(wire)?;
                continue;
            };
            let field = &message.fields[position];
            let wrong = || DecodeError::CheckWireType {
                wire: wire.number(),
                field: go_field_name(self.schema, field),
            };
            let slot = &mut slots[position];
            if field.map {
                if wire != WireType::Len {
                    return Err(wrong());
                }
                let (key, value) = self.map_entry(field, r.bytes()?, depth)?;
                if let Slot::Map(m) = slot {
                    m.insert(key, value);
                } else {
                    let mut m = Map::new();
                    m.insert(key, value);
                    *slot = Slot::Map(m);
                }
                continue;
            }
            match field.value {
                ValueType::Message(id) => {
                    if wire != WireType::Len {
                        return Err(wrong());
                    }
                    let bytes = r.bytes()?;
                    if field.repeated {
                        let element = self.value(id, bytes, depth + 1)?;
                        push(slot, element);
                    } else if let Slot::Message(existing) = slot {
                        existing.extend_from_slice(bytes);
                    } else {
                        *slot = Slot::Message(bytes.to_vec());
                    }
                }
                ValueType::Scalar(Scalar::Bytes) if !field.repeated => {
                    if wire != WireType::Len {
                        return Err(wrong());
                    }
                    *slot = Slot::Bytes(r.bytes()?.to_vec());
                }
                ValueType::Scalar(kind) => {
                    if let (true, WireType::Len, Some(element_wire)) =
                        (field.repeated, wire, packed_wire(kind))
                    {
                        let mut packed = Reader::new(r.bytes()?);
                        while !packed.is_empty() {
                            let v = read_scalar(kind, element_wire, &mut packed)?.ok_or_else(wrong)?;
                            push(slot, v);
                        }
                        continue;
                    }
                    let v = read_scalar(kind, wire, &mut r)?.ok_or_else(wrong)?;
                    if field.repeated {
                        push(slot, v);
                    } else {
                        *slot = Slot::Scalar(v);
                    }
                }
            }
        }
        Ok(slots)
    }

    /// A map entry: key (field 1, a string) and value (field 2) with Go's zero value when absent.
    fn map_entry(&self, field: &Field, bytes: &[u8], depth: usize) -> Result<(String, Value), DecodeError> {
        let mut key = String::new();
        let mut value: Option<Value> = None;
        let mut r = Reader::new(bytes);
        while !r.is_empty() {
            let (number, wire) = r.tag()?;
            let wrong = || DecodeError::CheckWireType {
                wire: wire.number(),
                field: go_field_name(self.schema, field),
            };
            match number {
                1 => {
                    if wire != WireType::Len {
                        return Err(wrong());
                    }
                    key = String::from_utf8_lossy(r.bytes()?).into_owned();
                }
                2 => {
                    value = Some(match field.value {
                        ValueType::Message(id) => {
                            if wire != WireType::Len {
                                return Err(wrong());
                            }
                            self.value(id, r.bytes()?, depth + 1)?
                        }
                        ValueType::Scalar(kind) => read_scalar(kind, wire, &mut r)?.ok_or_else(wrong)?,
                    });
                }
                _ => r.skip(wire)?,
            }
        }
        let value = match value {
            Some(v) => v,
            None => match field.value {
                ValueType::Message(id) => self.value(id, &[], depth + 1)?,
                // A nil []byte is written as null.
                ValueType::Scalar(Scalar::Bytes) => Value::Null,
                ValueType::Scalar(kind) => zero(kind),
            },
        };
        Ok((key, value))
    }

    /// A struct: its fields by Go's JSON rules.
    fn object(&self, message: &Message, slots: Vec<Slot>, depth: usize) -> Result<Value, DecodeError> {
        let mut out = Map::new();
        for (field, slot) in message.fields.iter().zip(slots) {
            if field.inline {
                let bytes = match &slot {
                    Slot::Message(b) => b.as_slice(),
                    _ => &[],
                };
                if let ValueType::Message(id) = field.value
                    && let Value::Object(inner) = self.value(id, bytes, depth + 1)?
                {
                    out.extend(inner);
                }
                continue;
            }
            if let Some(v) = self.field_json(field, slot, depth)? {
                out.insert(field.json.clone(), v);
            }
        }
        Ok(Value::Object(out))
    }

    /// One field's JSON value, or `None` when Go leaves it out.
    fn field_json(&self, field: &Field, slot: Slot, depth: usize) -> Result<Option<Value>, DecodeError> {
        // Absent and nil: left out with omitempty, null without.
        let nil = if field.omitempty { None } else { Some(Value::Null) };
        if field.repeated || field.map {
            return Ok(match slot {
                Slot::List(items) if !items.is_empty() => Some(Value::Array(items)),
                Slot::Map(m) if !m.is_empty() => Some(Value::Object(m)),
                _ => nil,
            });
        }
        Ok(match (field.value, slot) {
            (ValueType::Message(id), Slot::Message(bytes)) => Some(self.value(id, &bytes, depth + 1)?),
            // A nil pointer; a struct value is always written, as its zero value.
            (ValueType::Message(_), _) if field.pointer => nil,
            (ValueType::Message(id), _) => Some(self.value(id, &[], depth + 1)?),
            (ValueType::Scalar(Scalar::Bytes), Slot::Bytes(b)) => {
                if b.is_empty() && field.omitempty {
                    None
                } else {
                    Some(base64(&b))
                }
            }
            (ValueType::Scalar(Scalar::Bytes), _) => nil,
            (ValueType::Scalar(_), Slot::Scalar(v)) => {
                if field.omitempty && !field.pointer && is_zero(&v) {
                    None
                } else {
                    Some(v)
                }
            }
            (ValueType::Scalar(_), _) if field.pointer => nil,
            (ValueType::Scalar(kind), _) => {
                if field.omitempty {
                    None
                } else {
                    Some(zero(kind))
                }
            }
        })
    }

    /// The JSON of the types with their own form.
    fn special(
        &self,
        message: &Message,
        special: Special,
        bytes: &[u8],
        slots: Vec<Slot>,
        depth: usize,
    ) -> Result<Value, DecodeError> {
        let by_number = |n: u64| {
            message
                .position(n)
                .and_then(|p| slots.get(p).cloned())
                .unwrap_or(Slot::Absent)
        };
        let int = |slot: Slot| match slot {
            Slot::Scalar(v) => v.as_i64().unwrap_or(0),
            _ => 0,
        };
        Ok(match special {
            Special::Time | Special::MicroTime => {
                if bytes.is_empty() {
                    return Ok(Value::Null);
                }
                let seconds = int(by_number(1));
                let nanos = if special == Special::Time {
                    // metav1.Time drops the nanoseconds when decoding protobuf.
                    0
                } else {
                    let n = int(by_number(2));
                    n - n % 1000
                };
                format_time(seconds, nanos, special == Special::MicroTime)?
            }
            Special::Quantity => match by_number(1) {
                Slot::Scalar(v) => v,
                _ => json!("0"),
            },
            Special::IntOrString => match int(by_number(1)) {
                0 => match by_number(2) {
                    Slot::Scalar(v) => v,
                    _ => json!(0),
                },
                1 => match by_number(3) {
                    Slot::Scalar(v) => v,
                    _ => json!(""),
                },
                _ => return Err(DecodeError::FormatIntOrString),
            },
            Special::Json => match by_number(1) {
                Slot::Bytes(raw) if !raw.is_empty() => {
                    serde_json::from_slice(&raw).map_err(|e| DecodeError::ParseRawJson(e.to_string()))?
                }
                _ => Value::Null,
            },
            Special::List => match by_number(1) {
                Slot::List(items) => Value::Array(items),
                _ => Value::Null,
            },
            Special::SchemaOrArray => match (by_number(2), by_number(1)) {
                (Slot::List(items), _) if !items.is_empty() => Value::Array(items),
                (_, schema) => self.schema_of(message, 1, schema, depth)?,
            },
            Special::SchemaOrBool => match by_number(2) {
                Slot::Message(b) => self.schema_of(message, 2, Slot::Message(b), depth)?,
                _ => match by_number(1) {
                    Slot::Scalar(v) => Value::Bool(v.as_bool().unwrap_or(false)),
                    _ => Value::Bool(false),
                },
            },
            Special::SchemaOrStrings => match (by_number(2), by_number(1)) {
                (Slot::List(items), _) if !items.is_empty() => Value::Array(items),
                (_, schema) => self.schema_of(message, 1, schema, depth)?,
            },
        })
    }

    /// The schema held in field `number` of a `JSONSchemaPropsOr*`, or null.
    fn schema_of(
        &self,
        message: &Message,
        number: u64,
        slot: Slot,
        depth: usize,
    ) -> Result<Value, DecodeError> {
        let field = message.position(number).and_then(|p| message.fields.get(p));
        match (field.map(|f| f.value), slot) {
            (Some(ValueType::Message(id)), Slot::Message(bytes)) => self.value(id, &bytes, depth + 1),
            _ => Ok(Value::Null),
        }
    }
}

fn push(slot: &mut Slot, value: Value) {
    if let Slot::List(items) = slot {
        items.push(value);
    } else {
        *slot = Slot::List(vec![value]);
    }
}

fn zero(kind: Scalar) -> Value {
    match kind {
        Scalar::String => json!(""),
        Scalar::Bool => json!(false),
        Scalar::Int32 | Scalar::Int64 | Scalar::Double => json!(0),
        Scalar::Bytes => Value::Null,
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        _ => false,
    }
}

/// RFC 3339 in UTC as `metav1.Time` (seconds) and `metav1.MicroTime` (microseconds) write it.
fn format_time(seconds: i64, nanos: i64, micro: bool) -> Result<Value, DecodeError> {
    let seconds = seconds
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or(DecodeError::FormatTime)?;
    let nanos = nanos.rem_euclid(1_000_000_000);
    if seconds == GO_ZERO_TIME && nanos == 0 {
        return Ok(Value::Null);
    }
    let time = chrono::DateTime::from_timestamp(seconds, nanos as u32).ok_or(DecodeError::FormatTime)?;
    if !(0..=9999).contains(&chrono::Datelike::year(&time)) {
        return Err(DecodeError::FormatTime);
    }
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(Value::String(time.format(format).to_string()))
}
