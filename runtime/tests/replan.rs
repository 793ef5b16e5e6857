//! Re-planning compile-time constants for the device present, without a GPU: the identity
//! is an argument. Order: embedded profile of this UUID, embedded profile of this model (not
//! simulated), the user cache, the compile-time constants.

use memtune::core::plan::grouping;
use memtune::core::{codec, store, Store};
use memtune::{DeviceIdentity, EmbeddedProfiles, GroupingConsts, Profile, Replan, RuntimeSource};
use std::path::{Path, PathBuf};

/// Planned at compile time for the simulated K80.
const K80_GROUP: GroupingConsts = memtune::grouping_plan!(
    table = 8 GiB,
    table_memory = device,
    input_memory = pinned,
    profile = "../tests/fixtures/k80.json"
);

static SHIPPED: EmbeddedProfiles = memtune::embedded_profiles!(dir = "tests/embedded");

fn fixture(name: &str) -> Profile {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name);
    store::load_path(&path).expect("fixture")
}

/// The simulated P100 as if measured on a real GPU with UUID `uuid`.
fn measured_p100(uuid: &str) -> Profile {
    let mut p = fixture("p100.json");
    p.provenance.simulator = None;
    p.device.uuid = uuid.to_string();
    codec::seal(&mut p);
    p
}

fn bytes(profile: &Profile) -> &'static [u8] {
    Box::leak(
        codec::to_json(&mut profile.clone())
            .into_bytes()
            .into_boxed_slice(),
    )
}

fn embedded(files: Vec<(&'static str, &'static [u8])>) -> EmbeddedProfiles {
    EmbeddedProfiles::new(Box::leak(files.into_boxed_slice()))
}

fn device_of(profile: &Profile, uuid: &str) -> DeviceIdentity {
    DeviceIdentity {
        uuid: uuid.to_string(),
        ..profile.device.clone()
    }
}

const HERE: &str = "GPU-0000000a-0000-4000-8000-00000000000a";
const TWIN: &str = "GPU-0000000b-0000-4000-8000-00000000000b";

#[test]
fn an_embedded_profile_of_this_uuid_replaces_the_constants() {
    let p100 = fixture("p100.json");
    let here = device_of(&p100, &p100.device.uuid);
    let shipped = embedded(vec![
        ("k80.json", bytes(&fixture("k80.json"))),
        ("twin.json", bytes(&measured_p100(TWIN))),
        ("p100.json", bytes(&p100)),
    ]);
    let replan = Replan::for_device(&here, &shipped, None);
    let chosen = replan.grouping(&K80_GROUP).unwrap();
    assert_eq!(chosen.source, RuntimeSource::Embedded("p100.json"));
    assert_eq!(
        chosen.plan,
        grouping::plan(&p100, &K80_GROUP.workload).unwrap()
    );
    assert!(chosen.replaced && chosen.changed);
    assert_eq!(chosen.planned_for, K80_GROUP.profile);
    assert_eq!(chosen.used.digest, p100.digest);
    assert!(chosen.used.simulated);
}

#[test]
fn then_a_measured_profile_of_the_same_model_never_a_simulated_one() {
    let p100 = fixture("p100.json");
    let here = device_of(&p100, HERE);
    // Only the simulated P100: same model, but simulated: not used.
    let sim_only = embedded(vec![("p100.json", bytes(&p100))]);
    let chosen = Replan::for_device(&here, &sim_only, None)
        .grouping(&K80_GROUP)
        .unwrap();
    assert_eq!(chosen.source, RuntimeSource::CompileTime);

    let twin = measured_p100(TWIN);
    let cache = tempfile::tempdir().unwrap();
    Store::new(cache.path())
        .save(&mut measured_p100(HERE))
        .unwrap();
    let shipped = embedded(vec![
        ("p100.json", bytes(&p100)),
        ("twin.json", bytes(&twin)),
    ]);
    let chosen = Replan::for_device(&here, &shipped, Some(cache.path()))
        .grouping(&K80_GROUP)
        .unwrap();
    assert_eq!(chosen.source, RuntimeSource::EmbeddedSameModel("twin.json"));
    assert_eq!(chosen.used.uuid, TWIN);
    assert!(!chosen.used.simulated);
    assert!(chosen.replaced);
}

#[test]
fn then_the_user_cache() {
    let p100 = fixture("p100.json");
    let here = device_of(&p100, HERE);
    let cache = tempfile::tempdir().unwrap();
    let mut cached = measured_p100(HERE);
    let path = Store::new(cache.path()).save(&mut cached).unwrap();
    let shipped = embedded(vec![("k80.json", bytes(&fixture("k80.json")))]);
    let replan = Replan::for_device(&here, &shipped, Some(cache.path()));
    assert_eq!(replan.source(), RuntimeSource::Cache(path));
    let chosen = replan.grouping(&K80_GROUP).unwrap();
    assert_eq!(chosen.used.uuid, HERE);
    assert_eq!(
        chosen.plan,
        grouping::plan(&cached, &K80_GROUP.workload).unwrap()
    );
    assert!(chosen.replaced && chosen.changed);
}

#[test]
fn else_the_constants_stand_with_a_warning_when_planned_for_another_model() {
    let p100 = fixture("p100.json");
    let here = device_of(&p100, HERE);
    let empty = tempfile::tempdir().unwrap();
    let chosen = Replan::for_device(&here, &embedded(vec![]), Some(empty.path()))
        .grouping(&K80_GROUP)
        .unwrap();
    assert_eq!(chosen.source, RuntimeSource::CompileTime);
    assert!(!chosen.replaced && !chosen.changed);
    assert_eq!(chosen.plan, K80_GROUP.to_plan());
    assert_eq!(chosen.used.digest, K80_GROUP.profile.digest);
    let warning = chosen.warnings.join("\n");
    assert!(
        warning.contains("another model") && warning.contains(K80_GROUP.profile.uuid),
        "{warning}"
    );
}

#[test]
fn the_compile_time_profile_itself_keeps_the_constants() {
    let k80 = fixture("k80.json");
    let here = device_of(&k80, &k80.device.uuid);
    let shipped = embedded(vec![("k80.json", bytes(&k80))]);
    let chosen = Replan::for_device(&here, &shipped, None)
        .grouping(&K80_GROUP)
        .unwrap();
    assert_eq!(chosen.source, RuntimeSource::Embedded("k80.json"));
    assert!(!chosen.replaced && !chosen.changed);
    assert!(chosen.warnings.is_empty(), "{:?}", chosen.warnings);
    assert!(K80_GROUP == chosen.plan);
}

#[test]
fn embedded_profiles_macro_includes_the_crates_profiles() {
    let files = SHIPPED.files();
    assert_eq!(files.len(), 1);
    let (name, bytes) = files[0];
    let on_disk = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/embedded")
        .join(name);
    assert_eq!(bytes, std::fs::read(&on_disk).unwrap().as_slice());
    let (profiles, warnings) = SHIPPED.profiles();
    assert!(warnings.is_empty());
    let here = profiles[0].1.device.clone();
    let replan = Replan::for_device(&here, &SHIPPED, None);
    assert_eq!(replan.source(), RuntimeSource::Embedded(name));
}

#[test]
fn an_unreadable_embedded_profile_is_skipped_with_a_warning() {
    let k80 = fixture("k80.json");
    let here = device_of(&k80, &k80.device.uuid);
    let shipped = embedded(vec![(
        "broken.json",
        b"{\"schema\": \"memtune-profile/9\"}",
    )]);
    let chosen = Replan::for_device(&here, &shipped, None)
        .grouping(&K80_GROUP)
        .unwrap();
    assert_eq!(chosen.source, RuntimeSource::CompileTime);
    assert!(
        chosen.warnings.iter().any(|w| w.contains("broken.json")),
        "{:?}",
        chosen.warnings
    );
}
