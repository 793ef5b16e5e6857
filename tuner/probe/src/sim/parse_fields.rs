//! The typed field readers of the simulator-file parser: a [`Key`] of an object read as a
//! required value, a positive whole number (optionally bounded), a positive or non-negative
//! finite number (optionally within a range, cycles within `MAX_CYCLES`), and the `Invalid`
//! error that names the file, the full key path and the fix.

use super::config::SimConfigError;
use super::limits::MAX_CYCLES;
use super::parse::Parser;
use serde_json::{Map, Value};

impl Parser<'_> {
    /// `key` of `obj`, the object at `path` (empty for the top level).
    pub(super) fn key<'k>(
        &'k self,
        obj: &'k Map<String, Value>,
        path: &'k str,
        key: &'k str,
    ) -> Key<'k> {
        Key {
            parser: self,
            obj,
            path,
            key,
        }
    }

    pub(super) fn invalid(&self, key: &str, problem: &str, fix: &str) -> SimConfigError {
        SimConfigError::Invalid {
            origin: self.origin.to_string(),
            key: key.to_string(),
            problem: problem.to_string(),
            fix: fix.to_string(),
        }
    }
}

/// A key of an object of the document, with the path that names it in errors.
pub(super) struct Key<'k> {
    parser: &'k Parser<'k>,
    obj: &'k Map<String, Value>,
    path: &'k str,
    key: &'k str,
}

impl<'k> Key<'k> {
    /// The `Invalid` error of this key, named by its full path.
    pub(super) fn invalid(&self, problem: &str, fix: &str) -> SimConfigError {
        self.parser
            .invalid(&join(self.path, self.key), problem, fix)
    }

    pub(super) fn required(&self) -> Result<&'k Value, SimConfigError> {
        self.obj
            .get(self.key)
            .ok_or_else(|| SimConfigError::Missing {
                origin: self.parser.origin.to_string(),
                key: join(self.path, self.key),
                fix: "add it (docs/simulator.md lists every key)".to_string(),
            })
    }

    /// A whole number of at least 1.
    pub(super) fn positive_int(&self, fix: &str) -> Result<u64, SimConfigError> {
        match self.required()? {
            Value::Number(n) => {
                if let Some(v) = n.as_u64() {
                    if v == 0 {
                        Err(self.invalid("is 0, must be positive", fix))
                    } else {
                        Ok(v)
                    }
                } else if n.as_f64().is_some_and(|f| f <= 0.0) {
                    Err(self.invalid(&format!("is {n}, must be positive"), fix))
                } else {
                    Err(self.invalid(&format!("is {n}, not a whole number"), fix))
                }
            }
            other => Err(self.invalid(&format!("is {other}, not a number"), fix)),
        }
    }

    /// A whole number from 1 to `max`, the most the simulator supports.
    pub(super) fn bounded_int(&self, max: u64, fix: &str) -> Result<u64, SimConfigError> {
        let v = self.positive_int(fix)?;
        if v > max {
            return Err(self.invalid(
                &format!("is {v}, more than the simulator supports ({max})"),
                fix,
            ));
        }
        Ok(v)
    }

    /// An optional power of two from `min` to `max`: `None` where absent or null.
    pub(super) fn optional_power_of_two(
        &self,
        (min, max): (u64, u64),
        fix: &str,
    ) -> Result<Option<u64>, SimConfigError> {
        if matches!(self.obj.get(self.key), None | Some(Value::Null)) {
            return Ok(None);
        }
        let v = self.positive_int(fix)?;
        if !v.is_power_of_two() || v < min || v > max {
            return Err(self.invalid(
                &format!("is {v}, not a power of two from {min} to {max}"),
                fix,
            ));
        }
        Ok(Some(v))
    }

    /// A positive finite number in `min..=max`.
    pub(super) fn number_in(
        &self,
        (min, max): (f64, f64),
        fix: &str,
    ) -> Result<f64, SimConfigError> {
        let v = self.positive_number(fix)?;
        if v < min || v > max {
            return Err(self.invalid(
                &format!(
                    "is {}, outside {min}..={max}, what the simulator supports",
                    shown(v)
                ),
                fix,
            ));
        }
        Ok(v)
    }

    /// Cycles of a load or a miss: positive, at most [`MAX_CYCLES`].
    pub(super) fn cycles(&self, fix: &str) -> Result<f64, SimConfigError> {
        self.number_in((0.0, MAX_CYCLES), fix)
    }

    pub(super) fn positive_number(&self, fix: &str) -> Result<f64, SimConfigError> {
        let v = self.number(fix)?;
        if v <= 0.0 {
            let problem = format!("is {}, must be positive", shown(v));
            return Err(self.invalid(&problem, fix));
        }
        Ok(v)
    }

    pub(super) fn number_at_least_zero(&self, fix: &str) -> Result<f64, SimConfigError> {
        let v = self.number(fix)?;
        if v < 0.0 {
            return Err(self.invalid(&format!("is {}, must not be negative", shown(v)), fix));
        }
        Ok(v)
    }

    pub(super) fn number(&self, fix: &str) -> Result<f64, SimConfigError> {
        let value = self.required()?;
        value
            .as_f64()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.invalid(&format!("is {value}, not a number"), fix))
    }
}

/// A number for a message: `1e308` rather than its 309 digits.
pub(super) fn shown(v: f64) -> String {
    if v.abs() >= 1e15 || (v != 0.0 && v.abs() < 1e-6) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}
