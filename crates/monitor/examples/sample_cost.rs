//! What one local sample costs and where it goes, with a socket table like a
//! lab's under per-send SMTP connections: some ESTABLISHED connections on a
//! "Dovecot" port and thousands of TIME_WAIT sockets beside them.
//!
//! ```text
//! cargo run --release -p peakhour-monitor --example sample_cost -- \
//!     [--established N] [--time-wait N] [--samples N] [--reads N] \\
//!     [--count-connections 0|1]
//! ```
//!
//! Opens the sockets on loopback (a listener on a free port, `established`
//! connections kept open, `time-wait` connections closed client side first),
//! then prints the thread CPU of `samples` back-to-back samples of a
//! [`LocalSource`] watching that port (default groups), and the CPU of one
//! read of each `/proc` file a sample reads (`reads` times each). Under
//! `valgrind --tool=callgrind` it gives the user-space instructions of the
//! same work; the kernel's share (building `/proc/net/tcp`) shows only in
//! the CPU times. Prints figures; asserts only the connection count.

use std::io::Read as _;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use peakhour_monitor::{ConnectionCounter, LocalConfig, LocalSource, MailProbes, cpu_timed};

struct Args {
    established: usize,
    time_wait: usize,
    samples: usize,
    reads: usize,
    count_connections: bool,
}

fn args() -> Result<Args, Box<dyn std::error::Error>> {
    let mut parsed = Args {
        established: 200,
        time_wait: 5000,
        samples: 200,
        reads: 200,
        count_connections: true,
    };
    let mut words = std::env::args().skip(1);
    while let Some(flag) = words.next() {
        let value: usize = words.next().ok_or("a value after each flag")?.parse()?;
        match flag.as_str() {
            "--established" => parsed.established = value,
            "--time-wait" => parsed.time_wait = value,
            "--samples" => parsed.samples = value,
            "--reads" => parsed.reads = value,
            "--count-connections" => parsed.count_connections = value != 0,
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    Ok(parsed)
}

/// Mean, median and minimum of per-call costs, µs.
fn summary(mut costs: Vec<f64>) -> String {
    if costs.is_empty() {
        return "no calls".into();
    }
    costs.sort_by(f64::total_cmp);
    let mean = costs.iter().sum::<f64>() / costs.len() as f64;
    format!(
        "mean {mean:8.1} µs, median {:8.1} µs, min {:8.1} µs",
        costs[costs.len() / 2],
        costs[0]
    )
}

/// Reads a file kept open from its start to its end.
fn reread(file: &std::fs::File, bytes: &mut Vec<u8>) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt as _;
    let mut len = 0;
    loop {
        if len == bytes.len() {
            bytes.resize(len * 2, 0);
        }
        match file.read_at(&mut bytes[len..], len as u64)? {
            0 => return Ok(len),
            n => len += n,
        }
    }
}

/// Opens `args.established` connections to a new listener (both ends kept)
/// and leaves `args.time_wait` closed ones in TIME_WAIT; returns the port and
/// the open ends.
fn open_sockets(args: &Args) -> std::io::Result<(u16, Vec<TcpStream>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let mut open = Vec::with_capacity(args.established * 2);
    for _ in 0..args.established {
        let client = TcpStream::connect(("127.0.0.1", port))?;
        let (server, _) = listener.accept()?;
        open.push(client);
        open.push(server);
    }
    for _ in 0..args.time_wait {
        let client = TcpStream::connect(("127.0.0.1", port))?;
        let (server, _) = listener.accept()?;
        // The side that closes first keeps the TIME_WAIT socket.
        drop(client);
        let mut server = server;
        let _ = server.read(&mut [0; 1]);
        drop(server);
    }
    // Let the last FINs cross.
    std::thread::sleep(Duration::from_millis(100));
    Ok((port, open))
}

/// Times `args.samples` samples of a [`LocalSource`] watching `port`, then
/// the connection count by each method.
fn time_samples(args: &Args, port: u16) -> Result<(), Box<dyn std::error::Error>> {
    let config = LocalConfig {
        mail: MailProbes {
            dovecot_ports: if args.count_connections {
                vec![port]
            } else {
                Vec::new()
            },
            ..MailProbes::default()
        },
        ..LocalConfig::default()
    };
    let mut source = LocalSource::new(config)?;
    let first = source.sample_now()?;
    let counted = first.mail.dovecot_connections;
    println!(
        "sockets: {} established on port {port} (counted {counted:?}), {} closed into TIME_WAIT",
        args.established, args.time_wait
    );
    if args.count_connections {
        assert_eq!(counted, u32::try_from(args.established).ok());
    }
    let mut costs = Vec::with_capacity(args.samples);
    for _ in 0..args.samples {
        let (sample, cpu) = cpu_timed(|| source.sample_now());
        sample?;
        costs.push(cpu.as_secs_f64() * 1e6);
    }
    // A sample that read the processes costs several times one that did not.
    let floor = costs.iter().copied().fold(f64::INFINITY, f64::min);
    let (reading, cached): (Vec<f64>, Vec<f64>) = costs.iter().partition(|c| **c > 4.0 * floor);
    println!(
        "local sample, {} back to back: {}",
        args.samples,
        summary(costs)
    );
    println!(
        "  {} of them read the processes: {}",
        reading.len(),
        summary(reading)
    );
    println!(
        "  {} reused the last reading:   {}",
        cached.len(),
        summary(cached)
    );

    let proc_root = std::path::Path::new("/proc");
    for (name, mut counter) in [
        ("sock_diag", ConnectionCounter::new(proc_root)),
        (
            "/proc/net/tcp{,6}",
            ConnectionCounter::proc_files(proc_root),
        ),
    ] {
        let mut costs = Vec::with_capacity(args.reads);
        for _ in 0..args.reads {
            let (count, cpu) = cpu_timed(|| counter.count(&[port]));
            assert_eq!(count?, u32::try_from(args.established)?);
            costs.push(cpu.as_secs_f64() * 1e6);
        }
        println!("count by {name:22}: {}", summary(costs));
    }
    Ok(())
}

/// Times one read of each `/proc` file a sample reads: opened each time,
/// kept open and read again from its start, and opened with plain reads.
fn time_file_reads(args: &Args) {
    let mut files: Vec<String> = [
        "stat",
        "loadavg",
        "pressure/cpu",
        "pressure/io",
        "pressure/memory",
        "meminfo",
        "vmstat",
        "diskstats",
        "net/dev",
        "uptime",
        "net/tcp",
        "net/tcp6",
    ]
    .iter()
    .map(|f| format!("/proc/{f}"))
    .collect();
    let me = std::process::id();
    files.extend(["stat", "status", "io"].map(|f| format!("/proc/{me}/{f}")));
    let mut buf = String::with_capacity(1 << 16);
    for file in &files {
        let mut costs = Vec::with_capacity(args.reads);
        for _ in 0..args.reads {
            let (read, cpu) = cpu_timed(|| {
                buf.clear();
                std::fs::File::open(file).and_then(|mut f| f.read_to_string(&mut buf))
            });
            if read.is_err() {
                break;
            }
            costs.push(cpu.as_secs_f64() * 1e6);
        }
        println!("read {file:22} {:>7} bytes: {}", buf.len(), summary(costs));
        // The same file kept open and read again from its start.
        let Ok(open) = std::fs::File::open(file) else {
            continue;
        };
        let mut bytes = vec![0u8; 1 << 16];
        let mut costs = Vec::with_capacity(args.reads);
        for _ in 0..args.reads {
            let (read, cpu) = cpu_timed(|| reread(&open, &mut bytes));
            if read.is_err() {
                break;
            }
            costs.push(cpu.as_secs_f64() * 1e6);
        }
        println!("  kept open, pread from 0:        {}", summary(costs));
        // Opened each time, read with plain reads (no size probe).
        let mut costs = Vec::with_capacity(args.reads);
        for _ in 0..args.reads {
            let (read, cpu) =
                cpu_timed(|| std::fs::File::open(file).and_then(|f| reread(&f, &mut bytes)));
            if read.is_err() {
                break;
            }
            costs.push(cpu.as_secs_f64() * 1e6);
        }
        println!("  opened, plain reads:            {}", summary(costs));
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let (port, open) = open_sockets(&args)?;
    time_samples(&args, port)?;
    time_file_reads(&args);
    drop(open);
    Ok(())
}
