//! Field types that never fail: a qlog field of an unexpected type reads as absent, so one
//! oddly typed field (another stack's extension, a string where a number was expected)
//! cannot fail the event or the file. Numbers written as strings (picoquic's states, some
//! stacks' 64-bit values) are parsed.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// A number, `None` when the field held something else.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Num(pub Option<f64>);

impl Num {
    /// The value as a non-negative integer (rounded down), when it is one.
    pub fn u64(self) -> Option<u64> {
        self.0.filter(|v| v.is_finite() && *v >= 0.0).map(|v| {
            if v >= u64::MAX as f64 {
                u64::MAX
            } else {
                v as u64
            }
        })
    }
}

struct NumVisitor;

impl<'de> Visitor<'de> for NumVisitor {
    type Value = Num;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("anything")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
        Ok(Num(Some(v as f64)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
        Ok(Num(Some(v as f64)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
        Ok(Num(Some(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
        Ok(Num(v.trim().parse::<f64>().ok()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Num, E> {
        Ok(Num(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Num, E> {
        Ok(Num(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Num, A::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Num(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Num, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Num(None))
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        d.deserialize_any(NumVisitor)
    }
}

/// A string, `None` when the field held something else (numbers are kept as their text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Text(pub Option<String>);

impl Text {
    /// The text, if any.
    pub fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("anything")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
        Ok(Text(Some(v.to_owned())))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
        Ok(Text(Some(v.to_string())))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
        Ok(Text(Some(v.to_string())))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Text, E> {
        Ok(Text(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Text, E> {
        Ok(Text(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Text, E> {
        Ok(Text(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Text, A::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Text(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Text, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Text(None))
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

/// A string borrowed from the input when it can be (event names), `None` when the field
/// held something else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BText<'a>(pub Option<std::borrow::Cow<'a, str>>);

struct BTextVisitor;

impl<'de> Visitor<'de> for BTextVisitor {
    type Value = BText<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("anything")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<BText<'de>, E> {
        Ok(BText(Some(std::borrow::Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<BText<'de>, E> {
        Ok(BText(Some(std::borrow::Cow::Owned(v.to_owned()))))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<BText<'de>, E> {
        Ok(BText(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<BText<'de>, E> {
        Ok(BText(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<BText<'de>, E> {
        Ok(BText(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<BText<'de>, E> {
        Ok(BText(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<BText<'de>, E> {
        Ok(BText(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<BText<'de>, A::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(BText(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<BText<'de>, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(BText(None))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for BText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BText<'a>, D::Error> {
        d.deserialize_any(BTextVisitor)
    }
}

/// A list of lenient elements (`Num`, `Text`, `Obj`, `List`: elements of another type read
/// as absent values); not a list reads as empty.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct List<T>(pub Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

struct ListVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
    type Value = List<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("anything")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<List<T>, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = s.next_element::<T>()? {
            out.push(v);
        }
        Ok(List(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<List<T>, A::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(List(Vec::new()))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<List<T>, E> {
        Ok(List(Vec::new()))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<List<T>, E> {
        Ok(List(Vec::new()))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<List<T>, E> {
        Ok(List(Vec::new()))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<List<T>, E> {
        Ok(List(Vec::new()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<List<T>, E> {
        Ok(List(Vec::new()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<List<T>, E> {
        Ok(List(Vec::new()))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ListVisitor(std::marker::PhantomData))
    }
}

/// An object of type `T`, or `None` when the field held something else.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Obj<T>(pub Option<T>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

struct ObjVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjVisitor<T> {
    type Value = Obj<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("anything")
    }
    // `T` is a struct of lenient fields with defaults: from an object it cannot fail on a
    // field's type, and it is parsed in place, without an intermediate value.
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Obj<T>, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(m)).map(|v| Obj(Some(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Obj<T>, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Obj(None))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Obj<T>, E> {
        Ok(Obj(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Obj<T>, E> {
        Ok(Obj(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Obj<T>, E> {
        Ok(Obj(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Obj<T>, E> {
        Ok(Obj(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Obj<T>, E> {
        Ok(Obj(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Obj<T>, E> {
        Ok(Obj(None))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ObjVisitor(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct T {
        a: Num,
        b: Text,
        c: List<Num>,
        d: List<Obj<U>>,
    }

    #[derive(Deserialize, Default, Debug, PartialEq)]
    #[serde(default)]
    struct U {
        x: Num,
    }

    #[test]
    fn odd_types_read_as_absent() {
        let t: T = serde_json::from_str(
            r#"{"a": {"x": 1}, "b": [1], "c": "no", "d": [1, {"x": "z"}, {"x": 2, "y": []}]}"#,
        )
        .expect("t");
        assert_eq!((t.a, t.b, t.c), (Num(None), Text(None), List(Vec::new())));
        assert_eq!(
            t.d.0,
            vec![
                Obj(None),
                Obj(Some(U { x: Num(None) })),
                Obj(Some(U { x: Num(Some(2.0)) }))
            ]
        );
        let t: T = serde_json::from_str(r#"{"a": "12", "b": 7, "c": [1, "2", {}]}"#).expect("t");
        assert_eq!(t.a, Num(Some(12.0)));
        assert_eq!(t.b.as_deref(), Some("7"));
        assert_eq!(t.c.0, vec![Num(Some(1.0)), Num(Some(2.0)), Num(None)]);
        assert_eq!(Num(Some(1.8446744073709552e19)).u64(), Some(u64::MAX));
    }
}
