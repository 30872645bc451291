//! `--help`, `peakhour completions` and `peakhour man`, run through the real
//! binary and read the way a user's shell and `man` read them.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use common::peakhour;
use peakhour_engine::Endpoint;

/// The commands `peakhour --help` lists; each must have a page.
const COMMANDS: [&str; 12] = [
    "lab",
    "profiles",
    "init",
    "run",
    "capacity",
    "sweep",
    "monitor",
    "analyze",
    "report",
    "compare",
    "completions",
    "man",
];

/// Every URL scheme `crates/cli/src/commands/target.rs` accepts, per flag: the
/// base schemes it passes to `Endpoint::parse`, and `+starttls` on those that
/// start in plain text.
const ACCEPTED_SCHEMES: [(&str, &[&str]); 3] = [
    ("--imap", &["imap", "imap+starttls", "imaps"]),
    (
        "--smtp",
        &[
            "smtp",
            "smtp+starttls",
            "submission",
            "submission+starttls",
            "submissions",
            "smtps",
        ],
    ),
    ("--lmtp", &["lmtp", "lmtp+starttls"]),
];

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Runs `program args` with `input` on its stdin.
fn pipe_into(program: &str, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .env("MANWIDTH", "100")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program} (scripts/setup.sh installs it): {e}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Renders a roff page with `man -l -`, as `peakhour man | man -l -` does,
/// and fails on any groff warning.
fn render_with_man(page: &[u8]) -> String {
    let rendered = pipe_into("man", &["--warnings", "-P", "cat", "-l", "-"], page);
    let text = stdout(&rendered);
    let warnings = String::from_utf8_lossy(&rendered.stderr);
    assert!(warnings.trim().is_empty(), "man warned: {warnings}");
    text
}

/// The option's block in `--help`: from its name to the next option.
fn option_help<'a>(help: &'a str, flag: &str) -> &'a str {
    let start = help
        .find(&format!("      {flag} <"))
        .unwrap_or_else(|| panic!("{flag} not in help:\n{help}"));
    let rest = &help[start + flag.len() + 6..];
    let end = rest.find("\n      --").unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn run_help_mentions_submission_starttls() {
    let help = stdout(&peakhour(&["run", "--help"]));
    assert!(help.contains("submission+starttls://"), "{help}");
    // The short help names it too, and points at --help for the meanings.
    let short = stdout(&peakhour(&["run", "-h"]));
    assert!(short.contains("submission+starttls://"), "{short}");
}

#[test]
fn every_url_option_lists_every_accepted_scheme_with_its_true_default_port() {
    for command in ["init", "run", "sweep"] {
        let help = stdout(&peakhour(&[command, "--help"]));
        for (flag, schemes) in ACCEPTED_SCHEMES {
            let text = option_help(&help, flag);
            for scheme in schemes {
                // Each scheme has a line `  SCHEME://HOST[:PORT]  meaning`.
                let entry = format!("{scheme}://HOST[:");
                let at = text.find(&entry).unwrap_or_else(|| {
                    panic!("`{command} --help` {flag} does not list {scheme}://:\n{text}")
                });
                let port: u16 = text[at + entry.len()..]
                    .split(']')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                let base: Vec<&str> = schemes
                    .iter()
                    .map(|s| s.trim_end_matches("+starttls"))
                    .collect();
                let parsed = Endpoint::parse(&format!("{scheme}://mail.test"), &base)
                    .unwrap_or_else(|e| panic!("{flag} help lists {scheme}:// but: {e}"));
                assert_eq!(parsed.port, port, "{scheme}:// default port in {flag} help");
                let meaning = text[at..].lines().next().unwrap();
                assert!(
                    meaning.contains("plain")
                        || meaning.contains("TLS from the first byte")
                        || meaning.contains("the same as"),
                    "{scheme}:// has no meaning: {meaning:?}"
                );
            }
        }
    }
}

#[test]
fn main_commands_show_an_example_after_their_help() {
    let cases: [&[&str]; 8] = [
        &["run"],
        &["init"],
        &["sweep"],
        &["lab", "up"],
        &["report"],
        &["compare"],
        &["monitor"],
        &["analyze"],
    ];
    for words in cases {
        let mut args = words.to_vec();
        args.push("--help");
        let help = stdout(&peakhour(&args));
        let examples = help
            .rsplit_once("\nExample")
            .unwrap_or_else(|| panic!("no example in `peakhour {}`", args.join(" ")))
            .1;
        let invocation = format!("peakhour {}", words.join(" "));
        assert!(
            examples.contains(&invocation),
            "`{invocation} --help` has no example of itself:\n{examples}"
        );
    }
}

#[test]
fn bash_completion_defines_its_function_and_completes_commands_and_flags() {
    let script = stdout(&peakhour(&["completions", "bash"]));
    // Load the script into a clean bash, check that it registered itself, then
    // call the function the way bash does on TAB and print its candidates.
    let probe = r#"
        source /dev/stdin
        declare -F _peakhour >/dev/null || { echo "no _peakhour function"; exit 1; }
        complete -p peakhour
        complete_words() {
            COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
            _peakhour peakhour "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            echo "candidates: ${COMPREPLY[*]}"
        }
        complete_words peakhour sw
        complete_words peakhour run --sm
        complete_words peakhour completions z
    "#;
    let out = pipe_into(
        "bash",
        &["--noprofile", "--norc", "-c", probe],
        script.as_bytes(),
    );
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("-F _peakhour") && lines[0].ends_with("peakhour"),
        "{text}"
    );
    assert_eq!(lines[1], "candidates: sweep", "{text}");
    // Every flag of `run` that starts with --sm, and only those.
    let flags: Vec<&str> = lines[2]
        .strip_prefix("candidates: ")
        .unwrap_or_default()
        .split(' ')
        .collect();
    assert!(flags.contains(&"--smtp"), "{text}");
    assert!(flags.iter().all(|f| f.starts_with("--sm")), "{text}");
    assert_eq!(lines[3], "candidates: zsh", "{text}");
}

#[test]
fn every_shell_gets_a_script_naming_the_commands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&peakhour(&["completions", shell]));
        for command in ["sweep", "analyze", "compare"] {
            assert!(script.contains(command), "{shell} script lacks {command}");
        }
    }
    let refused = peakhour(&["completions", "tcsh"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
}

#[test]
fn man_page_renders_and_lists_every_command() {
    let page = peakhour(&["man"]);
    let text = render_with_man(&stdout(&page).into_bytes());
    assert!(text.contains("SUBCOMMANDS"), "{text}");
    for command in COMMANDS {
        let reference = format!("peakhour-{command}(1)");
        assert!(
            text.contains(&reference),
            "peakhour(1) lacks {reference}:\n{text}"
        );
    }
    assert!(text.contains("EXAMPLES"), "{text}");
}

#[test]
fn man_page_of_a_nested_command_has_its_options_and_examples() {
    let run = render_with_man(&stdout(&peakhour(&["man", "run"])).into_bytes());
    assert!(run.contains("peakhour-run(1)"), "{run}");
    assert!(run.contains("submission+starttls://"), "{run}");
    assert!(run.contains("EXAMPLES"), "{run}");
    let lab_up = render_with_man(&stdout(&peakhour(&["man", "lab", "up"])).into_bytes());
    assert!(lab_up.contains("peakhour-lab-up(1)"), "{lab_up}");
    assert!(lab_up.contains("--imap-client-limit"), "{lab_up}");

    let unknown = peakhour(&["man", "lab", "upp"]);
    assert_eq!(unknown.status.code(), Some(1));
    let message = String::from_utf8_lossy(&unknown.stderr);
    assert!(message.contains("up, down, status, check"), "{message}");
}

#[test]
fn man_dir_writes_one_page_per_command_that_man_renders() {
    let dir = tempfile::tempdir().unwrap();
    let out = peakhour(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert!(names.contains(&"peakhour.1".to_owned()), "{names:?}");
    for command in COMMANDS {
        assert!(
            names.contains(&format!("peakhour-{command}.1")),
            "{names:?}"
        );
    }
    assert!(names.contains(&"peakhour-lab-up.1".to_owned()), "{names:?}");
    assert!(
        names.contains(&"peakhour-analyze-capacity.1".to_owned()),
        "{names:?}"
    );
    for name in names {
        let page = std::fs::read(dir.path().join(&name)).unwrap();
        let text = render_with_man(&page);
        let title = name.trim_end_matches(".1");
        assert!(text.contains(&format!("{title}(1)")), "{name}:\n{text}");
    }
}
