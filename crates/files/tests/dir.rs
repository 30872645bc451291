//! The directory backend on a temporary directory.

mod common;

use peakhour_files::{CachePolicy, DirBackend, FileBackend, NtStatus};
use peakhour_workload::files::{FileOverrides, FilePlan, FileProfile};

use common::{apply, conformance};

#[tokio::test]
async fn every_operation_answers_like_a_file_server() {
    let root = tempfile::tempdir().expect("temp dir");
    let mut a = DirBackend::new(root.path(), CachePolicy::Auto).expect("backend");
    let mut b = DirBackend::new(root.path(), CachePolicy::Auto).expect("backend");
    assert_eq!(a.network_file_system(), None, "a temp dir is local");
    assert!(
        !a.bypasses_cache(),
        "Auto keeps a local file system's cache"
    );
    conformance(&mut a, &mut b).await;
    assert_eq!(std::fs::read_dir(root.path()).expect("ls").count(), 0);
}

#[tokio::test]
async fn bypass_drops_the_cache_and_still_reads_what_was_written() {
    let root = tempfile::tempdir().expect("temp dir");
    let mut a = DirBackend::new(root.path(), CachePolicy::Bypass).expect("backend");
    let mut b = DirBackend::new(root.path(), CachePolicy::Bypass).expect("backend");
    assert!(a.bypasses_cache());
    conformance(&mut a, &mut b).await;
}

#[tokio::test]
async fn paths_outside_the_root_are_refused() {
    let root = tempfile::tempdir().expect("temp dir");
    let mut a = DirBackend::new(root.path(), CachePolicy::Keep).expect("backend");
    for path in ["../x", "/etc/passwd", "a/../../x", "a//b", "", r"a\b"] {
        assert!(a.get_attributes(path).await.is_err(), "{path}");
    }
    assert!(
        a.read(9, 0, 1).await.is_err(),
        "an unknown handle is the caller's bug"
    );
    assert!(DirBackend::new(root.path().join("none"), CachePolicy::Keep).is_err());
}

const SMALL_MIX: &str = r#"
name = "small"
description = "the disk mix on a 1 MB workspace, without waiting"
[client]
start_delay = "0s"
think_time = "0s"
operations_per_work = 40
work_per_iteration = 3
[workspace]
size = "1MB"
files = 4
"#;

/// The built-in disk mix's script on a small workspace: set up, run every piece of work,
/// clean up. Every operation must succeed, and nothing may be left behind.
#[tokio::test]
async fn a_netbench_script_runs_and_cleans_up() {
    let builtin = peakhour_workload::files::file_builtin("netbench-disk-mix")
        .expect("builtin")
        .source;
    let script_only = &builtin[builtin.find("[[script]]").expect("a script")..];
    let profile =
        FileProfile::parse("small.toml", &format!("{SMALL_MIX}\n{script_only}")).expect("parses");
    let plan = FilePlan::resolve(
        &profile,
        &FileOverrides {
            clients: Some(2),
            seed: Some(3),
            ..FileOverrides::default()
        },
    )
    .expect("plan");
    let root = tempfile::tempdir().expect("temp dir");
    let mut backend = DirBackend::new(root.path(), CachePolicy::Auto).expect("backend");
    for dir in plan.shared_dirs() {
        backend.make_dir(&dir).await.expect("mkdir");
    }
    let mut bytes = 0;
    for client in 1..=plan.clients() {
        for op in plan.setup(client) {
            let t = apply(&mut backend, &op).await.expect("setup");
            assert_eq!(t.value.status, NtStatus::OK, "{op}");
        }
        let mut script = plan.script(client);
        for work in script.by_ref() {
            for op in &work.ops {
                let t = apply(&mut backend, op).await.expect("op");
                assert_eq!(t.value.status, NtStatus::OK, "{op}");
                assert_eq!(t.value.bytes, op.data_bytes(), "{op}");
                bytes += t.value.bytes;
            }
        }
        for op in script.cleanup() {
            let t = apply(&mut backend, &op).await.expect("cleanup");
            assert_eq!(t.value.status, NtStatus::OK, "{op}");
        }
    }
    for dir in plan.shared_dirs().iter().rev() {
        backend.remove_dir(dir).await.expect("rmdir");
    }
    assert!(bytes > 0);
    assert_eq!(std::fs::read_dir(root.path()).expect("ls").count(), 0);
}
