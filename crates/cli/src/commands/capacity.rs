//! `peakhour capacity`: the search is `peakhour_capacity`'s; this lends it the sweep's children.
use super::sweep::child::{Children, run_child};
pub(crate) fn run(args: crate::args::CapacityArgs) -> anyhow::Result<std::process::ExitCode> {
    let children = Children::install("capacity")?;
    let start = |argv: &[std::ffi::OsString], prefix: &str| run_child(argv, prefix, &children);
    let mut steps = peakhour_capacity::ChildSteps::new(&args, start, || children.interrupted());
    Ok(peakhour_capacity::run(&args, &mut steps)?.into())
}
