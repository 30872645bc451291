//! `peakhour completions` and `peakhour man`: `peakhour-command-line`
//! builds the scripts and pages from the parser's own clap definition; these
//! write them out.

use std::io::Write as _;
use std::process::ExitCode;

use peakhour_command_line::completions::{completion_script, man_page, write_man_pages};

use crate::args::{CompletionsArgs, ManArgs};

/// Prints the completion script for one shell.
pub(crate) fn completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    std::io::stdout()
        .lock()
        .write_all(&completion_script(args.shell))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints one manual page (peakhour(1) or a command's), or writes them all to `--dir`.
pub(crate) fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = &args.dir else {
        let page = man_page(&args.command)?;
        std::io::stdout().lock().write_all(page.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    };
    let written = write_man_pages(dir)?;
    eprintln!("wrote {written} manual pages to {}", dir.display());
    Ok(ExitCode::SUCCESS)
}
