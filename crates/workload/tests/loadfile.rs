//! The dbench/NBENCH load-file parser, on real lines of Debian's client.txt and broken ones.

use peakhour_workload::files::{
    LoadFileError, LoadLine, LoadOp, NtStatus, parse_line, parse_loadfile,
};

/// Lines copied from Debian dbench 4.0's /usr/share/dbench/client.txt: its first 12, the
/// first of each other operation, and its last.
const CLIENT_TXT_LINES: &str = r#"Deltree "\clients\client1" NT_STATUS_OK
Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1" 0x1 0x2 16385 NT_STATUS_OK
Close 16385 NT_STATUS_OK
NTCreateX "\clients\client1\mixfile" 0x40 0x1 9935 NT_STATUS_OBJECT_NAME_NOT_FOUND
QUERY_PATH_INFORMATION "\clients\client1\~dmtmp" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
FIND_FIRST "\clients\client1\FILLER.*" 260 1366 0 NT_STATUS_NO_SUCH_FILE
NTCreateX "\clients\client1\~dmtmp" 0x1 0x2 9937 NT_STATUS_OK
Close 9937 NT_STATUS_OK
NTCreateX "\clients\client1\filler.000" 0x40 0x2 9938 NT_STATUS_OK
QUERY_FS_INFORMATION 1 NT_STATUS_OK
WriteX 9938 65534 1 1 NT_STATUS_OK
Rename "\clients\client1\~dmtmp\PWRPNT\NEWPCB.PPT" "\clients\client1\~dmtmp\PWRPNT\PPTB1E4.TMP" NT_STATUS_OK
Unlink "\clients\client1\~dmtmp\PWRPNT\NEWPCB.PPT" 0x6 NT_STATUS_OK
LockX 10430 2147483538 1 NT_STATUS_OK
UnlockX 10430 2147483538 1 NT_STATUS_OK
SET_FILE_INFORMATION 10005 1004 NT_STATUS_OK
Flush 10012 NT_STATUS_OK
ReadX 10003 0 4096 4096 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\~dmtmp" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
QUERY_PATH_INFORMATION "\clients\client1\~dmtmp\EXCEL\XLSTART\XL5GALRY.XLS" 1004 NT_STATUS_OBJECT_PATH_NOT_FOUND
Deltree "\clients\client1" NT_STATUS_OK"#;

fn parse_all(text: &str) -> Vec<LoadLine> {
    parse_loadfile(text)
        .collect::<Result<Vec<_>, _>>()
        .expect("parses")
}

fn one(text: &str) -> LoadLine {
    parse_line(1, text).expect("parses").expect("an operation")
}

fn err(text: &str) -> LoadFileError {
    parse_line(9, text).expect_err("must fail")
}

#[test]
fn real_client_txt_lines_parse_with_their_arguments_and_status() {
    let lines = parse_all(CLIENT_TXT_LINES);
    assert_eq!(lines.len(), 22);
    assert!(
        lines
            .iter()
            .enumerate()
            .all(|(i, l)| l.line == i + 1 && l.at.is_none())
    );
    let names: Vec<&str> = lines.iter().map(|l| l.op.name()).collect();
    assert_eq!(names[..4], ["Deltree", "Mkdir", "NTCreateX", "Close"]);

    let LoadOp::NtCreateX {
        path,
        create_options,
        create_disposition,
        fnum,
    } = &lines[4].op
    else {
        panic!("{:?}", lines[4]);
    };
    assert_eq!(path.as_str(), "clients/client1/mixfile");
    assert_eq!(
        (*create_options, *create_disposition, *fnum),
        (0x40, 1, 9935)
    );
    assert_eq!(lines[4].expect, NtStatus::OBJECT_NAME_NOT_FOUND);

    assert_eq!(
        lines[6].op,
        LoadOp::FindFirst {
            pattern: lines[6].op_path(),
            level: 260,
            max_count: 1366,
            count: 0
        }
    );
    assert_eq!(lines[6].expect, NtStatus::NO_SUCH_FILE);
    assert_eq!(
        lines[11].op,
        LoadOp::WriteX {
            fnum: 9938,
            offset: 65534,
            size: 1,
            ret_size: 1
        }
    );
    let LoadOp::Rename { from, to } = &lines[12].op else {
        panic!("{:?}", lines[12]);
    };
    assert_eq!(
        from.for_client(12),
        "clients/client12/~dmtmp/PWRPNT/NEWPCB.PPT"
    );
    assert_eq!(
        to.for_client(12),
        "clients/client12/~dmtmp/PWRPNT/PPTB1E4.TMP"
    );
    assert_eq!(
        lines[14].op,
        LoadOp::LockX {
            fnum: 10430,
            offset: 2_147_483_538,
            size: 1
        }
    );
    assert_eq!(lines[20].expect, NtStatus::OBJECT_PATH_NOT_FOUND);
    assert_eq!(
        lines[13].op,
        LoadOp::Unlink {
            path: lines[13].op_path(),
            attributes: 6
        }
    );
}

trait OpPath {
    fn op_path(&self) -> peakhour_workload::files::LoadPath;
}

impl OpPath for LoadLine {
    fn op_path(&self) -> peakhour_workload::files::LoadPath {
        match &self.op {
            LoadOp::FindFirst { pattern, .. } => pattern.clone(),
            LoadOp::Unlink { path, .. } => path.clone(),
            other => panic!("no path in {other:?}"),
        }
    }
}

#[test]
fn paths_are_rewritten_for_each_client() {
    let l =
        one(r#"NTCreateX "\clients\client1\~dmtmp\WORD\CHAP10.DOC" 0x40 0x1 10003 NT_STATUS_OK"#);
    let LoadOp::NtCreateX { path, .. } = l.op else {
        panic!("{l:?}");
    };
    assert_eq!(path.for_client(1), "clients/client1/~dmtmp/WORD/CHAP10.DOC");
    assert_eq!(
        path.for_client(72),
        "clients/client72/~dmtmp/WORD/CHAP10.DOC"
    );
}

#[test]
fn timestamps_comments_blank_lines_and_hex_statuses() {
    let text = "# a comment\n\n0.125 Close 5 NT_STATUS_OK\nFlush 0x10 0xc0000008\nSleep 200\n";
    let lines = parse_all(text);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0].line, 3);
    assert_eq!(lines[0].at, Some(0.125));
    assert_eq!(lines[1].op, LoadOp::Flush { fnum: 16 });
    assert_eq!(lines[1].expect.to_string(), "NT_STATUS_INVALID_HANDLE");
    assert_eq!(lines[2].op, LoadOp::Sleep { micros: 200 });
    assert_eq!(one("Close -1 NT_STATUS_OK").op, LoadOp::Close { fnum: -1 });
}

#[test]
fn malformed_lines_name_the_line_and_the_problem() {
    let cases: &[(&str, &str)] = &[
        (
            "ReadX 10003 0 4096 NT_STATUS_OK",
            "ReadX needs 4 arguments (fnum offset size ret_size) before the status, got 3",
        ),
        ("ReadX 10003 0 4096 4096", "is not a status"),
        (
            "ReadX 10003 zero 4096 4096 NT_STATUS_OK",
            "offset `zero` is not a number",
        ),
        (
            "ReadX 10003 0 99999999999 4096 NT_STATUS_OK",
            "size `99999999999` is too large",
        ),
        ("Teleport 1 NT_STATUS_OK", "unknown operation `Teleport`"),
        ("Close 1 NT_STATUS_NOT_A_REAL_STATUS", "is not a status"),
        (
            r#"Mkdir "\clients\..\..\etc" NT_STATUS_OK"#,
            "has a `..` component",
        ),
        (r#"Mkdir "\clients NT_STATUS_OK"#, "is not closed"),
        (r#"Unlink "\a" 0x6 "NT_STATUS_OK""#, "is not a status"),
        ("NT_STATUS_OK", "has no status"),
        ("1.5", "a time but no operation"),
        ("Sleep", "Sleep needs 1 argument"),
        ("Close 0x NT_STATUS_OK", "fnum `0x` is not a number"),
    ];
    for (line, message) in cases {
        let e = err(line);
        assert_eq!(e.line, 9, "{line}");
        assert!(e.message.contains(message), "{line}: {}", e.message);
        assert!(e.to_string().starts_with("load file line 9: "), "{e}");
    }
    let long = format!("Close 1 NT_STATUS_OK {}", "x".repeat(5000));
    assert!(err(&long).message.contains("longer than"));
}

#[test]
fn errors_in_a_file_carry_their_own_line_numbers() {
    let text =
        "Close 1 NT_STATUS_OK\nClose NT_STATUS_OK\nFlush 2 NT_STATUS_OK\nBogus 1 NT_STATUS_OK\n";
    let results: Vec<_> = parse_loadfile(text).collect();
    assert_eq!(results.len(), 4);
    let bad: Vec<usize> = results
        .iter()
        .filter_map(|r| r.as_ref().err().map(|e| e.line))
        .collect();
    assert_eq!(bad, [2, 4], "the lines after an error still parse");
}

/// The whole of Debian's client.txt (setup.sh installs the `dbench` package).
#[test]
fn debian_client_txt_parses_completely() {
    let path = "/usr/share/dbench/client.txt";
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e} (install Debian's dbench: scripts/setup.sh)"));
    let mut count = 0;
    let mut not_ok = 0;
    for line in parse_loadfile(&text) {
        let line = line.unwrap_or_else(|e| panic!("{e}"));
        count += 1;
        if line.expect != NtStatus::OK {
            not_ok += 1;
        }
    }
    assert_eq!(count, 458_344);
    // 24,256 + 129 path queries, 21,030 opens and 14,328 searches expect a failure.
    assert_eq!(not_ok, 24_256 + 129 + 21_030 + 14_328);
}
