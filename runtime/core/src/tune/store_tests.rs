use super::*;
use crate::plan::{SamplingPlan, SamplingWorkload};
use crate::profile::MemoryKind;
use crate::tune::session::{run, Budget};
use crate::tune::{Candidate, Tunable, MAX_DECISION_BYTES};

fn candidates() -> Vec<Candidate<SamplingPlan>> {
    let w = SamplingWorkload {
        region_bytes: 3 << 30,
        memory: MemoryKind::Pinned,
        reads_per_thread: 64,
    };
    w.candidates(&crate::default::builtin())
        .expect("candidates")
}

fn decision(kernel: &str, fastest: usize) -> Decision {
    let c = candidates();
    let key = TuneKey {
        device_uuid: "GPU-00000000-0000-0000-0000-000000000001".into(),
        kernel: kernel.into(),
        class: SamplingWorkload {
            region_bytes: 3 << 30,
            memory: MemoryKind::Pinned,
            reads_per_thread: 64,
        }
        .class(),
        profile_digest: "sha256:00".into(),
        memtune_version: "0.1.0".into(),
        candidates_digest: crate::tune::candidates_digest(c.iter().map(|c| c.label.as_str())),
    };
    let out = run(c.len(), &Budget::default(), |i| {
        Ok(if i == fastest { 1.0 } else { 2.0 })
    });
    Decision::from_outcome(key, &c, &out, 1_700_000_000)
}

fn store(dir: &Path) -> DecisionStore {
    DecisionStore::new(Some(dir.join("local")), Some(dir.join("project")))
}

#[test]
fn saved_decisions_are_found_by_their_key_only() {
    let tmp = tempfile::tempdir().unwrap();
    let s = store(tmp.path());
    let d = decision("gather-v1", 1);
    let path = s.save(&d, false).unwrap();
    assert!(path.starts_with(tmp.path().join("local")));
    let (found, warnings) = s.find(&d.key);
    let found = found.expect("found");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(found.source, StoreSource::Local);
    assert_eq!(found.decision, d);
    assert_eq!(
        found.decision.plan::<SamplingPlan>().unwrap().passes,
        candidates()[1].plan.passes
    );
    assert!(s.find(&decision("gather-v2", 1).key).0.is_none());
}

#[test]
fn the_first_writer_wins_unless_replacing() {
    let tmp = tempfile::tempdir().unwrap();
    let s = store(tmp.path());
    let first = decision("k", 1);
    let mut second = first.clone();
    second.why = "second".into();
    s.save(&first, false).unwrap();
    s.save(&second, false).unwrap();
    assert_eq!(s.find(&first.key).0.unwrap().decision.why, first.why);
    s.save(&second, true).unwrap();
    assert_eq!(s.find(&first.key).0.unwrap().decision.why, "second");
    // No temporary file is left behind.
    let names: Vec<_> = fs::read_dir(tmp.path().join("local")).unwrap().collect();
    assert_eq!(names.len(), 1);
}

#[test]
fn concurrent_writers_leave_one_whole_decision() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("local");
    let d = decision("k", 2);
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (dir, mut d) = (&dir, d.clone());
            scope.spawn(move || {
                d.why = format!("writer {t}");
                save_in(dir, &d, t % 2 == 0).unwrap();
            });
        }
    });
    let stored = read_decision(&dir.join(d.key.file_name()))
        .unwrap()
        .unwrap();
    assert!(stored.why.starts_with("writer "));
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
}

#[test]
fn corrupt_foreign_and_hostile_files_are_ignored_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let s = store(tmp.path());
    let d = decision("k", 1);
    let local = tmp.path().join("local");
    fs::create_dir_all(&local).unwrap();
    let path = local.join(d.key.file_name());
    let bad: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", b"{\"schema\": \"memtune-deci".to_vec()),
        ("another schema", {
            let mut x = d.clone();
            x.schema = "memtune-decision/9".into();
            serde_json::to_vec(&x).unwrap()
        }),
        ("chosen out of range", {
            let mut x = d.clone();
            x.chosen = 17;
            serde_json::to_vec(&x).unwrap()
        }),
        ("negative time", {
            let mut x = d.clone();
            x.tuning_ms = -1.0;
            serde_json::to_vec(&x).unwrap()
        }),
        ("labels edited", {
            let mut x = d.clone();
            x.candidates[0].label = "edited".into();
            serde_json::to_vec(&x).unwrap()
        }),
        ("too large", vec![b' '; (MAX_DECISION_BYTES + 10) as usize]),
    ];
    for (what, bytes) in bad {
        fs::write(&path, bytes).unwrap();
        let (found, warnings) = s.find(&d.key);
        assert!(found.is_none(), "{what}: accepted");
        assert_eq!(warnings.len(), 1, "{what}: {warnings:?}");
        assert!(
            warnings[0].contains(&*path.to_string_lossy()),
            "{what}: {warnings:?}"
        );
    }
    // A decision stored under another key's name.
    let other = decision("other", 1);
    fs::write(&path, serde_json::to_vec(&other).unwrap()).unwrap();
    let (found, warnings) = s.find(&d.key);
    assert!(
        found.is_none() && warnings[0].contains("another key"),
        "{warnings:?}"
    );
    // A folder where the file should be.
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    let (found, warnings) = s.find(&d.key);
    assert!(
        found.is_none() && warnings[0].contains("not a regular file"),
        "{warnings:?}"
    );
}

#[test]
fn local_beats_project_beats_embedded() {
    let tmp = tempfile::tempdir().unwrap();
    let d = decision("k", 1);
    let mut shipped = d.clone();
    shipped.why = "shipped".into();
    let json = serde_json::to_string(&shipped).unwrap();
    let s = store(tmp.path()).with_embedded([("k.json", json.as_str())]);
    assert_eq!(s.find(&d.key).0.unwrap().source, StoreSource::Embedded);
    save_in(&tmp.path().join("project"), &shipped, false).unwrap();
    assert_eq!(s.find(&d.key).0.unwrap().source, StoreSource::Project);
    s.save(&d, false).unwrap();
    let found = s.find(&d.key).0.unwrap();
    assert_eq!(
        (found.source, found.decision.why),
        (StoreSource::Local, d.why)
    );
    assert_eq!(s.list().len(), 2);
}
