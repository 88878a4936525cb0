use super::*;

const MODEL: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn store(root: &Path, cap: u64) -> StateStore {
    StateStore::open(root, MODEL, cap).unwrap()
}

/// Saves `tokens` with a `.kv` file of `size` bytes.
fn save(store: &StateStore, tokens: &[i32], size: usize) -> String {
    let staged = store.staging_path();
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

#[test]
fn leftovers_of_a_stopped_save_are_swept_when_old() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), DEFAULT_CAP_BYTES);
    let leftover = store.dir.join(".save-1.kv.tmp");
    fs::write(&leftover, b"partial").unwrap();
    let fresh = store.dir.join(".save-2.kv.tmp");
    fs::write(&fresh, b"being written").unwrap();
    fs::File::options()
        .append(true)
        .open(&leftover)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    save(&store, &[1, 2], 10);
    assert!(!leftover.exists());
    assert!(fresh.exists(), "another process may still be writing it");
}

#[test]
fn usage_of_a_missing_directory_is_zero() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(usage(&dir.path().join("none")), StateUsage::default());
}
