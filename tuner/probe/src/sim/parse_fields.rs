//! The typed field readers of the simulator-file parser: a required key, a positive whole
//! number (optionally bounded), a positive or non-negative finite number (optionally within
//! a range, cycles within `MAX_CYCLES`), and the `Invalid` error that names the file, the
//! full key path and the fix.

use super::config::SimConfigError;
use super::limits::MAX_CYCLES;
use super::parse::Parser;
use serde_json::{Map, Value};

impl Parser<'_> {
    pub(super) fn required<'v>(
        &self,
        obj: &'v Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Result<&'v Value, SimConfigError> {
        obj.get(key).ok_or_else(|| SimConfigError::Missing {
            origin: self.origin.to_string(),
            key: join(path, key),
            fix: "add it (docs/simulator.md lists every key)".to_string(),
        })
    }

    /// A whole number of at least 1.
    pub(super) fn positive_int(
        &self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
        fix: &str,
    ) -> Result<u64, SimConfigError> {
        let value = self.required(obj, path, key)?;
        let full = join(path, key);
        match value {
            Value::Number(n) => {
                if let Some(v) = n.as_u64() {
                    if v == 0 {
                        Err(self.invalid(&full, "is 0, must be positive", fix))
                    } else {
                        Ok(v)
                    }
                } else if n.as_f64().is_some_and(|f| f <= 0.0) {
                    Err(self.invalid(&full, &format!("is {n}, must be positive"), fix))
                } else {
                    Err(self.invalid(&full, &format!("is {n}, not a whole number"), fix))
                }
            }
            other => Err(self.invalid(&full, &format!("is {other}, not a number"), fix)),
        }
    }

    /// A whole number from 1 to `max`, the most the simulator supports.
    pub(super) fn bounded_int(
        &self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
        max: u64,
        fix: &str,
    ) -> Result<u64, SimConfigError> {
        let v = self.positive_int(obj, path, key, fix)?;
        if v > max {
            return Err(self.invalid(
                &join(path, key),
                &format!("is {v}, more than the simulator supports ({max})"),
                fix,
            ));
        }
        Ok(v)
    }

    /// A positive finite number in `min..=max`.
    pub(super) fn number_in(
        &self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
        (min, max): (f64, f64),
        fix: &str,
    ) -> Result<f64, SimConfigError> {
        let v = self.positive_number(obj, path, key, fix)?;
        if v < min || v > max {
            return Err(self.invalid(
                &join(path, key),
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
    pub(super) fn cycles(
        &self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
        fix: &str,
    ) -> Result<f64, SimConfigError> {
        self.number_in(obj, path, key, (0.0, MAX_CYCLES), fix)
    }

    pub(super) fn positive_number(
        &self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
        fix: &str,
    ) -> Result<f64, SimConfigError> {
        let v = self.number(obj, path, key, fix)?;
        if v <= 0.0 {
            let problem = format!("is {}, must be positive", shown(v));
            return Err(self.invalid(&join(path, key), &problem, fix));
        }
        Ok(v)
    }

    pub(super) fn number_at_least_zero(
        &self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
        fix: &str,
    ) -> Result<f64, SimConfigError> {
        let v = self.number(obj, path, key, fix)?;
        if v < 0.0 {
            return Err(self.invalid(
                &join(path, key),
                &format!("is {}, must not be negative", shown(v)),
                fix,
            ));
        }
        Ok(v)
    }

    pub(super) fn number(
        &self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
        fix: &str,
    ) -> Result<f64, SimConfigError> {
        let value = self.required(obj, path, key)?;
        value.as_f64().filter(|v| v.is_finite()).ok_or_else(|| {
            self.invalid(&join(path, key), &format!("is {value}, not a number"), fix)
        })
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

/// A number for a message: `1e308` rather than its 309 digits.
pub(super) fn shown(v: f64) -> String {
    if v.abs() >= 1e15 || (v != 0.0 && v.abs() < 1e-6) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}
