//! The file clients' sessions: a client's connection and timed operations
//! (`client`), NetBench's disk mix (`mix`) and dbench trace replay
//! (`replay`), and the mapping of workload operations to backend calls
//! (`ops`). The run core drives them as the file run's `Load`
//! (`crate::files`).

pub(crate) mod client;
pub(crate) mod mix;
pub(crate) mod ops;
pub(crate) mod replay;
