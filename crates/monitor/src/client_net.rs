//! The load generator's own network bytes, sampled beside the server's
//! counters: what peakhour's protocol clients sent to and received from the
//! servers, counted at their sockets (`peakhour_net::wire_bytes`).
//!
//! On a machine shared with other load tests the interfaces' counters
//! (`net_*`) carry everyone's loopback traffic, and a task's few KiB are lost
//! in it; these two columns carry only this process's bytes, which are the
//! bytes the server's NIC would carry for this load. The monitor does not
//! know the protocols: it is given a function that reads the counters
//! ([`ClientBytesFn`]), and adds the columns only then.
//!
//! | column | meaning |
//! |---|---|
//! | `client_net_sent_bytes_per_s` | bytes peakhour wrote to servers per second |
//! | `client_net_received_bytes_per_s` | bytes peakhour read from servers per second |

use std::time::Instant;

use peakhour_analysis::monitor::{MetricKey, SystemField};

/// Reads this process's cumulative (sent, received) bytes.
pub type ClientBytesFn = fn() -> (u64, u64);

/// The client's bytes over one interval, per second (`None` on the first
/// read, which has no interval yet).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ClientNetSample {
    /// Bytes sent per second.
    pub sent_bytes_per_s: Option<f64>,
    /// Bytes received per second.
    pub received_bytes_per_s: Option<f64>,
}

impl ClientNetSample {
    /// The sample's columns, in `monitor.csv` order.
    pub(crate) fn metrics(&self, out: &mut Vec<(MetricKey, Option<f64>)>) {
        let fields = [
            (SystemField::ClientNetSentBytesPerS, self.sent_bytes_per_s),
            (
                SystemField::ClientNetReceivedBytesPerS,
                self.received_bytes_per_s,
            ),
        ];
        out.extend(fields.map(|(f, v)| (MetricKey::system(f), v)));
    }
}

/// Turns successive reads of the counters into rates.
#[derive(Debug)]
pub(crate) struct ClientNetReader {
    read: ClientBytesFn,
    previous: Option<(Instant, (u64, u64))>,
}

impl ClientNetReader {
    pub(crate) fn new(read: ClientBytesFn) -> Self {
        Self {
            read,
            previous: None,
        }
    }

    pub(crate) fn sample_at(&mut self, now: Instant) -> ClientNetSample {
        let counters = (self.read)();
        let previous = self.previous.replace((now, counters));
        let Some((then, before)) = previous else {
            return ClientNetSample::default();
        };
        let seconds = now.saturating_duration_since(then).as_secs_f64();
        if seconds <= 0.0 {
            return ClientNetSample::default();
        }
        let rate = |now: u64, before: u64| Some(now.saturating_sub(before) as f64 / seconds);
        ClientNetSample {
            sent_bytes_per_s: rate(counters.0, before.0),
            received_bytes_per_s: rate(counters.1, before.1),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use super::*;

    static SENT: AtomicU64 = AtomicU64::new(0);

    fn counters() -> (u64, u64) {
        let sent = SENT.load(Ordering::Relaxed);
        (sent, 2 * sent)
    }

    #[test]
    fn issue_25_item_5_the_clients_bytes_become_rates_over_the_time_between_reads() {
        let mut reader = ClientNetReader::new(counters);
        let start = Instant::now();
        assert_eq!(reader.sample_at(start), ClientNetSample::default());
        SENT.fetch_add(1000, Ordering::Relaxed);
        let s = reader.sample_at(start + Duration::from_secs(2));
        assert_eq!(s.sent_bytes_per_s, Some(500.0));
        assert_eq!(s.received_bytes_per_s, Some(1000.0));
    }
}
