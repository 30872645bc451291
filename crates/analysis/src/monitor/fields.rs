//! The fields of every metric family, each with its part of the column
//! name, its [`Unit`] and a label for people: the table behind
//! `monitor.csv`'s column names ([`super::MetricKey`] joins a field to its
//! family and instance).

use super::columns;

/// What a metric's number means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Percent (`_pct`).
    Percent,
    /// A plain count or ratio: cores, tasks, messages, processes, load.
    Count,
    /// KiB (`_kb`).
    Kibibytes,
    /// KiB per second (`_kb_per_s`).
    KibibytesPerSecond,
    /// Bytes per second (`_bytes_per_s`).
    BytesPerSecond,
    /// Events per second (`_per_s`): requests, packets, faults, switches.
    PerSecond,
    /// Milliseconds (`_ms`).
    Milliseconds,
    /// Microseconds (`_us`).
    Microseconds,
}

impl Unit {
    /// The unit as written after a number: `%`, `KiB/s`, `/s`, `ms` ...;
    /// empty for a count.
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Percent => "%",
            Self::Count => "",
            Self::Kibibytes => "KiB",
            Self::KibibytesPerSecond => "KiB/s",
            Self::BytesPerSecond => "B/s",
            Self::PerSecond => "/s",
            Self::Milliseconds => "ms",
            Self::Microseconds => "µs",
        }
    }
}

/// Defines a field enum from a table of `Variant => (name, unit, label)`,
/// with `ALL` in `monitor.csv`'s column order.
macro_rules! fields {
    (
        $(#[$doc:meta])*
        $name:ident {
            $( $(#[$vdoc:meta])* $variant:ident => ($column:expr, $unit:ident, $label:expr) ),+ $(,)?
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vdoc])* $variant ),+
        }

        impl $name {
            /// Every field, in `monitor.csv`'s column order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The field's part of the column name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $column),+
                }
            }

            /// What the field's number means.
            pub fn unit(self) -> Unit {
                match self {
                    $(Self::$variant => Unit::$unit),+
                }
            }

            /// The field for people, without its instance.
            pub fn label(self) -> &'static str {
                match self {
                    $(Self::$variant => $label),+
                }
            }
        }
    };
}

fields! {
    /// A machine-wide metric: its column name is the field's name.
    SystemField {
        /// User + system share of all cores.
        CpuBusyPct => (columns::CPU_BUSY_PCT, Percent, "CPU busy %"),
        /// User share of all cores.
        CpuUserPct => (columns::CPU_USER_PCT, Percent, "CPU user %"),
        /// System share of all cores.
        CpuSystemPct => (columns::CPU_SYSTEM_PCT, Percent, "CPU system %"),
        /// I/O-wait share of all cores.
        CpuIowaitPct => (columns::CPU_IOWAIT_PCT, Percent, "CPU iowait %"),
        /// Steal share of all cores.
        CpuStealPct => (columns::CPU_STEAL_PCT, Percent, "CPU steal %"),
        /// Idle share of all cores.
        CpuIdlePct => (columns::CPU_IDLE_PCT, Percent, "CPU idle %"),
        /// Number of cores.
        Cores => (columns::CORES, Count, "cores"),
        /// Runnable tasks.
        RunQueue => (columns::RUN_QUEUE, Count, "run queue"),
        /// One-minute load average.
        Load1 => (columns::LOAD1, Count, "load average (1 min)"),
        /// PSI CPU some.
        PsiCpuSomePct => (columns::PSI_CPU_SOME_PCT, Percent, "CPU pressure (some) %"),
        /// PSI I/O some.
        PsiIoSomePct => (columns::PSI_IO_SOME_PCT, Percent, "I/O pressure (some) %"),
        /// PSI I/O full.
        PsiIoFullPct => (columns::PSI_IO_FULL_PCT, Percent, "I/O pressure (full) %"),
        /// PSI memory some.
        PsiMemorySomePct => (columns::PSI_MEMORY_SOME_PCT, Percent, "memory pressure (some) %"),
        /// PSI memory full.
        PsiMemoryFullPct => (columns::PSI_MEMORY_FULL_PCT, Percent, "memory pressure (full) %"),
        /// `MemTotal`.
        MemTotalKb => (columns::MEM_TOTAL_KB, Kibibytes, "memory total"),
        /// `MemAvailable`.
        MemAvailableKb => (columns::MEM_AVAILABLE_KB, Kibibytes, "memory available"),
        /// `Cached`.
        MemCachedKb => (columns::MEM_CACHED_KB, Kibibytes, "memory cached"),
        /// `SwapTotal`.
        SwapTotalKb => (columns::SWAP_TOTAL_KB, Kibibytes, "swap total"),
        /// Swap in use.
        SwapUsedKb => (columns::SWAP_USED_KB, Kibibytes, "swap used"),
        /// Major page faults per second.
        MajorFaultsPerS => (columns::MAJOR_FAULTS_PER_S, PerSecond, "major page faults/s"),
        /// Pages swapped in per second.
        SwapInPagesPerS => (columns::SWAP_IN_PAGES_PER_S, PerSecond, "pages swapped in/s"),
        /// Pages swapped out per second.
        SwapOutPagesPerS => (columns::SWAP_OUT_PAGES_PER_S, PerSecond, "pages swapped out/s"),
        /// Postfix's `incoming` queue.
        PostfixQueueIncoming => (columns::POSTFIX_QUEUE_INCOMING, Count, "mail queue incoming"),
        /// Postfix's `active` queue.
        PostfixQueueActive => (columns::POSTFIX_QUEUE_ACTIVE, Count, "mail queue active"),
        /// Postfix's `deferred` queue.
        PostfixQueueDeferred => (columns::POSTFIX_QUEUE_DEFERRED, Count, "mail queue deferred"),
        /// Postfix's `hold` queue.
        PostfixQueueHold => (columns::POSTFIX_QUEUE_HOLD, Count, "mail queue hold"),
        /// Processes in the Dovecot tree.
        DovecotProcesses => (columns::DOVECOT_PROCESSES, Count, "Dovecot processes"),
        /// Client connections to Dovecot.
        DovecotConnections => (columns::DOVECOT_CONNECTIONS, Count, "Dovecot connections"),
        /// The monitor's CPU time per sample.
        MonitorCpuUs => (columns::MONITOR_CPU_US, Microseconds, "monitor CPU per sample"),
        /// CPU used by the shaped lab's cgroup, 100 = one core.
        LabCpuPct => (columns::LAB_CPU_PCT, Percent, "lab cgroup CPU % of a core"),
        /// Share of wall time the lab's cgroup was throttled.
        LabCpuThrottledPct => (columns::LAB_CPU_THROTTLED_PCT, Percent, "lab cgroup throttled %"),
        /// Memory charged to the lab's cgroup.
        LabMemoryKb => (columns::LAB_MEMORY_KB, Kibibytes, "lab cgroup memory"),
        /// Memory charged to the lab's cgroup, its page cache left out.
        LabMemoryNoCacheKb => (columns::LAB_MEMORY_NO_CACHE_KB, Kibibytes, "lab cgroup memory without page cache"),
        /// Bytes peakhour's own clients sent to servers per second.
        ClientNetSentBytesPerS => (columns::CLIENT_NET_SENT_BYTES_PER_S, BytesPerSecond, "peakhour bytes sent/s"),
        /// Bytes peakhour's own clients received from servers per second.
        ClientNetReceivedBytesPerS => (columns::CLIENT_NET_RECEIVED_BYTES_PER_S, BytesPerSecond, "peakhour bytes received/s"),
    }
}

fields! {
    /// A metric of one core: `cpu<N>_<field>`.
    CoreField {
        /// User + system share of the core.
        BusyPct => ("busy_pct", Percent, "busy %"),
        /// User share.
        UserPct => ("user_pct", Percent, "user %"),
        /// System share.
        SystemPct => ("system_pct", Percent, "system %"),
        /// I/O-wait share.
        IowaitPct => ("iowait_pct", Percent, "iowait %"),
        /// Steal share.
        StealPct => ("steal_pct", Percent, "steal %"),
        /// Idle share.
        IdlePct => ("idle_pct", Percent, "idle %"),
    }
}

fields! {
    /// A metric of one block device: `disk_<device>_<field>`.
    DiskField {
        /// Completed reads per second.
        ReadsPerS => ("reads_per_s", PerSecond, "reads/s"),
        /// Completed writes per second.
        WritesPerS => ("writes_per_s", PerSecond, "writes/s"),
        /// KiB read per second.
        ReadKbPerS => ("read_kb_per_s", KibibytesPerSecond, "KiB read/s"),
        /// KiB written per second.
        WriteKbPerS => ("write_kb_per_s", KibibytesPerSecond, "KiB written/s"),
        /// Share of the interval with I/O in flight.
        UtilPct => ("util_pct", Percent, "util %"),
        /// Average requests in flight.
        QueueLen => ("queue_len", Count, "queue length"),
        /// Average time per completed request.
        AwaitMs => ("await_ms", Milliseconds, "await"),
    }
}

fields! {
    /// A metric of one network interface: `net_<interface>_<field>`.
    NetField {
        /// Bytes received per second.
        RxBytesPerS => ("rx_bytes_per_s", BytesPerSecond, "bytes received/s"),
        /// Bytes sent per second.
        TxBytesPerS => ("tx_bytes_per_s", BytesPerSecond, "bytes sent/s"),
        /// Packets received per second.
        RxPacketsPerS => ("rx_packets_per_s", PerSecond, "packets received/s"),
        /// Packets sent per second.
        TxPacketsPerS => ("tx_packets_per_s", PerSecond, "packets sent/s"),
        /// Receive + transmit errors per second.
        ErrorsPerS => ("errors_per_s", PerSecond, "errors/s"),
        /// Receive + transmit drops per second.
        DropsPerS => ("drops_per_s", PerSecond, "drops/s"),
    }
}

fields! {
    /// A metric of one process group: `group_<name>_<field>`.
    GroupField {
        /// CPU used, 100 = one core.
        CpuPct => ("cpu_pct", Percent, "CPU % of a core"),
        /// Resident memory.
        RssKb => ("rss_kb", Kibibytes, "resident memory"),
        /// Bytes read from storage per second.
        ReadBytesPerS => ("read_bytes_per_s", BytesPerSecond, "bytes read/s"),
        /// Bytes written to storage per second.
        WriteBytesPerS => ("write_bytes_per_s", BytesPerSecond, "bytes written/s"),
        /// Processes in the group.
        Processes => ("processes", Count, "processes"),
        /// Threads in those processes.
        Threads => ("threads", Count, "threads"),
        /// Context switches per second.
        CtxSwitchesPerS => ("ctx_switches_per_s", PerSecond, "context switches/s"),
    }
}
