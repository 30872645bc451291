use super::*;

#[test]
fn dos_wildcards_match_as_windows_does() {
    assert!(wildcard("FILLER.*", "filler.000"));
    assert!(wildcard("*", "anything"));
    assert!(wildcard("*.DOC", "chap10.doc"));
    assert!(wildcard("A?C", "abc"));
    assert!(!wildcard("FILLER.*", "mixfile"));
    assert!(!wildcard("A?C", "ac"));
    assert!(wildcard("exact.txt", "EXACT.TXT"));
}

#[test]
fn answers_are_judged_against_the_expected_status() {
    let mkdir = LoadOp::Mkdir {
        path: LoadPath::from_trace("\\clients").expect("normalizes"),
    };
    let collision = Ok((NtStatus::OBJECT_NAME_COLLISION, 0, 0));
    assert_eq!(judge(&mkdir, 0, collision).0, OpOutcome::Ok);
    let missing = NtStatus::OBJECT_NAME_NOT_FOUND;
    let (outcome, ..) = judge(&mkdir, missing.0, Ok((NtStatus::OK, 0, 0)));
    assert_eq!(
        outcome,
        OpOutcome::Error("NT_STATUS_OK (expected NT_STATUS_OBJECT_NAME_NOT_FOUND)".into())
    );
    let (outcome, ..) = judge(&mkdir, 0, Err("not_open"));
    assert_eq!(
        outcome,
        OpOutcome::Error("not_open (expected NT_STATUS_OK)".into())
    );
}
