//! Checks on defines; the plans' defines themselves are `memtune_core::defines`, shared
//! with a re-plan at run time.

use super::error::BuildError;
use memtune_core::defines::{is_identifier, prefix as plan_prefix};

pub fn check_name(name: &str) -> Result<(), BuildError> {
    if is_identifier(name) {
        Ok(())
    } else {
        Err(BuildError::BadDefine {
            name: name.to_string(),
            why: "not a C identifier (letters, digits and _, not starting with a digit)".into(),
        })
    }
}

/// Values go on the nvcc command line and into generated Rust: keep them to one line with
/// no quotes, which every plan value and any sane constant satisfies.
pub fn check_value(name: &str, value: &str) -> Result<(), BuildError> {
    if value
        .chars()
        .any(|c| c.is_control() || c == '"' || c == '\\')
    {
        return Err(BuildError::BadDefine {
            name: name.to_string(),
            why: format!("value {value:?} holds a quote, backslash or control character"),
        });
    }
    Ok(())
}

/// The prefix of a plan's defines, or an error naming the plan.
pub fn prefix(plan_name: &str) -> Result<String, BuildError> {
    plan_prefix(plan_name).ok_or_else(|| BuildError::BadDefine {
        name: plan_name.to_string(),
        why: "a plan's name must make C identifiers (MEMTUNE_<NAME>_...): letters, digits and _"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks() {
        assert!(check_name("MEMTUNE_X").is_ok());
        assert!(check_name("1X").is_err());
        assert!(check_value("A", "4096").is_ok());
        assert!(check_value("A", "a\"b").is_err());
        assert!(check_value("A", "a\nb").is_err());
        assert!(prefix("my plan").is_err());
    }
}
