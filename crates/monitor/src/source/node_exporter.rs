//! A remote host through Prometheus node_exporter.
//!
//! One HTTP/1.1 `GET` per sample over a fresh tokio `TcpStream`
//! (`Connection: close`, no compression, plain HTTP only), then a parse of
//! the text exposition format into the same [`SystemCounters`] the local
//! source reads, so both go through one rate computation. Process groups
//! and mail queues cannot be seen this way: their columns stay empty.
//!
//! Metrics used: `node_cpu_seconds_total`, `node_procs_running`,
//! `node_load1`, `node_pressure_*_seconds_total`, `node_memory_{MemTotal,
//! MemAvailable,Cached,SwapTotal,SwapFree}_bytes`, `node_vmstat_{pgmajfault,
//! pswpin,pswpout}`, `node_disk_*` and `node_network_*`.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{SampleFuture, Source};
use crate::error::MonitorError;
use crate::procfs::{is_pseudo_disk, looks_like_partition};
use crate::sample::Sample;
use crate::system::{CpuCounters, DiskCounters, NetCounters, PreviousReading, SystemCounters};

/// A response larger than this is refused (node_exporter's is ~100 KB).
const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Scrapes node_exporter's `/metrics`.
#[derive(Debug)]
pub struct NodeExporterSource {
    url: String,
    host: String,
    port: u16,
    path: String,
    timeout: Duration,
    prev: PreviousReading,
}

impl NodeExporterSource {
    /// A source for `http://host:port[/path]` (path defaults to `/metrics`;
    /// `host:port` alone is accepted). Each scrape times out after `timeout`.
    pub fn new(url: &str, timeout: Duration) -> Result<Self, MonitorError> {
        let bad = |reason| MonitorError::Url {
            url: url.to_owned(),
            reason,
        };
        let rest = match url.split_once("://") {
            Some(("http", rest)) => rest,
            Some(_) => return Err(bad("only http:// is supported")),
            None => url,
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/metrics"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
                h,
                p.parse::<u16>().map_err(|_| bad("port is not a number"))?,
            ),
            _ => (authority, 9100),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("no host"));
        }
        Ok(Self {
            url: url.to_owned(),
            host: host.to_owned(),
            port,
            path: path.to_owned(),
            timeout,
            prev: PreviousReading::default(),
        })
    }

    /// Fetches the exposition text once.
    pub async fn scrape(&self) -> Result<String, MonitorError> {
        let err = |detail: String| MonitorError::Scrape {
            url: self.url.clone(),
            detail,
        };
        let fetch = async {
            let mut stream = TcpStream::connect((self.host.as_str(), self.port))
                .await
                .map_err(|e| err(format!("connect: {e}")))?;
            let host_header = if self.host.contains(':') {
                format!("[{}]:{}", self.host, self.port)
            } else {
                format!("{}:{}", self.host, self.port)
            };
            let request = format!(
                "GET {} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: peakhour-monitor\r\nAccept: text/plain\r\nConnection: close\r\n\r\n",
                self.path
            );
            stream
                .write_all(request.as_bytes())
                .await
                .map_err(|e| err(format!("write: {e}")))?;
            let mut body = Vec::with_capacity(128 * 1024);
            let mut limited = (&mut stream).take(MAX_RESPONSE_BYTES as u64 + 1);
            limited
                .read_to_end(&mut body)
                .await
                .map_err(|e| err(format!("read: {e}")))?;
            if body.len() > MAX_RESPONSE_BYTES {
                return Err(err("response larger than 16 MiB".into()));
            }
            decode_http_response(&body).map_err(err)
        };
        tokio::time::timeout(self.timeout, fetch)
            .await
            .map_err(|_| err(format!("no complete response within {:?}", self.timeout)))?
    }

    async fn sample_async(&mut self) -> Result<Sample, MonitorError> {
        let text = self.scrape().await?;
        let now = Instant::now();
        let counters = parse_exposition(&text)?;
        let system = self.prev.advance(now, counters);
        Ok(Sample {
            system,
            ..Sample::default()
        })
    }
}

impl Source for NodeExporterSource {
    fn name(&self) -> &str {
        &self.url
    }

    fn sample(&mut self) -> SampleFuture<'_> {
        Box::pin(self.sample_async())
    }
}

/// Splits an HTTP/1.x response into its body, checking for status 200 and
/// undoing chunked transfer encoding.
fn decode_http_response(raw: &[u8]) -> Result<String, String> {
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of headers")?;
    let head = std::str::from_utf8(&raw[..head_end]).map_err(|_| "headers are not UTF-8")?;
    let body = &raw[head_end + 4..];
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    let code = status.split_ascii_whitespace().nth(1).unwrap_or_default();
    if !status.starts_with("HTTP/1.") || code != "200" {
        return Err(format!("status line {status:?}"));
    }
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().to_ascii_lowercase();
        if name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked") {
            chunked = true;
        }
        if name.eq_ignore_ascii_case("content-encoding") && value != "identity" {
            return Err(format!("unexpected content encoding {value:?}"));
        }
    }
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    String::from_utf8(body).map_err(|_| "body is not UTF-8".into())
}

fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(data.len());
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunk size")?;
        let size_text = std::str::from_utf8(&data[..line_end]).map_err(|_| "bad chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        // Checked: a size of `ffffffffffffffff` overflowed `size + 2` (issue 11).
        let Some(end) = size.checked_add(2).filter(|end| *end <= data.len()) else {
            return Err("truncated chunk".into());
        };
        out.extend_from_slice(&data[..size]);
        data = &data[end..];
    }
}

/// The labels after a `{`, and what follows the closing `}`.
fn parse_labels(s: &str) -> Option<(Labels<'_>, &str)> {
    let mut labels = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
        if let Some(after) = rest.strip_prefix('}') {
            return Some((labels, after));
        }
        let (key, after_key) = rest.split_once('=')?;
        let mut value = String::new();
        let mut escaped = false;
        let body = after_key.trim_start().strip_prefix('"')?;
        let mut close = None;
        for (i, c) in body.char_indices() {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => {
                    close = Some(i);
                    break;
                }
                (true, 'n') => {
                    value.push('\n');
                    escaped = false;
                }
                (_, c) => {
                    value.push(c);
                    escaped = false;
                }
            }
        }
        labels.push((key.trim(), value));
        rest = &body[close? + 1..];
    }
}

/// A sample line's labels: (name, unescaped value).
type Labels<'a> = Vec<(&'a str, String)>;

/// One sample line of the exposition format: name, labels, value.
fn parse_line(line: &str) -> Option<(&str, Labels<'_>, f64)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(|c: char| c == '{' || c.is_ascii_whitespace())?;
    let name = &line[..name_end];
    let (labels, rest) = match line[name_end..].strip_prefix('{') {
        Some(inner) => parse_labels(inner)?,
        None => (Vec::new(), &line[name_end..]),
    };
    let value = match rest.split_ascii_whitespace().next()? {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some((name, labels, value))
}

fn label<'a>(labels: &'a Labels<'_>, key: &str) -> Option<&'a str> {
    labels
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.as_str())
}

fn disk_entry<'a>(disks: &'a mut Vec<DiskCounters>, device: &str) -> &'a mut DiskCounters {
    let i = match disks.iter().position(|d| d.device == device) {
        Some(i) => i,
        None => {
            disks.push(DiskCounters {
                device: device.to_owned(),
                ..DiskCounters::default()
            });
            disks.len() - 1
        }
    };
    &mut disks[i]
}

fn net_entry<'a>(nets: &'a mut Vec<NetCounters>, interface: &str) -> &'a mut NetCounters {
    let i = match nets.iter().position(|n| n.interface == interface) {
        Some(i) => i,
        None => {
            nets.push(NetCounters {
                interface: interface.to_owned(),
                ..NetCounters::default()
            });
            nets.len() - 1
        }
    };
    &mut nets[i]
}

/// CPU numbers above this in a scrape are ignored: no machine has them, and
/// each one numbered is a slot in the sample.
pub const MAX_CPUS: usize = 16_384;

/// A whole HTTP response from node_exporter (status line, headers, plain or
/// chunked body) read as [`parse_exposition`] reads its body: what a scrape
/// does with the bytes it received, without the socket.
pub fn parse_scrape_response(raw: &[u8]) -> Result<SystemCounters, MonitorError> {
    let text = decode_http_response(raw).map_err(|detail| MonitorError::Scrape {
        url: "(response)".into(),
        detail,
    })?;
    parse_exposition(&text)
}

/// Parses node_exporter's text exposition into system counters. Pure.
pub fn parse_exposition(text: &str) -> Result<SystemCounters, MonitorError> {
    let mut c = SystemCounters::default();
    let mut saw_cpu = false;
    for line in text.lines() {
        let Some((name, labels, v)) = parse_line(line) else {
            continue;
        };
        let Some(metric) = name.strip_prefix("node_") else {
            continue;
        };
        match metric {
            "cpu_seconds_total" => {
                let (Some(cpu), Some(mode)) = (label(&labels, "cpu"), label(&labels, "mode"))
                else {
                    continue;
                };
                // Bounded: `cpu="4294967295"` asked for a 160 GB vector (issue 11).
                let Some(index) = cpu.parse::<usize>().ok().filter(|i| *i < MAX_CPUS) else {
                    continue;
                };
                if c.cpu_cores.len() <= index {
                    c.cpu_cores.resize(index + 1, CpuCounters::default());
                }
                let core = &mut c.cpu_cores[index];
                match mode {
                    "user" | "nice" => core.user += v,
                    "system" | "irq" | "softirq" => core.system += v,
                    "iowait" => core.iowait += v,
                    "steal" => core.steal += v,
                    "idle" => core.idle += v,
                    _ => {}
                }
                saw_cpu = true;
            }
            "procs_running" => c.procs_running = Some(v),
            "load1" => c.load1 = Some(v),
            "pressure_cpu_waiting_seconds_total" => c.pressure.cpu_some = Some(v),
            "pressure_io_waiting_seconds_total" => c.pressure.io_some = Some(v),
            "pressure_io_stalled_seconds_total" => c.pressure.io_full = Some(v),
            "pressure_memory_waiting_seconds_total" => c.pressure.memory_some = Some(v),
            "pressure_memory_stalled_seconds_total" => c.pressure.memory_full = Some(v),
            "memory_MemTotal_bytes" => c.memory.total_kb = (v / 1024.0) as u64,
            "memory_MemAvailable_bytes" => c.memory.available_kb = (v / 1024.0) as u64,
            "memory_Cached_bytes" => c.memory.cached_kb = (v / 1024.0) as u64,
            "memory_SwapTotal_bytes" => c.memory.swap_total_kb = (v / 1024.0) as u64,
            "memory_SwapFree_bytes" => c.memory.swap_free_kb = (v / 1024.0) as u64,
            "vmstat_pgmajfault" => c.memory.major_faults = Some(v),
            "vmstat_pswpin" => c.memory.swap_in_pages = Some(v),
            "vmstat_pswpout" => c.memory.swap_out_pages = Some(v),
            m if m.starts_with("disk_") => {
                let Some(device) = label(&labels, "device") else {
                    continue;
                };
                if is_pseudo_disk(device) || looks_like_partition(device) {
                    continue;
                }
                let d = disk_entry(&mut c.disks, device);
                match m {
                    "disk_reads_completed_total" => d.reads = v,
                    "disk_writes_completed_total" => d.writes = v,
                    "disk_read_bytes_total" => d.read_bytes = v,
                    "disk_written_bytes_total" => d.write_bytes = v,
                    "disk_read_time_seconds_total" => d.read_time_s = v,
                    "disk_write_time_seconds_total" => d.write_time_s = v,
                    "disk_io_time_seconds_total" => d.io_time_s = v,
                    "disk_io_time_weighted_seconds_total" => d.weighted_io_time_s = v,
                    _ => {}
                }
            }
            m if m.starts_with("network_") => {
                let Some(interface) = label(&labels, "device") else {
                    continue;
                };
                let field: fn(&mut NetCounters) -> &mut f64 = match m {
                    "network_receive_bytes_total" => |n| &mut n.rx_bytes,
                    "network_receive_packets_total" => |n| &mut n.rx_packets,
                    "network_receive_errs_total" => |n| &mut n.rx_errors,
                    "network_receive_drop_total" => |n| &mut n.rx_drops,
                    "network_transmit_bytes_total" => |n| &mut n.tx_bytes,
                    "network_transmit_packets_total" => |n| &mut n.tx_packets,
                    "network_transmit_errs_total" => |n| &mut n.tx_errors,
                    "network_transmit_drop_total" => |n| &mut n.tx_drops,
                    _ => continue,
                };
                *field(net_entry(&mut c.nets, interface)) = v;
            }
            _ => {}
        }
    }
    if !saw_cpu {
        return Err(MonitorError::parse(
            "node_exporter metrics",
            "no node_cpu_seconds_total",
        ));
    }
    for core in &c.cpu_cores {
        c.cpu_total.user += core.user;
        c.cpu_total.system += core.system;
        c.cpu_total.iowait += core.iowait;
        c.cpu_total.steal += core.steal;
        c.cpu_total.idle += core.idle;
    }
    c.disks.sort_by(|a, b| a.device.cmp(&b.device));
    c.nets.sort_by(|a, b| a.interface.cmp(&b.interface));
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPOSITION: &str = r#"# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} 1877.87
node_cpu_seconds_total{cpu="0",mode="iowait"} 2.69
node_cpu_seconds_total{cpu="0",mode="irq"} 0
node_cpu_seconds_total{cpu="0",mode="nice"} 1
node_cpu_seconds_total{cpu="0",mode="softirq"} 0.31
node_cpu_seconds_total{cpu="0",mode="steal"} 0.62
node_cpu_seconds_total{cpu="0",mode="system"} 93.58
node_cpu_seconds_total{cpu="0",mode="user"} 460.06
node_cpu_seconds_total{cpu="1",mode="idle"} 1542.68
node_cpu_seconds_total{cpu="1",mode="user"} 778.99
node_disk_read_bytes_total{device="vda"} 7.649147904e+09
node_disk_reads_completed_total{device="vda"} 176966
node_disk_reads_completed_total{device="vda1"} 5
node_disk_io_time_seconds_total{device="vda"} 22.648
node_load1 1.62
node_memory_MemTotal_bytes 2.5276510208e+10
node_memory_SwapFree_bytes 0
node_network_receive_bytes_total{device="lo"} 996181
node_network_transmit_drop_total{device="eth0"} 3
node_network_info{address="00:00",broadcast="ff",device="eth0",duplex="",ifalias="",operstate="up"} 1
node_procs_running 3
node_pressure_cpu_waiting_seconds_total 102.725785
node_uname_info{machine="x86_64",nodename="a \"quoted\" name",release="6.1"} 1
"#;

    #[test]
    fn exposition_to_counters() {
        let c = parse_exposition(EXPOSITION).unwrap();
        assert_eq!(c.cpu_cores.len(), 2);
        assert!((c.cpu_cores[0].user - 461.06).abs() < 1e-9); // user + nice
        assert!((c.cpu_cores[0].system - 93.89).abs() < 1e-9); // system + irq + softirq
        assert!((c.cpu_total.user - (461.06 + 778.99)).abs() < 1e-9);
        assert!((c.cpu_total.idle - (1877.87 + 1542.68)).abs() < 1e-9);
        assert_eq!(c.disks.len(), 1, "partition vda1 skipped");
        assert_eq!(c.disks[0].reads, 176_966.0);
        assert_eq!(c.disks[0].read_bytes, 7_649_147_904.0);
        assert_eq!(c.memory.total_kb, 24_684_092);
        assert_eq!(c.nets.len(), 2);
        assert_eq!(c.nets[0].interface, "eth0");
        assert_eq!(c.nets[0].tx_drops, 3.0);
        assert_eq!(c.nets[1].rx_bytes, 996_181.0);
        assert_eq!(c.procs_running, Some(3.0));
        assert_eq!(c.load1, Some(1.62));
        assert_eq!(c.pressure.cpu_some, Some(102.725785));
    }

    #[test]
    fn labels_with_escapes_and_trailing_comma() {
        let (name, labels, v) = parse_line(r#"x{a="b\"c",d="e\\f",} 2.5 1700000000"#).unwrap();
        assert_eq!(name, "x");
        assert_eq!(
            labels,
            vec![("a", "b\"c".to_owned()), ("d", "e\\f".to_owned())]
        );
        assert_eq!(v, 2.5);
        assert_eq!(parse_line("y 1e3").unwrap().2, 1000.0);
        assert!(parse_line("# comment").is_none());
    }

    #[test]
    fn http_bodies_plain_and_chunked() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nnode_load1 1\n";
        assert_eq!(decode_http_response(plain).unwrap(), "node_load1 1\n");
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nnode_\r\n8;x=y\r\nload1 1\n\r\n0\r\n\r\n";
        assert_eq!(decode_http_response(chunked).unwrap(), "node_load1 1\n");
        assert!(decode_http_response(b"HTTP/1.1 404 Not Found\r\n\r\n").is_err());
        assert!(
            decode_http_response(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n..").is_err()
        );
    }

    #[test]
    fn issue_11_a_chunk_size_of_all_fs_is_an_error_not_a_panic() {
        for size in ["ffffffffffffffff", "fffffffffffffffe", "7fffffffffffffff"] {
            let raw = format!(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\nnode_load1 1\n\r\n0\r\n\r\n"
            );
            assert_eq!(
                decode_http_response(raw.as_bytes()),
                Err("truncated chunk".to_owned())
            );
        }
    }

    #[test]
    fn issue_11_a_huge_cpu_number_is_ignored_not_allocated() {
        let text = "node_cpu_seconds_total{cpu=\"4294967295\",mode=\"idle\"} 1\n\
                    node_cpu_seconds_total{cpu=\"18446744073709551615\",mode=\"idle\"} 1\n\
                    node_cpu_seconds_total{cpu=\"1\",mode=\"idle\"} 5\n";
        let c = parse_exposition(text).unwrap();
        assert_eq!(c.cpu_cores.len(), 2);
        assert_eq!(c.cpu_cores[1].idle, 5.0);
    }

    #[test]
    fn urls() {
        let s = NodeExporterSource::new("http://127.0.0.1:9100/metrics", Duration::from_secs(1))
            .unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.path.as_str()),
            ("127.0.0.1", 9100, "/metrics")
        );
        let s = NodeExporterSource::new("localhost:9200", Duration::from_secs(1)).unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.path.as_str()),
            ("localhost", 9200, "/metrics")
        );
        let s = NodeExporterSource::new("http://[::1]:9100", Duration::from_secs(1)).unwrap();
        assert_eq!((s.host.as_str(), s.port), ("::1", 9100));
        assert!(NodeExporterSource::new("https://host:9100", Duration::from_secs(1)).is_err());
    }
}
