//! # peakhour-command-line
//!
//! peakhour's command line as data: everything about it that can be known
//! without running a command. The `peakhour` binary parses with it, checks
//! with it, and prints what it builds; nothing here reads a file, opens a
//! connection or prints.
//!
//! A command line goes through two steps (ripgrep's low-level and high-level
//! arguments):
//!
//! 1. [`args`]: the clap definition ([`args::Cli`]). Each value is parsed
//!    into its type (durations, enumerations, sizes, prices); clap refuses
//!    what does not parse, with exit code 2. The long help texts and examples
//!    live beside it.
//! 2. [`config`]: the raw values checked against each other and against
//!    upper bounds ([`config::RunConfig::check`], [`config::InitConfig::check`])
//!    into settings a command uses without checking again. A value out of
//!    bounds is a [`config::UsageError`] that names the flag and what is
//!    allowed; the binary prints it and exits with [`config::EXIT_USAGE`].
//!
//! [`TargetSpec`] is the target as named (`TargetArgs::spec`), which
//! `peakhour-app` resolves.
//!
//! [`completions`] builds shell completion scripts and roff manual pages
//! from the same definition, so they cannot drift from the real flags.

pub mod args;
pub mod completions;
pub mod config;
mod target_spec;

pub use target_spec::TargetSpec;
