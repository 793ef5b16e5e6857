//! Plans as `-D` defines for CUDA sources, one naming scheme shared by the build helper
//! (`memtune_build`, compile time) and a re-plan at run time (NVRTC with new
//! defines): `MEMTUNE_<NAME>_<FIELD>`, `<NAME>` the plan's name upper-cased.

use crate::plan::sampling::SamplingPlan;
use crate::plan::stencil::{StencilPlan, Variant};

/// Whether `name` is a C identifier (what `-D` and the preprocessor accept).
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The prefix of a plan's defines: `stencil` → `MEMTUNE_STENCIL_`; `None` when the name
/// would not make identifiers.
pub fn prefix(plan_name: &str) -> Option<String> {
    let prefix = format!("MEMTUNE_{}_", plan_name.to_ascii_uppercase());
    is_identifier(&prefix).then_some(prefix)
}

/// The stencil variant as a number the preprocessor can compare.
pub fn variant_number(v: Variant) -> u32 {
    match v {
        Variant::Plain => 0,
        Variant::Staged => 1,
        Variant::Streaming => 2,
    }
}

/// `<prefix>SCOPE_BYTES`, `<prefix>PASSES`.
pub fn sampling(prefix: &str, plan: &SamplingPlan) -> Vec<(String, String)> {
    vec![
        (format!("{prefix}SCOPE_BYTES"), plan.scope_bytes.to_string()),
        (format!("{prefix}PASSES"), plan.passes.to_string()),
    ]
}

/// `<prefix>BLOCK_X/Y/Z`, `<prefix>STAGING` (0/1), `<prefix>VARIANT` (0 plain, 1 staged,
/// 2 streaming).
pub fn stencil(prefix: &str, plan: &StencilPlan) -> Vec<(String, String)> {
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
        assert!(is_identifier("MEMTUNE_X"));
        assert!(is_identifier("_x1"));
        assert!(!is_identifier("1X"));
        assert!(!is_identifier("A-B"));
        assert!(!is_identifier(""));
        assert_eq!(prefix("stencil").as_deref(), Some("MEMTUNE_STENCIL_"));
        assert_eq!(prefix("my plan"), None);
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
