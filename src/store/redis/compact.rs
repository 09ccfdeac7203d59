//! A question's JSON as Redis keeps it — without the fields that read back as their default when
//! left out (`null`, `false`, `[]`) — written straight from the struct.
//!
//! It was written by way of a `serde_json::Value` (the whole question as a tree of maps and
//! strings, the empty fields taken out, the tree written): on every ask and every claim, a fifth
//! of the instructions askbridge ran per ask and answer (`scripts/askbridge_callgrind.py`). Here
//! the struct's serializer goes on to `serde_json`'s own, and each field is asked first whether
//! it is empty by [`Empty`], which looks no further than the value's outside (a string or an
//! object is not empty; only a `None`, a `false`, a unit or a sequence without elements is). The
//! bytes are the tree's (the test below holds them to it), in the struct's field order: the tree
//! took `status` and `resolution` out of a question as asked with `Map::remove`, which with
//! `preserve_order` moves the last fields into their places, so questions asked before this
//! change hold the same fields in another order (JSON readers do not mind; nothing reads `q` by
//! position).

use serde::ser::{self, Impossible, Serialize, SerializeStruct, Serializer};
use serde_json::ser::{CompactFormatter, Compound};

type Json<'a> = serde_json::Serializer<&'a mut Vec<u8>>;

/// `value` (a struct) as compact JSON, without its empty fields and those named in `drop`.
pub(super) fn without_empty<T: Serialize>(value: &T, drop: &[&str]) -> String {
    let mut out = Vec::with_capacity(512);
    let mut json = serde_json::Serializer::new(&mut out);
    value
        .serialize(Fields {
            json: &mut json,
            drop,
        })
        .expect("a question always serialises");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// The serializer of the outer struct: its fields go to `json`, the empty ones left out.
struct Fields<'a, 'b> {
    json: &'a mut Json<'b>,
    drop: &'a [&'a str],
}

/// The outer struct's fields being written.
struct Struct<'a, 'b> {
    json: Compound<'a, &'b mut Vec<u8>, CompactFormatter>,
    drop: &'a [&'a str],
}

impl SerializeStruct for Struct<'_, '_> {
    type Ok = ();
    type Error = serde_json::Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        if self.drop.contains(&key) || value.serialize(Empty)? {
            return Ok(());
        }
        self.json.serialize_field(key, value)
    }

    fn end(self) -> Result<(), Self::Error> {
        SerializeStruct::end(self.json)
    }
}

fn not_a_struct() -> serde_json::Error {
    ser::Error::custom("only a struct is written without its empty fields")
}

/// The methods of a serializer that refuses (`Fields`) or answers `$answer` (`Empty`) for every
/// value of these kinds.
macro_rules! answer {
    ($answer:expr; $($method:ident($($arg:ty),*);)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<Self::Ok, Self::Error> { $answer })*
    };
}

impl<'a, 'b> Serializer for Fields<'a, 'b> {
    type Ok = ();
    type Error = serde_json::Error;
    type SerializeSeq = Impossible<(), serde_json::Error>;
    type SerializeTuple = Impossible<(), serde_json::Error>;
    type SerializeTupleStruct = Impossible<(), serde_json::Error>;
    type SerializeTupleVariant = Impossible<(), serde_json::Error>;
    type SerializeMap = Impossible<(), serde_json::Error>;
    type SerializeStruct = Struct<'a, 'b>;
    type SerializeStructVariant = Impossible<(), serde_json::Error>;

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, Self::Error> {
        Ok(Struct {
            json: self.json.serialize_struct(name, len)?,
            drop: self.drop,
        })
    }

    answer! { Err(not_a_struct());
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
        serialize_u64(u64); serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_none(); serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), Self::Error> {
        Err(not_a_struct())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), Self::Error> {
        Err(not_a_struct())
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Self::Error> {
        Err(not_a_struct())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        Err(not_a_struct())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Self::Error> {
        Err(not_a_struct())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Self::Error> {
        Err(not_a_struct())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        Err(not_a_struct())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        Err(not_a_struct())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        Err(not_a_struct())
    }
}

/// Is a value one that `serde_json` writes as `null`, `false` or `[]`? It looks at the value's
/// outside only: a sequence's elements and a map's entries are not serialised.
struct Empty;

/// A sequence or a compound value being looked at: `Some(empty)` for a sequence (empty until
/// an element comes), `None` for a map, a struct or a variant (never empty).
struct Elements(Option<bool>);

impl Elements {
    fn element(&mut self) -> Result<(), serde_json::Error> {
        if let Some(empty) = &mut self.0 {
            *empty = false;
        }
        Ok(())
    }
    fn end(self) -> Result<bool, serde_json::Error> {
        Ok(self.0.unwrap_or(false))
    }
}

impl Serializer for Empty {
    type Ok = bool;
    type Error = serde_json::Error;
    type SerializeSeq = Elements;
    type SerializeTuple = Elements;
    type SerializeTupleStruct = Elements;
    type SerializeTupleVariant = Elements;
    type SerializeMap = Elements;
    type SerializeStruct = Elements;
    type SerializeStructVariant = Elements;

    fn serialize_bool(self, value: bool) -> Result<bool, Self::Error> {
        Ok(!value)
    }

    answer! { Ok(false);
        serialize_i8(i8); serialize_i16(i16); serialize_i32(i32); serialize_i64(i64);
        serialize_u8(u8); serialize_u16(u16); serialize_u32(u32); serialize_u64(u64);
        serialize_f32(f32); serialize_f64(f64); serialize_char(char); serialize_str(&str);
        serialize_bytes(&[u8]); serialize_unit_variant(&'static str, u32, &'static str);
    }
    answer! { Ok(true);
        serialize_none(); serialize_unit(); serialize_unit_struct(&'static str);
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<bool, Self::Error> {
        value.serialize(self)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<bool, Self::Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<bool, Self::Error> {
        Ok(false)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Elements, Self::Error> {
        Ok(Elements(Some(true)))
    }
    fn serialize_tuple(self, _: usize) -> Result<Elements, Self::Error> {
        Ok(Elements(Some(true)))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Elements, Self::Error> {
        Ok(Elements(Some(true)))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Elements, Self::Error> {
        Ok(Elements(None))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Elements, Self::Error> {
        Ok(Elements(None))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Elements, Self::Error> {
        Ok(Elements(None))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Elements, Self::Error> {
        Ok(Elements(None))
    }
}

/// The compound halves of [`Empty`]: each element or entry only counted.
macro_rules! elements {
    ($($trait:ident { $($method:ident($($key:ty),*));* })*) => {
        $(impl ser::$trait for Elements {
            type Ok = bool;
            type Error = serde_json::Error;
            $(fn $method<T: ?Sized + Serialize>(
                &mut self,
                $(_: $key,)*
                _: &T,
            ) -> Result<(), Self::Error> {
                self.element()
            })*
            fn end(self) -> Result<bool, Self::Error> {
                Elements::end(self)
            }
        })*
    };
}

elements! {
    SerializeSeq { serialize_element() }
    SerializeTuple { serialize_element() }
    SerializeTupleStruct { serialize_field() }
    SerializeTupleVariant { serialize_field() }
    SerializeStruct { serialize_field(&'static str) }
    SerializeStructVariant { serialize_field(&'static str) }
}

impl ser::SerializeMap for Elements {
    type Ok = bool;
    type Error = serde_json::Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, _: &T) -> Result<(), Self::Error> {
        self.element()
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, _: &T) -> Result<(), Self::Error> {
        Ok(())
    }
    fn end(self) -> Result<bool, Self::Error> {
        Elements::end(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::approval::Action;
    use askbridge_core::{Answer, Claim, Millis, NewQuestion, Question, QuestionId, Transition};
    use std::time::Duration;

    /// What the tree wrote: the question as a `Value`, its empty top-level fields (and `drop`)
    /// taken out.
    fn by_way_of_a_tree(question: &Question, drop: &[&str]) -> String {
        let mut value = serde_json::to_value(question).unwrap();
        let fields = value.as_object_mut().unwrap();
        let empty = |v: &serde_json::Value| {
            v.is_null()
                || *v == serde_json::Value::Bool(false)
                || v.as_array().is_some_and(Vec::is_empty)
        };
        fields.retain(|key, v| !drop.contains(&key.as_str()) && !empty(v));
        value.to_string()
    }

    fn asked(new: NewQuestion) -> Question {
        new.session("s")
            .into_question(QuestionId::random(), Millis(1_000), Duration::from_secs(60))
            .unwrap()
    }

    fn shapes() -> Vec<Question> {
        let plain = asked(NewQuestion::ask("Which library?").options(["dayjs", "luxon"]));
        let mut rich = asked(
            NewQuestion::ask("Which \"library\", é?")
                .options(["dayjs", "luxon"])
                .detail("line\nbreak")
                .multi()
                .allow_custom()
                .default_answer(Answer::Text("dayjs".into()))
                .remind(Duration::from_secs(30), 2),
        );
        rich.callback_url = Some("https://example.com/hook".into());
        let approval = asked(NewQuestion::ask("Deploy?").approve(Action {
            tool: "deploy".into(),
            args: serde_json::json!({"env": "prod", "empty": [], "no": false, "null": null}),
        }));
        let mut answered = plain.clone();
        let claim = Claim::new(
            Transition::Answer {
                value: Answer::Text("luxon".into()),
            },
            askbridge_core::Actor::api(),
            Millis(2_000),
        );
        answered.apply(&claim);
        vec![plain, rich, approval, answered]
    }

    /// The same bytes as the tree, field order included, for every shape: what Redis holds and
    /// what the events carry do not change.
    #[test]
    fn writes_what_the_tree_wrote() {
        for question in shapes() {
            for drop in [&[][..], &["resolution", "status"][..]] {
                assert_eq!(
                    without_empty(&question, drop),
                    by_way_of_a_tree(&question, drop),
                    "{question:?}"
                );
            }
        }
    }

    #[test]
    fn only_the_outside_of_a_field_decides_whether_it_is_empty() {
        let empty = |value: serde_json::Value| value.serialize(Empty).unwrap();
        assert!(empty(serde_json::json!(null)));
        assert!(empty(serde_json::json!(false)));
        assert!(empty(serde_json::json!([])));
        assert!(!empty(serde_json::json!([null])));
        assert!(!empty(serde_json::json!({})));
        assert!(!empty(serde_json::json!("")));
        assert!(!empty(serde_json::json!(0)));
        assert!(!empty(serde_json::json!(true)));
        assert!(Some(Vec::<u8>::new()).serialize(Empty).unwrap());
        assert!(!Some(vec![1]).serialize(Empty).unwrap());
    }

    #[test]
    fn a_value_that_is_not_a_struct_is_refused() {
        assert!(
            std::panic::catch_unwind(|| without_empty(&vec![1, 2], &[])).is_err(),
            "a sequence has no fields to leave out"
        );
    }
}
