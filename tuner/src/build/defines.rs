//! Plans turned into `-DMEMTUNE_...` defines, one naming scheme for every kernel:
//! `MEMTUNE_<NAME>_<FIELD>` with `<NAME>` the plan's name upper-cased.

use super::error::BuildError;
use memtune_core::plan::sampling::SamplingPlan;
use memtune_core::plan::stencil::{StencilPlan, Variant};

/// `(name, value)` pairs, in the order they were added.
pub type Defines = Vec<(String, String)>;

/// Whether `name` is a C identifier (what `-D` and the preprocessor accept).
pub fn check_name(name: &str) -> Result<(), BuildError> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
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

/// The prefix of a plan's defines: `stencil` → `MEMTUNE_STENCIL_`.
pub fn prefix(plan_name: &str) -> Result<String, BuildError> {
    let upper = plan_name.to_ascii_uppercase();
    let prefix = format!("MEMTUNE_{upper}_");
    check_name(&prefix)?;
    Ok(prefix)
}

/// The stencil variant as a number the preprocessor can compare.
pub fn variant_number(v: Variant) -> u32 {
    match v {
        Variant::Plain => 0,
        Variant::Staged => 1,
        Variant::Streaming => 2,
    }
}

/// `_SCOPE_BYTES`, `_PASSES`.
pub fn sampling(prefix: &str, plan: &SamplingPlan) -> Defines {
    vec![
        (format!("{prefix}SCOPE_BYTES"), plan.scope_bytes.to_string()),
        (format!("{prefix}PASSES"), plan.passes.to_string()),
    ]
}

/// `_BLOCK_X/Y/Z`, `_STAGING` (0/1), `_VARIANT` (0 plain, 1 staged, 2 streaming).
pub fn stencil(prefix: &str, plan: &StencilPlan) -> Defines {
    vec![
        (format!("{prefix}BLOCK_X"), plan.block[0].to_string()),
        (format!("{prefix}BLOCK_Y"), plan.block[1].to_string()),
        (format!("{prefix}BLOCK_Z"), plan.block[2].to_string()),
        (
            format!("{prefix}STAGING"),
            u32::from(plan.staging).to_string(),
        ),
        (
            format!("{prefix}VARIANT"),
            variant_number(plan.variant).to_string(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("MEMTUNE_X").is_ok());
        assert!(check_name("_x1").is_ok());
        assert!(check_name("1X").is_err());
        assert!(check_name("A-B").is_err());
        assert!(check_name("").is_err());
        assert_eq!(prefix("stencil").ok(), Some("MEMTUNE_STENCIL_".into()));
        assert!(prefix("my plan").is_err());
    }

    #[test]
    fn values() {
        assert!(check_value("A", "4096").is_ok());
        assert!(check_value("A", "a\"b").is_err());
        assert!(check_value("A", "a\nb").is_err());
    }

    #[test]
    fn stencil_defines_follow_the_plan() {
        let plan = StencilPlan {
            variant: Variant::Streaming,
            block: [32, 8, 1],
            staging: true,
            reasons: vec![],
        };
        let d = stencil("MEMTUNE_S_", &plan);
        assert!(d.contains(&("MEMTUNE_S_BLOCK_Y".into(), "8".into())));
        assert!(d.contains(&("MEMTUNE_S_STAGING".into(), "1".into())));
        assert!(d.contains(&("MEMTUNE_S_VARIANT".into(), "2".into())));
    }
}
