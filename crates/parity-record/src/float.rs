//! Lossless JSON for floats: finite values are numbers; NaN and the
//! infinities, which JSON numbers cannot hold, are the strings `"NaN"`,
//! `"inf"` and `"-inf"`. Reading also accepts `null` (as NaN), which is what
//! records of earlier schemas hold for any non-finite value.
//!
//! Use as `#[serde(with = "crate::float")]` on an `f64` field and
//! `#[serde(with = "crate::float::option")]` on an `Option<f64>`.

use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;
use std::fmt;

/// Serialises one float (finite as a number, else `"NaN"`, `"inf"`, `"-inf"`).
pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    if x.is_finite() {
        s.serialize_f64(*x)
    } else if x.is_nan() {
        s.serialize_str("NaN")
    } else if *x > 0.0 {
        s.serialize_str("inf")
    } else {
        s.serialize_str("-inf")
    }
}

/// Reads a float written by [`serialize`] (or `null`, as NaN).
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_any(FloatVisitor)
}

struct FloatVisitor;

impl<'de> Visitor<'de> for FloatVisitor {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number, null, or one of \"NaN\", \"inf\", \"-inf\"")
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        Ok(v as f64)
    }
    fn visit_unit<E: de::Error>(self) -> Result<f64, E> {
        Ok(f64::NAN)
    }
    fn visit_none<E: de::Error>(self) -> Result<f64, E> {
        Ok(f64::NAN)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        match v {
            "NaN" | "nan" => Ok(f64::NAN),
            "inf" | "+inf" | "Infinity" => Ok(f64::INFINITY),
            "-inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
            other => Err(E::invalid_value(de::Unexpected::Str(other), &self)),
        }
    }
}

/// The same for `Option<f64>`: `None` is `null`.
pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serialises `None` as `null`, a value as [`super::serialize`] does.
    pub fn serialize<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            None => s.serialize_none(),
            Some(v) => super::serialize(v, s),
        }
    }

    /// Reads `null` as `None`, anything else as [`super::deserialize`] does.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        #[derive(Deserialize)]
        struct Wrap(#[serde(with = "super")] f64);
        Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Debug)]
    struct T {
        #[serde(with = "crate::float")]
        x: f64,
        #[serde(with = "crate::float::option")]
        y: Option<f64>,
    }

    fn round_trip(x: f64, y: Option<f64>) -> (f64, Option<f64>) {
        let text = serde_json::to_string(&T { x, y }).unwrap();
        let t: T = serde_json::from_str(&text).unwrap();
        (t.x, t.y)
    }

    #[test]
    fn non_finite_values_survive_a_round_trip() {
        assert_eq!(round_trip(1.5, None), (1.5, None));
        assert_eq!(
            round_trip(f64::INFINITY, Some(f64::NEG_INFINITY)).0,
            f64::INFINITY
        );
        assert_eq!(
            round_trip(0.0, Some(f64::NEG_INFINITY)).1,
            Some(f64::NEG_INFINITY)
        );
        assert!(round_trip(f64::NAN, Some(f64::NAN)).0.is_nan());
        assert!(round_trip(f64::NAN, Some(f64::NAN)).1.unwrap().is_nan());
        let text = serde_json::to_string(&T {
            x: f64::NAN,
            y: Some(f64::INFINITY),
        })
        .unwrap();
        assert_eq!(text, r#"{"x":"NaN","y":"inf"}"#);
    }

    #[test]
    fn null_reads_as_nan_and_junk_is_refused() {
        let t: T = serde_json::from_str(r#"{"x":null,"y":3}"#).unwrap();
        assert!(t.x.is_nan());
        assert_eq!(t.y, Some(3.0));
        assert!(serde_json::from_str::<T>(r#"{"x":"big","y":null}"#).is_err());
    }

    #[test]
    fn last_digits_survive_a_round_trip() {
        // Each was changed in its last digit by serde_json's default (fast,
        // inexact) parser: a re-rendered record must keep every number.
        for x in [
            0.9999999999999999,
            0.30000000000000004,
            1.0000000000000002,
            2.2250738585072014e-308,
            5e-324,
            1.7976931348623157e308,
            -0.0,
            9.999999999999999e-6,
        ] {
            assert_eq!(round_trip(x, Some(x)).0.to_bits(), x.to_bits(), "{x:e}");
            assert_eq!(
                round_trip(x, Some(x)).1.map(f64::to_bits),
                Some(x.to_bits())
            );
        }
    }

    proptest! {
        #[test]
        fn every_float_round_trips_bit_for_bit(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            let (back, opt) = round_trip(x, Some(x));
            if x.is_nan() {
                prop_assert!(back.is_nan() && opt.is_some_and(f64::is_nan));
            } else {
                prop_assert_eq!(back.to_bits(), bits);
                prop_assert_eq!(opt.map(f64::to_bits), Some(bits));
            }
        }
    }
}
