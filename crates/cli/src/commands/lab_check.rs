//! `peakhour lab check`: one message through the lab with peakhour's own clients.

use std::process::ExitCode;

use crate::args::LabCheckArgs;

pub(crate) fn run(_args: LabCheckArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("lab check needs the protocol clients, which are being written")
}
