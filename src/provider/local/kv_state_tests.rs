use super::*;
use std::time::Duration;

const MODEL: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn store(root: &Path, cap: u64) -> StateStore {
    StateStore::open(root, MODEL, cap, std::sync::Arc::default()).unwrap()
}

/// Saves `tokens` with a `.kv` file of `size` bytes.
fn save(store: &StateStore, tokens: &[i32], size: usize) -> String {
    let staged = store.create_staging().unwrap();
    fs::write(&staged, vec![7_u8; size]).unwrap();
    store.commit(&staged, tokens).unwrap();
    entry_id(tokens)
}

fn set_age(store: &StateStore, id: &str, seconds_ago: u64) {
    let file = fs::File::options()
        .append(true)
        .open(store.meta_path(id))
        .unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
        .unwrap();
}

#[test]
fn the_longest_shared_prefix_comes_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), DEFAULT_CAP_BYTES);
    save(&store, &[1, 2, 3, 9, 9], 10);
    save(&store, &[1, 2, 3, 4, 5, 6], 10);
    save(&store, &[8, 8, 8], 10);
    let found = store.candidates(&[1, 2, 3, 4, 5, 7, 7], 0, 100);
    let shared: Vec<usize> = found.iter().map(|(n, _)| *n).collect();
    assert_eq!(shared, vec![5, 3]);
    assert_eq!(found[0].1.tokens, vec![1, 2, 3, 4, 5, 6]);
    // Only entries better than what is already in memory, and that fit.
    assert_eq!(store.candidates(&[1, 2, 3, 4, 5, 7], 3, 100).len(), 1);
    assert!(
        store
            .candidates(&[1, 2, 3, 4, 5, 7], 0, 5)
            .iter()
            .all(|(n, _)| *n == 3)
    );
}

#[test]
fn a_saved_entry_verifies_and_a_truncated_one_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), DEFAULT_CAP_BYTES);
    let id = save(&store, &[1, 2, 3], 100);
    let (_, entry) = store.candidates(&[1, 2, 3], 0, 100).remove(0);
    assert_eq!(store.verify(&entry).unwrap(), store.kv_path(&id));

    let kv = store.kv_path(&id);
    fs::write(&kv, vec![7_u8; 60]).unwrap();
    let problem = store.verify(&entry).unwrap_err();
    assert!(problem.contains("truncated"), "{problem}");
    assert!(!kv.exists());
    assert!(store.candidates(&[1, 2, 3], 0, 100).is_empty());
}

#[test]
fn a_corrupt_kv_file_or_description_is_ignored_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), DEFAULT_CAP_BYTES);
    let id = save(&store, &[1, 2, 3], 100);
    let (_, entry) = store.candidates(&[1, 2, 3], 0, 100).remove(0);
    fs::write(store.kv_path(&id), vec![8_u8; 100]).unwrap();
    assert!(store.verify(&entry).unwrap_err().contains("corrupt"));

    let id = save(&store, &[4, 5, 6], 100);
    let meta = store.meta_path(&id);
    let mut bytes = fs::read(&meta).unwrap();
    bytes[60] ^= 1;
    fs::write(&meta, bytes).unwrap();
    assert!(store.candidates(&[4, 5, 6], 0, 100).is_empty());
    assert!(!meta.exists() && !store.kv_path(&id).exists());
}

#[test]
fn an_entry_a_newer_one_extends_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), DEFAULT_CAP_BYTES);
    let first = save(&store, &[1, 2, 3], 10);
    let branch = save(&store, &[1, 2, 9], 10);
    save(&store, &[1, 2, 3, 4, 5], 10);
    assert!(!store.meta_path(&first).exists());
    assert!(!store.kv_path(&first).exists());
    assert!(store.meta_path(&branch).exists(), "another branch stays");
    assert_eq!(usage(dir.path()).entries, 2);
}

#[test]
fn the_cap_removes_the_least_recently_used_entries() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), 2_000);
    let a = save(&store, &[1], 600);
    set_age(&store, &a, 300);
    let b = save(&store, &[2], 600);
    set_age(&store, &b, 200);
    store.touch(&a);
    let c = save(&store, &[3], 600);
    // a was used last before c, so b goes.
    assert!(store.meta_path(&a).exists());
    assert!(!store.meta_path(&b).exists() && !store.kv_path(&b).exists());
    assert!(store.meta_path(&c).exists());
    let used = usage(dir.path());
    assert!(used.bytes <= 2_000, "{used:?}");
    assert_eq!(used.entries, 2);
}

/// A process that ran and has stopped: its PID is free.
fn stopped_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn set_file_age(path: &Path, seconds_ago: u64) {
    fs::File::options()
        .append(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
        .unwrap();
}

#[test]
fn leftovers_of_a_stopped_save_are_swept_when_old() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), DEFAULT_CAP_BYTES);
    let own = std::process::id();
    let leftover = store.dir.join(format!(".save-{own}-90.kv.tmp"));
    fs::write(&leftover, b"partial").unwrap();
    set_file_age(&leftover, 3600);
    let fresh = store.dir.join(format!(".save-{own}-91.kv.tmp"));
    fs::write(&fresh, b"being written").unwrap();
    save(&store, &[1, 2], 10);
    assert!(!leftover.exists());
    assert!(fresh.exists(), "another provider may still be writing it");
}

#[test]
fn a_save_left_by_a_killed_process_is_removed_at_once_and_never_costs_a_state() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), 2_000);
    // `kill -9` during a save: the writer is gone, its file is a minute old.
    let dead = store.dir.join(format!(".save-{}-0.kv.tmp", stopped_pid()));
    fs::write(&dead, vec![1_u8; 5_000]).unwrap();
    assert_eq!(usage(dir.path()).unfinished_bytes, 5_000);
    // A save another running process is writing: kept, and not counted.
    let mut writer = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let live = store.dir.join(format!(".save-{}-0.kv.tmp", writer.id()));
    fs::write(&live, vec![1_u8; 5_000]).unwrap();

    let id = save(&store, &[1, 2, 3], 600);
    assert!(!dead.exists(), "the killed writer's file was swept");
    assert!(live.exists(), "a running writer's file stays");
    assert!(store.meta_path(&id).exists() && store.kv_path(&id).exists());
    let used = usage(dir.path());
    assert_eq!((used.entries, used.unfinished_bytes), (1, 5_000), "{used:?}");
    writer.kill().unwrap();
    writer.wait().unwrap();

    // At start too: a new store sweeps what a stopped process left.
    let dead = store.dir.join(format!(".save-{}-3.kv.tmp", stopped_pid()));
    fs::write(&dead, b"partial").unwrap();
    let _reopened = StateStore::open(dir.path(), MODEL, 2_000, std::sync::Arc::default()).unwrap();
    assert!(!dead.exists());
}

#[test]
fn files_that_are_not_states_are_neither_counted_nor_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), 2_000);
    let notes = store.dir.join("notes.txt");
    fs::write(&notes, vec![b'n'; 3_000]).unwrap();
    let backup = dir.path().join("backup.tar");
    fs::write(&backup, vec![b'b'; 4_000]).unwrap();
    set_file_age(&notes, 3600);
    let a = save(&store, &[1], 600);
    let b = save(&store, &[2], 600);
    assert!(store.meta_path(&a).exists() && store.meta_path(&b).exists());
    assert!(notes.exists() && backup.exists());
    let used = usage(dir.path());
    assert_eq!(used.entries, 2);
    assert_eq!(used.other_bytes, 7_000);
    assert!(used.bytes > 1_200 && used.bytes < 2_000, "{used:?}");
}

#[test]
fn a_state_larger_than_the_cap_is_not_kept_and_evicts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), 1_000);
    let small = save(&store, &[1], 300);
    let staged = store.create_staging().unwrap();
    fs::write(&staged, vec![7_u8; 2_000]).unwrap();
    let error = store.commit(&staged, &[2, 3]).unwrap_err();
    assert!(matches!(error, SaveError::TooBig { cap: 1_000, .. }), "{error:?}");
    let said = error.to_string();
    assert!(
        said.contains("does not fit the cap of 0.0 MB") && said.contains("kv_state_max_mb"),
        "{said}"
    );
    assert!(!staged.exists() && !store.kv_path(&entry_id(&[2, 3])).exists());
    assert!(store.meta_path(&small).exists(), "an older state that fits stays");
}

#[test]
fn the_state_just_saved_is_never_the_one_evicted() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), 2_000);
    let a = save(&store, &[1], 900);
    // Used "later" than the next save (a clock step, or coarse file times).
    let meta = store.meta_path(&a);
    fs::File::options()
        .append(true)
        .open(&meta)
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(3600))
        .unwrap();
    let b = save(&store, &[2], 1_500);
    assert!(store.meta_path(&b).exists() && store.kv_path(&b).exists());
    assert!(!meta.exists());
}

#[test]
fn clearing_removes_every_state_and_leftover_but_not_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), DEFAULT_CAP_BYTES);
    let other_model = StateStore::open(
        dir.path(),
        &"f".repeat(64),
        DEFAULT_CAP_BYTES,
        std::sync::Arc::default(),
    )
    .unwrap();
    save(&store, &[1], 600);
    save(&other_model, &[2], 400);
    let dead = store.dir.join(format!(".save-{}-0.kv.tmp", stopped_pid()));
    fs::write(&dead, vec![0_u8; 50]).unwrap();
    let notes = store.dir.join("notes.txt");
    fs::write(&notes, b"mine").unwrap();
    let removed = clear(dir.path());
    assert!(removed > 1_050, "{removed}");
    let used = usage(dir.path());
    assert_eq!((used.entries, used.bytes, used.unfinished_bytes), (0, 0, 0));
    assert!(notes.exists());
}

#[test]
fn a_directory_that_cannot_be_written_is_named_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), DEFAULT_CAP_BYTES);
    assert_eq!(write_problem(dir.path()), None);
    // Something that is not a directory where the model's directory was:
    // no file can be created in it, whoever runs the test.
    fs::remove_dir_all(&store.dir).unwrap();
    fs::write(&store.dir, b"").unwrap();
    let said = store.create_staging().unwrap_err().to_string();
    assert!(
        said.contains(&store.dir.display().to_string()) && said.contains("os error"),
        "{said}"
    );
    fs::remove_file(&store.dir).unwrap();
    let root_file = dir.path().join("kv-state");
    fs::write(&root_file, b"").unwrap();
    let problem = write_problem(&root_file).unwrap();
    assert!(
        problem.contains("kv-state") && problem.contains("os error"),
        "{problem}"
    );
}

#[cfg(unix)]
#[test]
fn a_read_only_directory_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), DEFAULT_CAP_BYTES);
    fs::set_permissions(&store.dir, fs::Permissions::from_mode(0o500)).unwrap();
    // A privileged user writes anyway: then there is nothing to report.
    let writable = fs::write(store.dir.join("probe"), b"").is_ok();
    let result = store.create_staging();
    let problem = write_problem(dir.path());
    fs::set_permissions(&store.dir, fs::Permissions::from_mode(0o700)).unwrap();
    if writable {
        assert!(result.is_ok() && problem.is_none());
    } else {
        let said = result.unwrap_err().to_string();
        assert!(
            said.contains("Permission denied") && said.contains(".kv.tmp"),
            "{said}"
        );
        assert!(problem.unwrap().contains("Permission denied"));
    }
}

#[test]
fn usage_of_a_missing_directory_is_zero() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(usage(&dir.path().join("none")), StateUsage::default());
}

#[test]
fn the_default_cap_is_256_mb() {
    assert_eq!(DEFAULT_CAP_BYTES, 256_000_000);
}

#[test]
fn what_the_cap_removes_is_counted_for_the_notice() {
    let dir = tempfile::tempdir().unwrap();
    let pruned = std::sync::Arc::new(std::sync::Mutex::new(Pruned::default()));
    let open = |cap| StateStore::open(dir.path(), MODEL, cap, std::sync::Arc::clone(&pruned)).unwrap();
    let big = open(10_000);
    let old = save(&big, &[1, 2, 3], 2_000);
    set_age(&big, &old, 60);
    save(&big, &[4, 5, 6], 2_000);
    assert_eq!(
        pruned.lock().unwrap().sentence(),
        None,
        "under the cap: nothing to say"
    );
    // The cap was lowered since: the oldest state goes at the next start.
    let small = open(3_000);
    let said = pruned.lock().unwrap().clone();
    assert_eq!(said.states, 1);
    assert!(said.bytes > 2_000, "{said:?}");
    assert!(!small.meta_path(&old).exists());
    let sentence = said.sentence().unwrap();
    assert!(
        sentence.contains("passed their 0 MB cap") && sentence.contains("the 1 least recently used"),
        "{sentence}"
    );
    assert!(sentence.contains("kv_state_max_mb"), "{sentence}");
    // A save that passes it adds to the count.
    let newer = save(&small, &[7, 8, 9], 2_000);
    assert_eq!(pruned.lock().unwrap().states, 2);
    assert!(small.meta_path(&newer).exists(), "never the one just saved");
}
