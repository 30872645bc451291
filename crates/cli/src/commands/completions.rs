//! `peakhour completions` and `peakhour man`: shell completion scripts and roff
//! manual pages, generated from the clap definition the parser itself uses, so
//! they cannot drift from the real flags.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::CommandFactory as _;

use crate::args::{Cli, CompletionsArgs, ManArgs};

/// The binary's name, as completion scripts and page titles call it.
const BIN_NAME: &str = "peakhour";

/// Prints the completion script for one shell.
pub(crate) fn completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    // Generated into memory first: clap_complete panics on a write error, and a
    // closed pipe (`peakhour completions bash | head`) must exit quietly instead.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), BIN_NAME, &mut script);
    std::io::stdout().lock().write_all(&script)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints one manual page (peakhour(1) or a command's), or writes them all to `--dir`.
pub(crate) fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    // Building fills in every subcommand's display name (`peakhour-lab-up`),
    // which is the page's title and file name.
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let written = write_pages(&root, dir)?;
        eprintln!("wrote {written} manual pages to {}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut command = &root;
    for name in &args.command {
        command = match command.find_subcommand(name) {
            Some(sub) => sub,
            None => {
                let known: Vec<&str> = command.get_subcommands().map(|c| c.get_name()).collect();
                if known.is_empty() {
                    bail!(
                        "`{}` has no subcommands, so there is no page for {name:?}",
                        display_name(command)
                    );
                }
                bail!(
                    "no command {name:?} in `{}`; there are: {}",
                    display_name(command),
                    known.join(", ")
                );
            }
        };
    }
    std::io::stdout()
        .lock()
        .write_all(render(command)?.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn display_name(command: &clap::Command) -> &str {
    command
        .get_display_name()
        .unwrap_or_else(|| command.get_name())
}

/// `command`'s page in section 1, as roff.
fn render(command: &clap::Command) -> anyhow::Result<String> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .manual("peakhour manual")
        .render(&mut page)?;
    let page = String::from_utf8(page).context("clap_mangen wrote a page that is not UTF-8")?;
    // clap_mangen heads `after_help` "EXTRA"; ours holds the examples, and
    // EXAMPLES is the heading man-pages(7) gives them.
    Ok(page.replace("\n.SH EXTRA\n", "\n.SH EXAMPLES\n"))
}

/// Writes `command`'s page and its subcommands' pages into `dir`; returns how many.
fn write_pages(command: &clap::Command, dir: &std::path::Path) -> anyhow::Result<usize> {
    let path = dir.join(format!("{}.1", display_name(command)));
    std::fs::write(&path, render(command)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let mut written = 1;
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        written += write_pages(sub, dir)?;
    }
    Ok(written)
}
