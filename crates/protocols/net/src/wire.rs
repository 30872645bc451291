//! The bytes this process has sent to and received from servers, counted at
//! its TCP sockets (below TLS, so a TLS record's framing and the handshake
//! count as they cross the network).
//!
//! A server's own network counters cannot tell peakhour's bytes from a
//! neighbour's: on a shared machine every load test on loopback crosses the
//! same `lo` interface, and a task's few KiB vanish in hundreds of MiB/s of
//! other traffic (issue 25: network per task read `0 ± 55,492 KiB`). Every
//! connection peakhour's protocol clients open goes through
//! [`Transport`](crate::Transport), so counting there gives exactly what the load sent and
//! received, which is what a server's NIC carries for it. The counters are
//! process-wide: one `peakhour run` (or one `peakhour tasks` task) per
//! process is measured at a time, and the monitor samples them like any
//! other counter (`client_net_*` in monitor.csv).

use std::sync::atomic::{AtomicU64, Ordering};

static SENT: AtomicU64 = AtomicU64::new(0);
static RECEIVED: AtomicU64 = AtomicU64::new(0);

/// Bytes sent and received over TCP by this process's protocol clients
/// since it started; both only grow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireBytes {
    /// Bytes written to servers.
    pub sent: u64,
    /// Bytes read from servers.
    pub received: u64,
}

/// The counters now.
pub fn wire_bytes() -> WireBytes {
    WireBytes {
        sent: SENT.load(Ordering::Relaxed),
        received: RECEIVED.load(Ordering::Relaxed),
    }
}

pub(crate) fn count_sent(n: usize) {
    SENT.fetch_add(n as u64, Ordering::Relaxed);
}

pub(crate) fn count_received(n: usize) {
    RECEIVED.fetch_add(n as u64, Ordering::Relaxed);
}
