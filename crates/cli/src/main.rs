//! peakhour: the command-line glue.
fn main() {}
