//! Shell completion scripts and roff manual pages, built from [`Cli`]'s clap
//! definition, the one the parser itself uses, so that they cannot drift
//! from the real flags. These functions only build; `peakhour completions`
//! and `peakhour man` write what they return.

use clap::CommandFactory as _;
use clap_complete::Shell;

use crate::args::Cli;

/// The binary's name, as completion scripts and page titles call it.
pub const BIN_NAME: &str = "peakhour";

/// A manual page that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ManError {
    /// The command named has no subcommands, so a further name finds no page.
    #[error("`{command}` has no subcommands, so there is no page for {name:?}")]
    NoSubcommands {
        /// The command reached so far (`peakhour-profiles-list`).
        command: String,
        /// The name that was looked for under it.
        name: String,
    },
    /// No subcommand of that name.
    #[error("no command {name:?} in `{command}`; there are: {}", known.join(", "))]
    NoSuchCommand {
        /// The command reached so far (`peakhour-lab`).
        command: String,
        /// The name that was looked for under it.
        name: String,
        /// The names of its subcommands.
        known: Vec<String>,
    },
    /// clap_mangen could not render the page.
    #[error("cannot render the manual page of `{command}`")]
    Render {
        /// The command whose page it is.
        command: String,
        /// What clap_mangen reported.
        #[source]
        source: std::io::Error,
    },
    /// A page could not be written (`man --dir`).
    #[error("cannot write {path}")]
    Write {
        /// The file or directory.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// clap_mangen rendered bytes that are not UTF-8.
    #[error("clap_mangen wrote a page that is not UTF-8")]
    NotUtf8(#[from] std::string::FromUtf8Error),
}

/// One manual page in section 1, ready for a man1 directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManPage {
    /// Its file name: `peakhour.1`, `peakhour-run.1`, `peakhour-lab-up.1`.
    pub file_name: String,
    /// The page, in roff.
    pub roff: String,
}

/// The completion script for `shell`.
pub fn completion_script(shell: Shell) -> Vec<u8> {
    // Generated into memory: clap_complete panics on a write error, and a
    // closed pipe (`peakhour completions bash | head`) must exit quietly.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), BIN_NAME, &mut script);
    script
}

/// The page of the command at `path` under `peakhour` (empty: peakhour(1);
/// `["lab", "up"]`: peakhour-lab-up(1)), in roff.
pub fn man_page(path: &[String]) -> Result<String, ManError> {
    let root = built_root();
    let mut command = &root;
    for name in path {
        command = match command.find_subcommand(name) {
            Some(sub) => sub,
            None => {
                let known: Vec<String> = command
                    .get_subcommands()
                    .map(|c| c.get_name().to_owned())
                    .collect();
                let (command, name) = (display_name(command).to_owned(), name.clone());
                return Err(if known.is_empty() {
                    ManError::NoSubcommands { command, name }
                } else {
                    ManError::NoSuchCommand {
                        command,
                        name,
                        known,
                    }
                });
            }
        };
    }
    render(command)
}

/// Every page: peakhour(1) first, then each command's that is not hidden,
/// depth first (peakhour-lab.1, peakhour-lab-up.1, ...).
pub fn man_pages() -> Result<Vec<ManPage>, ManError> {
    let mut pages = Vec::new();
    collect_pages(&built_root(), &mut pages)?;
    Ok(pages)
}

/// Writes every page ([`man_pages`]) into `dir` (made if missing) and
/// returns how many.
pub fn write_man_pages(dir: &std::path::Path) -> Result<usize, ManError> {
    let write_error = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| ManError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(write_error(dir))?;
    let pages = man_pages()?;
    for page in &pages {
        let path = dir.join(&page.file_name);
        std::fs::write(&path, &page.roff).map_err(write_error(&path))?;
    }
    Ok(pages.len())
}

/// The root command, built: building fills in every subcommand's display
/// name (`peakhour-lab-up`), which is the page's title and file name.
fn built_root() -> clap::Command {
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    root
}

fn collect_pages(command: &clap::Command, pages: &mut Vec<ManPage>) -> Result<(), ManError> {
    pages.push(ManPage {
        file_name: format!("{}.1", display_name(command)),
        roff: render(command)?,
    });
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        collect_pages(sub, pages)?;
    }
    Ok(())
}

fn display_name(command: &clap::Command) -> &str {
    command
        .get_display_name()
        .unwrap_or_else(|| command.get_name())
}

/// `command`'s page in section 1, as roff.
fn render(command: &clap::Command) -> Result<String, ManError> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .manual("peakhour manual")
        .render(&mut page)
        .map_err(|source| ManError::Render {
            command: display_name(command).to_owned(),
            source,
        })?;
    let page = String::from_utf8(page)?;
    // clap_mangen heads `after_help` "EXTRA"; ours holds the examples, and
    // EXAMPLES is the heading man-pages(7) gives them.
    Ok(page.replace("\n.SH EXTRA\n", "\n.SH EXAMPLES\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMANDS: [&str; 4] = ["lab", "run", "sweep", "man"];

    #[test]
    fn the_bash_script_defines_its_function_and_names_the_subcommands() {
        let script = String::from_utf8(completion_script(Shell::Bash)).expect("UTF-8");
        assert!(script.contains("_peakhour()"), "{script}");
        for command in COMMANDS {
            assert!(script.contains(command), "{command} not in the script");
        }
    }

    #[test]
    fn the_man_page_lists_the_subcommands_and_the_examples() {
        let page = man_page(&[]).expect("peakhour(1)");
        assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
        assert!(page.contains(".TH peakhour 1"), "{page}");
        assert!(page.contains("\n.SH EXAMPLES\n") && !page.contains(".SH EXTRA"));
        for command in COMMANDS {
            assert!(
                page.contains(&format!("peakhour\\-{command}(1)")),
                "{command} not listed"
            );
        }
    }

    #[test]
    fn a_nested_page_has_its_own_options() {
        let page = man_page(&["lab".to_owned(), "up".to_owned()]).expect("peakhour-lab-up(1)");
        assert!(page.contains("peakhour\\-lab\\-up"), "{page}");
        assert!(page.contains("\\-\\-users"), "{page}");
    }

    #[test]
    fn an_unknown_command_names_the_ones_there_are() {
        let error = man_page(&["lab".to_owned(), "sideways".to_owned()]).expect_err("no such");
        let message = error.to_string();
        assert!(message.contains("no command \"sideways\" in `peakhour-lab`"));
        assert!(message.contains("up, down, status, check"), "{message}");
        let error = man_page(&["profiles".to_owned(), "list".to_owned(), "x".to_owned()])
            .expect_err("a leaf");
        assert!(error.to_string().contains("has no subcommands"), "{error}");
    }

    #[test]
    fn every_visible_command_has_one_page() {
        let pages = man_pages().expect("pages");
        assert_eq!(pages[0].file_name, "peakhour.1");
        for name in ["peakhour-run.1", "peakhour-lab-up.1", "peakhour-k8s-job.1"] {
            assert!(pages.iter().any(|page| page.file_name == name), "{name}");
        }
        let mut names: Vec<&str> = pages.iter().map(|page| page.file_name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), pages.len(), "one page per command");
        assert!(pages.iter().all(|page| page.roff.contains(".TH ")));
    }
}
