//! The SMB backend against a real Samba (Debian's 4.17) that each test starts itself.

mod common;

use peakhour_files::{BackendError, FileBackend, NtStatus, SmbBackend, SmbTarget};
use peakhour_workload::files::{FileOp, FileOverrides, FilePlan, FileProfile};

use common::samba::{PASSWORD, Samba, USER};
use common::{apply, conformance};

async fn connect(samba: &Samba) -> SmbBackend {
    let target = SmbTarget::from_url(&samba.url(), USER, PASSWORD).expect("url");
    SmbBackend::connect(&target).await.expect("connect")
}

#[tokio::test]
async fn every_operation_answers_like_the_directory_backend() {
    let samba = Samba::start();
    let mut a = connect(&samba).await;
    let mut b = connect(&samba).await;
    assert_eq!(a.dialect().as_deref(), Some("Smb3_1_1"));
    conformance(&mut a, &mut b).await;
    a.disconnect().await.expect("disconnect");
    b.disconnect().await.expect("disconnect");
}

#[tokio::test]
async fn a_wrong_password_is_an_error_not_a_status() {
    let samba = Samba::start();
    let target = SmbTarget::from_url(&samba.url(), USER, "wrong").expect("url");
    let e = SmbBackend::connect(&target).await.err().expect("refused");
    assert!(matches!(e, BackendError::Smb(_)), "{e}");
    assert!(
        !format!("{target:?}").contains("wrong"),
        "the password stays out of Debug"
    );
}

#[test]
fn urls_parse() {
    let t = SmbTarget::from_url("smb://127.0.0.1:1445/bench", "u", "p").expect("parses");
    assert_eq!(
        (t.addr.as_str(), t.share.as_str()),
        ("127.0.0.1:1445", "bench")
    );
    let t = SmbTarget::from_url("smb://files.example/data/", "u", "p").expect("parses");
    assert_eq!(t.addr, "files.example:445");
    let t = SmbTarget::from_url("smb://[::1]/s", "u", "p").expect("parses");
    assert_eq!(t.addr, "[::1]:445");
    for bad in [
        "http://h/s",
        "smb://h",
        "smb:///s",
        "smb://h/",
        "smb://h/a/b",
    ] {
        assert!(SmbTarget::from_url(bad, "u", "p").is_err(), "{bad}");
    }
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

/// Two clients run the disk mix's script over SMB; an independent smbclient sees their
/// workspaces mid-run, and nothing is left once they clean up.
#[tokio::test]
async fn two_clients_run_the_disk_mix_and_smbclient_sees_their_workspaces() {
    let samba = Samba::start();
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
            seed: Some(11),
            ..FileOverrides::default()
        },
    )
    .expect("plan");
    let mut clients = vec![connect(&samba).await, connect(&samba).await];
    for dir in plan.shared_dirs() {
        let t = clients[0].make_dir(&dir).await.expect("mkdir");
        assert_eq!(t.value.status, NtStatus::OK);
    }
    for (i, backend) in clients.iter_mut().enumerate() {
        for op in plan.setup(i as u32 + 1) {
            let t = apply(backend, &op).await.expect("setup");
            assert_eq!(t.value.status, NtStatus::OK, "{op}");
        }
    }

    // Mid-run: smbclient lists both workspaces with their data files.
    let listing = samba.smbclient("ls clients/client1/*; ls clients/client2/*");
    for n in 0..4 {
        assert_eq!(
            listing.matches(&format!("file{n:03}.dat")).count(),
            2,
            "{listing}"
        );
    }
    assert!(
        listing.contains("262144"),
        "each file is 1 MB / 4: {listing}"
    );

    let mut bytes = 0;
    for (i, backend) in clients.iter_mut().enumerate() {
        let mut script = plan.script(i as u32 + 1);
        for work in script.by_ref() {
            for op in &work.ops {
                let t = apply(backend, op).await.expect("op");
                assert_eq!(t.value.status, NtStatus::OK, "{op}");
                assert_eq!(t.value.bytes, op.data_bytes(), "{op}");
                bytes += t.value.bytes;
            }
        }
        // What the script left (scratch files included) is on the server's disk.
        let on_disk = std::fs::read_dir(samba.share_dir().join(format!("clients/client{}", i + 1)))
            .expect("workspace on disk")
            .count();
        assert!(on_disk >= 4, "{on_disk}");
        for op in script.cleanup() {
            let t = apply(backend, &op).await.expect("cleanup");
            assert_eq!(t.value.status, NtStatus::OK, "{op}");
        }
    }
    let t = apply(
        &mut clients[0],
        &FileOp::RemoveDir {
            path: "clients".into(),
        },
    )
    .await
    .expect("rmdir");
    assert_eq!(t.value.status, NtStatus::OK);
    assert!(bytes > 0);

    let listing = samba.smbclient("ls");
    assert!(!listing.contains("clients"), "{listing}");
    assert_eq!(
        std::fs::read_dir(samba.share_dir()).expect("ls").count(),
        0,
        "nothing left on the server"
    );
    for backend in clients {
        backend.disconnect().await.expect("disconnect");
    }
}
